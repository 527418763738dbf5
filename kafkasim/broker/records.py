"""What flows through the broker: topic-partitions and simulated record batches (no payload bytes)."""

from __future__ import annotations

from typing import Final, NamedTuple

NO_PARTITION_LEADER_EPOCH: Final = -1
# Kafka's RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH and NO_SEQUENCE.
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_TIMESTAMP: Final = -1


class TopicPartition(NamedTuple):
    """A partition of a topic; also the purgatory watch key (Kafka's ``TopicPartitionOperationKey``).

    A NamedTuple rather than a dataclass: it is hashed on every purgatory check, and tuple hashing is C.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class RecordBatch:
    """One simulated record batch: sizes, counts and identity, but no payload.

    The producer builds it with ``base_offset = -1``; the leader's log assigns offsets and its leader epoch
    (``with_offsets``) exactly as Kafka rewrites a batch's header on append, and followers store the
    leader's batch unchanged. ``create_time_ms`` is the producer's CreateTime timestamp, which Kafka's
    time-based segment roll reads (``LogSegment.shouldRoll``). ``batch_id`` and ``producer`` let the engine
    match a consumed batch to its send for end-to-end latency.

    Immutable: the fields are ``Final`` (mypy rejects a write; the compiled build makes them read-only). A
    plain slotted class rather than a frozen dataclass, whose ``__init__`` sets each field through
    ``object.__setattr__``: one is built per produced batch and one more per append.
    """

    __slots__ = (
        "record_count",
        "size_in_bytes",
        "create_time_ms",
        "batch_id",
        "producer",
        "base_offset",
        "partition_leader_epoch",
        "producer_id",
        "producer_epoch",
        "base_sequence",
    )

    def __init__(
        self,
        record_count: int,
        size_in_bytes: int,
        create_time_ms: int,
        batch_id: int,
        producer: str = "",
        base_offset: int = -1,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        # The idempotent producer's fields of Kafka's batch header (RecordBatch.NO_PRODUCER_ID,
        # NO_PRODUCER_EPOCH and NO_SEQUENCE when not idempotent).
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
    ) -> None:
        self.record_count: Final = record_count
        self.size_in_bytes: Final = size_in_bytes
        self.create_time_ms: Final = create_time_ms
        self.batch_id: Final = batch_id
        self.producer: Final = producer
        self.base_offset: Final = base_offset
        self.partition_leader_epoch: Final = partition_leader_epoch
        self.producer_id: Final = producer_id
        self.producer_epoch: Final = producer_epoch
        self.base_sequence: Final = base_sequence

    def _fields(self) -> tuple[int, int, int, int, str, int, int, int, int, int]:
        return (
            self.record_count,
            self.size_in_bytes,
            self.create_time_ms,
            self.batch_id,
            self.producer,
            self.base_offset,
            self.partition_leader_epoch,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordBatch) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"RecordBatch(record_count={self.record_count}, size_in_bytes={self.size_in_bytes}, "
            f"create_time_ms={self.create_time_ms}, batch_id={self.batch_id}, producer={self.producer!r}, "
            f"base_offset={self.base_offset}, partition_leader_epoch={self.partition_leader_epoch}, "
            f"producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
            f"base_sequence={self.base_sequence})"
        )

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
        return RecordBatch(
            self.record_count,
            self.size_in_bytes,
            self.create_time_ms,
            self.batch_id,
            self.producer,
            base_offset,
            partition_leader_epoch,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
        )
