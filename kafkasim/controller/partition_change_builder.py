"""Kafka's ``PartitionChangeBuilder``: the one place a partition's leader, ISR and recovery state change.

A builder starts from the partition's current registration, takes a target ISR (what the caller wants:
the ISR minus a fenced broker, or the ISR a leader asks for in AlterPartition), elects a leader and
returns the ``PartitionChangeRecord`` -- or None when nothing would change.

``electLeader``:
* ONLINE -- keep the current leader if it is still valid (in the target ISR and acceptable), else the first
  valid replica in *replica order*, else NO_LEADER (-1).
* UNCLEAN -- as ONLINE, then the first acceptable replica in replica order even outside the ISR; such a
  leader gets ``isr = [leader]`` and ``leader_recovery_state = RECOVERING``.
* PREFERRED -- ``replicas[0]`` if valid, else the current leader if valid, else the first valid of the
  other replicas, else NO_LEADER.

``build()`` never writes an empty ISR: when the last ISR member is fenced the ISR keeps it and the leader
becomes -1 (the partition is offline until that broker returns or an unclean election happens). The
``leader`` field is set only when the elected leader differs from the current one, so the leader epoch
is bumped only by a leader change; every record bumps the partition epoch (``records.merge``).

Example (replicas [2, 1, 3], leader 2, ISR [2, 1, 3]): fencing 2 gives target ISR [1, 3]; 2 is no longer
valid, the first valid replica in replica order is 1 => record(leader=1, isr=[1, 3]), leader epoch +1.
Fencing 3 instead gives record(isr=[2, 1]) with no leader field: same leader epoch.

Eligible leader replicas (KIP-966) are not modelled: ELR is off, as in Kafka 4.0 clusters by default
(``eligible.leader.replicas.version`` 0), so ``elr`` / ``last_known_elr`` stay empty and the
"last known leader" step of the election never applies. Reassignment (adding/removing replicas) is not
modelled either: ``target_replicas`` is always the current replica list.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafkasim.broker.metadata import (
    LEADER_RECOVERY_RECOVERING,
    NO_LEADER,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.records import NO_LEADER_CHANGE, PartitionChangeRecord


class Election(enum.Enum):
    """Kafka's ``PartitionChangeBuilder.Election``."""

    PREFERRED = "PREFERRED"
    ONLINE = "ONLINE"
    UNCLEAN = "UNCLEAN"


@dataclass(frozen=True, slots=True)
class ElectionResult:
    node: int
    unclean: bool


class PartitionChangeBuilder:
    """Kafka's ``PartitionChangeBuilder`` (ELR disabled)."""

    __slots__ = ("partition", "topic_partition", "is_acceptable_leader", "election", "target_isr",
                 "target_replicas", "target_leader_recovery_state")

    def __init__(
        self, partition: PartitionRegistration, topic_partition: TopicPartition,
        is_acceptable_leader: Callable[[int], bool],
    ) -> None:
        self.partition = partition
        self.topic_partition = topic_partition
        self.is_acceptable_leader = is_acceptable_leader
        self.election = Election.ONLINE
        self.target_isr: tuple[int, ...] = partition.isr
        self.target_replicas: tuple[int, ...] = partition.replicas
        self.target_leader_recovery_state = partition.leader_recovery_state

    def set_election(self, election: Election) -> PartitionChangeBuilder:
        self.election = election
        return self

    def set_target_isr(self, target_isr: Sequence[int]) -> PartitionChangeBuilder:
        self.target_isr = tuple(target_isr)
        return self

    def set_target_leader_recovery_state(self, state: int) -> PartitionChangeBuilder:
        self.target_leader_recovery_state = state
        return self

    def _is_valid_new_leader(self, replica: int) -> bool:
        # Kafka: isValidNewLeader -- in the target ISR (or, with ELR, in the ELR when the ISR is empty) and
        # acceptable (alive and active).
        return replica in self.target_isr and self.is_acceptable_leader(replica)

    def elect_leader(self) -> ElectionResult:
        """Kafka's ``electLeader``."""
        if self.election is Election.PREFERRED:
            return self._elect_preferred_leader()
        return self._elect_any_leader()

    def _elect_preferred_leader(self) -> ElectionResult:
        preferred = self.target_replicas[0]
        if self._is_valid_new_leader(preferred):
            return ElectionResult(preferred, False)
        if self._is_valid_new_leader(self.partition.leader):
            return ElectionResult(self.partition.leader, False)
        for replica in self.target_replicas[1:]:
            if self._is_valid_new_leader(replica):
                return ElectionResult(replica, False)
        return ElectionResult(NO_LEADER, False)

    def _elect_any_leader(self) -> ElectionResult:
        # Kafka: electAnyLeader -- the current leader stays if it meets every constraint.
        if self._is_valid_new_leader(self.partition.leader):
            return ElectionResult(self.partition.leader, False)
        for replica in self.target_replicas:
            if self._is_valid_new_leader(replica):
                return ElectionResult(replica, False)
        if self.election is Election.UNCLEAN:
            for replica in self.target_replicas:
                if self.is_acceptable_leader(replica):
                    return ElectionResult(replica, True)
        return ElectionResult(NO_LEADER, False)

    def build(self) -> PartitionChangeRecord | None:
        """Kafka's ``build``: the change record, or None when it would change nothing."""
        partition = self.partition
        leader = NO_LEADER_CHANGE
        isr: tuple[int, ...] | None = None
        recovery: int | None = None
        # Kafka: tryElection -- the leader field is set only when the elected node differs.
        result = self.elect_leader()
        if result.node != partition.leader:
            leader = result.node
            if result.unclean:
                # An unclean leader gets an ISR of itself alone and must recover (possible data loss).
                isr = (result.node,)
                if partition.leader_recovery_state != LEADER_RECOVERY_RECOVERING:
                    recovery = LEADER_RECOVERY_RECOVERING
        # Kafka: build -- without ELR an empty target ISR is never written (the last member stays).
        if isr is None and self.target_isr and self.target_isr != partition.isr:
            isr = self.target_isr
        if recovery is None and self.target_leader_recovery_state != partition.leader_recovery_state:
            recovery = self.target_leader_recovery_state
        if leader == NO_LEADER_CHANGE and isr is None and recovery is None:
            return None
        return PartitionChangeRecord(self.topic_partition, leader=leader, isr=isr, leader_recovery_state=recovery)
