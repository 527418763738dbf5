"""``PartitionChanges``: the broker's record of which hosted partitions changed, in order -- what lets a parked
DelayedFetch re-evaluate only the partitions that changed since its last check instead of all it watches.

Not a Kafka class. Kafka's ``DelayedFetch.tryComplete`` walks every partition of the fetch on every check;
its answer depends only on the state of those partitions (the partition map, leadership and epochs, the log's
end offset, high watermark and leader epochs) and on the request itself. So a fetch that remembers each
partition's last verdict, and the position in this record at which it took them, gives Kafka's answer by
re-evaluating only the partitions recorded since. That holds as long as every change of that state is
recorded when it happens -- not when the purgatory is next checked for its key, which can be later (the
action queue defers an append's checks to the end of the request, so a check for another key in between
must see it, as Kafka's walk would). Where the changes are recorded: ``Log`` (appends, rolls, every high
watermark move, truncation, log start moves, leader epoch assignments), ``Partition`` (``make_leader``,
``make_follower``) and ``ReplicaManager`` (partitions created, stopped, marked offline).

Worked example: a follower fetch parked on 1,000 partitions at sequence 41. A produce appends to partition
7 (recorded: 42) and the action queue checks key 7: the fetch reads entry 42, finds partition 7 in its
request, re-evaluates that one partition -- bytes now available -- and completes (Case G). Kafka's walk
would have found the same bytes on partition 7 and nothing new on the other 999.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafkasim.broker.records import TopicPartition

# Entries kept behind the newest. A fetch whose last check is older re-evaluates all its partitions (the full
# walk, always correct); with one record per append or high watermark move this is seconds of traffic.
WINDOW: Final = 1 << 16


class PartitionChanges:
    """An append-only sequence of partition keys, one entry per change; ``sequence`` is the next entry's
    number. The oldest entries are dropped in blocks of ``window``."""

    __slots__ = ("_entries", "_base", "_window", "sequence")

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self._entries: list[TopicPartition] = []
        self._base = 0  # the sequence number of _entries[0]
        self._window = window
        # The next entry's number, _base + len(_entries), kept up to date by record(): parked fetches read it
        # on every check (a plain attribute, not a property computing it). Read-only for everyone else.
        self.sequence = 0

    def record(self, key: TopicPartition) -> None:
        """``key``'s partition changed (in a way a parked fetch's verdict may depend on)."""
        entries = self._entries
        entries.append(key)
        self.sequence += 1
        if len(entries) >= 2 * self._window:
            del entries[: self._window]
            self._base += self._window

    def since(self, sequence: int) -> Sequence[TopicPartition] | None:
        """The keys recorded from ``sequence`` on (repeats included), or None if some were already dropped."""
        start = sequence - self._base
        if start < 0:
            return None
        return self._entries[start:]

    def __repr__(self) -> str:
        return f"PartitionChanges(sequence={self.sequence}, kept={len(self._entries)})"
