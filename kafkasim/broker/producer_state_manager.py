"""The idempotent producer's state on a partition's log (Kafka's ``ProducerStateManager``,
``ProducerStateEntry``, ``BatchMetadata`` and ``ProducerAppendInfo``, storage/internals/log).

Per producer id the log keeps the producer epoch and the metadata of the last
``NUM_BATCHES_TO_RETAIN`` (5) batches it wrote: last sequence, last offset, offset delta, timestamp. A leader
append (origin CLIENT) first looks for a duplicate -- same epoch, exactly the same ``[firstSeq, lastSeq]``
among those 5 -- and answers it with the original offsets without appending
(``UnifiedLog.analyzeAndValidateProducerState``); otherwise ``ProducerAppendInfo`` checks the epoch and the
sequence. A follower append (origin REPLICATION) is not checked but updates the same state, so a follower
that becomes leader deduplicates retries of the batches it replicated.

Snapshots (Kafka's ``.snapshot`` files) are kept in memory: one at each segment roll and at the end of a
truncation's rebuild, so truncation reloads the latest snapshot at or below its target and replays only the
batches after it (``UnifiedLog.rebuildProducerState``). Transactions, control batches, the coordinator epoch
and transaction verification are not simulated.
"""

from __future__ import annotations

import enum
from bisect import bisect_left, insort
from collections.abc import Mapping
from typing import Final

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP, RecordBatch

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_ID_EXPIRATION_MS_DEFAULT",
    "AppendOrigin",
    "BatchMetadata",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "decrement_sequence",
]

NUM_BATCHES_TO_RETAIN: Final = 5
"""Kafka's ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: the batches a duplicate is looked for among (the
producer's ``max.in.flight.requests.per.connection`` is at most 5 when idempotent)."""

PRODUCER_ID_EXPIRATION_MS_DEFAULT: Final = 86_400_000
"""``producer.id.expiration.ms`` (``TransactionLogConfig.PRODUCER_ID_EXPIRATION_MS_DEFAULT``, one day)."""

_INT_MAX: Final = 2**31 - 1


class AppendOrigin(enum.Enum):
    """Kafka's ``AppendOrigin``: who appends decides how much is validated (no COORDINATOR here)."""

    CLIENT = "CLIENT"
    REPLICATION = "REPLICATION"


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence``: sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence < decrement:
        return _INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    # ProducerAppendInfo.inSequence
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT_MAX)


class BatchMetadata:
    """One retained batch of a producer (Kafka's ``BatchMetadata``)."""

    __slots__ = ("last_seq", "last_offset", "offset_delta", "timestamp")

    def __init__(self, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.last_seq = last_seq
        self.last_offset = last_offset
        self.offset_delta = offset_delta
        self.timestamp = timestamp

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BatchMetadata)
            and self.last_seq == other.last_seq
            and self.last_offset == other.last_offset
            and self.offset_delta == other.offset_delta
            and self.timestamp == other.timestamp
        )

    def __hash__(self) -> int:
        return hash((self.last_seq, self.last_offset, self.offset_delta, self.timestamp))

    def __repr__(self) -> str:
        return (
            f"BatchMetadata(firstSeq={self.first_seq}, lastSeq={self.last_seq}, firstOffset={self.first_offset}, "
            f"lastOffset={self.last_offset}, timestamp={self.timestamp})"
        )


class ProducerStateEntry:
    """A producer's epoch and its last (up to 5) batches, oldest first (Kafka's ``ProducerStateEntry``).

    Immutable here, where Kafka's is mutated in place: an append makes a new entry (O(1): at most 5 batches
    are copied), so a snapshot is a shallow copy of the producer map."""

    __slots__ = ("producer_id", "producer_epoch", "batch_metadata", "last_timestamp")

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        batch_metadata: tuple[BatchMetadata, ...] = (),
        last_timestamp: int = NO_TIMESTAMP,
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batch_metadata = batch_metadata
        self.last_timestamp = last_timestamp

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    def find_duplicate_batch(self, batch: RecordBatch) -> BatchMetadata | None:
        """Kafka's ``findDuplicateBatch``: a retained batch of the same epoch with exactly the batch's
        sequence range."""
        if batch.producer_epoch != self.producer_epoch:
            return None
        return self.batch_with_sequence_range(batch.base_sequence, batch.last_sequence)

    def batch_with_sequence_range(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for metadata in self.batch_metadata:
            if metadata.last_seq == last_seq and metadata.first_seq == first_seq:
                return metadata
        return None

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
            f"lastTimestamp={self.last_timestamp}, batchMetadata={list(self.batch_metadata)})"
        )


class ProducerAppendInfo:
    """Validates one producer's batches of one append against its state before the append (Kafka's
    ``ProducerAppendInfo``); ``ProducerStateManager.update`` applies them once appended.

    Kafka's ``updatedEntry`` (the current entry's epoch and last timestamp, none of its batches, then the
    batches of this append) is kept as its fields -- ``producer_epoch``, ``batch_metadata``,
    ``last_timestamp`` -- and built by ``updated_entry`` only when asked: the idempotent path runs on every
    append of an idempotent producer, on the leader and on every follower."""

    __slots__ = ("name", "producer_id", "current_entry", "origin", "producer_epoch", "batch_metadata", "last_timestamp")

    def __init__(self, name: str, producer_id: int, current_entry: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.name = name
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = origin
        # currentEntry.withProducerIdAndBatchMetadata(producerId, Optional.empty())
        self.producer_epoch = current_entry.producer_epoch
        self.batch_metadata: tuple[BatchMetadata, ...] = ()
        self.last_timestamp = current_entry.last_timestamp

    @property
    def updated_entry(self) -> ProducerStateEntry:
        """Kafka's ``toEntry``."""
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.batch_metadata, self.last_timestamp)

    def append(self, batch: RecordBatch) -> None:
        """Kafka's ``append`` of a data batch (no control batches here)."""
        self.append_data_batch(
            batch.producer_epoch,
            batch.base_sequence,
            batch.last_sequence,
            batch.create_time_ms,  # the batch's max timestamp (one CreateTime per simulated batch)
            batch.base_offset,
            batch.last_offset,
        )

    def append_data_batch(
        self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int, first_offset: int, last_offset: int
    ) -> None:
        """Kafka's ``appendDataBatch``: validate (``maybeValidateDataBatch``: ``checkProducerEpoch``, then
        ``checkSequence`` for a client append), then record the batch (``ProducerStateEntry.addBatch``)."""
        updated_epoch = self.producer_epoch
        origin = self.origin
        # checkProducerEpoch for a data batch: an older epoch is fenced (a replicated one is only logged: the
        # leader already validated it).
        if epoch < updated_epoch and origin is not AppendOrigin.REPLICATION:
            raise KafkaError(
                Errors.INVALID_PRODUCER_EPOCH,
                f"epoch of producer {self.producer_id} at offset {first_offset} in {self.name} is {epoch}, "
                f"which is smaller than the last seen epoch {updated_epoch}",
            )
        batches = self.batch_metadata
        if origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        if epoch != updated_epoch:
            batches = ()  # maybeUpdateProducerEpoch
        elif len(batches) >= NUM_BATCHES_TO_RETAIN:
            batches = batches[len(batches) - NUM_BATCHES_TO_RETAIN + 1 :]
        self.batch_metadata = (*batches, BatchMetadata(last_seq, last_offset, last_offset - first_offset, last_timestamp))
        self.producer_epoch = epoch
        self.last_timestamp = last_timestamp

    def _check_sequence(self, producer_epoch: int, append_first_seq: int, offset: int) -> None:
        # ProducerAppendInfo.checkSequence (no transaction verification state).
        updated_epoch = self.producer_epoch
        if producer_epoch != updated_epoch:
            # A new epoch must start at sequence 0 -- unless the producer is unknown here (its state expired
            # or was never replicated): Kafka 4.x then accepts any sequence (KIP-360; the broker no longer
            # answers UNKNOWN_PRODUCER_ID).
            if append_first_seq != 0 and updated_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"{self.name}: {producer_epoch} (request epoch), {append_first_seq} (seq. number), "
                    f"{updated_epoch} (current producer epoch)",
                )
            return
        current = self.current_entry
        if self.batch_metadata:
            current_last_seq = self.batch_metadata[-1].last_seq
        elif producer_epoch == current.producer_epoch:
            current_last_seq = current.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        # No current epoch (the producer's records were all deleted): any sequence is accepted.
        if not (current.producer_epoch == NO_PRODUCER_EPOCH or _in_sequence(current_last_seq, append_first_seq)):
            raise KafkaError(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"out of order sequence number for producer {self.producer_id} at offset {offset} in {self.name}: "
                f"{append_first_seq} (incoming seq. number), {current_last_seq} (current end sequence number)",
            )

    def __repr__(self) -> str:
        return f"ProducerAppendInfo({self.producer_id}, {self.origin.name}, {self.updated_entry!r})"


class ProducerStateManager:
    """The producers of one log, with in-memory snapshots (Kafka's ``ProducerStateManager``).

    ``map_end_offset`` is Kafka's ``lastMapOffset``: the offset the state is complete up to. Kafka moves it on
    every append (``updateMapEndOffset(lastOffset + 1)``); ``Log`` moves it on idempotent appends only and
    sets it to its log end offset before anything reads it (a roll's snapshot, a truncation), which is the
    same value, so that a non-idempotent append costs nothing here.
    """

    __slots__ = (
        "name",
        "producer_id_expiration_ms",
        "_producers",
        "_snapshots",
        "_snapshot_offsets",
        "_last_map_offset",
        "_last_snap_offset",
    )

    def __init__(self, name: str = "", producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT) -> None:
        self.name = name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._snapshots: dict[int, dict[int, ProducerStateEntry]] = {}
        self._snapshot_offsets: list[int] = []
        self._last_map_offset = 0
        self._last_snap_offset = 0

    # ------------------------------------------------------------------------------------------ state

    @property
    def active_producers(self) -> Mapping[int, ProducerStateEntry]:
        return self._producers

    @property
    def is_empty(self) -> bool:
        return not self._producers

    @property
    def map_end_offset(self) -> int:
        return self._last_map_offset

    def update_map_end_offset(self, last_offset: int) -> None:
        self._last_map_offset = last_offset

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self._producers.get(producer_id)
        if current is None:
            current = ProducerStateEntry(producer_id)
        return ProducerAppendInfo(self.name, producer_id, current, origin)

    def update(self, append_info: ProducerAppendInfo) -> None:
        """Kafka's ``update``: merge the append's entry into the producer's."""
        producer_id = append_info.producer_id
        if producer_id < 0:
            raise ValueError(f"invalid producer id {producer_id} passed to update for partition {self.name}")
        current = self._producers.get(producer_id)
        epoch = append_info.producer_epoch
        batches = append_info.batch_metadata
        if current is not None and current.producer_epoch == epoch:
            # ProducerStateEntry.update(nextEntry): the same epoch keeps the retained batches.
            batches = (*current.batch_metadata, *batches)
            if len(batches) > NUM_BATCHES_TO_RETAIN:
                batches = batches[len(batches) - NUM_BATCHES_TO_RETAIN :]
        self._producers[producer_id] = ProducerStateEntry(producer_id, epoch, batches, append_info.last_timestamp)

    # ------------------------------------------------------------------------------------- expiration

    def _is_producer_expired(self, current_time_ms: int, entry: ProducerStateEntry) -> bool:
        # Kafka's isProducerExpired (no ongoing transactions here).
        return current_time_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, current_time_ms: int) -> int:
        """Kafka's ``removeExpiredProducers``: forget producers idle for ``producer.id.expiration.ms`` (by
        their last batch's timestamp); returns how many went."""
        producers = self._producers
        if not producers:
            return 0
        expired = [pid for pid, entry in producers.items() if self._is_producer_expired(current_time_ms, entry)]
        for pid in expired:
            del producers[pid]
        return len(expired)

    # -------------------------------------------------------------------------------------- snapshots

    @property
    def snapshot_offsets(self) -> tuple[int, ...]:
        return tuple(self._snapshot_offsets)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self._snapshot_offsets[-1] if self._snapshot_offsets else None

    @property
    def oldest_snapshot_offset(self) -> int | None:
        return self._snapshot_offsets[0] if self._snapshot_offsets else None

    def take_snapshot(self) -> None:
        """Kafka's ``takeSnapshot``: at the map end offset, unless it has not moved since the last one."""
        offset = self._last_map_offset
        if offset > self._last_snap_offset:
            if offset not in self._snapshots:
                insort(self._snapshot_offsets, offset)
            self._snapshots[offset] = dict(self._producers)
            self._last_snap_offset = offset

    def remove_snapshot(self, offset: int) -> None:
        """Kafka's ``removeAndMarkSnapshotForDeletion`` (a deleted segment's snapshot)."""
        if self._snapshots.pop(offset, None) is not None:
            self._snapshot_offsets.remove(offset)

    def delete_snapshots_before(self, offset: int) -> None:
        """Kafka's ``deleteSnapshotsBefore``."""
        keep_from = bisect_left(self._snapshot_offsets, offset)
        for old in self._snapshot_offsets[:keep_from]:
            del self._snapshots[old]
        del self._snapshot_offsets[:keep_from]

    def _load_from_snapshot(self, log_start_offset: int, current_time_ms: int) -> None:
        latest = self.latest_snapshot_offset
        if latest is None:
            self._last_snap_offset = self._last_map_offset = log_start_offset
            return
        self._producers = {
            pid: entry
            for pid, entry in self._snapshots[latest].items()
            if not self._is_producer_expired(current_time_ms, entry)
        }
        self._last_snap_offset = self._last_map_offset = latest

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, current_time_ms: int) -> None:
        """Kafka's ``truncateAndReload``: drop the snapshots outside (log start, log end], and unless the state
        already ends at ``log_end_offset`` reload the latest remaining snapshot (without expired producers);
        the caller replays the batches after it."""
        for offset in list(self._snapshot_offsets):
            if offset > log_end_offset or offset <= log_start_offset:
                self.remove_snapshot(offset)
        if log_end_offset != self._last_map_offset:
            self._producers = {}
            self._load_from_snapshot(log_start_offset, current_time_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Kafka's ``onLogStartOffsetIncremented``: producers stay (only expiration removes them)."""
        if self._last_map_offset < log_start_offset:
            self._last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset
        self._last_snap_offset = latest if latest is not None else log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Kafka's ``truncateFullyAndStartAt``: forget every producer and snapshot."""
        self._producers = {}
        self._snapshots.clear()
        self._snapshot_offsets.clear()
        self._last_snap_offset = 0
        self._last_map_offset = offset

    def __repr__(self) -> str:
        return (
            f"ProducerStateManager({self.name!r}, producers={len(self._producers)}, "
            f"mapEnd={self._last_map_offset}, snapshots={self._snapshot_offsets})"
        )
