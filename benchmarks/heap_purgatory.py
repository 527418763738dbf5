"""A Kafka 0.8-style purgatory on a binary heap: the baseline kafkasim's timing-wheel purgatory is measured
against. A benchmark fixture, not part of the kafkasim package.

What it models. Before KAFKA-1989 (Kafka 0.9) the purgatory kept every watched operation in one
`java.util.DelayQueue` (a binary heap ordered by expiration) that a reaper thread polled:

* `try_complete_else_watch` puts an operation that could not complete at once on every watch key and
  pushes it on the heap, O(log n).
* Completing an operation (from outside, or through `check_and_complete`) only sets its `completed` flag:
  a heap cannot remove an arbitrary element cheaply, so **a completed operation stays in the heap until its
  expiration**, when the reaper pops it and throws it away. With a 30 s timeout at 50 k requests/s the
  heap therefore holds about 1.5 M operations although only a few thousand are pending: the memory and
  the O(log n) pops that made Kafka replace it with the timing wheel.
* Completed operations also linger in the per-key watch lists; Kafka 0.8.1 purged the watch lists every
  `purge_interval` watched requests (`fetch.purgatory.purge.interval.requests`, default 1000). The reaper
  does that check each time it runs.

Simplifications, each chosen so the comparison isolates the timer data structure:

* The operations are the very same `kafkasim.purgatory.DelayedOperation` objects, and the watch lists the
  very same `kafkasim.purgatory.Watchers`, that the wheel purgatory uses; only the timer differs. An
  operation's `cancel()` is a no-op here because it never enters a timing wheel, like 0.8's `DelayedItem`,
  which had no cancel. Expiry calls `op.run()` (onComplete, then onExpiration), the order of
  today's Kafka; 0.8.x called onExpiration first.
* `try_complete_else_watch` uses today's two-phase check (try, watch all keys, try again), which is also
  what the last heap version (KAFKA-1430, Kafka 0.8.3-SNAPSHOT) did.
* Kafka 0.8.1 also scanned the whole delay queue for completed operations at purge time; 0.8.2 and the
  KAFKA-1430 version did it whenever the queue held `purge_interval` entries or more, i.e. after every
  single expiry under load. That O(n) scan is left out (as the benchmark's brief asks): this baseline is
  the version in which completed operations wait in the heap for their timeout.
* One dict of watch lists instead of a concurrent pool (no threads here), as kafkasim's purgatory; ties in expiration are broken by
  insertion order so that runs are deterministic (a `DelayQueue` does not promise an order for ties).

Driving it: like `DelayedOperationPurgatory`, the caller moves `time` and calls `advance_clock()` (the
reaper's loop body) at `next_expiration_ms` and at least every 200 ms.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from heapq import heappop, heappush

from kafkasim.purgatory import DelayedOperation, Watchers
from kafkasim.timer import Time


class HeapPurgatory:
    """Kafka 0.8's `RequestPurgatory`: watch lists per key plus one heap of all watched operations.

    Example: at 0 an operation with delay 30 000 is watched and pushed as (30 000, seq, op); it completes at
    20 ms, so `num_delayed` stays 1 until 30 000, when `advance_clock()` pops it and, seeing it completed,
    drops it without calling anything.
    """

    __slots__ = (
        "_name",
        "_time",
        "_purge_interval",
        "_watchers_for_key",
        "_delay_queue",
        "_seq",
        "_request_counter",
    )

    def __init__(self, name: str, *, time: Time, purge_interval: int = 1000) -> None:
        if purge_interval < 1:
            raise ValueError(f"HeapPurgatory {name!r}: purge_interval must be at least 1, got {purge_interval}")
        self._name = name
        self._time = time
        self._purge_interval = purge_interval
        self._watchers_for_key: dict[Hashable, Watchers] = {}
        self._delay_queue: list[tuple[int, int, DelayedOperation]] = []
        self._seq = 0
        # Kafka 0.8.1's `requestCounter`: operations watched since the last purge of the watch lists.
        self._request_counter = 0

    @property
    def name(self) -> str:
        return self._name

    def try_complete_else_watch(self, op: DelayedOperation, keys: Sequence[Hashable]) -> bool:
        """Complete `op` now if it can; else watch it on every key and push it on the heap.

        True iff `op` was completed by this call.
        """
        if isinstance(keys, (str, bytes)) or not keys:
            raise ValueError(f"HeapPurgatory {self._name!r}: keys must be a non-empty sequence, got {keys!r}")
        if op.safe_try_complete_or_else(lambda: self._watch(op, keys)):
            return True
        if not op.is_completed:
            self._seq += 1
            heappush(self._delay_queue, (self._time.milliseconds() + op.delay_ms, self._seq, op))
        return False

    def _watch(self, op: DelayedOperation, keys: Sequence[Hashable]) -> None:
        watchers_for_key = self._watchers_for_key
        for key in keys:
            watchers = watchers_for_key.get(key)
            if watchers is None:
                watchers = watchers_for_key[key] = Watchers(key)
            watchers.watch(op)
        self._request_counter += 1

    def check_and_complete(self, key: Hashable) -> int:
        """Try every operation watched on `key` (completed ones leave the list); return how many this call
        completed."""
        watchers = self._watchers_for_key.get(key)
        if watchers is None:
            return 0
        completed = watchers.try_complete_watched()
        if not watchers:
            del self._watchers_for_key[key]
        return completed

    def advance_clock(self) -> bool:
        """The reaper's loop body: pop every operation due by now (expiring the ones not yet completed,
        dropping the others), then purge the watch lists if `purge_interval` operations were watched since
        the last purge. True iff some operation expired."""
        now = self._time.milliseconds()
        queue = self._delay_queue
        expired = False
        while queue and queue[0][0] <= now:
            op = heappop(queue)[2]
            if not op.is_completed:
                op.run()
                expired = True
        if self._request_counter >= self._purge_interval:
            self._request_counter = 0
            self.purge_completed()
        return expired

    def purge_completed(self) -> int:
        """Drop completed operations from every watch list and drop emptied keys; return how many."""
        purged = 0
        watchers_for_key = self._watchers_for_key
        for key, watchers in list(watchers_for_key.items()):
            purged += watchers.purge_completed()
            if not watchers:
                del watchers_for_key[key]
        return purged

    @property
    def next_expiration_ms(self) -> int | None:
        """Expiration of the heap's head (often an operation that completed long ago), or None."""
        queue = self._delay_queue
        return queue[0][0] if queue else None

    @property
    def watched(self) -> int:
        """PurgatorySize: watch-list entries, completed ones not yet purged included."""
        return sum(len(watchers) for watchers in self._watchers_for_key.values())

    @property
    def num_delayed(self) -> int:
        """Kafka 0.8's `delayed()`: heap entries, including completed operations waiting for their timeout."""
        return len(self._delay_queue)

    def shutdown(self) -> None:
        """Forget everything (the reaper is the caller's loop, so there is no thread to stop)."""
        self._watchers_for_key.clear()
        self._delay_queue.clear()
