"""The records a `GroupWatchStrategy` keeps: each group's watches (`GroupWatchers`, `GroupWatch`), each key's
groups (`KeyGroups`), and the `CompletedRun` that stands for completed group watches in a key's list.

Not Kafka's: the simulator's speed machinery; how group watches work, and why the watch lists then hold
exactly what Kafka's would, is in `kafkasim.purgatory.group_watch_strategy`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque

from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.key_group import KeyGroup


class GroupWatch:
    """One operation watching a group: its watch sequence number and on how many of the group's keys it has
    been materialized."""

    __slots__ = ("operation", "seq", "materialized")

    def __init__(self, operation: DelayedOperation, seq: int) -> None:
        self.operation = operation
        self.seq = seq
        self.materialized = 0


class GroupWatchers:
    """The watches of one group in one purgatory.

    ``watches``: in watch order (increasing ``seq``), the watches not yet materialized on every key; an
    operation found completed when a key's turn comes moves to ``completed`` (its operations and their
    ``completed_seqs``, sorted), where it is no longer visited one by one: a key's check counts the
    completed watches it has not yet materialized by bisection and places them as `CompletedRun`s. The
    completed ones leave at the next purge, as they leave Kafka's lists. `released`: the group's owner will
    not watch it again, so the purgatory forgets the group once no watch is left.
    """

    __slots__ = (
        "group",
        "size",
        "watches",
        "completed",
        "completed_seqs",
        "completed_unmaterialized",
        "released",
    )

    def __init__(self, group: KeyGroup) -> None:
        self.group = group
        self.size = len(group)
        self.watches: deque[GroupWatch] = deque()
        self.completed: list[DelayedOperation] = []
        self.completed_seqs: list[int] = []
        # Watch-list entries of the completed watches not yet materialized (part of PurgatorySize).
        self.completed_unmaterialized = 0
        self.released = False

    @property
    def idle(self) -> bool:
        """No watch left: nothing of this group is on any key's list, materialized or not."""
        return not self.watches and not self.completed

    def has_watches_after(self, seq: int) -> bool:
        watches, completed_seqs = self.watches, self.completed_seqs
        return bool(watches and watches[-1].seq > seq) or bool(completed_seqs and completed_seqs[-1] > seq)

    def take_after(self, seq: int) -> tuple[list[GroupWatch], int]:
        """Materialize on one key every watch after `seq` (the key's materialized sequence): returns the
        live ones, in watch order, and how many completed ones there are (O(live + newly completed + log)).
        """
        watches = self.watches
        tail: list[GroupWatch] = []
        for watch in reversed(watches):
            if watch.seq <= seq:
                break
            tail.append(watch)
        live: list[GroupWatch] = []
        if tail:
            tail.reverse()
            for watch in tail:
                if watch.operation._completed:
                    self._move_to_completed(watch)
                else:
                    live.append(watch)
            if len(live) != len(tail):
                for _ in tail:
                    watches.pop()
                watches.extend(live)
            for watch in live:
                watch.materialized += 1
        completed = len(self.completed_seqs) - bisect_right(self.completed_seqs, seq)
        self.completed_unmaterialized -= completed
        return live, completed

    def _move_to_completed(self, watch: GroupWatch) -> None:
        at = bisect_right(self.completed_seqs, watch.seq)
        self.completed_seqs.insert(at, watch.seq)
        self.completed.insert(at, watch.operation)
        self.completed_unmaterialized += self.size - watch.materialized

    def count_completed_between(self, low: int, high: int) -> int:
        """Completed watches with `low < seq < high`."""
        seqs = self.completed_seqs
        return bisect_left(seqs, high) - bisect_right(seqs, low)

    def completed_between(self, low: int, high: int) -> list[tuple[int, DelayedOperation]]:
        """(seq, operation) of the completed watches with `low < seq < high`, in watch order."""
        seqs = self.completed_seqs
        start, end = bisect_right(seqs, low), bisect_left(seqs, high)
        return list(zip(seqs[start:end], self.completed[start:end], strict=True))

    def drop_resolved_head(self) -> None:
        """Forget the oldest watches that are materialized on every key."""
        watches = self.watches
        size = self.size
        while watches and watches[0].materialized == size:
            watches.popleft()

    def purge_completed(self) -> int:
        """Drop the completed watches (and those materialized everywhere); return how many watch-list
        entries that removes: a completed operation counts once per key it is not yet materialized on."""
        removed = self.completed_unmaterialized
        self.completed_unmaterialized = 0
        self.completed.clear()
        self.completed_seqs.clear()
        watches = self.watches
        size = self.size
        live: list[GroupWatch] = []
        for watch in watches:
            if watch.operation._completed:
                removed += size - watch.materialized
            elif watch.materialized != size:
                live.append(watch)
        if len(live) != len(watches):
            watches.clear()
            watches.extend(live)
        return removed

    def __repr__(self) -> str:
        return (
            f"GroupWatchers({self.group!r}, {len(self.watches)} watches, {len(self.completed)} completed, "
            f"released={self.released})"
        )


class CompletedRun(DelayedOperation):
    """Stands, in one key's `Watchers`, for the completed group watches between two sequence numbers.

    Kafka's list would hold each of them there, and its next pass would drop them without a word; a run
    is placed in one step and dropped in one step, and counts as `weight` entries in the list's length.
    It is born completed, so a pass or a purge drops it as it drops a completed operation; listing or
    cancelling the key expands it into its operations (`operations()`), which stay in their groups'
    completed lists until the purge that also removes the run.
    """

    __slots__ = ("sources", "low", "high", "weight")

    def __init__(self, sources: list[GroupWatchers], low: int, high: int, weight: int) -> None:
        super().__init__(0)
        self._completed = True
        self._watch_seq = low + 1
        self.sources = sources
        self.low = low
        self.high = high
        self.weight = weight

    def operations(self) -> list[DelayedOperation]:
        """The completed operations this run stands for, in watch order."""
        return [operation for _, operation in self._found()]

    def without_first(self, count: int) -> CompletedRun:
        """The run of the operations after the first `count` (0 < count < weight)."""
        found = self._found()
        return CompletedRun(self.sources, found[count - 1][0], self.high, self.weight - count)

    def _found(self) -> list[tuple[int, DelayedOperation]]:
        found: list[tuple[int, DelayedOperation]] = []
        for source in self.sources:
            found.extend(source.completed_between(self.low, self.high))
        if len(self.sources) > 1:
            found.sort(key=_first)
        return found

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        """Never called: a run is created completed."""

    def on_expiration(self) -> None:
        """Never called: a run is never in a timer."""

    def __repr__(self) -> str:
        return f"CompletedRun({self.weight} operations, seq {self.low}..{self.high})"


def _first(pair: tuple[int, DelayedOperation]) -> int:
    return pair[0]


class KeyGroups:
    """What the purgatory knows about one key that belongs to watched groups: the groups, and the watch
    sequence number up to which their watches are materialized in the key's `Watchers`."""

    __slots__ = ("groups", "materialized_seq")

    def __init__(self, materialized_seq: int) -> None:
        self.groups: list[GroupWatchers] = []
        self.materialized_seq = materialized_seq
