"""``LeaderEpochFileCache``: which leader epoch wrote which offsets (in memory; no checkpoint file).

It answers ``OffsetsForLeaderEpoch`` / the follower's ``lastFetchedEpoch`` check (``DelayedFetch.tryComplete``
case H, ``Partition.fetchRecords``' diverging epoch): "where does epoch e end in this log?".
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Final, NamedTuple

UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """Epoch entries ``(epoch, start offset)`` with strictly increasing epochs and start offsets."""

    __slots__ = ("_epochs", "_entries", "latest_epoch")

    def __init__(self) -> None:
        self._entries: list[EpochEntry] = []
        self._epochs: list[int] = []  # parallel to _entries, for bisect
        # The last entry's epoch (UNDEFINED_EPOCH when empty), kept by every change below: every follower fetch
        # and parked check asks (a plain attribute, not a property). Read-only for everyone else.
        self.latest_epoch = UNDEFINED_EPOCH

    def _latest_changed(self) -> None:
        self.latest_epoch = self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; entries it contradicts are dropped (Kafka's
        ``maybeTruncateNonMonotonicEntries``). True iff the cache changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"leader epoch {epoch} and start offset {start_offset} must be >= 0")
        if self._entries:
            latest = self._entries[-1]
            if epoch == latest.epoch and start_offset >= latest.start_offset:
                return False
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
            self._epochs.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self._epochs.append(epoch)
        self.latest_epoch = epoch
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)``: the largest known epoch <= the requested one and the start offset of the
        first epoch after it (the LEO for the latest epoch); undefined when the request is beyond any known
        epoch. Kafka's ``LeaderEpochFileCache.endOffsetFor``."""
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # Older than every known epoch: its end is where the first known epoch starts.
            return requested_epoch, self._entries[0].start_offset
        return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (log truncated to it)."""
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
            self._epochs.pop()
        self._latest_changed()

    def truncate_from_start(self, start_offset: int) -> None:
        """Log start moved to ``start_offset``: the epoch covering it now starts there."""
        keep_from = 0
        for i, entry in enumerate(self._entries):
            if entry.start_offset <= start_offset:
                keep_from = i
        if self._entries and self._entries[keep_from].start_offset < start_offset:
            self._entries[keep_from] = EpochEntry(self._entries[keep_from].epoch, start_offset)
        del self._entries[:keep_from]
        del self._epochs[:keep_from]
        self._latest_changed()

    def clear(self) -> None:
        self._entries.clear()
        self._epochs.clear()
        self.latest_epoch = UNDEFINED_EPOCH
