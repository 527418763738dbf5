"""``Log``: a partition's segments, log end offset, high watermark and log start offset (Kafka's
``UnifiedLog`` and ``LocalLog``).

One class serves both sides: the leader appends with ``append_as_leader`` (offsets assigned from the LEO)
and advances the HW with ``maybe_increment_high_watermark``; a follower appends the leader's batches with
``append_as_follower`` (offsets kept), clamps the HW it is told with ``maybe_update_high_watermark`` and,
when it restarts, truncates to its HW with ``truncate_to(log.high_watermark)``.

Kafka's ``UnifiedLog`` and ``LocalLog`` are folded into this one class (no tiered storage, no transactions:
the last stable offset is the HW -- the seam for transactions is ``fetch_last_stable_offset_metadata``). The
idempotent producers' state is ``producer_state_manager`` (Kafka's ``ProducerStateManager``): a leader append
deduplicates and checks sequences, a follower append records them, truncation rebuilds them.
"""

from __future__ import annotations

import enum
import random
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

from kafkasim.broker.config import LogConfig
from kafkasim.broker.disk import Disk
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.leader_epoch_cache import UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from kafkasim.broker.log_offset_metadata import UNKNOWN_OFFSET, UNKNOWN_OFFSET_METADATA, LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo, LogSegment
from kafkasim.broker.producer_state_manager import (
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    AppendOrigin,
    BatchMetadata,
    ProducerAppendInfo,
    ProducerStateManager,
)
from kafkasim.broker.records import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP, RecordBatch

if TYPE_CHECKING:
    from kafkasim.timer import Time

# Rolls outside an append (LogSegment.shouldRoll names the others): UnifiedLog.deleteSegments rolls an active
# segment it deletes; a roll asked for directly (Kafka's UnifiedLog.roll, e.g. by a test or a tool).
ROLL_RETENTION: Final = "retention"
ROLL_REQUESTED: Final = "requested"

# Told of a roll: the new active segment's base offset and why (a ROLL_* name).
RollListener = Callable[[int, str], None]
# Told, on a leader, when the high watermark first lies in a segment rolled since (False), and when it first lies
# above that segment's base offset (True): the segment's base offset and which of the two. A consumer fetch parked
# below the base offset on an older segment completes at the first, one parked exactly at it at the second
# (DelayedFetch.tryComplete's case F: a higher end offset on a newer segment).
HighWatermarkSegmentListener = Callable[[int, bool], None]

__all__ = [
    "UNKNOWN_OFFSET_METADATA",
    "FetchDataInfo",
    "FetchIsolation",
    "LeaderHwChange",
    "Log",
    "LogAppendInfo",
    "LogOffsetMetadata",
    "LogOffsetSnapshot",
    "LogSegment",
]


class FetchIsolation(enum.Enum):
    """How far a fetch may read: followers to the LEO, consumers to the HW (or the LSO)."""

    LOG_END = "LOG_END"
    HIGH_WATERMARK = "HIGH_WATERMARK"
    TXN_COMMITTED = "TXN_COMMITTED"


class LeaderHwChange(enum.Enum):
    """What a leader append did to the HW; decides which purgatories the action queue checks (Kafka's
    ``LeaderHwChange``, used by ``ReplicaManager.addCompletePurgatoryAction``)."""

    INCREASED = "INCREASED"
    SAME = "SAME"
    NONE = "NONE"  # nothing appended (failed append)


class LogAppendInfo:
    """What an append did: the offsets it assigned, bytes written, and (set by Partition) the HW change."""

    __slots__ = (
        "first_offset",
        "last_offset",
        "max_timestamp",
        "log_append_time",
        "log_start_offset",
        "valid_bytes",
        "leader_hw_change",
    )

    def __init__(
        self,
        first_offset: int,
        last_offset: int,
        max_timestamp: int = NO_TIMESTAMP,
        log_append_time: int = NO_TIMESTAMP,
        log_start_offset: int = -1,
        valid_bytes: int = 0,
        leader_hw_change: LeaderHwChange = LeaderHwChange.NONE,
    ) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.max_timestamp = max_timestamp
        # CreateTime topics (Kafka's default) report no log append time.
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.valid_bytes = valid_bytes
        self.leader_hw_change = leader_hw_change

    def __repr__(self) -> str:
        return (
            f"LogAppendInfo(first={self.first_offset}, last={self.last_offset}, bytes={self.valid_bytes}, "
            f"hw={self.leader_hw_change.name})"
        )


class LogOffsetSnapshot(NamedTuple):
    """The offsets DelayedFetch compares against (Kafka's ``LogOffsetSnapshot``)."""

    log_start_offset: int
    log_end_offset: LogOffsetMetadata
    high_watermark: LogOffsetMetadata
    last_stable_offset: LogOffsetMetadata


class Log:
    """Segments of simulated batches plus the offsets Kafka's ``UnifiedLog`` maintains.

    Worked example (segment.bytes = 250, 100-byte batches of 10 records): appends put offsets 0..9 and
    10..19 in segment 0 (size 200); the third append would make it 300 > 250, so the log rolls and
    offsets 20..29 go to a new segment based at 20. The LEO is then ``(30, 20, 100)``; if the HW had been
    20 = LEO at the roll, its metadata would have moved from ``(20, 0, 200)`` to ``(20, 20, 0)``.
    """

    __slots__ = (
        "config",
        "time",
        "name",
        "leader_epoch_cache",
        "producer_state_manager",
        "_rng",
        "_segments",
        "_segment_bases",
        "_log_end_offset_metadata",
        "_high_watermark_metadata",
        "_log_start_offset",
        "_on_change",
        "_empty_read",
        "_on_roll",
        "_on_high_watermark_segment",
        "_high_watermark_to_reach",
        "_high_watermark_to_pass",
        "_disk",
        "recovery_point",
        "unflushed_bytes",
        "last_flush_time",
    )

    def __init__(
        self,
        config: LogConfig,
        time: Time,
        *,
        log_start_offset: int = 0,
        rng: random.Random | None = None,
        name: str = "",
        on_change: Callable[[], None] | None = None,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT,
        on_roll: RollListener | None = None,
        on_high_watermark_segment: HighWatermarkSegmentListener | None = None,
        disk: Disk | None = None,
    ) -> None:
        self.config = config
        self.time = time
        self.name = name
        # Told of every change of the end offset, high watermark, segments, log start or leader epochs, when
        # it happens (ReplicaManager records it in its PartitionChanges, for parked DelayedFetches).
        self._on_change = on_change
        # Told of every roll, and of the high watermark reaching each rolled segment (the run's rolls table:
        # when a parked follower's fetch wakes, and when a parked consumer's does).
        self._on_roll = on_roll
        self._on_high_watermark_segment = on_high_watermark_segment
        # Base offsets of rolled segments the high watermark has not reached yet, and of those it has reached
        # but not passed (it lies at their base offset), oldest first.
        self._high_watermark_to_reach: list[int] = []
        self._high_watermark_to_pass: list[int] = []
        # The answer of the commonest read, nothing past the end: one shared object per end metadata.
        self._empty_read: FetchDataInfo | None = None
        self.leader_epoch_cache = LeaderEpochFileCache()
        self.producer_state_manager = ProducerStateManager(name, producer_id_expiration_ms)
        self.producer_state_manager.update_map_end_offset(log_start_offset)
        self._rng = rng
        self._log_start_offset = log_start_offset
        self._segments: list[LogSegment] = []
        self._segment_bases: list[int] = []
        self._add_segment(LogSegment(log_start_offset, time.milliseconds(), self._random_segment_jitter()))
        self._log_end_offset_metadata = LogOffsetMetadata(log_start_offset, log_start_offset, 0)
        # Kafka's Partition.createLog + UnifiedLog.updateHighWatermark: initial HW = checkpoint or 0, clamped
        # into [log start, LEO].
        self._high_watermark_metadata = self._log_end_offset_metadata
        # The broker's disk, when the run models flushes (a flush policy is set); None: flushing is left to
        # the OS and costs nothing here. The recovery point is where the last flush ended (LocalLog's
        # recoveryPoint), unflushed_bytes what was appended above it, last_flush_time LocalLog.lastFlushTime.
        self._disk = disk
        self.recovery_point = log_start_offset
        self.unflushed_bytes = 0
        self.last_flush_time = time.milliseconds()

    # ----------------------------------------------------------------------------------------- offsets

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset_metadata.message_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._log_end_offset_metadata

    @property
    def high_watermark(self) -> int:
        return self._high_watermark_metadata.message_offset

    @property
    def high_watermark_metadata(self) -> LogOffsetMetadata:
        """The HW as stored (message-only on a follower); see ``fetch_high_watermark_metadata``."""
        return self._high_watermark_metadata

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark

    def read_offsets(self) -> tuple[int, int, int, int]:
        """(high watermark, log start, log end, last stable offset): what ``Partition.readRecords`` captures
        before a read, in one call rather than four property reads (every fetch read asks)."""
        high_watermark = self._high_watermark_metadata.message_offset
        # The last stable offset is the HW (``last_stable_offset``: no transactions are simulated).
        return high_watermark, self._log_start_offset, self._log_end_offset_metadata.message_offset, high_watermark

    @property
    def segments(self) -> Sequence[LogSegment]:
        return self._segments

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def latest_epoch(self) -> int:
        return self.leader_epoch_cache.latest_epoch

    # ------------------------------------------------------------------------------------------ append

    def append_as_leader(self, batches: Sequence[RecordBatch], leader_epoch: int) -> LogAppendInfo:
        """Assign offsets from the LEO and the leader epoch, then append (Kafka's
        ``UnifiedLog.appendAsLeader``)."""
        return self._append(batches, leader_epoch, assign_offsets=True)

    def append_as_follower(self, batches: Sequence[RecordBatch]) -> LogAppendInfo:
        """Append the leader's batches, offsets and epochs unchanged (Kafka's
        ``UnifiedLog.appendAsFollower``)."""
        return self._append(batches, NO_PARTITION_LEADER_EPOCH, assign_offsets=False)

    def _append(self, batches: Sequence[RecordBatch], leader_epoch: int, assign_offsets: bool) -> LogAppendInfo:
        # UnifiedLog.appendAsFollower validates with ignoreRecordSize = true: a follower copies whatever its
        # leader holds, so only a leader append checks max.message.bytes (analyzeAndValidateRecords).
        check_size = assign_offsets
        max_message_bytes = self.config.max_message_bytes
        valid_bytes = 0
        max_timestamp = NO_TIMESTAMP
        idempotent = False
        for batch in batches:
            if batch.producer_id >= 0:  # RecordBatch.hasProducerId
                idempotent = True
            size = batch.size_in_bytes
            if check_size and size > max_message_bytes:
                raise KafkaError(
                    Errors.MESSAGE_TOO_LARGE,
                    f"batch of {size} bytes exceeds max.message.bytes {max_message_bytes} in {self.name}",
                )
            valid_bytes += size
            if batch.create_time_ms > max_timestamp:
                max_timestamp = batch.create_time_ms
        if valid_bytes <= 0:
            return LogAppendInfo(-1, -1, max_timestamp, log_start_offset=self._log_start_offset)

        if assign_offsets:
            offset = self._log_end_offset_metadata.message_offset
            stamped = []
            for batch in batches:
                stamped.append(batch.with_offsets(offset, leader_epoch))
                offset += batch.record_count
            batches = stamped
        else:
            self._check_follower_offsets(batches)
        first_offset = batches[0].base_offset
        last_offset = batches[-1].last_offset

        if valid_bytes > self.config.segment_bytes:
            raise KafkaError(
                Errors.RECORD_LIST_TOO_LARGE,
                f"record set of {valid_bytes} bytes exceeds segment.bytes {self.config.segment_bytes} "
                f"in {self.name}",
            )
        segment = self._maybe_roll(valid_bytes, first_offset, last_offset, max_timestamp)
        updated_producers: dict[int, ProducerAppendInfo] | None = None
        if idempotent:
            # UnifiedLog.append: after the roll (a duplicate may still roll), before the write.
            origin = AppendOrigin.CLIENT if assign_offsets else AppendOrigin.REPLICATION
            analyzed = self._analyze_and_validate_producer_state(batches, origin)
            if isinstance(analyzed, BatchMetadata):
                # A duplicate is not written: the answer is the original batch's offsets, its timestamp as the
                # log append time and the current log start offset (UnifiedLog.append's maybeDuplicate case).
                return LogAppendInfo(
                    analyzed.first_offset,
                    analyzed.last_offset,
                    max_timestamp,
                    analyzed.timestamp,
                    self._log_start_offset,
                    valid_bytes,
                )
            updated_producers = analyzed
        segment.append(batches, valid_bytes, max_timestamp, self.config.index_interval_bytes)
        self._log_end_offset_metadata = LogOffsetMetadata(last_offset + 1, segment.base_offset, segment.size)
        if updated_producers is not None:
            producer_state_manager = self.producer_state_manager
            for append_info in updated_producers.values():
                producer_state_manager.update(append_info)
            producer_state_manager.update_map_end_offset(last_offset + 1)

        cache = self.leader_epoch_cache
        for batch in batches:
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (epoch != cache.latest_epoch):
                cache.assign(epoch, batch.base_offset)
        self._update_high_watermark_with_log_end_offset()
        self._changed()
        if self._disk is not None:
            self._disk.wrote(valid_bytes)
            self.unflushed_bytes += valid_bytes
            # UnifiedLog.append: `if (localLog.unflushedMessages >= config.flushInterval) flush(false)`, on the
            # appending thread (LocalLog.unflushedMessages = logEndOffset - recoveryPoint).
            if last_offset + 1 - self.recovery_point >= self.config.flush_messages:
                self.flush()
        return LogAppendInfo(
            first_offset, last_offset, max_timestamp, NO_TIMESTAMP, self._log_start_offset, valid_bytes
        )

    # ------------------------------------------------------------------------------------------- flush

    def flush(self, *, foreground: bool = True) -> bool:
        """Kafka's ``UnifiedLog.flush(false)``: flush up to the LEO if anything lies above the recovery point
        (``LocalLog.flush`` then ``markFlushed``); True iff it flushed. ``foreground``: the calling thread
        waits for the disk (an append's flush, the log flusher task's); else the disk only is busy (the
        roll's ``flush-log`` task). Simplification: the recovery point and ``lastFlushTime`` move when the
        flush is asked for, not when it ends."""
        disk = self._disk
        end = self._log_end_offset_metadata.message_offset
        if disk is None or end <= self.recovery_point:
            return False
        disk.flush(self.unflushed_bytes, foreground=foreground)
        self.recovery_point = end
        self.unflushed_bytes = 0
        self.last_flush_time = self.time.milliseconds()
        return True

    def _recovery_point_at_most(self, offset: int, at_least: int = 0) -> None:
        """After a truncation (``offset``: the new LEO) or a new log start (``at_least``): the recovery point
        stays within the log (LocalLog.truncateTo / UnifiedLog.maybeIncrementLogStartOffset move it) and the
        unflushed bytes are recounted from the batches above it."""
        if self._disk is None:
            return
        self.recovery_point = max(min(self.recovery_point, offset), at_least)
        unflushed = 0
        recovery_point = self.recovery_point
        for segment in reversed(self._segments):
            batches = segment.batches
            for index in range(len(batches) - 1, -1, -1):
                batch = batches[index]
                if batch.base_offset < recovery_point:
                    self.unflushed_bytes = unflushed
                    return
                unflushed += batch.size_in_bytes
        self.unflushed_bytes = unflushed

    def _analyze_and_validate_producer_state(
        self, batches: Sequence[RecordBatch], origin: AppendOrigin
    ) -> dict[int, ProducerAppendInfo] | BatchMetadata:
        """Kafka's ``UnifiedLog.analyzeAndValidateProducerState``: a client batch the producer already wrote
        (same epoch, same sequence range, among its last 5 batches) returns that batch's metadata; otherwise
        each producer's batches are validated (raising OUT_OF_ORDER_SEQUENCE_NUMBER or
        INVALID_PRODUCER_EPOCH) into the updates to apply once written."""
        producer_state_manager = self.producer_state_manager
        producers = producer_state_manager.active_producers
        updated: dict[int, ProducerAppendInfo] = {}
        for batch in batches:
            producer_id = batch.producer_id
            if producer_id < 0:
                continue
            if origin is AppendOrigin.CLIENT:
                last_entry = producers.get(producer_id)
                # ProducerStateEntry.findDuplicateBatch: the same epoch, exactly the same sequence range
                if last_entry is not None and last_entry.producer_epoch == batch.producer_epoch:
                    duplicate = last_entry.batch_with_sequence_range(batch.base_sequence, batch.last_sequence)
                    if duplicate is not None:
                        return duplicate
            append_info = updated.get(producer_id)
            if append_info is None:
                append_info = updated[producer_id] = producer_state_manager.prepare_update(producer_id, origin)
            append_info.append(batch)
        return updated

    def _check_follower_offsets(self, batches: Sequence[RecordBatch]) -> None:
        # A fetcher bug, not a Kafka error a client could see: Kafka throws UnexpectedAppendOffset /
        # OffsetsOutOfOrder here too.
        expected = self.log_end_offset
        for batch in batches:
            if batch.base_offset != expected:
                raise ValueError(
                    f"{self.name}: follower append expected a batch at offset {expected}, "
                    f"got base offset {batch.base_offset}"
                )
            expected = batch.next_offset

    # -------------------------------------------------------------------------------------------- roll

    def _random_segment_jitter(self) -> int:
        jitter = self.config.segment_jitter_ms
        if jitter == 0:
            return 0
        rng = self._rng if self._rng is not None else random.Random(0)
        return rng.randrange(min(jitter, self.config.segment_ms))

    def _maybe_roll(self, incoming_bytes: int, first_offset: int, last_offset: int, max_timestamp: int) -> LogSegment:
        segment = self._segments[-1]
        now = self.time.milliseconds()
        reason = segment.roll_reason(self.config, incoming_bytes, max_timestamp, last_offset, now)
        if reason:
            # Kafka rolls at the incoming first offset (or lastOffset - Int.MAX on offset overflow).
            roll_offset = first_offset
            if last_offset - first_offset > 2**31 - 1:
                roll_offset = last_offset - (2**31 - 1)
            return self.roll(roll_offset, reason)
        return segment

    def roll(self, expected_next_offset: int | None = None, reason: str = ROLL_REQUESTED) -> LogSegment:
        """Start a new active segment at ``max(expected_next_offset, LEO)`` (Kafka's ``roll``); ``reason`` says
        why, for the listener (a ``ROLL_*`` name)."""
        log_end_offset = self.log_end_offset
        new_offset = max(expected_next_offset if expected_next_offset is not None else 0, log_end_offset)
        if self._disk is not None:
            # UnifiedLog.roll: `scheduler.scheduleOnce("flush-log", () => flushUptoOffsetExclusive(newSegment
            # .baseOffset))`, on the scheduler's thread: the disk is busy, the appending thread is not held.
            # Simplification: flushed when the roll happens, not when the scheduler gets to it.
            self.flush(foreground=False)
        now = self.time.milliseconds()
        active = self._segments[-1]
        new_segment = LogSegment(new_offset, now, self._random_segment_jitter())
        if active.base_offset == new_offset and active.is_empty:
            # Kafka replaces an empty active segment at the same offset instead of adding a second one.
            self._segments[-1] = new_segment
        elif active.base_offset >= new_offset:
            raise ValueError(f"{self.name}: cannot roll to {new_offset}, a segment already starts at {active.base_offset}")
        else:
            self._add_segment(new_segment)
        self._log_end_offset_metadata = LogOffsetMetadata(log_end_offset, new_offset, 0)
        # UnifiedLog.roll: a producer state snapshot at the new segment's base offset. Kafka deletes the older
        # ones when the recovery point moves past them (deleteSnapshotsAfterRecoveryPointCheckpoint keeps those
        # from the second-to-last segment on); the recovery point moves when a roll flushes, so here.
        producer_state_manager = self.producer_state_manager
        producer_state_manager.update_map_end_offset(new_offset)
        producer_state_manager.take_snapshot()
        if len(self._segments) >= 2:
            producer_state_manager.delete_snapshots_before(self._segments[-2].base_offset)
        # Kafka's UnifiedLog.roll (updateHighWatermarkWithLogEndOffset): a roll silently moves the HW metadata
        # to the new segment when HW == LEO.
        self._update_high_watermark_with_log_end_offset()
        self._changed()
        on_roll = self._on_roll
        if on_roll is not None:
            on_roll(new_offset, reason)
        if self._on_high_watermark_segment is not None:
            high_watermark = self._high_watermark_metadata
            if high_watermark.segment_base_offset == new_offset:
                # The HW was the LEO: its metadata moved to the new segment with the roll (same offset), which
                # the append's purgatory check that follows sees.
                if self._high_watermark_to_reach or self._high_watermark_to_pass:
                    self._high_watermark_crossed_segments(high_watermark)
                self._on_high_watermark_segment(new_offset, False)
                self._high_watermark_to_pass.append(new_offset)
            else:
                self._high_watermark_to_reach.append(new_offset)
        return new_segment

    def _changed(self) -> None:
        on_change = self._on_change
        if on_change is not None:
            on_change()

    def _add_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._segment_bases.append(segment.base_offset)

    # -------------------------------------------------------------------------------------------- read

    def read(
        self, start_offset: int, max_length: int, isolation: FetchIsolation, min_one_message: bool
    ) -> FetchDataInfo:
        """Kafka's ``UnifiedLog.read``: batch-aligned start, byte-bounded end, bounded by the LEO
        (followers), the HW (consumers) or the LSO; raises OFFSET_OUT_OF_RANGE outside the log."""
        if isolation is FetchIsolation.LOG_END:
            max_offset_metadata = self._log_end_offset_metadata
        elif isolation is FetchIsolation.HIGH_WATERMARK:
            max_offset_metadata = self.fetch_high_watermark_metadata()
        else:
            max_offset_metadata = self.fetch_last_stable_offset_metadata()
        if start_offset == max_offset_metadata.message_offset and start_offset >= self._log_start_offset:
            # _local_read's answer at the end (the log start is never below the first segment's base, so its
            # range checks pass), without them: most partitions of a fetch have nothing new. FetchDataInfo is
            # never modified, so one object serves every read at this end.
            empty = self._empty_read
            if empty is None or empty.fetch_offset_metadata is not max_offset_metadata:
                empty = self._empty_read = FetchDataInfo(max_offset_metadata)
            return empty
        return self._local_read(start_offset, max_length, max_offset_metadata, min_one_message)

    def _local_read(
        self, start_offset: int, max_length: int, max_offset_metadata: LogOffsetMetadata, min_one_message: bool
    ) -> FetchDataInfo:
        if start_offset < self._log_start_offset:
            raise KafkaError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"{self.name}: offset {start_offset} is below the log start offset {self._log_start_offset}",
            )
        end_offset_metadata = self._log_end_offset_metadata
        index = bisect_right(self._segment_bases, start_offset) - 1
        if start_offset > end_offset_metadata.message_offset or index < 0:
            raise KafkaError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"{self.name}: offset {start_offset} is outside [{self._log_start_offset}, "
                f"{end_offset_metadata.message_offset}]",
            )
        max_offset = max_offset_metadata.message_offset
        if start_offset == max_offset:
            return FetchDataInfo(max_offset_metadata)
        if start_offset > max_offset:
            return FetchDataInfo(self.convert_to_offset_metadata_or_throw(start_offset))

        segments = self._segments
        max_segment_base = max_offset_metadata.segment_base_offset
        while index < len(segments):
            segment = segments[index]
            if segment.base_offset < max_segment_base:
                max_position: int | None = segment.size
            elif segment.base_offset == max_segment_base and (
                max_segment_base != UNKNOWN_OFFSET or max_offset_metadata.relative_position_in_segment != UNKNOWN_OFFSET
            ):  # (not message_offset_only, inlined)
                max_position = max_offset_metadata.relative_position_in_segment
            else:
                max_position = None
            info = segment.read(start_offset, max_length, max_position, min_one_message)
            if info is not None:
                return info
            index += 1
        # Beyond the last batch of the last segment: nothing to read at the LEO.
        return FetchDataInfo(end_offset_metadata)

    def convert_to_offset_metadata_or_throw(self, offset: int) -> LogOffsetMetadata:
        """Full metadata of ``offset`` (the batch holding it, or the LEO metadata at the LEO)."""
        return self._local_read(offset, 1, self._log_end_offset_metadata, False).fetch_offset_metadata

    def maybe_convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Like ``convert_to_offset_metadata_or_throw`` but message-only outside the log (3.8+,
        KAFKA-16452)."""
        try:
            return self.convert_to_offset_metadata_or_throw(offset)
        except KafkaError as e:
            if e.error is Errors.OFFSET_OUT_OF_RANGE:
                return LogOffsetMetadata(offset)
            raise

    # ------------------------------------------------------------------------------------ high watermark

    def fetch_high_watermark_metadata(self) -> LogOffsetMetadata:
        """The HW with full segment metadata, materialised (and cached) when stored message-only."""
        metadata = self._high_watermark_metadata
        # LogOffsetMetadata.message_offset_only, inlined: every fetch read and parked check asks.
        if metadata.segment_base_offset == UNKNOWN_OFFSET and metadata.relative_position_in_segment == UNKNOWN_OFFSET:
            # A cache, not a change (nothing is recorded): the full metadata of the same offset, which only a
            # recorded change (append, roll, truncation, log start move) could make different.
            metadata = self.maybe_convert_to_offset_metadata(metadata.message_offset)
            self._high_watermark_metadata = metadata
        return metadata

    def fetch_last_stable_offset_metadata(self) -> LogOffsetMetadata:
        """No transactions are simulated: the LSO is the HW (the seam for a transaction model)."""
        return self.fetch_high_watermark_metadata()

    def fetch_offset_snapshot(self) -> LogOffsetSnapshot:
        high_watermark = self.fetch_high_watermark_metadata()
        return LogOffsetSnapshot(
            self._log_start_offset, self._log_end_offset_metadata, high_watermark, high_watermark
        )

    def maybe_increment_high_watermark(self, new_high_watermark: LogOffsetMetadata) -> LogOffsetMetadata | None:
        """Leader: raise the HW to ``new_high_watermark``; returns the old HW if it "increased", else None.

        Kafka's ``UnifiedLog.maybeIncrementHighWatermark``: the same offset on a newer segment also counts as
        an increase, so purgatory checks run after a roll moved the replicas' LEO metadata."""
        if new_high_watermark.message_offset > self.log_end_offset:
            raise ValueError(
                f"{self.name}: high watermark {new_high_watermark} update exceeds the log end offset "
                f"{self._log_end_offset_metadata}"
            )
        old = self._high_watermark_metadata
        if old.message_offset < new_high_watermark.message_offset or (
            old.message_offset == new_high_watermark.message_offset and old.on_older_segment(new_high_watermark)
        ):
            self._high_watermark_metadata = new_high_watermark
            self._changed()
            if self._high_watermark_to_reach or self._high_watermark_to_pass:
                self._high_watermark_crossed_segments(new_high_watermark)
            return old
        return None

    def _high_watermark_crossed_segments(self, high_watermark: LogOffsetMetadata) -> None:
        """Tell the listener of the rolled segments the new HW now lies in or beyond (reached) and of those it
        now lies above the base offset of (passed). The segment of a message-only HW is its offset's."""
        listener = self._on_high_watermark_segment
        assert listener is not None  # nothing awaits without one
        offset = high_watermark.message_offset
        segment_base = high_watermark.segment_base_offset
        if segment_base == UNKNOWN_OFFSET:
            segment_base = self._segment_bases[bisect_right(self._segment_bases, offset) - 1]
        to_pass = self._high_watermark_to_pass
        passed = 0
        while passed < len(to_pass) and to_pass[passed] < offset:
            listener(to_pass[passed], True)
            passed += 1
        del to_pass[:passed]
        to_reach = self._high_watermark_to_reach
        reached = 0
        while reached < len(to_reach) and to_reach[reached] <= segment_base:
            base_offset = to_reach[reached]
            listener(base_offset, False)
            if base_offset < offset:
                listener(base_offset, True)
            else:
                to_pass.append(base_offset)
            reached += 1
        del to_reach[:reached]

    def update_high_watermark(self, high_watermark: int | LogOffsetMetadata) -> int:
        """Set the HW clamped into [log start, LEO] (Kafka's ``updateHighWatermark``); returns it."""
        metadata = (
            high_watermark if isinstance(high_watermark, LogOffsetMetadata) else LogOffsetMetadata(high_watermark)
        )
        end = self._log_end_offset_metadata
        if metadata.message_offset < self._log_start_offset:
            metadata = LogOffsetMetadata(self._log_start_offset)
        elif metadata.message_offset >= end.message_offset:
            metadata = end
        if metadata is not self._high_watermark_metadata:
            self._high_watermark_metadata = metadata
            self._changed()
        # Set from outside (a follower copying its leader's, a new leader's start): the segments it lies in or
        # beyond wake no parked fetch of this replica's; only a leader's increases are told.
        self._high_watermark_to_reach.clear()
        self._high_watermark_to_pass.clear()
        return metadata.message_offset

    def maybe_update_high_watermark(self, high_watermark: int) -> int | None:
        """Follower: take the leader's HW, clamped to ``[log start, own LEO]`` (Kafka's
        ``UnifiedLog.maybeUpdateHighWatermark``); returns the new HW only if it changed. The stored value is
        message-only unless it equals the LEO."""
        old = self._high_watermark_metadata.message_offset
        new = self.update_high_watermark(high_watermark)
        return None if new == old else new

    def _update_high_watermark_with_log_end_offset(self) -> None:
        end = self._log_end_offset_metadata
        if self._high_watermark_metadata.message_offset >= end.message_offset:
            self._high_watermark_metadata = end

    # ------------------------------------------------------------------------- log start and truncation

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Advance the log start offset (never past the HW); True iff it moved."""
        if new_log_start_offset <= self._log_start_offset:
            return False
        if new_log_start_offset > self.high_watermark:
            raise KafkaError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"{self.name}: cannot increment the log start offset to {new_log_start_offset} since it is "
                f"larger than the high watermark {self.high_watermark}",
            )
        self._log_start_offset = new_log_start_offset
        if new_log_start_offset > self.recovery_point:
            self._recovery_point_at_most(self.log_end_offset, new_log_start_offset)
        self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
        self.producer_state_manager.on_log_start_offset_incremented(new_log_start_offset)
        self._changed()
        return True

    def delete_old_segments(self) -> int:
        """Kafka's ``UnifiedLog.deleteOldSegments`` for ``cleanup.policy=delete`` (the only policy here):
        segments wholly below the log start offset, then those breaching ``retention.bytes``, then those
        breaching ``retention.ms``. Returns how many segments went. The caller is the periodic retention
        task (Kafka's ``LogManager.cleanupLogs``), on the leader's and on every follower's log alike.
        Deleting segments drops their batches (the memory they hold) and advances the log start offset to
        the new first segment's base offset; it does not drop producer state (Kafka keeps a producer whose
        batches are all deleted until it expires).

        Producer expiration (``removeExpiredProducers``) runs here too: Kafka runs it on its own schedule,
        every ``producer.id.expiration.check.interval.ms`` (10 minutes), which the simulator folds into this
        periodic check so it needs no timer of its own.
        """
        self.remove_expired_producers(self.time.milliseconds())
        return (
            self._delete_old_segments(self._log_start_offset_breached)
            + self._delete_retention_size_breached_segments()
            + self._delete_retention_ms_breached_segments()
        )

    def _log_start_offset_breached(self, segment: LogSegment, next_segment: LogSegment | None) -> bool:
        return next_segment is not None and next_segment.base_offset <= self._log_start_offset

    def _delete_retention_size_breached_segments(self) -> int:
        retention_bytes = self.config.retention_bytes
        if retention_bytes < 0:
            return 0
        size = self.size_in_bytes
        if size < retention_bytes:
            return 0
        # Oldest first, each while what remains is still >= retention.bytes: the log may end up below it
        # by less than one segment, never above it by a whole deletable segment.
        excess = size - retention_bytes

        def should_delete(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        return self._delete_old_segments(should_delete)

    def _delete_retention_ms_breached_segments(self) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        now = self.time.milliseconds()
        return self._delete_old_segments(lambda segment, _next: now - segment.largest_timestamp > retention_ms)

    def _delete_old_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        """Kafka's ``deletableSegments`` + ``deleteSegments``: the longest prefix of segments that are
        entirely below the HW (so the log start offset never passes it) and satisfy ``predicate``, except
        an empty last segment. Kafka does delete a non-empty *active* segment that qualifies (every record
        older than retention.ms and HW = LEO): it rolls first, so the log always keeps one segment."""
        segments = self._segments
        count = len(segments)
        high_watermark = self.high_watermark
        deletable = 0
        while deletable < count:
            segment = segments[deletable]
            next_segment = segments[deletable + 1] if deletable + 1 < count else None
            if next_segment is None and segment.size == 0:
                break
            upper_bound_offset = next_segment.base_offset if next_segment is not None else self.log_end_offset
            # Kafka evaluates the predicate only for segments below the HW (size retention counts on it).
            if not (high_watermark >= upper_bound_offset and predicate(segment, next_segment)):
                break
            deletable += 1
        if deletable == 0:
            return 0
        if deletable == count:
            self.roll(reason=ROLL_RETENTION)  # at the LEO, above the last deletable (non-empty) segment's base
        producer_state_manager = self.producer_state_manager
        for segment in segments[:deletable]:
            # UnifiedLog.deleteSegments -> deleteProducerSnapshots: the deleted segments' snapshots go
            producer_state_manager.remove_snapshot(segment.base_offset)
        del segments[:deletable]
        del self._segment_bases[:deletable]
        self.maybe_increment_log_start_offset(segments[0].base_offset)
        self._changed()
        return deletable

    def truncate_to(self, target_offset: int) -> bool:
        """Truncate to ``target_offset`` (a restarting follower truncates to its HW); True iff anything
        was removed. Batches whose last offset is >= the target go; the HW drops with the LEO."""
        if target_offset < 0:
            raise ValueError(f"{self.name}: cannot truncate to negative offset {target_offset}")
        if target_offset >= self.log_end_offset:
            return False
        if self._segments[0].base_offset > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        # The producer state ends at the LEO (Kafka's map end offset, moved by every append).
        self.producer_state_manager.update_map_end_offset(self.log_end_offset)
        # Kafka deletes the segments based strictly above the target; one based at the target stays, empty.
        keep = bisect_right(self._segment_bases, target_offset)
        del self._segments[keep:]
        del self._segment_bases[keep:]
        for awaiting in (self._high_watermark_to_reach, self._high_watermark_to_pass):
            while awaiting and awaiting[-1] > target_offset:
                awaiting.pop()  # that segment is gone
        active = self._segments[-1]
        active.truncate_to(target_offset, self.time.milliseconds())
        # Truncation targets are batch boundaries (a HW or an epoch end offset), so the LEO is the target.
        new_end = target_offset
        self._log_end_offset_metadata = LogOffsetMetadata(new_end, active.base_offset, active.size)
        self.leader_epoch_cache.truncate_from_end(new_end)
        self._log_start_offset = min(new_end, self._log_start_offset)
        self._rebuild_producer_state(new_end)
        self._recovery_point_at_most(new_end)
        if self.high_watermark >= new_end:
            self._high_watermark_metadata = self._log_end_offset_metadata
        self._changed()
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Empty the log and restart it at ``new_offset`` (LEO = HW = log start = new_offset)."""
        self._segments.clear()
        self._segment_bases.clear()
        self._high_watermark_to_reach.clear()
        self._high_watermark_to_pass.clear()
        self._add_segment(LogSegment(new_offset, self.time.milliseconds(), self._random_segment_jitter()))
        self._log_end_offset_metadata = LogOffsetMetadata(new_offset, new_offset, 0)
        self._high_watermark_metadata = self._log_end_offset_metadata
        self._log_start_offset = new_offset
        self.leader_epoch_cache.clear()
        self.producer_state_manager.truncate_fully_and_start_at(new_offset)
        self._rebuild_producer_state(new_offset)
        self.recovery_point = new_offset
        self.unflushed_bytes = 0
        self._changed()

    # ----------------------------------------------------------------------------------- producer state

    def _rebuild_producer_state(self, last_offset: int) -> None:
        """Kafka's ``UnifiedLog.rebuildProducerState`` after a truncation: reload the latest snapshot at or
        below ``last_offset`` (none: from the log start) and replay the batches from it up to ``last_offset``,
        unchecked (origin REPLICATION); then snapshot at ``last_offset``. A log that had no producers skips the
        replay (Kafka's ``isEmptyBeforeTruncation``), so a non-idempotent log never scans its segments."""
        producer_state_manager = self.producer_state_manager
        is_empty_before_truncation = (
            producer_state_manager.is_empty and producer_state_manager.map_end_offset >= last_offset
        )
        producer_state_manager.truncate_and_reload(self._log_start_offset, last_offset, self.time.milliseconds())
        map_end_offset = producer_state_manager.map_end_offset
        if last_offset > map_end_offset and not is_empty_before_truncation:
            start_offset = max(map_end_offset, self._log_start_offset)
            loaded: dict[int, ProducerAppendInfo] = {}
            for segment in self._segments[max(bisect_right(self._segment_bases, start_offset) - 1, 0) :]:
                if segment.base_offset >= last_offset:
                    break
                for batch in segment.batches:
                    if batch.last_offset < start_offset or batch.producer_id < 0:
                        continue
                    if batch.base_offset >= last_offset:
                        break
                    # UnifiedLog.loadProducersFromRecords
                    append_info = loaded.get(batch.producer_id)
                    if append_info is None:
                        append_info = loaded[batch.producer_id] = producer_state_manager.prepare_update(
                            batch.producer_id, AppendOrigin.REPLICATION
                        )
                    append_info.append(batch)
            for append_info in loaded.values():
                producer_state_manager.update(append_info)
        producer_state_manager.update_map_end_offset(last_offset)
        producer_state_manager.take_snapshot()

    def take_producer_snapshot(self) -> None:
        """Kafka's ``UnifiedLog.takeProducerSnapshot``: a snapshot at the log end offset."""
        producer_state_manager = self.producer_state_manager
        producer_state_manager.update_map_end_offset(self.log_end_offset)
        producer_state_manager.take_snapshot()

    def remove_expired_producers(self, current_time_ms: int) -> int:
        """Kafka's ``UnifiedLog.removeExpiredProducers``: forget producers idle for
        ``producer.id.expiration.ms``; returns how many went."""
        return self.producer_state_manager.remove_expired_producers(current_time_ms)

    # ------------------------------------------------------------------------------------ leader epochs

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A new leader epoch starts at ``start_offset`` (called by ``Partition.make_leader``)."""
        self.leader_epoch_cache.assign(leader_epoch, start_offset)
        self._changed()

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """``(epoch, end offset)`` of the largest epoch <= ``leader_epoch``, or None if unknown."""
        epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
        if offset == UNDEFINED_EPOCH_OFFSET:
            return None
        return epoch, offset

    def __repr__(self) -> str:
        return (
            f"Log({self.name!r}, start={self._log_start_offset}, hw={self._high_watermark_metadata}, "
            f"leo={self._log_end_offset_metadata}, segments={len(self._segments)})"
        )
