"""DelayedOperationPurgatory: where delayed operations wait for a key to change or their timeout."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from mypy_extensions import mypyc_attr

from kafkasim.purgatory.delay_queue_timer import DelayQueueTimer
from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.group_watch_strategy import GroupWatchStrategy
from kafkasim.purgatory.key_group import KeyGroup
from kafkasim.purgatory.purgatory_timer import PurgatoryTimer
from kafkasim.purgatory.watchers import Watchers
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
    as watching every key of the group) are the simulator's speed machinery, a `GroupWatchStrategy` given
    at construction (`group_watch_strategy`); the purgatory calls its hooks and nothing else of it. Without
    one, a `KeyGroup` is watched on each of its keys, as Kafka watches a list.
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
        "_group_watch_strategy",
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
        group_watch_strategy: GroupWatchStrategy | None = None,
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
        self._group_watch_strategy = group_watch_strategy
        if group_watch_strategy is not None:
            group_watch_strategy.attach(self._watchers_for_key)

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
    def group_watch_strategy(self) -> GroupWatchStrategy | None:
        """The group watches this purgatory was given (not Kafka's), or None."""
        return self._group_watch_strategy

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
        watched = sum(len(watchers) for watchers in self._watchers_for_key.values())
        strategy = self._group_watch_strategy
        return watched if strategy is None else watched + strategy.unmaterialized

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
        usually ignore this). `keys` may be a `KeyGroup`: with a `GroupWatchStrategy`, the same answers at
        O(1) per watch. An operation is watched once, in one purgatory (Kafka's contract).
        """
        if isinstance(keys, (str, bytes)) or not keys:
            raise ValueError(f"purgatory {self._name!r}: keys must be a non-empty sequence of keys, got {keys!r}")
        if operation.safe_try_complete_or_else(lambda: self._watch_for_operation(operation, keys)):
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

    def _watch_for_operation(self, operation: DelayedOperation, keys: Sequence[Hashable] | KeyGroup) -> None:
        """Kafka's `watchKeys.foreach(key => watchForOperation(key, operation))`, then +1 estimated total."""
        strategy = self._group_watch_strategy
        if strategy is not None:
            if isinstance(keys, KeyGroup):
                strategy.watch(operation, keys)
                self._estimated_total_operations += 1
                return
            strategy.stamp(operation)
        watchers_for_key = self._watchers_for_key
        for key in keys:
            watchers = watchers_for_key.get(key)
            if watchers is None:
                watchers = self._watchers_of(key)
            watchers.watch(operation)
        self._estimated_total_operations += 1

    def _watchers_of(self, key: Hashable) -> Watchers:
        """Kafka's `watchersByKey.getAndMaybePut(key)` (its `Pool`'s value factory makes a `Watchers`)."""
        watchers = self._watchers_for_key.get(key)
        if watchers is None:
            strategy = self._group_watch_strategy
            watchers = Watchers(key) if strategy is None else strategy.new_watchers(key)
            self._watchers_for_key[key] = watchers
        return watchers

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete the operations watching `key`; return how many this call completed."""
        strategy = self._group_watch_strategy
        if strategy is not None:
            strategy.materialize(key)
        watchers = self._watchers_for_key.get(key)
        if watchers is None:
            return 0
        if strategy is None:
            completed = watchers.try_complete_watched()
        else:
            completed = strategy.try_complete_watched(key, watchers)
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
        strategy = self._group_watch_strategy
        if strategy is not None:
            strategy.materialize(key)
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
        strategy = self._group_watch_strategy
        if strategy is not None:
            purged += strategy.purge_completed()
        return purged

    def watchers(self, key: Hashable) -> tuple[DelayedOperation, ...]:
        """The operations watching `key`, completed ones included (for tests and inspection)."""
        strategy = self._group_watch_strategy
        if strategy is not None:
            strategy.materialize(key)
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

