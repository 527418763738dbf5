"""``LogOffsetMetadata``: an offset plus where it sits on disk (Kafka's ``LogOffsetMetadata``, 3.8+ rules of
KAFKA-16452)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

UNKNOWN_OFFSET: Final = -1


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """A message offset with its segment's base offset and the byte position of the batch holding it.

    Worked example: a log with segments based at 0 (4 batches of 100 bytes, offsets 0..39) and 40
    (active). Offset 25 lives in the third batch of the first segment: ``(25, 0, 200)``. The log end
    offset 40 right after the roll is ``(40, 40, 0)``; the same offset seen from the old segment's end is
    ``(40, 0, 400)`` -- which is why DelayedFetch never compares segments of equal offsets
    (``DelayedFetch.tryComplete``).

    ``LogOffsetMetadata(o)`` alone is "message offset only": a follower's HW copied from the leader, or an
    offset outside the local log. Since 3.8 comparisons with such metadata answer False instead of raising.

    A frozen dataclass (the public contract), built by the generated ``__init__``: a few tenths of a µs more
    per instance than plain assignments, in either build, for a few instances per request.
    """

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = UNKNOWN_OFFSET

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET and self.relative_position_in_segment == UNKNOWN_OFFSET

    def on_older_segment(self, that: LogOffsetMetadata) -> bool:
        """True iff this is on a segment strictly older than ``that``'s; False if either is message-only."""
        # message_offset_only inlined on both sides: DelayedFetch calls this on every parked check.
        base, that_base = self.segment_base_offset, that.segment_base_offset
        if (base == UNKNOWN_OFFSET and self.relative_position_in_segment == UNKNOWN_OFFSET) or (
            that_base == UNKNOWN_OFFSET and that.relative_position_in_segment == UNKNOWN_OFFSET
        ):
            return False
        return base < that_base

    def on_same_segment(self, that: LogOffsetMetadata) -> bool:
        """True iff both are on the same segment; False if either is message-only."""
        base, that_base = self.segment_base_offset, that.segment_base_offset
        if (base == UNKNOWN_OFFSET and self.relative_position_in_segment == UNKNOWN_OFFSET) or (
            that_base == UNKNOWN_OFFSET and that.relative_position_in_segment == UNKNOWN_OFFSET
        ):
            return False
        return base == that_base

    def position_diff(self, that: LogOffsetMetadata) -> int:
        """Bytes between the two positions; only meaningful on the same segment (raises otherwise)."""
        if self.message_offset_only:
            raise ValueError(
                f"{self} cannot compare its segment position with {that} since it only has message offset info"
            )
        if not self.on_same_segment(that):
            raise ValueError(
                f"{self} cannot compare its segment position with {that} since they are not on the same segment"
            )
        return self.relative_position_in_segment - that.relative_position_in_segment

    def __str__(self) -> str:
        return (
            f"(offset={self.message_offset}, "
            f"segment=[{self.segment_base_offset}:{self.relative_position_in_segment}])"
        )


# 3.8+: (-1, -1, -1), i.e. message-only (it was (-1, 0, 0) before; KAFKA-16452).
UNKNOWN_OFFSET_METADATA: Final = LogOffsetMetadata(-1, -1, -1)
