"""Eligible leader replicas (KIP-966): Kafka 4.3.1's own ELR tests, ported.

From ``PartitionChangeBuilderTest`` (the ``testEligibleLeaderReplicas_*`` cases and the ELR-on parameter of
two general ones), ``ReplicationControlManagerTest`` (the cases built with ``setIsElrEnabled(true)``),
``BrokerToElrsTest``, ``ClusterControlManagerTest.testReRegistrationWithCleanShutdownDetection`` and
``QuorumControllerTest``'s unclean-shutdown and min ISR cases (made deterministic: fencing through
``fence_brokers``, not by waiting).

Kafka's builder tests run every record version; only version 2 (the one with the ELR fields, what
``eligible.leader.replicas.version=1`` writes) is ported. Where a Kafka test calls
``setUseLastKnownLeaderInBalancedRecovery(false)`` -- no Kafka caller does: ``ReplicationControlManager`` always
leaves it true, the only mode the model has -- the docstring says whether the flag changes the outcome and, when
it does, the test asserts what Kafka 4.3.1's ``PartitionChangeBuilder`` builds with the flag true (checked by
running Kafka's class on the same input).

Not ported: directories, reassignment (``testElectLeader``'s reassignment case), topic deletion (the end of
``testEligibleLeaderReplicas_DeleteTopic``), the cluster-level min.insync.replicas config and the legacy
AlterConfigs path (``testElrsRemovedOnMinIsrUpdate`` other than (false, false); the cluster-level effect is
checked through the ``ClearElrRecord`` it writes), ``testElrEnabledByDefault`` (a bootstrap config).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkasim.broker.alter_partition import AlterPartitionReply
from kafkasim.broker.errors import Errors
from kafkasim.broker.metadata import (
    LEADER_RECOVERY_RECOVERED,
    LEADER_RECOVERY_RECOVERING,
    NO_LEADER,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.partition_change_builder import Election, PartitionChangeBuilder, java_hash_set_order
from kafkasim.controller.records import (
    ClearElrRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    merge,
)
from tests.controller.controller_context import ControllerTestContext

TP = TopicPartition("foo", 0)


# ----- PartitionChangeBuilderTest

def registration(
    replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, elr: tuple[int, ...] = (),
    last_known_elr: tuple[int, ...] = (),
) -> PartitionRegistration:
    """Kafka's fixtures: leader epoch 100, partition epoch 200, RECOVERED."""
    return PartitionRegistration(replicas, isr, leader, 100, 200, LEADER_RECOVERY_RECOVERED, elr, last_known_elr)


def elr_builder(
    partition: PartitionRegistration, acceptable: Callable[[int], bool], min_isr: int = 3,
) -> PartitionChangeBuilder:
    """A builder with ELR on (Kafka's ``isElrEnabled(version 2)``); Kafka's ELR cases use min ISR 3."""
    return PartitionChangeBuilder(partition, TP, acceptable, min_isr, True)


def test_isr_shrink_below_min_isr() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_IsrShrinkBelowMinISR (version 2). The
    replicas leaving the ISR below min ISR become the ELR. (Kafka's test sets useLastKnownLeaderInBalancedRecovery
    false; true builds the same record: the leader stays, so no last known leader is written.)"""
    partition = registration((1, 2, 3, 4), (1, 2, 3, 4), 1)
    builder = elr_builder(partition, lambda r: r != 3).set_election(Election.PREFERRED).set_target_isr([1, 2])
    record = builder.build()
    assert record == PartitionChangeRecord(TP, isr=(1, 2), elr=(3, 4))
    partition = merge(partition, record)
    assert partition.elr == (3, 4)
    assert partition.last_known_elr == ()


def test_last_known_elr_should_be_populated_when_no_leader() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_lastKnownElrShouldBePopulatedWhenNoLeader.
    No replica is acceptable: the election yields no leader, the ISR is not touched, the last known leader is
    the leader that was."""
    partition = registration((1, 2, 3), (1,), 1, elr=(2,))
    record = elr_builder(partition, lambda r: False).set_election(Election.PREFERRED).build()
    assert record is not None
    assert record.leader == NO_LEADER
    assert record.isr is None
    assert record.last_known_elr == (1,)
    assert merge(partition, record).last_known_elr == (1,)


def test_isr_expand_above_min_isr() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_IsrExpandAboveMinISR (version 2). Back at
    min ISR the ELR is cleared. Kafka's test sets useLastKnownLeaderInBalancedRecovery false, which also writes
    lastKnownElr=[] and leaves it empty; with the flag true (every Kafka caller, the model) Kafka 4.3.1's builder
    writes the ELR field alone (``maybeUpdateRecordElr`` returns before the last known ELR), so [4] stays."""
    partition = registration((1, 2, 3, 4), (1, 2), 1, elr=(3,), last_known_elr=(4,))
    builder = elr_builder(partition, lambda r: r != 3).set_election(Election.PREFERRED).set_target_isr([1, 2, 3])
    record = builder.build()
    assert record == PartitionChangeRecord(TP, isr=(1, 2, 3), elr=())
    partition = merge(partition, record)
    assert partition.elr == ()
    assert partition.last_known_elr == (4,)  # Kafka's test (flag false): ()


def test_isr_add_new_member_not_in_elr() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_IsrAddNewMemberNotInELR (version 2). Still
    below min ISR: the ELR and last known ELR are unchanged, the record carries the ISR alone. (Kafka's test sets
    useLastKnownLeaderInBalancedRecovery false; true builds the same record.)"""
    partition = registration((1, 2, 3, 4), (1,), 1, elr=(3,), last_known_elr=(2,))
    builder = elr_builder(partition, lambda r: r != 3).set_election(Election.PREFERRED).set_target_isr([1, 4])
    record = builder.build()
    assert record == PartitionChangeRecord(TP, isr=(1, 4))
    partition = merge(partition, record)
    assert partition.elr == (3,)
    assert partition.last_known_elr == (2,)


def test_remove_unclean_shutdown_replicas_from_elr() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr
    (version 2). A replica back from an unclean shutdown leaves the ELR. Kafka's test sets
    useLastKnownLeaderInBalancedRecovery false, which also moves 3 to the last known ELR (lastKnownElr=[3]); with
    the flag true (every Kafka caller, the model) Kafka 4.3.1's builder writes the ELR field alone."""
    partition = registration((1, 2, 3, 4), (1,), 1, elr=(2, 3))
    builder = (elr_builder(partition, lambda r: r != 3).set_election(Election.PREFERRED)
               .set_unclean_shutdown_replicas([3]))
    record = builder.build()
    assert record == PartitionChangeRecord(TP, elr=(2,))  # Kafka's test (flag false): also last_known_elr=(3,)
    partition = merge(partition, record)
    assert partition.elr == (2,)
    assert partition.last_known_elr == ()  # Kafka's test (flag false): (3,)


def test_elr_can_be_elected() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_ElrCanBeElected[lastKnownLeaderEnabled=true].
    The ISR empties (1 offline): 3 is elected from the ELR, becomes the ISR alone, and 1 joins the ELR. (The
    [false] case needs useLastKnownLeaderInBalancedRecovery false, which the model does not have.)"""
    partition = registration((1, 2, 3, 4), (1,), 1, elr=(3,))
    builder = elr_builder(partition, lambda r: r != 1).set_election(Election.PREFERRED).set_target_isr([])
    record = builder.build()
    assert record == PartitionChangeRecord(TP, leader=3, isr=(3,), elr=(1,))
    partition = merge(partition, record)
    assert partition.elr == (1,)
    assert partition.last_known_elr == ()
    assert partition.isr == (3,)


def test_isr_can_shrink_to_zero() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_IsrCanShrinkToZero[lastKnownLeaderEnabled=
    true]. Every replica offline: an empty ISR, all four in the ELR, the old leader remembered; a later change
    (2 back from an unclean shutdown) does not touch the last known leader. (The [false] case needs
    useLastKnownLeaderInBalancedRecovery false, which the model does not have.)"""
    partition = registration((1, 2, 3, 4), (1, 2, 3, 4), 1)
    record = elr_builder(partition, lambda r: False).set_election(Election.PREFERRED).set_target_isr([]).build()
    assert record == PartitionChangeRecord(TP, leader=NO_LEADER, isr=(), elr=(1, 2, 3, 4), last_known_elr=(1,))
    partition = merge(partition, record)
    assert partition.elr == (1, 2, 3, 4)
    assert partition.last_known_elr == (1,)
    builder = (elr_builder(partition, lambda r: False).set_election(Election.PREFERRED)
               .set_unclean_shutdown_replicas([2]))
    change = builder.build()
    assert change is not None
    assert change.last_known_elr is None
    assert partition.isr == ()


def test_elect_last_known_leader() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_ElectLastKnownLeader. ISR and ELR empty, the
    last known leader acceptable: it is elected, as an unclean election (ISR itself, RECOVERING), and forgotten."""
    partition = registration((1, 2, 3, 4), (), NO_LEADER, last_known_elr=(1,))
    record = elr_builder(partition, lambda r: True).set_election(Election.PREFERRED).set_target_isr([]).build()
    assert record == PartitionChangeRecord(TP, leader=1, isr=(1,), leader_recovery_state=LEADER_RECOVERY_RECOVERING,
                                           last_known_elr=())
    partition = merge(partition, record)
    assert partition.elr == ()
    assert partition.last_known_elr == ()
    assert partition.isr == (1,)


def test_elect_last_known_leader_should_fail() -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail. The ELR is
    not empty (3, not acceptable), so the last known leader may not be elected: no change."""
    partition = registration((1, 2, 3, 4), (), NO_LEADER, elr=(3,), last_known_elr=(1,))
    builder = elr_builder(partition, lambda r: r != 3).set_election(Election.PREFERRED).set_target_isr([])
    assert builder.build() is None


@pytest.mark.parametrize("election", list(Election))
def test_not_eligible_last_known_leader(election: Election) -> None:
    """Kafka: PartitionChangeBuilderTest.testEligibleLeaderReplicas_NotEligibleLastKnownLeader. The last known
    leader is not acceptable: no change, whatever the election."""
    partition = registration((1, 2, 3, 4), (), NO_LEADER, last_known_elr=(1,))
    builder = elr_builder(partition, lambda r: False).set_election(election).set_target_isr([])
    assert builder.build() is None


# Kafka's OFFLINE_WITH_ELR fixture (min ISR 2, only broker 1 acceptable).
OFFLINE_WITH_ELR = registration((2, 1, 3), (), NO_LEADER, elr=(3,), last_known_elr=(2,))


def test_unclean_leader_election_clears_elr() -> None:
    """Kafka: PartitionChangeBuilderTest.testUncleanLeaderElection (version 2). FOO: the unclean leader 2 gets an
    ISR of itself, RECOVERING, no ELR fields (there was no ELR). OFFLINE_WITH_ELR: 1 is elected uncleanly and the
    ELR and last known ELR are cleared -- also when the target ISR is [2]."""
    foo = registration((2, 1, 3), (2, 1, 3), 1)
    record = (elr_builder(foo, lambda r: r != 3, min_isr=2).set_election(Election.UNCLEAN)
              .set_target_isr([3]).build())
    assert record == PartitionChangeRecord(TP, leader=2, isr=(2,), leader_recovery_state=LEADER_RECOVERY_RECOVERING)
    expected = PartitionChangeRecord(TP, leader=1, isr=(1,), leader_recovery_state=LEADER_RECOVERY_RECOVERING,
                                     elr=(), last_known_elr=())
    offline = elr_builder(OFFLINE_WITH_ELR, lambda r: r == 1, min_isr=2).set_election(Election.UNCLEAN)
    assert offline.build() == expected
    offline = elr_builder(OFFLINE_WITH_ELR, lambda r: r == 1, min_isr=2).set_election(Election.UNCLEAN)
    assert offline.set_target_isr([2]).build() == expected


def test_no_change_with_elr() -> None:
    """Kafka: PartitionChangeBuilderTest.testNoChange (version 2, without the reassignment fixture BAR): with
    the ISR at min ISR, the ELR logic adds nothing."""
    foo = registration((2, 1, 3), (2, 1, 3), 1)
    baz = registration((2, 1, 3), (1, 3), 3)
    assert elr_builder(foo, lambda r: r != 3, min_isr=2).build() is None
    assert elr_builder(foo, lambda r: r != 3, min_isr=2).set_election(Election.UNCLEAN).build() is None
    assert elr_builder(baz, lambda r: True, min_isr=2).set_election(Election.PREFERRED).build() is None


@pytest.mark.parametrize(("presized", "added", "java_order"), [
    # Each expected order is what Java 17's HashSet<Integer> iterates: new HashSet<>(presized), then add(added).
    ([], [17, 1, 2], [17, 1, 2]),
    ([], [3, 19, 35], [3, 19, 35]),
    ([], [35, 19, 3], [35, 19, 3]),
    ([2, 3], [1, 4], [1, 2, 3, 4]),
    ([], [65536, 1, 65537], [65537, 65536, 1]),  # hash = id ^ (id >>> 16)
    # A bucket's 9th entry in a table below 64 doubles the table (HashMap.treeifyBin).
    ([], [0, 16, 32, 48, 64, 80, 96, 112, 128], [0, 32, 64, 96, 128, 16, 48, 80, 112]),
    # new HashSet<>(12 ids) starts with 32 buckets, not 16.
    ([17, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 17]),
    ([], [17, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [17, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
])
def test_java_hash_set_order(presized: list[int], added: list[int], java_order: list[int]) -> None:
    """``java_hash_set_order`` against the iteration order Java 17 gives (run with the JDK; Kafka's
    ``maybePopulateTargetElr`` builds the ELR as ``new HashSet<>(targetElr)`` plus the current ISR)."""
    assert java_hash_set_order(presized + added, len(presized)) == java_order


# ----- ReplicationControlManagerTest

def elr_ctx(*brokers: int) -> ControllerTestContext:
    """Kafka's ``new ReplicationControlTestContext.Builder().setIsElrEnabled(true)``, brokers registered and
    unfenced."""
    ctx = ControllerTestContext(elr=True)
    ctx.register_brokers(*brokers)
    ctx.unfence_brokers(*brokers)
    return ctx


def assert_consistent_alter_partition_response(ctx: ControllerTestContext, reply: AlterPartitionReply) -> None:
    """Kafka's ``assertAlterPartitionResponse(NONE)`` and ``assertConsistentAlterPartitionResponse``."""
    assert reply.error is Errors.NONE
    (response,) = reply.partitions
    assert response.error is Errors.NONE
    partition = ctx.partition(response.topic_partition.topic, response.topic_partition.partition)
    assert (response.leader, response.leader_epoch, response.partition_epoch, response.isr) == (
        partition.leader, partition.leader_epoch, partition.partition_epoch, partition.isr)


def _foo_shrunk_to_its_leader() -> ControllerTestContext:
    """Kafka's shared start: topic foo [0, 1, 2] led by 0, min ISR 2, the leader shrinks the ISR to itself: 1 and
    2 become the ELR, no last known ELR."""
    ctx = elr_ctx(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.core.set_min_insync_replicas("foo", 2)
    assert_consistent_alter_partition_response(ctx, ctx.alter_partition("foo", 0, 0, [0]))
    partition = ctx.partition("foo", 0)
    assert partition.elr == (1, 2)
    assert partition.last_known_elr == ()
    return ctx


def test_rcm_shrink_and_expand_isr() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_ShrinkAndExpandIsr. min ISR 2: the leader
    shrinks the ISR to itself (1 and 2 become the ELR), then expands it to [0, 1] (the ELR is cleared)."""
    ctx = _foo_shrunk_to_its_leader()
    assert_consistent_alter_partition_response(ctx, ctx.alter_partition("foo", 0, 0, [0, 1]))
    partition = ctx.partition("foo", 0)
    assert partition.elr == ()
    assert partition.last_known_elr == ()


def test_rcm_shrink_to_empty_isr() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_ShrinkToEmptyIsr. min ISR 3: fencing 1
    and 2 puts them in the ELR; the clean shutdown of the last ISR member 0 (handled as a fencing) empties the
    ISR, adds 0 to the ELR and remembers it as the last known leader."""
    ctx = elr_ctx(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.core.set_min_insync_replicas("foo", 3)
    ctx.fence_brokers({1, 2})
    partition = ctx.partition("foo", 0)
    assert partition.elr == (1, 2)
    assert partition.last_known_elr == ()
    ctx.handle_brokers_shutdown(True, 0)
    partition = ctx.partition("foo", 0)
    assert partition.elr == (0, 1, 2)
    assert partition.last_known_elr == (0,)
    assert partition.isr == ()


def test_rcm_broker_fence() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_BrokerFence. min ISR 3 over 4 replicas:
    fencing 2 then 3 puts only 3 in the ELR (the ISR fell below min ISR when 3 left); fencing 1 adds it;
    unfencing changes nothing (the partition has a leader; the ISR grows only through AlterPartition)."""
    ctx = elr_ctx(0, 1, 2, 3)
    ctx.create_topic("foo", [(0, 1, 2, 3)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.core.set_min_insync_replicas("foo", 3)
    ctx.fence_brokers({2, 3})
    partition = ctx.partition("foo", 0)
    assert partition.elr == (3,)
    assert partition.last_known_elr == ()
    ctx.fence_brokers({1, 2, 3})
    partition = ctx.partition("foo", 0)
    assert partition.elr == (1, 3)
    assert partition.last_known_elr == ()
    ctx.unfence_brokers(0, 1, 2, 3)
    partition = ctx.partition("foo", 0)
    assert partition.elr == (1, 3)
    assert partition.last_known_elr == ()


def test_rcm_elr_index_before_delete_topic() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_DeleteTopic, up to the deletion (the model
    does not delete topics): after the ISR shrink, broker 1 is indexed as an ELR member (``BrokersToElrs``)."""
    ctx = _foo_shrunk_to_its_leader()
    assert ctx.replication.partitions_with_broker_in_elr(1) == [TP]


def test_rcm_effective_min_isr() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_EffectiveMinIsr: min.insync.replicas 5
    on a topic of 3 replicas acts as 3."""
    ctx = elr_ctx(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.core.set_min_insync_replicas("foo", 5)
    assert ctx.replication.effective_min_isr("foo") == 3


def test_rcm_clean_election() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_CleanElection. min ISR 3: fencing 1, 2, 3
    leaves ELR [2, 3]. Then 2 comes back (and 3, whose heartbeat keeps it alive in ``fence_brokers``), and
    fencing 0 and 1 empties the ISR: 2 is elected from the ELR, clean, and 0 joins the ELR."""
    ctx = elr_ctx(0, 1, 2, 3)
    ctx.create_topic("foo", [(0, 1, 2, 3)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.core.set_min_insync_replicas("foo", 3)
    ctx.fence_brokers({1, 2, 3})
    partition = ctx.partition("foo", 0)
    assert partition.elr == (2, 3)
    assert partition.last_known_elr == ()
    ctx.unfence_brokers(2)
    ctx.fence_brokers({0, 1})
    partition = ctx.partition("foo", 0)
    assert partition.elr == (0, 3)
    assert partition.isr == (2,)
    assert partition.leader == 2
    assert partition.last_known_elr == ()


def test_rcm_unclean_shutdown() -> None:
    """Kafka: ReplicationControlManagerTest.testEligibleLeaderReplicas_UncleanShutdown. min ISR 3, ELR [2, 3]:
    an unclean shutdown of ELR member 3 removes it from the ELR; one of the last ISR member 0 empties the ISR,
    does not add 0 to the ELR, and remembers 0 as the last known leader."""
    ctx = elr_ctx(0, 1, 2, 3)
    ctx.create_topic("foo", [(0, 1, 2, 3)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.core.set_min_insync_replicas("foo", 3)
    ctx.fence_brokers({1, 2, 3})
    partition = ctx.partition("foo", 0)
    assert partition.elr == (2, 3)
    assert partition.last_known_elr == ()
    ctx.handle_brokers_shutdown(False, 3)
    partition = ctx.partition("foo", 0)
    assert partition.elr == (2,)
    assert partition.last_known_elr == ()
    ctx.handle_brokers_shutdown(False, 0)
    partition = ctx.partition("foo", 0)
    assert partition.elr == (2,)
    assert partition.last_known_elr == (0,)


def two_topics_with_elr() -> ControllerTestContext:
    """``testElrsRemovedOnMinIsrUpdate``'s setup: min ISR 2 (Kafka: a static cluster config; here each topic's),
    brokers 4 then 1 fenced, so partition 0 of each topic has ISR [2] and ELR [1]."""
    ctx = elr_ctx(1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 4), (1, 3, 4)], min_isr=2)
    ctx.create_topic("bar", [(1, 2, 4), (1, 3, 4)], min_isr=2)
    ctx.fence_brokers({4})
    ctx.fence_brokers({1, 4})
    assert ctx.partition("foo", 0).elr == (1,)
    assert ctx.partition("bar", 0).elr == (1,)
    return ctx


def test_elrs_removed_on_min_isr_update() -> None:
    """Kafka: ReplicationControlManagerTest.testElrsRemovedOnMinIsrUpdate[clusterLevel=false,
    useLegacyAlterConfigs=false]: setting foo's min.insync.replicas clears foo's ELRs, not bar's."""
    ctx = two_topics_with_elr()
    ctx.core.set_min_insync_replicas("foo", 1)
    assert ctx.partition("foo", 0).elr == ()
    assert ctx.partition("bar", 0).elr == (1,)


def test_elrs_removed_on_cluster_level_min_isr_update() -> None:
    """Kafka: ReplicationControlManagerTest.testElrsRemovedOnMinIsrUpdate[clusterLevel=true,
    useLegacyAlterConfigs=false], through the record Kafka's cluster-level change writes (a ``ClearElrRecord``
    without a topic; the model has no cluster-level config): every topic's ELRs are cleared."""
    ctx = two_topics_with_elr()
    ctx.replay([ClearElrRecord()])
    assert ctx.partition("foo", 0).elr == ()
    assert ctx.partition("bar", 0).elr == ()


def test_elrs_removed_should_not_bump_partition_epoch_if_no_change() -> None:
    """Kafka: ReplicationControlManagerTest.testElrsRemovedShouldNotBumpPartitionEpochIfNoChange: a
    ``ClearElrRecord`` leaves partitions without ELR untouched."""
    ctx = elr_ctx(1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 4), (1, 3, 4)], min_isr=2)
    partition_epoch = ctx.partition("foo", 0).partition_epoch
    ctx.replay([ClearElrRecord()])
    assert ctx.partition("foo", 0).partition_epoch == partition_epoch


# ----- BrokerToElrsTest

def test_brokers_to_elrs_iterator() -> None:
    """Kafka: BrokerToElrsTest.testIterator, through replayed records (the model keeps ``BrokersToElrs`` inside
    ``ReplicationControlManager``): ELRs [1, 2, 3] and [2, 3, 4], then a third partition with [3, 2, 1]."""
    ctx = ControllerTestContext(elr=True)
    a0, b1, b2 = TopicPartition("a", 0), TopicPartition("b", 1), TopicPartition("b", 2)
    assert ctx.replication.partitions_with_broker_in_elr(1) == []
    ctx.replay([
        TopicRecord("a"), PartitionRecord(a0, (0, 1, 2, 3), (0,), 0),
        TopicRecord("b"), PartitionRecord(TopicPartition("b", 0), (0,), (0,), 0),
        PartitionRecord(b1, (0, 2, 3, 4), (0,), 0), PartitionRecord(b2, (0, 3, 2, 1), (0,), 0),
        PartitionChangeRecord(a0, elr=(1, 2, 3)), PartitionChangeRecord(b1, elr=(2, 3, 4)),
    ])
    assert ctx.replication.partitions_with_broker_in_elr(1) == [a0]
    assert ctx.replication.partitions_with_broker_in_elr(2) == [a0, b1]
    assert ctx.replication.partitions_with_broker_in_elr(4) == [b1]
    assert ctx.replication.partitions_with_broker_in_elr(5) == []
    ctx.replay([PartitionChangeRecord(b2, elr=(3, 2, 1))])
    assert ctx.replication.partitions_with_broker_in_elr(2) == [a0, b1, b2]


# ----- ClusterControlManagerTest

@pytest.mark.parametrize("is_clean_shutdown", [False, True])
def test_re_registration_with_clean_shutdown_detection(is_clean_shutdown: bool) -> None:
    """Kafka: ClusterControlManagerTest.testReRegistrationWithCleanShutdownDetection. Broker 1, in controlled
    shutdown, registers a new incarnation naming its registered epoch (a clean shutdown) or another one (10):
    the new registration is not in controlled shutdown, and its epoch is the offset the event started writing at
    (Kafka passes ``offsetControl.nextWriteOffset()`` as ``newBrokerEpoch``), even when shutdown records come
    first. Kafka's test stubs the shutdown handler to add one record for an unclean shutdown; here the real one
    does: broker 1, the leader, left the ISR for the ELR in its controlled shutdown (ISR [2] below min ISR 2),
    and an unclean shutdown takes it out of the ELR."""
    ctx = elr_ctx(1, 2)
    ctx.create_topic("foo", [(1, 2)], min_isr=2)
    ctx.heartbeat(1, want_shutdown=True)
    registration = ctx.cluster.registration(1)
    assert registration is not None and registration.in_controlled_shutdown
    assert ctx.partition("foo", 0).elr == (1,)
    ctx.time.sleep(ctx.heartbeats.session_timeout_ms + 1)
    old_epoch = ctx.epoch(1)
    first_offset = ctx.core.log.next_offset
    result = ctx.core.register_broker(1, "new-incarnation",
                                      previous_broker_epoch=old_epoch if is_clean_shutdown else 10)
    assert result.batch is not None
    assert not ctx.cluster.is_new_incarnation(1, "new-incarnation")
    registration = ctx.cluster.registration(1)
    assert registration is not None and not registration.in_controlled_shutdown
    assert result.response.epoch == registration.epoch == first_offset
    if is_clean_shutdown:
        assert len(result.batch.records) == 1
    else:
        assert len(result.batch.records) == 2
    assert isinstance(result.batch.records[-1], RegisterBrokerRecord)


# ----- QuorumControllerTest

def test_unclean_shutdown_broker_elr_enabled() -> None:
    """Kafka: QuorumControllerTest.testUncleanShutdownBrokerElrEnabled. min ISR 2, every broker fenced: empty ISR,
    two ELR members, the last leader remembered. The last leader restarts after an unclean shutdown: it leaves the
    ELR, stays the last known leader. The other ELR member restarts cleanly: nothing changes. Once unfenced it is
    elected: ISR itself, ELR and last known ELR empty."""
    ctx = elr_ctx(1, 2, 3)
    ctx.create_topic("foo", [(1, 2, 3)], min_isr=2)
    ctx.fence_brokers({1, 2, 3})
    partition = ctx.partition("foo", 0)
    assert len(partition.last_known_elr) == 1
    last_known_elr = partition.last_known_elr
    assert partition.isr == ()
    assert partition.leader == NO_LEADER
    assert len(partition.elr) == 2
    broker_to_unclean_shutdown = last_known_elr[0]
    (broker_to_be_the_leader,) = (r for r in partition.elr if r != broker_to_unclean_shutdown)

    ctx.restart_broker(broker_to_unclean_shutdown, "second", clean=False)
    partition = ctx.partition("foo", 0)
    assert partition.elr == (broker_to_be_the_leader,)
    assert partition.last_known_elr == last_known_elr

    ctx.restart_broker(broker_to_be_the_leader, "second", clean=True)
    partition = ctx.partition("foo", 0)
    assert partition.elr == (broker_to_be_the_leader,)
    assert partition.last_known_elr == last_known_elr

    ctx.unfence_brokers(broker_to_be_the_leader)
    partition = ctx.partition("foo", 0)
    assert partition.isr == (broker_to_be_the_leader,)
    assert partition.elr == ()
    assert partition.last_known_elr == ()
    assert partition.leader == broker_to_be_the_leader


def test_unclean_shutdown_elr_disabled() -> None:
    """Kafka: QuorumControllerTest.testUncleanShutdownElrDisabled. ELR off, sessions expired (not yet fenced):
    each leader in turn restarts after an unclean shutdown; it leaves the ISR and the leadership moves (leader
    epoch +1), except the last ISR member, which stays in the ISR of a leaderless partition."""
    ctx = ControllerTestContext(elr=False)
    ctx.register_brokers(1, 2, 3)
    ctx.unfence_brokers(1, 2, 3)
    ctx.create_topic("foo", [(1, 2, 3)])
    ctx.time.sleep(ctx.heartbeats.session_timeout_ms + 1)
    for i in range(3):
        partition = ctx.partition("foo", 0)
        assert partition.elr == ()
        assert partition.last_known_elr == ()
        last_standing_isr = i == 2
        prev_leader, prev_leader_epoch = partition.leader, partition.leader_epoch
        ctx.restart_broker(prev_leader, "second", clean=False)
        partition = ctx.partition("foo", 0)
        assert partition.leader != prev_leader
        assert partition.leader_epoch != prev_leader_epoch
        if last_standing_isr:
            assert partition.isr == (prev_leader,)
            assert partition.leader == NO_LEADER
        else:
            assert prev_leader not in partition.isr


def test_min_isr_update_with_elr() -> None:
    """Kafka: QuorumControllerTest.testMinIsrUpdateWithElr, topic level (the cluster-level half needs a
    cluster-level config, which the model does not have). min ISR 2, brokers 2 and 3 fenced: ISR [1], one ELR
    member; lowering foo's min.insync.replicas to 1 writes a ``ClearElrRecord`` (Kafka: with the ConfigRecord)
    that clears foo's ELR."""
    ctx = elr_ctx(1, 2, 3)
    ctx.create_topic("foo", [(1, 2, 3)], min_isr=2)
    ctx.create_topic("bar", [(1, 2, 3)], min_isr=2)
    ctx.fence_brokers({2, 3})
    partition = ctx.partition("foo", 0)
    assert partition.isr == (1,)
    assert len(partition.elr) == 1
    batch = ctx.core.set_min_insync_replicas("foo", 1)
    assert batch is not None and batch.records == (ClearElrRecord("foo"),)
    partition = ctx.partition("foo", 0)
    assert partition.elr == ()
    assert partition.isr == (1,)
    partition = ctx.partition("bar", 0)
    assert partition.isr == (1,)
    assert len(partition.elr) == 1
