"""GroupWatchStrategy: group watches, the strategy a `DelayedOperationPurgatory` may be given.

Kafka appends an operation to the `Watchers` of each key it watches. A group watch appends it once, to the
group's `GroupWatchers`; the strategy places it in a key's `Watchers` ("materializes" it there) only when
that key's list is looked at: checked, cancelled or inspected. Not Kafka's algorithm: the simulator's speed
machinery beside `DelayedOperationPurgatory`, which reads like Kafka's and calls a few hooks of this class
(before a key's list is read, for `watched`, on a purge, to watch a `KeyGroup`).

`try_complete_else_watch(op, group)` with a `KeyGroup` costs O(1), yet every answer
is the one `try_complete_else_watch(op, list(group))` gives: which operations a check tries and in
which order, what it returns, `watched`, `watchers(key)`, `cancel_for_key`, purges. Every watch takes
the next watch sequence number (`DelayedOperation._watch_seq`). A group watch is appended once, to the
group's `GroupWatchers`; a key's `Watchers` receives it ("materializes" it) only when the key is
checked, cancelled or inspected, inserted before the operations watched on that key after it, i.e. where
Kafka's append at watch time would have put it (a key's list is in watch order except where a check's
pass rotated it, and a pass first materializes everything watched before it; a group watched while a
pass over one of its keys runs is materialized on that key at once, as Kafka's append would be).
Example: group G = [p0, p1], op A watches G, op B watches [p1], op C watches G. Nothing is on p1's
list but B. Checking p1 first materializes A and C there at their places: p1's list becomes A, B, C
and the pass tries them in that order, as Kafka's would; p0 still holds nothing until it is looked at.
A group operation found completed when a key's turn comes is not placed one by one: the completed
ones between two live operations go in as one `CompletedRun`, counted as that many entries and dropped
by the pass in one step (as Kafka's pass drops each, uncounted), expanded only if the list is read or
cancelled, and kept in the group's completed list (found by bisection) until the next purge. So a
check costs O(live operations placed + runs), not O(completed fetches parked since the key's last
check), which Kafka's pass walks. `watched` adds the count of entries not yet materialized, so
PurgatorySize stays exact; a purge drops completed operations from the groups too.

The first watch of a group object indexes its keys, O(len(group)) once: each key keeps the list of its
groups and the sequence number up to which they are materialized on it (`KeyGroups`, about 100 bytes
per key plus 8 per key and group). `release_group(group)` forgets a group once no watch of it is left;
a group never released stays indexed for the purgatory's lifetime.
"""

from __future__ import annotations

from collections.abc import Hashable

from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.group_watchers import CompletedRun, GroupWatch, GroupWatchers, KeyGroups
from kafkasim.purgatory.key_group import KeyGroup
from kafkasim.purgatory.watchers import Watchers
from kafkasim.purgatory.watchers_with_runs import WatchersWithRuns, merge_in_watch_order


class GroupWatchStrategy:
    """The group watches of one `DelayedOperationPurgatory` (given at its construction, one purgatory each).

    Holds every group's `GroupWatchers`, each key's `KeyGroups`, the watch sequence, the entries not yet
    materialized (part of PurgatorySize) and the keys whose check pass is running. The purgatory's key map
    is shared (`attach`): keys' lists are the purgatory's, created as `WatchersWithRuns` (`new_watchers`).
    """

    __slots__ = ("_watchers_for_key", "_attached", "_group_watchers", "_key_groups", "_watch_seq",
                 "unmaterialized", "_passing")

    def __init__(self) -> None:
        self._watchers_for_key: dict[Hashable, Watchers] = {}
        self._attached = False
        self._group_watchers: dict[KeyGroup, GroupWatchers] = {}
        self._key_groups: dict[Hashable, KeyGroups] = {}
        self._watch_seq = 0
        # Group watch entries not yet materialized in a key's Watchers (part of `watched`).
        self.unmaterialized = 0
        # Keys whose check pass is running (innermost last): a group watched meanwhile joins them at once.
        self._passing: list[Hashable] = []

    def attach(self, watchers_for_key: dict[Hashable, Watchers]) -> None:
        """The purgatory that owns this strategy hands over its key -> Watchers map (once)."""
        if self._attached:
            raise ValueError("GroupWatchStrategy: already given to a purgatory (one strategy per purgatory)")
        self._attached = True
        self._watchers_for_key = watchers_for_key

    @property
    def indexed_groups(self) -> int:
        """Groups indexed and not yet forgotten (see `release_group`)."""
        return len(self._group_watchers)

    def new_watchers(self, key: Hashable) -> Watchers:
        """A new key's list, able to take group watches at their places."""
        return WatchersWithRuns(key)

    def stamp(self, operation: DelayedOperation) -> None:
        """An operation watched on explicit keys takes the next watch sequence number: its place in every
        list it joins, against which group watches are placed later."""
        self._watch_seq += 1
        operation._watch_seq = self._watch_seq

    def watch(self, operation: DelayedOperation, group: KeyGroup) -> None:
        """Watch `operation` on every key of `group`, O(1) (the first watch of `group` indexes it)."""
        group_watchers = self._group_watchers.get(group)
        if group_watchers is None:
            group_watchers = self._index_group(group)
        self._watch_seq += 1
        seq = self._watch_seq
        operation._watch_seq = seq
        watch = GroupWatch(operation, seq)
        group_watchers.watches.append(watch)
        self.unmaterialized += group_watchers.size
        for key in self._passing:
            # A pass over `key` is running (re-entrant watch from a completion callback): Kafka's append
            # lands in the list being passed, behind the pass's cursor, so place it there now.
            if key in group:
                self._materialize_now(key, watch)

    def try_complete_watched(self, key: Hashable, watchers: Watchers) -> int:
        """`watchers.try_complete_watched()`, with `key` marked as being passed meanwhile."""
        passing = self._passing
        passing.append(key)
        try:
            return watchers.try_complete_watched()
        finally:
            passing.pop()

    def _index_group(self, group: KeyGroup) -> GroupWatchers:
        """First watch of `group`: list it under each of its keys, O(len(group)) once."""
        group_watchers = self._group_watchers[group] = GroupWatchers(group)
        key_groups = self._key_groups
        seq = self._watch_seq
        for key in group:
            groups = key_groups.get(key)
            if groups is None:
                groups = key_groups[key] = KeyGroups(seq)
            groups.groups.append(group_watchers)
        return group_watchers

    def _unindex_group(self, group_watchers: GroupWatchers) -> None:
        del self._group_watchers[group_watchers.group]
        key_groups = self._key_groups
        for key in group_watchers.group:
            groups = key_groups[key]
            groups.groups.remove(group_watchers)
            if not groups.groups:
                del key_groups[key]

    def release_group(self, group: KeyGroup) -> None:
        """The owner of `group` will not watch it again: forget it once no watch of it is left (at once if
        none is; else when its last operation is materialized on every key or purged after completing).
        Releasing a group this strategy never watched, or already forgot, does nothing; watching a released
        group again is correct but pays its indexing again once it was forgotten."""
        group_watchers = self._group_watchers.get(group)
        if group_watchers is None:
            return
        group_watchers.released = True
        group_watchers.drop_resolved_head()
        if group_watchers.idle:
            self._unindex_group(group_watchers)

    def _watchers_of(self, key: Hashable) -> WatchersWithRuns:
        watchers = self._watchers_for_key.get(key)
        if watchers is None:
            watchers = self._watchers_for_key[key] = WatchersWithRuns(key)
        assert isinstance(watchers, WatchersWithRuns)  # every list of this purgatory is made by new_watchers
        return watchers

    def _materialize_now(self, key: Hashable, watch: GroupWatch) -> None:
        groups = self._key_groups[key]
        if watch.seq <= groups.materialized_seq:
            return  # a nested pass over the same key placed it already
        groups.materialized_seq = watch.seq
        watch.materialized += 1
        self.unmaterialized -= 1
        self._watchers_of(key).watch(watch.operation)

    def materialize(self, key: Hashable) -> None:
        """Place in `key`'s Watchers every group watch of `key` not yet there, each at its watch-order place:
        live operations one by one, completed ones as `CompletedRun`s between them (a check's pass drops
        those uncounted, but until it reaches them they are on the list: a completion callback's
        `cancel_for_key(key)` during the pass returns them). O(live operations + the explicit watches of
        `key` since its last materialization + the runs), whatever the number of completed ones."""
        groups = self._key_groups.get(key)
        if groups is None or groups.materialized_seq == self._watch_seq:
            return
        since = groups.materialized_seq
        groups.materialized_seq = self._watch_seq
        live: list[GroupWatch] = []
        touched: list[GroupWatchers] = []
        with_completed: list[GroupWatchers] = []
        completed = 0
        for group_watchers in groups.groups:
            if group_watchers.has_watches_after(since):
                group_live, group_completed = group_watchers.take_after(since)
                live.extend(group_live)
                touched.append(group_watchers)
                if group_completed:
                    with_completed.append(group_watchers)
                    completed += group_completed
        if not touched:
            return
        if len(touched) > 1:
            live.sort(key=_watch_seq_of)
        self.unmaterialized -= len(live) + completed
        operations = [watch.operation for watch in live]
        if completed:
            watchers = self._watchers_of(key)
            ordered = merge_in_watch_order(operations, watchers.pop_watched_after(since))
            placed: list[DelayedOperation] = []
            low = since
            for operation in ordered:
                _place_run(placed, with_completed, low, operation._watch_seq)
                placed.append(operation)
                low = operation._watch_seq
            _place_run(placed, with_completed, low, self._watch_seq + 1)
            watchers.watch_all(placed)
        elif operations:
            self._watchers_of(key).watch_in_order(operations)
        for group_watchers in touched:
            group_watchers.drop_resolved_head()
            if group_watchers.released and group_watchers.idle:
                self._unindex_group(group_watchers)

    def purge_completed(self) -> int:
        """The purge's part in the groups: drop their completed watches; return how many watch-list entries
        that removes (an operation counts once per key it was not yet materialized on)."""
        purged = 0
        for group_watchers in list(self._group_watchers.values()):
            if not group_watchers.idle:
                removed = group_watchers.purge_completed()
                purged += removed
                self.unmaterialized -= removed
                if group_watchers.released and group_watchers.idle:
                    self._unindex_group(group_watchers)
        return purged

    def __repr__(self) -> str:
        return f"GroupWatchStrategy({len(self._group_watchers)} groups, {self.unmaterialized} unmaterialized)"


def _watch_seq_of(watch: GroupWatch) -> int:
    return watch.seq


def _place_run(placed: list[DelayedOperation], sources: list[GroupWatchers], low: int, high: int) -> None:
    """Append to `placed` one run of the completed watches of `sources` with `low < seq < high`, if any."""
    weight = 0
    for source in sources:
        weight += source.count_completed_between(low, high)
    if weight:
        placed.append(CompletedRun(sources, low, high, weight))
