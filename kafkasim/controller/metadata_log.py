"""The ``__cluster_metadata`` log as the controller writes it, and the committed image brokers see.

Every controller event appends **one atomic batch** (``MetadataBatch``): its records get consecutive
offsets, and its ``delta`` (a ``kafkasim.broker.metadata.MetadataDelta``) says which partition and broker
registrations the batch changed, as they are after the batch. The controller replays a batch as soon as
it is appended (later events see its effects, as in Kafka); brokers only ever see **committed** batches.
``commit(offset)`` marks every batch up to that offset committed and folds the deltas into the
``MetadataImage`` (Kafka's ``MetadataImage``: ``partitions`` and ``brokers``).

Example: registering broker 0 appends [RegisterBrokerRecord] at offset 0 (broker epoch 0); fencing a
broker that leads two partitions appends [PartitionChangeRecord, PartitionChangeRecord,
BrokerRegistrationChangeRecord] at offsets 1..3, delta.offset 3. Until ``commit(3)`` the image still shows
the old leaders.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from kafkasim.broker.metadata import (
    LEADER_RECOVERY_RECOVERING,
    BrokerRegistration,
    MetadataDelta,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.records import (
    ClearElrRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    merge,
)


@dataclass(frozen=True, slots=True)
class MetadataBatch:
    """One controller event's records: offsets ``base_offset .. last_offset``."""

    base_offset: int
    records: tuple[MetadataRecord, ...]
    delta: MetadataDelta
    append_ms: float

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1


class MetadataImage:
    """The committed metadata (Kafka's ``MetadataImage``, topics and cluster only)."""

    __slots__ = ("offset", "partitions", "brokers")

    def __init__(self) -> None:
        self.offset = -1
        self.partitions: dict[TopicPartition, PartitionRegistration] = {}
        self.brokers: dict[int, BrokerRegistration] = {}

    def apply(self, delta: MetadataDelta) -> None:
        self.offset = delta.offset
        for tp in delta.deleted:
            self.partitions.pop(tp, None)
        self.partitions.update(delta.partitions)
        self.brokers.update(delta.brokers)

    def leader(self, topic_partition: TopicPartition) -> int:
        return self.partitions[topic_partition].leader


class MetadataLog:
    """Append-only batches with offsets; ``end_offset`` is the last offset written (-1 when empty)."""

    __slots__ = ("_batches", "_next_offset", "committed_offset", "_first_uncommitted", "image")

    def __init__(self) -> None:
        self._batches: list[MetadataBatch] = []
        self._next_offset = 0
        self.committed_offset = -1
        self._first_uncommitted = 0
        self.image = MetadataImage()

    @property
    def next_offset(self) -> int:
        """Kafka's ``OffsetControlManager.nextWriteOffset``: the offset the next record gets."""
        return self._next_offset

    @property
    def end_offset(self) -> int:
        return self._next_offset - 1

    @property
    def batches(self) -> list[MetadataBatch]:
        return list(self._batches)

    def append(
        self, records: tuple[MetadataRecord, ...], partitions: Mapping[TopicPartition, PartitionRegistration],
        brokers: Mapping[int, BrokerRegistration], now_ms: float,
    ) -> MetadataBatch:
        if not records:
            raise ValueError("a metadata batch needs at least one record")
        base = self._next_offset
        self._next_offset += len(records)
        delta = MetadataDelta(base + len(records) - 1, dict(sorted(partitions.items())), frozenset(),
                              dict(sorted(brokers.items())))
        batch = MetadataBatch(base, records, delta, now_ms)
        self._batches.append(batch)
        return batch

    def commit(self, offset: int) -> list[MetadataBatch]:
        """Commit every batch whose last offset is at most ``offset``; returns them, oldest first."""
        committed: list[MetadataBatch] = []
        while self._first_uncommitted < len(self._batches):
            batch = self._batches[self._first_uncommitted]
            if batch.last_offset > offset:
                break
            self.image.apply(batch.delta)
            self.committed_offset = batch.last_offset
            self._first_uncommitted += 1
            committed.append(batch)
        return committed


PartitionChanges = list[tuple[PartitionChangeRecord, PartitionRegistration]]


def partition_changes(batches: Iterable[MetadataBatch]) -> Iterator[tuple[MetadataBatch, PartitionChanges]]:
    """Every batch of the log with its ``PartitionChangeRecord``s, each beside its partition as it was just before
    it: the log replayed from its ``PartitionRecord``s (``merge``; a ``ClearElrRecord`` empties ELRs)."""
    state: dict[TopicPartition, PartitionRegistration] = {}
    for batch in batches:
        changes: PartitionChanges = []
        for record in batch.records:
            if isinstance(record, PartitionRecord):
                state[record.topic_partition] = PartitionRegistration(
                    record.replicas, record.isr, record.leader, record.leader_epoch, record.partition_epoch)
            elif isinstance(record, ClearElrRecord):
                for tp, registration in state.items():
                    if record.topic is None or tp.topic == record.topic:
                        state[tp] = merge(registration, PartitionChangeRecord(tp, elr=(), last_known_elr=()))
            elif isinstance(record, PartitionChangeRecord):
                before = state[record.topic_partition]
                state[record.topic_partition] = merge(before, record)
                changes.append((record, before))
        yield batch, changes


def election_kind(record: PartitionChangeRecord, before: PartitionRegistration) -> str:
    """How a change record elected its new leader, as Kafka's log tells it (``PartitionChangeBuilder.tryElection``):
    "unclean" (leader recovery state RECOVERING: from outside the ISR, or the last known leader), "ELR" (from the
    eligible leader replicas, outside the ISR), else "clean"; "" when it names no new broker."""
    if record.leader < 0 or record.leader == before.leader:
        return ""
    if record.leader_recovery_state == LEADER_RECOVERY_RECOVERING:
        return "unclean"
    if record.leader in before.elr and record.leader not in before.isr:
        return "ELR"
    return "clean"
