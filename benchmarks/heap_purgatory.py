"""The benchmark's heap baseline: kafkasim's own Kafka 0.8-style purgatory, `DelayedOperationPurgatory` on a
`DelayQueueTimer` (kafkasim/purgatory/delay_queue_timer.py; in a scenario, `broker.purgatory: delay_queue`).

What it models. Before KAFKA-1989 (Kafka 0.9) the purgatory kept every watched operation in one
`java.util.DelayQueue` (a binary heap ordered by expiration) that a reaper thread polled:

* `try_complete_else_watch` puts an operation that could not complete at once on every watch key and
  pushes it on the heap, O(log n).
* Completing an operation only unbinds its entry: a heap cannot remove an arbitrary element cheaply, so
  **a completed operation stays in the heap until its expiration**, when the reaper pops it and throws it
  away. With a 30 s timeout at 50 k requests/s the heap therefore holds about 1.5 M operations although
  only a few thousand are pending: the memory and the O(log n) pops that made Kafka replace it with the
  timing wheel.
* Completed operations also linger in the per-key watch lists; Kafka 0.8.1 purged the watch lists every
  `purge_interval` watched requests (`fetch.purgatory.purge.interval.requests`, default 1000). The reaper
  does that check each time it runs.

The operations and the watch lists are the very ones the wheel purgatory uses; only the timer differs.
What the timer simplifies (no O(n) scan of the queue at purge time, ties broken by insertion order) is in
`DelayQueueTimer`'s docstring.

Driving it: like `DelayedOperationPurgatory`, the caller moves `time` and calls `advance_clock()` (the
reaper's loop body) at `next_expiration_ms` and at least every 200 ms.
"""

from __future__ import annotations

from kafkasim.purgatory import DelayedOperationPurgatory, DelayQueueTimer
from kafkasim.timer import Time


class HeapPurgatory(DelayedOperationPurgatory):
    """`DelayedOperationPurgatory` on a `DelayQueueTimer`, with the heap's head at hand for the replay loop.

    Example: at 0 an operation with delay 30 000 is watched and pushed; it completes at 20 ms, so
    `num_delayed` stays 1 until 30 000, when `advance_clock()` pops it and, seeing it completed, drops it
    without calling anything.
    """

    __slots__ = ()

    def __init__(self, name: str, *, time: Time, purge_interval: int = 1000) -> None:
        if purge_interval < 1:
            raise ValueError(f"HeapPurgatory {name!r}: purge_interval must be at least 1, got {purge_interval}")
        super().__init__(name, DelayQueueTimer(name, time=time), purge_interval=purge_interval)

    @property
    def next_expiration_ms(self) -> int | None:
        """Expiration of the heap's head (often an operation that completed long ago), or None."""
        return self.timer.next_expiration_ms
