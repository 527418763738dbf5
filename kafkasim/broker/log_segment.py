"""``LogSegment``: one file of the log, here the batches it holds with their offsets and byte positions."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Final

from kafkasim.broker.config import LogConfig
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.records import NO_TIMESTAMP, RecordBatch

_INT32_MAX: Final = 2**31 - 1

# Why a segment rolls: LogSegment.shouldRoll's conditions, in its order (UnifiedLog.maybeRoll logs the sizes
# and the inactive time that decided). ``Log`` adds its own for rolls outside an append.
ROLL_SEGMENT_BYTES: Final = "segment.bytes"
ROLL_SEGMENT_MS: Final = "segment.ms"
ROLL_OFFSET_INDEX_FULL: Final = "offset index full"
ROLL_TIME_INDEX_FULL: Final = "time index full"
ROLL_OFFSET_OVERFLOW: Final = "offset overflow"
_NO_BATCHES: tuple[RecordBatch, ...] = ()


class FetchDataInfo:
    """The result of a log read: where it started and the bytes it returned (Kafka's ``FetchDataInfo``).

    ``records`` are the whole batches in the byte range. A read is byte-bounded, so it may end inside a
    batch: that batch is ``partial_batch`` (counted in ``size_in_bytes``, unusable by the client, exactly
    like the trailing partial batch a Kafka client discards). ``first_entry_incomplete`` is Kafka's flag
    for "the very first batch did not fit" (only possible without min-one-message).
    """

    __slots__ = ("fetch_offset_metadata", "records", "partial_batch", "size_in_bytes", "first_entry_incomplete")

    def __init__(
        self,
        fetch_offset_metadata: LogOffsetMetadata,
        records: Sequence[RecordBatch] = _NO_BATCHES,
        size_in_bytes: int = 0,
        partial_batch: RecordBatch | None = None,
        first_entry_incomplete: bool = False,
    ) -> None:
        self.fetch_offset_metadata = fetch_offset_metadata
        self.records = records
        self.size_in_bytes = size_in_bytes
        self.partial_batch = partial_batch
        self.first_entry_incomplete = first_entry_incomplete

    @staticmethod
    def empty(fetch_offset: int) -> FetchDataInfo:
        """Kafka's ``FetchDataInfo.empty``: no records, message-only metadata."""
        return FetchDataInfo(LogOffsetMetadata(fetch_offset))

    def __repr__(self) -> str:
        return (
            f"FetchDataInfo({self.fetch_offset_metadata}, batches={len(self.records)}, "
            f"bytes={self.size_in_bytes}, partial={self.partial_batch is not None})"
        )


class LogSegment:
    """Batches appended to one segment, located by offset with bisect.

    Parallel lists: ``_batches[i]`` ends at byte ``_end_positions[i]`` and its last offset is
    ``_last_offsets[i]``; the batch starts where the previous one ended. The offset and time indexes are
    reduced to their entry counts, which is all the roll rule (index full) needs.
    """

    __slots__ = (
        "base_offset",
        "size",
        "created_ms",
        "roll_jitter_ms",
        "_batches",
        "_last_offsets",
        "_end_positions",
        "_first_batch_timestamp",
        "max_timestamp_so_far",
        "_bytes_since_last_index_entry",
        "_last_indexed_timestamp",
        "offset_index_entries",
        "time_index_entries",
    )

    def __init__(self, base_offset: int, created_ms: int, roll_jitter_ms: int = 0) -> None:
        self.base_offset = base_offset
        self.size = 0
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self._batches: list[RecordBatch] = []
        self._last_offsets: list[int] = []
        self._end_positions: list[int] = []
        self._first_batch_timestamp = NO_TIMESTAMP
        self.max_timestamp_so_far = NO_TIMESTAMP
        self._bytes_since_last_index_entry = 0
        self._last_indexed_timestamp = NO_TIMESTAMP
        self.offset_index_entries = 0
        self.time_index_entries = 0

    @property
    def batches(self) -> Sequence[RecordBatch]:
        return self._batches

    @property
    def is_empty(self) -> bool:
        return not self._batches

    @property
    def next_offset(self) -> int:
        """One past the last offset in the segment (the base offset when empty)."""
        return self._last_offsets[-1] + 1 if self._last_offsets else self.base_offset

    def roll_reason(
        self,
        config: LogConfig,
        incoming_bytes: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        now_ms: int,
    ) -> str:
        """Kafka's ``LogSegment.shouldRoll``, evaluated once per append call: the condition that makes this
        segment roll (one of the ``ROLL_*`` names, the first that holds in Kafka's order), or "" to keep it."""
        # LogSegment.shouldRoll: the whole incoming record set counts, not just its first batch.
        if self.size > config.segment_bytes - incoming_bytes:
            return ROLL_SEGMENT_BYTES
        # LogSegment.shouldRoll: an empty segment never rolls on time; the wait is measured in batch
        # timestamps when the segment's first batch has one, and in (simulated) time since creation otherwise.
        if self.size > 0:
            if self._first_batch_timestamp >= 0:
                waited = max_timestamp_in_messages - self._first_batch_timestamp
            else:
                waited = now_ms - self.created_ms
            if waited > config.segment_ms - self.roll_jitter_ms:
                return ROLL_SEGMENT_MS
        if self.offset_index_entries >= config.max_offset_index_entries:
            return ROLL_OFFSET_INDEX_FULL
        if self.time_index_entries >= config.max_time_index_entries:
            return ROLL_TIME_INDEX_FULL
        relative = max_offset_in_messages - self.base_offset
        return "" if 0 <= relative <= _INT32_MAX else ROLL_OFFSET_OVERFLOW

    def append(
        self, batches: Sequence[RecordBatch], incoming_bytes: int, max_timestamp: int, index_interval_bytes: int
    ) -> None:
        """Append batches that already carry their offsets (one append call of the log)."""
        if not self._batches:
            self._first_batch_timestamp = batches[0].max_timestamp
        if max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_timestamp
        # Kafka adds one index entry per append call once more than index.interval.bytes were written since
        # the previous entry; the time index gets one only when the max timestamp grew.
        if self._bytes_since_last_index_entry > index_interval_bytes:
            self.offset_index_entries += 1
            if self.max_timestamp_so_far > self._last_indexed_timestamp:
                self.time_index_entries += 1
                self._last_indexed_timestamp = self.max_timestamp_so_far
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += incoming_bytes
        position = self.size
        batches_list = self._batches
        last_offsets = self._last_offsets
        end_positions = self._end_positions
        for batch in batches:
            position += batch.size_in_bytes
            batches_list.append(batch)
            last_offsets.append(batch.base_offset + batch.record_count - 1)
            end_positions.append(position)
        self.size = position

    def read(
        self, start_offset: int, max_size: int, max_position: int | None, min_one_message: bool
    ) -> FetchDataInfo | None:
        """Kafka's ``LogSegment.read``: start at the batch holding ``start_offset``, return up to
        ``max_size`` bytes (at least that batch when ``min_one_message``) but never beyond
        ``max_position``; None when the offset is past this segment's last batch."""
        i = bisect_left(self._last_offsets, start_offset)
        if i == len(self._last_offsets):
            return None
        end_positions = self._end_positions
        start_position = end_positions[i - 1] if i else 0
        first_batch_size = end_positions[i] - start_position
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start_position)
        adjusted_max_size = max(max_size, first_batch_size) if min_one_message else max_size
        if adjusted_max_size == 0 or max_position is None:
            return FetchDataInfo(metadata)
        fetch_size = min(max_position - start_position, adjusted_max_size)
        if fetch_size <= 0:
            return FetchDataInfo(metadata, first_entry_incomplete=adjusted_max_size < first_batch_size)
        end = start_position + fetch_size
        # Whole batches end at or before `end`; the next one, if it starts before `end`, is cut short.
        j = bisect_right(end_positions, end, i)
        partial = None
        if j < len(end_positions) and (end_positions[j - 1] if j > i else start_position) < end:
            partial = self._batches[j]
        return FetchDataInfo(
            metadata,
            self._batches[i:j],
            fetch_size,
            partial,
            adjusted_max_size < first_batch_size,
        )

    @property
    def largest_timestamp(self) -> int:
        """What time retention compares with now (Kafka's ``largestTimestamp``): the newest batch timestamp.

        Simplification: Kafka falls back to the file's last-modified time for a segment without timestamps;
        there is no file here, so the segment's creation time stands in (simulated batches always carry
        a create time, so the fallback only concerns empty segments)."""
        return self.max_timestamp_so_far if self.max_timestamp_so_far >= 0 else self.created_ms

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; returns the bytes removed.

        Simplification: the index entry counts are kept (Kafka truncates the index files too); they only
        matter for the index-full roll, which needs gigabytes of appends at the default settings."""
        i = bisect_left(self._last_offsets, offset)
        if i == len(self._last_offsets):
            return 0
        new_size = self._end_positions[i - 1] if i else 0
        removed = self.size - new_size
        del self._batches[i:]
        del self._last_offsets[i:]
        del self._end_positions[i:]
        self.size = new_size
        self._bytes_since_last_index_entry = 0
        if not self._batches:
            self.created_ms = now_ms
            self._first_batch_timestamp = NO_TIMESTAMP
            self.max_timestamp_so_far = NO_TIMESTAMP
        else:
            self.max_timestamp_so_far = max(b.max_timestamp for b in self._batches)
        return removed

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, batches={len(self._batches)})"
