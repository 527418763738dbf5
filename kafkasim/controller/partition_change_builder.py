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

Eligible leader replicas (KIP-966, Kafka 4.1+'s default: ``eligible.leader.replicas.version`` 1):
* ``maybePopulateTargetElr`` -- while the target ISR is below min.insync.replicas, every replica that was in
  the ISR or the ELR and is not in the target ISR (nor just shut down uncleanly) is an *eligible leader
  replica*: it held every record up to the high watermark, which the leader does not move while the ISR is
  below min.insync.replicas (``Partition.maybeIncrementLeaderHW``). At or above min.insync.replicas the ELR
  and last known ELR are emptied.
* ``isValidNewLeader`` -- a target ISR member, or, when the target ISR is empty, an ELR member; elected from
  the ELR the new leader becomes the ISR alone and leaves the ELR (a clean election: "using ELR").
* the *last known leader* (``lastKnownElr``: the leader when the partition first went leaderless,
  ``maybeUpdateLastKnownLeader``) is elected when ISR and ELR are both empty and it is acceptable
  (``canElectLastKnownLeader``); Kafka counts that as unclean (ISR = it alone, RECOVERING).
* with ELR an empty ISR is written (the last member leaves the ISR when it is fenced); without it the last
  member stays (the 4.0 behaviour: the partition is offline until that broker returns or an unclean
  election happens).

The ``leader`` field is set only when the elected leader differs from the current one, so the leader epoch
is bumped only by a leader change; every record bumps the partition epoch (``records.merge``).

Example (replicas [2, 1, 3], leader 2, ISR [2, 1, 3], min.insync.replicas 2): fencing 2 gives target ISR
[1, 3]; 2 is no longer valid, the first valid replica in replica order is 1 => record(leader=1, isr=[1, 3]),
leader epoch +1. Fencing 3 instead gives record(isr=[2, 1]) with no leader field: same leader epoch. With ISR
[2] alone (1 and 3 fell behind: ELR [1, 3]), fencing 2 elects 1 from the ELR => record(leader=1, isr=[1],
elr=[2, 3]).

Reassignment (adding/removing replicas) is not modelled: ``target_replicas`` is always the current replica
list.
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


def java_hash_set_order(items: Sequence[int], presized: int = 0) -> list[int]:
    """The iteration order of a ``java.util.HashSet<Integer>`` filled with ``items`` in that order: by bucket
    (``hash & (capacity - 1)``, ``hash = id ^ (id >>> 16)``), then insertion order within a bucket. Kafka
    builds the ELR through a HashSet (``maybePopulateTargetElr``) and compares lists, so the order decides
    whether a record is written.

    ``presized``: the set was made by ``new HashSet<>(c)`` from the first ``presized`` items, which sizes the
    table for ``c``: capacity ``max(size / 0.75 + 1, 16)`` rounded up to a power of two (Java 17's ``HashSet``;
    Java 19+ sizes for ``size / 0.75``, which differs only when ``c`` holds 12, 24, 48... ids); otherwise it
    starts at 16. The table doubles when the set grows past 3/4 of it, and also when a bucket gets its 9th entry
    while the table is below 64 (``HashMap.treeifyBin`` resizes instead of making a tree). Both matter only for
    replica sets of 9 or more. A bucket that does become a tree (its 9th entry in a table of 64 or more) is not
    modelled."""
    capacity = 16
    if presized:
        wanted = max(int(presized / 0.75) + 1, 16)
        while capacity < wanted:
            capacity *= 2
    seen: list[int] = []
    for item in items:
        if item in seen:
            continue
        bucket = _java_integer_hash(item) & (capacity - 1)
        already_in_bucket = sum(1 for r in seen if _java_integer_hash(r) & (capacity - 1) == bucket)
        seen.append(item)
        if already_in_bucket >= 8 and capacity < 64:  # HashMap.putVal: TREEIFY_THRESHOLD - 1 == 7
            capacity *= 2
        if len(seen) > capacity * 3 // 4:
            capacity *= 2
    return sorted(seen, key=lambda r: _java_integer_hash(r) & (capacity - 1))


def _java_integer_hash(value: int) -> int:
    """``HashMap.hash`` of a non-negative ``Integer``."""
    return value ^ (value >> 16)


class PartitionChangeBuilder:
    """Kafka's ``PartitionChangeBuilder`` (no reassignment; ``useLastKnownLeaderInBalancedRecovery`` true, as
    every caller in Kafka leaves it)."""

    __slots__ = ("partition", "topic_partition", "is_acceptable_leader", "min_isr", "eligible_leader_replicas_enabled",
                 "election", "target_isr", "target_replicas", "target_elr", "target_last_known_elr",
                 "unclean_shutdown_replicas", "target_leader_recovery_state", "elected")

    def __init__(
        self, partition: PartitionRegistration, topic_partition: TopicPartition,
        is_acceptable_leader: Callable[[int], bool], min_isr: int, eligible_leader_replicas_enabled: bool,
    ) -> None:
        """``min_isr``: the topic's effective min.insync.replicas (at most its replication factor,
        ``ReplicationControlManager.getTopicEffectiveMinIsr``)."""
        self.partition = partition
        self.topic_partition = topic_partition
        self.is_acceptable_leader = is_acceptable_leader
        self.min_isr = min_isr
        self.eligible_leader_replicas_enabled = eligible_leader_replicas_enabled
        self.election = Election.ONLINE
        self.target_isr: tuple[int, ...] = partition.isr
        self.target_replicas: tuple[int, ...] = partition.replicas
        self.target_elr: tuple[int, ...] = partition.elr
        self.target_last_known_elr: tuple[int, ...] = partition.last_known_elr
        self.unclean_shutdown_replicas: tuple[int, ...] = ()
        self.target_leader_recovery_state = partition.leader_recovery_state
        self.elected = ""
        """How ``build`` chose a new leader, as Kafka's log says it: "clean", "ELR", "unclean" (from outside the
        ISR, or the last known leader: "last known leader"); "" when the leader did not change to a broker."""

    def set_election(self, election: Election) -> PartitionChangeBuilder:
        self.election = election
        return self

    def set_target_isr(self, target_isr: Sequence[int]) -> PartitionChangeBuilder:
        self.target_isr = tuple(target_isr)
        return self

    def set_target_leader_recovery_state(self, state: int) -> PartitionChangeBuilder:
        self.target_leader_recovery_state = state
        return self

    def set_unclean_shutdown_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        """Replicas whose broker came back from an unclean shutdown: they leave the ELR (their unflushed
        records may be gone)."""
        self.unclean_shutdown_replicas = tuple(replicas)
        return self

    def _is_valid_new_leader(self, replica: int) -> bool:
        # Kafka: isValidNewLeader -- in the target ISR, or in the ELR when the target ISR is empty, and
        # acceptable (alive and active).
        return ((replica in self.target_isr or (not self.target_isr and replica in self.target_elr))
                and self.is_acceptable_leader(replica))

    def _can_elect_last_known_leader(self) -> bool:
        """Kafka's ``canElectLastKnownLeader``: ELR on, target ISR and ELR empty, the last known ELR holding
        exactly the last known leader, and it acceptable."""
        if not self.eligible_leader_replicas_enabled or self.target_elr or self.target_isr:
            return False
        last_known = self.partition.last_known_elr
        return len(last_known) == 1 and self.is_acceptable_leader(last_known[0])

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
        if self._can_elect_last_known_leader():
            return ElectionResult(self.partition.last_known_elr[0], True)
        return ElectionResult(NO_LEADER, False)

    def _elect_any_leader(self) -> ElectionResult:
        # Kafka: electAnyLeader -- the current leader stays if it meets every constraint.
        if self._is_valid_new_leader(self.partition.leader):
            return ElectionResult(self.partition.leader, False)
        for replica in self.target_replicas:
            if self._is_valid_new_leader(replica):
                return ElectionResult(replica, False)
        if self._can_elect_last_known_leader():
            return ElectionResult(self.partition.last_known_elr[0], True)
        if self.election is Election.UNCLEAN:
            for replica in self.target_replicas:
                if self.is_acceptable_leader(replica):
                    return ElectionResult(replica, True)
        return ElectionResult(NO_LEADER, False)

    def _maybe_populate_target_elr(self) -> None:
        """Kafka's ``maybePopulateTargetElr``."""
        if not self.eligible_leader_replicas_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = ()
            self.target_last_known_elr = ()
            return
        # The ISR and the ELR so far, less the target ISR and replicas just back from an unclean shutdown.
        # Kafka: candidateSet = new HashSet<>(targetElr), then the current ISR added (later the last known ELR).
        presized = len(self.target_elr)
        inserted = list(self.target_elr) + list(self.partition.isr)
        candidates = java_hash_set_order(inserted, presized)
        self.target_elr = tuple(r for r in candidates
                                if r not in self.target_isr and r not in self.unclean_shutdown_replicas)
        # The last known ELR: what left the ISR since it fell below min ISR and is neither in the ISR nor the ELR.
        candidates = java_hash_set_order(inserted + list(self.target_last_known_elr), presized)
        self.target_last_known_elr = tuple(r for r in candidates
                                           if r not in self.target_isr and r not in self.target_elr)

    def build(self) -> PartitionChangeRecord | None:
        """Kafka's ``build``: the change record, or None when it would change nothing."""
        partition = self.partition
        self._maybe_populate_target_elr()
        leader = NO_LEADER_CHANGE
        isr: tuple[int, ...] | None = None
        recovery: int | None = None
        # Kafka: tryElection -- the leader field is set only when the elected node differs.
        result = self.elect_leader()
        if result.node != partition.leader:
            if result.node in self.target_elr:
                # "Setting new leader ... using ELR": it becomes the ISR alone and leaves the ELR.
                self.target_isr = (result.node,)
                self.target_elr = tuple(r for r in self.target_elr if r != result.node)
                self.elected = "ELR"
            elif result.unclean:
                # electAnyLeader tries the last known leader before an unclean election: it was elected iff
                # it could be (an unclean pick may be the same broker when the ELR was not empty).
                self.elected = "last known leader" if self._can_elect_last_known_leader() else "unclean"
            elif result.node >= 0:
                self.elected = "clean"
            leader = result.node
            if result.unclean:
                # An unclean leader gets an ISR of itself alone and must recover (possible data loss).
                isr = (result.node,)
                if partition.leader_recovery_state != LEADER_RECOVERY_RECOVERING:
                    recovery = LEADER_RECOVERY_RECOVERING
        elr, last_known_elr = self._maybe_update_record_elr(isr is None, leader)
        # Kafka: with ELR the ISR may become empty; without it the last member stays.
        if (isr is None and (self.target_isr or self.eligible_leader_replicas_enabled)
                and self.target_isr != partition.isr):
            isr = self.target_isr
        last_known_elr = self._maybe_update_last_known_leader(leader, last_known_elr)
        if self.target_leader_recovery_state != partition.leader_recovery_state:
            recovery = self.target_leader_recovery_state
        if (leader == NO_LEADER_CHANGE and isr is None and recovery is None and elr is None
                and last_known_elr is None):
            return None
        return PartitionChangeRecord(self.topic_partition, leader=leader, isr=isr, leader_recovery_state=recovery,
                                     elr=elr, last_known_elr=last_known_elr)

    def _maybe_update_record_elr(
        self, clean_election: bool, leader: int,
    ) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        """Kafka's ``maybeUpdateRecordElr``: the record's (elr, last_known_elr) fields (None: unchanged). With
        ``useLastKnownLeaderInBalancedRecovery`` the last known ELR holds only the last known leader and is set
        by ``_maybe_update_last_known_leader``."""
        partition = self.partition
        if not clean_election or not self.eligible_leader_replicas_enabled:
            self.target_elr = ()
            self.target_last_known_elr = ()
        elr = self.target_elr if self.target_elr != partition.elr else None
        if len(partition.last_known_elr) == 1 and (
                leader == NO_LEADER or (leader == NO_LEADER_CHANGE and partition.leader == NO_LEADER)):
            self.target_last_known_elr = partition.last_known_elr
        return elr, None

    def _maybe_update_last_known_leader(
        self, leader: int, last_known_elr: tuple[int, ...] | None,
    ) -> tuple[int, ...] | None:
        """Kafka's ``maybeUpdateLastKnownLeader``: remember the leader when the partition first goes leaderless,
        forget it once it has a leader again."""
        if not self.eligible_leader_replicas_enabled:
            return last_known_elr
        if leader == NO_LEADER and not self.partition.last_known_elr:
            return (self.partition.leader,)
        if leader >= 0 and self.partition.last_known_elr:
            return ()
        return last_known_elr
