"""What flows through the broker: topic-partitions and simulated record batches (no payload bytes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

NO_PARTITION_LEADER_EPOCH = -1
# Kafka's RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH and NO_SEQUENCE.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1


class TopicPartition(NamedTuple):
    """A partition of a topic; also the purgatory watch key (Kafka's ``TopicPartitionOperationKey``).

    A NamedTuple rather than a dataclass: it is hashed on every purgatory check, and tuple hashing is C.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """One simulated record batch: sizes, counts and identity, but no payload.

    The producer builds it with ``base_offset = -1``; the leader's log assigns offsets and its leader epoch
    (``with_offsets``) exactly as Kafka rewrites a batch's header on append, and followers store the
    leader's batch unchanged. ``create_time_ms`` is the producer's CreateTime timestamp, which Kafka's
    time-based segment roll reads (``LogSegment.shouldRoll``). ``batch_id`` and ``producer`` let the engine
    match a consumed batch to its send for end-to-end latency.
    """

    record_count: int
    size_in_bytes: int
    create_time_ms: int
    batch_id: int
    producer: str = ""
    base_offset: int = -1
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    # The idempotent producer's fields of Kafka's batch header (RecordBatch.NO_PRODUCER_ID,
    # NO_PRODUCER_EPOCH and NO_SEQUENCE when not idempotent).
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence`` (wrapping at Integer.MAX_VALUE); NO_SEQUENCE if none."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.record_count - 1) % (1 << 31)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count

    @property
    def max_timestamp(self) -> int:
        """The batch's max timestamp; with one CreateTime per simulated batch, its create time."""
        return self.create_time_ms

    def with_offsets(self, base_offset: int, partition_leader_epoch: int) -> RecordBatch:
        """The batch as the leader writes it: offsets from the log end, stamped with the leader epoch."""
        # One per appended batch: copy the slots through their descriptors (about twice as fast as the
        # frozen dataclass's generated __init__).
        stamped = _new_batch(RecordBatch)
        _set_record_count(stamped, self.record_count)
        _set_size_in_bytes(stamped, self.size_in_bytes)
        _set_create_time_ms(stamped, self.create_time_ms)
        _set_batch_id(stamped, self.batch_id)
        _set_producer(stamped, self.producer)
        _set_base_offset(stamped, base_offset)
        _set_partition_leader_epoch(stamped, partition_leader_epoch)
        _set_producer_id(stamped, self.producer_id)
        _set_producer_epoch(stamped, self.producer_epoch)
        _set_base_sequence(stamped, self.base_sequence)
        return stamped


_new_batch = object.__new__
_set_record_count = RecordBatch.__dict__["record_count"].__set__
_set_size_in_bytes = RecordBatch.__dict__["size_in_bytes"].__set__
_set_create_time_ms = RecordBatch.__dict__["create_time_ms"].__set__
_set_batch_id = RecordBatch.__dict__["batch_id"].__set__
_set_producer = RecordBatch.__dict__["producer"].__set__
_set_base_offset = RecordBatch.__dict__["base_offset"].__set__
_set_partition_leader_epoch = RecordBatch.__dict__["partition_leader_epoch"].__set__
_set_producer_id = RecordBatch.__dict__["producer_id"].__set__
_set_producer_epoch = RecordBatch.__dict__["producer_epoch"].__set__
_set_base_sequence = RecordBatch.__dict__["base_sequence"].__set__
