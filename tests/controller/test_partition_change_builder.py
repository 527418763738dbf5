"""Ported from Kafka's ``PartitionChangeBuilderTest`` (metadata/src/test/java/org/apache/kafka/controller/).

Kafka's fixtures: FOO = replicas [2, 1, 3], ISR [2, 1, 3], leader 1, leader epoch 100, partition epoch 200,
acceptable leaders r != 3; BAZ = replicas [2, 1, 3], ISR [1, 3], leader 3, everyone acceptable; OFFLINE =
replicas [2, 1, 3], ISR [3], leader -1, only broker 1 acceptable.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkasim.broker.metadata import (
    LEADER_RECOVERY_RECOVERED,
    LEADER_RECOVERY_RECOVERING,
    NO_LEADER,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.partition_change_builder import Election, PartitionChangeBuilder
from kafkasim.controller.records import NO_LEADER_CHANGE, PartitionChangeRecord, merge

TP = TopicPartition("foo", 0)
FOO = PartitionRegistration((2, 1, 3), (2, 1, 3), 1, 100, 200)
BAZ = PartitionRegistration((2, 1, 3), (1, 3), 3, 100, 200)
OFFLINE = PartitionRegistration((2, 1, 3), (3,), NO_LEADER, 100, 200)


def builder(partition: PartitionRegistration, acceptable: Callable[[int], bool]) -> PartitionChangeBuilder:
    # Kafka's fixtures: min ISR 2, ELR off unless a test turns it on.
    return PartitionChangeBuilder(partition, TP, acceptable, 2, False)


def foo() -> PartitionChangeBuilder:
    return builder(FOO, lambda r: r != 3)


def baz() -> PartitionChangeBuilder:
    return builder(BAZ, lambda r: True)


def offline() -> PartitionChangeBuilder:
    return builder(OFFLINE, lambda r: r == 1)


def elect(b: PartitionChangeBuilder) -> tuple[int, bool]:
    result = b.elect_leader()
    return result.node, result.unclean


def test_elect_leader() -> None:
    """Kafka: PartitionChangeBuilderTest.testElectLeader (without the reassignment case)."""
    assert elect(foo().set_election(Election.PREFERRED)) == (2, False)
    assert elect(foo()) == (1, False)
    assert elect(foo().set_election(Election.UNCLEAN)) == (1, False)
    assert elect(foo().set_target_isr([1, 3])) == (1, False)
    assert elect(foo().set_election(Election.UNCLEAN).set_target_isr([1, 3])) == (1, False)
    assert elect(foo().set_target_isr([3])) == (NO_LEADER, False)
    assert elect(foo().set_election(Election.UNCLEAN).set_target_isr([3])) == (2, True)
    assert elect(baz().set_election(Election.PREFERRED)) == (3, False)
    assert elect(baz()) == (3, False)
    assert elect(baz().set_election(Election.UNCLEAN)) == (3, False)


def test_online_election_takes_first_valid_replica_in_replica_order() -> None:
    """Kafka: electAnyLeader -- the current leader gone, the first valid replica in *replica* order wins, not
    the first ISR member (FOO's ISR order is [2, 1, 3]; with replicas reordered [3, 1, 2] and 3 unacceptable,
    1 comes before 2)."""
    p = PartitionRegistration((3, 1, 2), (2, 1, 3), 3, 0, 0)
    assert elect(builder(p, lambda r: r != 3).set_target_isr([2, 1])) == (1, False)


def test_no_change() -> None:
    """Kafka: PartitionChangeBuilderTest.testNoChange."""
    assert foo().build() is None
    assert foo().set_election(Election.UNCLEAN).build() is None
    assert baz().set_election(Election.PREFERRED).build() is None


def test_no_leader_epoch_bump_on_isr_shrink() -> None:
    """Kafka: PartitionChangeBuilderTest.testNoLeaderEpochBumpOnIsrShrink (metadata version >= 3.6): an ISR
    shrink that keeps the leader writes no leader field, so the leader epoch stays; the partition epoch +1."""
    record = foo().set_target_isr([2, 1]).build()
    assert record == PartitionChangeRecord(TP, isr=(2, 1))
    merged = merge(FOO, record)
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (1, 100, 201)


def test_no_leader_epoch_bump_on_isr_expansion() -> None:
    """Kafka: PartitionChangeBuilderTest.testNoLeaderEpochBumpOnIsrExpansion."""
    record = baz().set_target_isr([2, 1, 3]).build()
    assert record == PartitionChangeRecord(TP, isr=(2, 1, 3))
    assert merge(BAZ, record).leader_epoch == 100


def test_isr_change_and_leader_change() -> None:
    """Kafka: PartitionChangeBuilderTest.testIsrChangeAndLeaderChange: the leader leaves the ISR, 2 (first in
    replica order) takes over; leader epoch and partition epoch +1."""
    record = foo().set_target_isr([2, 3]).build()
    assert record == PartitionChangeRecord(TP, leader=2, isr=(2, 3))
    merged = merge(FOO, record)
    assert (merged.leader, merged.isr, merged.leader_epoch, merged.partition_epoch) == (2, (2, 3), 101, 201)


def test_unclean_leader_election() -> None:
    """Kafka: PartitionChangeBuilderTest.testUncleanLeaderElection: ISR := [leader], RECOVERING."""
    expected = PartitionChangeRecord(TP, leader=2, isr=(2,), leader_recovery_state=LEADER_RECOVERY_RECOVERING)
    assert foo().set_election(Election.UNCLEAN).set_target_isr([3]).build() == expected
    expected = PartitionChangeRecord(TP, leader=1, isr=(1,), leader_recovery_state=LEADER_RECOVERY_RECOVERING)
    assert offline().set_election(Election.UNCLEAN).build() == expected
    assert offline().set_election(Election.UNCLEAN).set_target_isr([2]).build() == expected


def test_change_in_leadership_does_not_change_recovery_state() -> None:
    """Kafka: PartitionChangeBuilderTest.testChangeInLeadershipDoesNotChangeRecoveryState -- also the last
    ISR member fenced: the ISR keeps it, the leader becomes -1 (no empty ISR without ELR)."""
    registration = PartitionRegistration((1, 2, 3), (1,), 1, 100, 200, LEADER_RECOVERY_RECOVERING)
    record = builder(registration, lambda r: False).set_target_isr([]).build()
    assert record is not None
    assert record.leader_recovery_state is None
    assert record.leader == NO_LEADER
    assert record.isr is None
    registration = merge(registration, record)
    assert (registration.leader, registration.isr, registration.leader_recovery_state) == (
        NO_LEADER, (1,), LEADER_RECOVERY_RECOVERING)
    assert (registration.leader_epoch, registration.partition_epoch) == (101, 201)
    record = builder(registration, lambda r: True).build()
    assert record is not None and record.leader_recovery_state is None
    registration = merge(registration, record)
    assert (registration.leader, registration.isr, registration.leader_recovery_state) == (
        1, (1,), LEADER_RECOVERY_RECOVERING)


def test_unclean_sets_leader_recovering_state() -> None:
    """Kafka: PartitionChangeBuilderTest.testUncleanSetsLeaderRecoveringState (leader recovery supported)."""
    registration = PartitionRegistration((1, 2, 3), (2, 3), NO_LEADER, 100, 200, LEADER_RECOVERY_RECOVERED)
    record = builder(registration, lambda r: r == 1).set_election(Election.UNCLEAN).build()
    assert record == PartitionChangeRecord(TP, leader=1, isr=(1,), leader_recovery_state=LEADER_RECOVERY_RECOVERING)
    registration = merge(registration, record)
    assert registration.leader_recovery_state == LEADER_RECOVERY_RECOVERING


def test_leader_recovery_state_set_by_target() -> None:
    """Kafka: PartitionChangeBuilder.build -- a leader reporting RECOVERED (AlterPartition after an unclean
    election) writes the recovery state alone: partition epoch +1, leader epoch unchanged."""
    registration = PartitionRegistration((1, 2, 3), (1,), 1, 5, 7, LEADER_RECOVERY_RECOVERING)
    record = builder(registration, lambda r: True).set_target_leader_recovery_state(LEADER_RECOVERY_RECOVERED).build()
    assert record == PartitionChangeRecord(TP, leader_recovery_state=LEADER_RECOVERY_RECOVERED)
    merged = merge(registration, record)
    assert (merged.leader_epoch, merged.partition_epoch, merged.leader_recovery_state) == (
        5, 8, LEADER_RECOVERY_RECOVERED)


def test_preferred_election_order() -> None:
    """Kafka: electPreferredLeader -- replicas[0] if valid, else the current leader, else the others in order."""
    p = PartitionRegistration((2, 1, 3), (1, 3), 1, 0, 0)
    assert elect(builder(p, lambda r: True).set_election(Election.PREFERRED).set_target_isr([2, 1, 3])) == (2, False)
    assert elect(builder(p, lambda r: True).set_election(Election.PREFERRED)) == (1, False)
    assert elect(builder(p, lambda r: r == 3).set_election(Election.PREFERRED)) == (3, False)
    assert elect(builder(p, lambda r: False).set_election(Election.PREFERRED)) == (NO_LEADER, False)


def test_merge_bumps_leader_epoch_only_when_leader_field_set() -> None:
    """Kafka: PartitionRegistration.merge -- setting the leader field (even to the same leader) bumps the
    leader epoch; every record bumps the partition epoch."""
    same_leader = merge(FOO, PartitionChangeRecord(TP, leader=1))
    assert (same_leader.leader, same_leader.leader_epoch, same_leader.partition_epoch) == (1, 101, 201)
    no_leader_field = merge(FOO, PartitionChangeRecord(TP, leader=NO_LEADER_CHANGE, isr=(2, 1)))
    assert (no_leader_field.leader_epoch, no_leader_field.partition_epoch) == (100, 201)
