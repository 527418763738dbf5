"""DelayedOperationPurgatory: where delayed operations wait for a key to change or their timeout."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from mypy_extensions import mypyc_attr

from kafkasim.purgatory.delay_queue_timer import DelayQueueTimer
from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.group_watchers import CompletedRun, GroupWatch, GroupWatchers, KeyGroups
from kafkasim.purgatory.key_group import KeyGroup
from kafkasim.purgatory.purgatory_timer import PurgatoryTimer
from kafkasim.purgatory.watchers import Watchers, merge_in_watch_order
from kafkasim.timer import SystemTimer, Time


# Open to interpreted subclasses when compiled (mypyc): benchmarks/heap_purgatory.py and tests subclass it.
@mypyc_attr(allow_interpreted_subclasses=True)
class DelayedOperationPurgatory:
    """Kafka's `DelayedOperationPurgatory`.

    Each operation watches one or more keys and, unless `timer_enabled` is False, sits in the timer until its
    timeout. Completion is checked when a key changes (`check_and_complete(key)`); a completed operation
    leaves the other keys' lists only when those keys are checked or a purge runs
    (`Watchers.tryCompleteWatched`, `purgeCompleted`), which is why `watched` (PurgatorySize) can exceed the
    number of live operations while `num_delayed` (NumDelayedOperations) counts each waiting operation once.

    Simplifications, all invisible in a single-threaded simulator: Kafka shards the key map 512 ways, each
    shard with its own lock, so that request threads do not contend; here one dict maps key -> Watchers
    (insertion ordered, so iteration is deterministic), and no locks are taken. The expiration reaper thread
    (`advance_clock` every 200 ms) is a SimPy process in `kafkasim.run`, and there are no metric gauges to
    register: `watched` and `num_delayed` are read by whoever samples them.

    The timer is Kafka's timing wheel (`SystemTimer`) unless a `DelayQueueTimer` is passed: then the
    purgatory behaves as Kafka 0.8's `RequestPurgatory` did, completed operations staying in the timer
    (and in `num_delayed`) until their timeout, and the watch lists purged every `purge_interval` watched
    operations. Which operations complete or expire, and when, is the same with either timer.

    Group watches (not Kafka's; `try_complete_else_watch(op, KeyGroup)`, O(1) per watch, the same answers
    as watching every key of the group) are the simulator's speed machinery: how they work and why the
    watch lists then hold exactly what Kafka's would is in `kafkasim.purgatory.group_watchers`.
    """

    __slots__ = (
        "_name",
        "_timer",
        "_broker_id",
        "_purge_interval",
        "_timer_enabled",
        "_purge_every_interval",
        "_watchers_for_key",
        "_estimated_total_operations",
        "_watch_seq",
        "_group_watchers",
        "_key_groups",
        "_unmaterialized",
        "_passing",
    )

    def __init__(
        self,
        name: str,
        timer: PurgatoryTimer | None = None,
        *,
        time: Time | None = None,
        broker_id: int = 0,
        purge_interval: int = 1000,
        timer_enabled: bool = True,
    ) -> None:
        if timer is None:
            timer = SystemTimer(name, time=time)
        elif time is not None and time is not timer.time:
            raise ValueError(
                f"DelayedOperationPurgatory {name!r}: pass either a timer or a time, or the timer's own time"
            )
        self._name = name
        self._timer = timer
        self._broker_id = broker_id
        self._purge_interval = purge_interval
        self._timer_enabled = timer_enabled
        # Kafka 0.8.1's purge rule goes with its timer: completed operations stay in the delay queue, so
        # "estimated total - num_delayed" would not count the completed operations left in the watch lists.
        self._purge_every_interval = isinstance(timer, DelayQueueTimer)
        self._watchers_for_key: dict[Hashable, Watchers] = {}
        self._estimated_total_operations = 0
        self._watch_seq = 0
        self._group_watchers: dict[KeyGroup, GroupWatchers] = {}
        self._key_groups: dict[Hashable, KeyGroups] = {}
        # Group watch entries not yet materialized in a key's Watchers (part of `watched`).
        self._unmaterialized = 0
        # Keys whose check pass is running (innermost last): a group watched meanwhile joins them at once.
        self._passing: list[Hashable] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def timer(self) -> PurgatoryTimer:
        return self._timer

    @property
    def broker_id(self) -> int:
        return self._broker_id

    @property
    def purge_interval(self) -> int:
        return self._purge_interval

    @property
    def estimated_total_operations(self) -> int:
        """Operations that entered the watch phase since the last purge (Kafka's estimate; with a
        `DelayQueueTimer`, Kafka 0.8.1's `requestCounter`)."""
        return self._estimated_total_operations

    @property
    def watched(self) -> int:
        """PurgatorySize: sum over keys of the watch-list lengths (an operation counts once per key, and
        completed operations count until they are removed), group watch entries not yet materialized
        included."""
        return sum(len(watchers) for watchers in self._watchers_for_key.values()) + self._unmaterialized

    @property
    def indexed_groups(self) -> int:
        """Groups this purgatory has indexed and not yet forgotten (see `release_group`)."""
        return len(self._group_watchers)

    @property
    def num_delayed(self) -> int:
        """NumDelayedOperations: operations waiting in the timer (each once; with a `DelayQueueTimer`,
        completed operations too, until their timeout)."""
        return self._timer.size

    def try_complete_else_watch(self, operation: DelayedOperation, keys: Sequence[Hashable] | KeyGroup) -> bool:
        """Complete `operation` now if it can, else watch it on every key and start its timeout.

        Kafka's `tryCompleteElseWatch` (2.7+, KAFKA-8334), two-phase: check; watch on all keys (+1 estimated
        total, once per operation); check again; add to the timer only if still incomplete. Returns True iff
        one of the two checks completed it (callers learn the outcome through the operation's callbacks and
        usually ignore this). `keys` may be a `KeyGroup`: the same answers at O(1) per watch (`group_watchers`).
        An operation is watched once, in one purgatory (Kafka's contract): its watch sequence is its place.
        """
        if isinstance(keys, KeyGroup):
            group = keys
            watch = lambda: self._watch_group(operation, group)  # noqa: E731
        elif isinstance(keys, (str, bytes)) or not keys:
            raise ValueError(f"purgatory {self._name!r}: keys must be a non-empty sequence of keys, got {keys!r}")
        else:
            key_list = keys
            watch = lambda: self._watch(operation, key_list)  # noqa: E731
        if operation.safe_try_complete_or_else(watch):
            # Completed by the second check: it stays in the watch lists until checked or purged.
            return True
        if not operation._completed:
            if self._timer_enabled:
                self._timer.add(operation)
            if operation._completed:
                # Completed between the check and the timer add (here: the timer ran it at once because it
                # was already expired and the executor is synchronous); drop its timer entry.
                operation.cancel()
        return False

    def _watch(self, operation: DelayedOperation, keys: Sequence[Hashable]) -> None:
        self._watch_seq += 1
        operation._watch_seq = self._watch_seq
        watchers_for_key = self._watchers_for_key
        for key in keys:
            watchers = watchers_for_key.get(key)
            if watchers is None:
                watchers = watchers_for_key[key] = Watchers(key)
            watchers.watch(operation)
        self._estimated_total_operations += 1

    def _watch_group(self, operation: DelayedOperation, group: KeyGroup) -> None:
        group_watchers = self._group_watchers.get(group)
        if group_watchers is None:
            group_watchers = self._index_group(group)
        self._watch_seq += 1
        seq = self._watch_seq
        operation._watch_seq = seq
        watch = GroupWatch(operation, seq)
        group_watchers.watches.append(watch)
        self._unmaterialized += group_watchers.size
        self._estimated_total_operations += 1
        for key in self._passing:
            # A pass over `key` is running (re-entrant watch from a completion callback): Kafka's append
            # lands in the list being passed, behind the pass's cursor, so place it there now.
            if key in group:
                self._materialize_now(key, watch)

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
        Releasing a group this purgatory never watched, or already forgot, does nothing; watching a released
        group again is correct but pays its indexing again once it was forgotten."""
        group_watchers = self._group_watchers.get(group)
        if group_watchers is None:
            return
        group_watchers.released = True
        group_watchers.drop_resolved_head()
        if group_watchers.idle:
            self._unindex_group(group_watchers)

    def _watchers_of(self, key: Hashable) -> Watchers:
        watchers = self._watchers_for_key.get(key)
        if watchers is None:
            watchers = self._watchers_for_key[key] = Watchers(key)
        return watchers

    def _materialize_now(self, key: Hashable, watch: GroupWatch) -> None:
        groups = self._key_groups[key]
        if watch.seq <= groups.materialized_seq:
            return  # a nested pass over the same key placed it already
        groups.materialized_seq = watch.seq
        watch.materialized += 1
        self._unmaterialized -= 1
        self._watchers_of(key).watch(watch.operation)

    def _materialize(self, key: Hashable) -> None:
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
        self._unmaterialized -= len(live) + completed
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

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete the operations watching `key`; return how many this call completed."""
        if self._key_groups:
            self._materialize(key)
        watchers = self._watchers_for_key.get(key)
        if watchers is None:
            return 0
        passing = self._passing
        passing.append(key)
        try:
            completed = watchers.try_complete_watched()
        finally:
            passing.pop()
        if not watchers:
            self._remove_key_if_empty(key, watchers)
        return completed

    def _remove_key_if_empty(self, key: Hashable, watchers: Watchers) -> None:
        # Only if the map still maps key to this very Watchers (it may have been replaced meanwhile).
        if self._watchers_for_key.get(key) is watchers and not watchers:
            del self._watchers_for_key[key]

    def cancel_for_key(self, key: Hashable) -> list[DelayedOperation]:
        """Stop watching `key`: remove its operations and cancel their timer entries. No completion
        callbacks run (used when a partition leaves this broker). Returns the removed operations."""
        self._materialize(key)
        watchers = self._watchers_for_key.pop(key, None)
        if watchers is None:
            return []
        return watchers.cancel()

    def advance_clock(self) -> bool:
        """One reaper pass: run expired operations, then purge if enough completed ones may linger.

        Kafka's `advanceClock`: purge when `estimated total - num_delayed > purge_interval`; the estimate is
        then reset to `num_delayed`. With a `DelayQueueTimer`, Kafka 0.8.1's rule instead: purge once
        `purge_interval` operations were watched since the last purge (`RequestPurgatory`'s
        `requestCounter`). Returns whether the timer flushed any bucket (popped any entry).
        """
        advanced = self._timer.advance_clock()
        if self._purge_every_interval:
            if self._estimated_total_operations >= self._purge_interval:
                self._estimated_total_operations = 0
                self.purge_completed()
            return advanced
        num_delayed = self._timer.size
        if self._estimated_total_operations - num_delayed > self._purge_interval:
            self._estimated_total_operations = num_delayed
            self.purge_completed()
        return advanced

    def purge_completed(self) -> int:
        """Drop completed operations from every watch list and drop emptied keys; return how many entries
        (an operation counts once per key it is dropped from, group watches not yet materialized included).
        """
        purged = 0
        for key, watchers in list(self._watchers_for_key.items()):
            purged += watchers.purge_completed()
            if not watchers:
                self._remove_key_if_empty(key, watchers)
        for group_watchers in list(self._group_watchers.values()):
            if not group_watchers.idle:
                removed = group_watchers.purge_completed()
                purged += removed
                self._unmaterialized -= removed
                if group_watchers.released and group_watchers.idle:
                    self._unindex_group(group_watchers)
        return purged

    def watchers(self, key: Hashable) -> tuple[DelayedOperation, ...]:
        """The operations watching `key`, completed ones included (for tests and inspection)."""
        self._materialize(key)
        watchers = self._watchers_for_key.get(key)
        return () if watchers is None else tuple(watchers)

    def shutdown(self) -> None:
        """Close the timer: operations that time out from now on are not run (Kafka stops the reaper and
        shuts the timer's executor down)."""
        self._timer.close()

    def __repr__(self) -> str:
        return (
            f"DelayedOperationPurgatory({self._name!r}, watched={self.watched}, num_delayed={self.num_delayed})"
        )


def _watch_seq_of(watch: GroupWatch) -> int:
    return watch.seq


def _place_run(placed: list[DelayedOperation], sources: list[GroupWatchers], low: int, high: int) -> None:
    """Append to `placed` one run of the completed watches of `sources` with `low < seq < high`, if any."""
    weight = 0
    for source in sources:
        weight += source.count_completed_between(low, high)
    if weight:
        placed.append(CompletedRun(sources, low, high, weight))
