"""GroupWatchers: the operations watching one `KeyGroup`, not yet placed in every key's `Watchers`.

Kafka appends an operation to the `Watchers` of each key it watches. A group watch appends it once, here;
`DelayedOperationPurgatory` places it in a key's `Watchers` ("materializes" it there) only when that key's
list is looked at: checked, cancelled or inspected. `DelayedOperationPurgatory`'s class comment explains
why the lists then hold exactly what Kafka's would.
"""

from __future__ import annotations

from collections import deque

from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.key_group import KeyGroup


class GroupWatch:
    """One operation watching a group: its watch sequence number and on how many of the group's keys it has
    been materialized (placed in the key's `Watchers`, or dropped there because it had completed)."""

    __slots__ = ("operation", "seq", "materialized")

    def __init__(self, operation: DelayedOperation, seq: int) -> None:
        self.operation = operation
        self.seq = seq
        self.materialized = 0


class GroupWatchers:
    """The watches of one group in one purgatory, in watch order (increasing `seq`).

    A watch leaves when it is materialized on every key of the group (from the head only, so that the
    deque stays a FIFO) or when a purge finds its operation completed. `released`: the group's owner will
    not watch it again, so the purgatory forgets the group once no watch is left.
    """

    __slots__ = ("group", "size", "watches", "released")

    def __init__(self, group: KeyGroup) -> None:
        self.group = group
        self.size = len(group)
        self.watches: deque[GroupWatch] = deque()
        self.released = False

    def watches_after(self, seq: int) -> list[GroupWatch]:
        """The watches with a sequence number above `seq`, in watch order: O(how many)."""
        fresh: list[GroupWatch] = []
        for watch in reversed(self.watches):
            if watch.seq <= seq:
                break
            fresh.append(watch)
        fresh.reverse()
        return fresh

    def drop_resolved_head(self) -> None:
        """Forget the oldest watches that are materialized on every key."""
        watches = self.watches
        size = self.size
        while watches and watches[0].materialized == size:
            watches.popleft()

    def purge_completed(self) -> int:
        """Drop the watches of completed operations (and those materialized everywhere); return how many
        watch-list entries that removes: a completed operation counts once per key not yet materialized."""
        watches = self.watches
        size = self.size
        removed = 0
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
        return f"GroupWatchers({self.group!r}, {len(self.watches)} watches, released={self.released})"


class KeyGroups:
    """What the purgatory knows about one key that belongs to watched groups: the groups, and the watch
    sequence number up to which their watches are materialized in the key's `Watchers`."""

    __slots__ = ("groups", "materialized_seq")

    def __init__(self, materialized_seq: int) -> None:
        self.groups: list[GroupWatchers] = []
        self.materialized_seq = materialized_seq
