"""DelayQueueTimer: Kafka 0.8's purgatory timer, one binary heap of every delayed operation.

Before KAFKA-1989 (Kafka 0.9) ``RequestPurgatory`` kept every watched request in one
``java.util.DelayQueue`` (a binary heap ordered by expiration) that its ``ExpiredRequestReaper`` thread
polled. A heap cannot remove an arbitrary element cheaply, so completing a request only set its
``satisfied`` flag: **a completed operation stays in the queue until its timeout**, when the reaper pops it
and throws it away. With a 30 s timeout at 50 000 requests/s the queue holds about 1.5 million entries
although only a few thousand requests are pending: the memory, and the O(log n) pop of every request at
its timeout, that made Kafka replace it with the hierarchical timing wheel (``SystemTimer``), from which
a completed operation leaves at once.

kafkasim keeps the one difference that matters and nothing else: ``DelayedOperationPurgatory`` drives this
timer exactly as it drives ``SystemTimer`` (``add``, ``advance_clock``, ``next_expiration_ms``, ``size``),
so every operation completes or expires at the same simulated time with either timer. What changes is what
the timer holds (``size``: NumDelayedOperations counts completed operations until their timeout) and how
often the reaper wakes (``next_expiration_ms`` is the heap's head, usually an operation that completed
long ago). Simplifications: Kafka 0.8.1 also scanned the whole queue for completed requests at purge time
(``purgeSatisfied``), left out as in benchmarks/heap_purgatory.py so that completed operations wait for
their timeout; ties in expiration run in the order they were added (a ``DelayQueue`` promises no order).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush

from kafkasim.timer import ManualTime, Time, TimerTask, TimerTaskEntry, run_task


def _drop_task(task: TimerTask) -> None:
    """Executor after `close()`: the reaper is stopped, so the task never runs."""


class DelayQueueTimer:
    """One heap of ``(expiration_ms, seq, entry)``; ``advance_clock()`` pops every entry due by now.

    Example: at 0 an operation with delay 30 000 is added, so ``size`` is 1 and ``next_expiration_ms`` is
    30 000. It completes at 20 (``force_complete`` cancels its entry, which here only unbinds the entry from
    the task): ``size`` stays 1 and ``next_expiration_ms`` stays 30 000. At 30 000 ``advance_clock()`` pops
    the entry, sees that it was cancelled and drops it without running anything; ``size`` is 0. A timing
    wheel would have held nothing from 20 on.

    An entry is the task's ``TimerTaskEntry`` in no bucket: ``TimerTask.cancel()`` and re-adding a task
    unbind it, and the pop skips entries no longer bound to their task. Every add is queued, even one whose
    expiration has passed: 0.8's reaper polled it at once, here the next ``advance_clock`` runs it.
    """

    __slots__ = ("_name", "_time", "_executor", "_queue", "_seq")

    def __init__(
        self,
        name: str,
        *,
        time: Time | None = None,
        executor: Callable[[TimerTask], None] | None = None,
    ) -> None:
        self._name = name
        self._time = time if time is not None else ManualTime(0)
        self._executor = executor if executor is not None else run_task
        self._queue: list[tuple[int, int, TimerTaskEntry]] = []
        self._seq = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def time(self) -> Time:
        return self._time

    @property
    def size(self) -> int:
        """Entries in the queue, completed and cancelled operations included until their expiration (Kafka
        0.8's ``delayed()``, its NumDelayedRequests gauge)."""
        return len(self._queue)

    @property
    def next_expiration_ms(self) -> int | None:
        """Expiration of the queue's head (often an operation that completed long ago), or None."""
        queue = self._queue
        return queue[0][0] if queue else None

    def add(self, task: TimerTask) -> None:
        """Queue `task` at `now + task.delay_ms`, O(log n). Re-adding a task leaves its old entry behind,
        unbound (skipped when popped)."""
        expiration_ms = self._time.milliseconds() + task.delay_ms
        self._seq += 1
        heappush(self._queue, (expiration_ms, self._seq, TimerTaskEntry(task, expiration_ms)))

    def advance_clock(self) -> bool:
        """Pop every entry due by `time.milliseconds()`, in expiration order, and run the tasks still bound
        to their entry. True iff the queue's head was due (some entry was popped), as ``SystemTimer`` answers
        True iff it flushed a bucket."""
        queue = self._queue
        now = self._time.milliseconds()
        if not queue or queue[0][0] > now:
            return False
        while queue and queue[0][0] <= now:
            entry = heappop(queue)[2]
            if not entry.cancelled:
                self._executor(entry.timer_task)
        return True

    def close(self) -> None:
        """Stop running tasks (Kafka stops the reaper): tasks that expire from now on are dropped."""
        self._executor = _drop_task

    def __repr__(self) -> str:
        return f"DelayQueueTimer({self._name!r}, size={self.size}, next_expiration_ms={self.next_expiration_ms})"
