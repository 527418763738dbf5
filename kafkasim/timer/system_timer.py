"""SystemTimer: Kafka's hierarchical timing wheel driven by a delay queue of buckets."""

from __future__ import annotations

from collections.abc import Callable

from kafkasim.timer.delay_queue import DelayQueue
from kafkasim.timer.time import ManualTime, Time
from kafkasim.timer.timer_task import TimerTask
from kafkasim.timer.timer_task_entry import TimerTaskEntry
from kafkasim.timer.timer_task_list import TaskCounter, TimerTaskList
from kafkasim.timer.timing_wheel import TimingWheel


def run_task(task: TimerTask) -> None:
    """The default executor: run the task at once, on the caller's stack."""
    task.run()


def _drop_task(task: TimerTask) -> None:
    """Executor after `close()`: Kafka's executor is shut down by then, so the task never runs."""


class SystemTimer:
    """Kafka's `SystemTimer`, single-threaded.

    `add(task)` puts the task in the wheel at `now + delay_ms`; `advance_clock()` flushes every due bucket in
    expiration order, moving the wheel clocks to each bucket's expiration first so that its entries are
    demoted into finer buckets or run. Example (tick 1, 20 slots, start 0): a task added with delay 25 at 0
    goes to level 2 (tick 20) bucket 1 = [20, 40); at 20 that bucket is flushed and the task moves to level 1
    bucket 5 = [25, 26), which runs it at 25.

    Kafka guards `add` and `advanceClock` with a read/write lock and runs tasks on a separate executor
    thread. A discrete-event simulator runs one thing at a time, so no lock is needed; the ordering it
    produced is kept: an `advance_clock` drains every due bucket before anything else happens, and tasks run
    one after another in submission order. The default executor runs a task synchronously; pass `executor`
    to defer it (e.g. into a SimPy process).

    `kafkasim.timer.trace.TracedSystemTimer` is this timer reporting every placement, bucket expiry, demotion
    and execution to a listener, for teaching and tests.
    """

    __slots__ = (
        "_name",
        "_time",
        "_executor",
        "_task_counter",
        "_delay_queue",
        "_timing_wheel",
    )

    def __init__(
        self,
        name: str,
        tick_ms: int = 1,
        wheel_size: int = 20,
        start_ms: int | None = None,
        time: Time | None = None,
        executor: Callable[[TimerTask], None] | None = None,
    ) -> None:
        if tick_ms < 1:
            raise ValueError(f"SystemTimer {name!r}: tick_ms must be at least 1 ms, got {tick_ms}")
        if wheel_size < 2:
            # With one bucket a level's interval equals its tick: every entry overflows, forever.
            raise ValueError(f"SystemTimer {name!r}: wheel_size must be at least 2 buckets, got {wheel_size}")
        if time is None:
            time = ManualTime(0 if start_ms is None else start_ms)
        if start_ms is None:
            start_ms = time.milliseconds()
        self._name = name
        self._time = time
        self._executor = executor if executor is not None else run_task
        self._task_counter = TaskCounter()
        self._delay_queue = DelayQueue()
        self._timing_wheel = TimingWheel(tick_ms, wheel_size, start_ms, self._task_counter, self._delay_queue)

    @property
    def name(self) -> str:
        return self._name

    @property
    def time(self) -> Time:
        return self._time

    @property
    def timing_wheel(self) -> TimingWheel:
        """The level-1 wheel (its `overflow_wheel` chain holds the coarser levels)."""
        return self._timing_wheel

    @property
    def size(self) -> int:
        """Entries currently in buckets, all levels (Kafka's `size()`); never counts already-expired adds."""
        return self._task_counter.value

    @property
    def next_expiration_ms(self) -> int | None:
        """Earliest bucket expiration in the delay queue (possibly of a bucket emptied by cancels), or None."""
        return self._delay_queue.peek_expiration()

    @property
    def queued_buckets(self) -> int:
        """Buckets in the delay queue: at most one entry per bucket (a bucket is offered only when its
        expiration changes), so at most `wheel_size` per level in use, however many tasks there are."""
        return len(self._delay_queue)

    def add(self, task: TimerTask) -> None:
        """Schedule `task` at `now + task.delay_ms`. Re-adding a task moves it (its old entry leaves its bucket)."""
        self._add_timer_task_entry(TimerTaskEntry(task, task.delay_ms + self._time.milliseconds()))

    def _add_timer_task_entry(self, entry: TimerTaskEntry) -> None:
        # TimingWheel.add refused it because already expired against the wheel clock -> straight to the
        # executor, never counted in size; refused because cancelled -> dropped.
        if not self._timing_wheel.add(entry) and entry.timer_task._timer_task_entry is entry:
            self._executor(entry.timer_task)

    def advance_clock(self) -> bool:
        """Flush every bucket due at `time.milliseconds()`, in expiration order; True iff any was flushed.

        Buckets that the flush itself queues and that are already due are flushed in the same call, as
        Kafka's non-blocking `poll()` loop does (`SystemTimer.advanceClock`).
        """
        queue = self._delay_queue
        time = self._time
        bucket = queue.poll(time.milliseconds())
        if bucket is None:
            return False
        wheel = self._timing_wheel
        while bucket is not None:
            wheel.advance_clock(bucket.expiration)
            self._flush(bucket)
            bucket = queue.poll(time.milliseconds())
        return True

    def _flush(self, bucket: TimerTaskList) -> None:
        """Re-insert every entry of a due bucket: demoted into a finer bucket, or run
        (Kafka's ``bucket.flush(addTimerTaskEntry)``)."""
        bucket.flush(self._add_timer_task_entry)

    def locate(self, task: TimerTask) -> tuple[int, int, int] | None:
        """Where `task` sits now: (level starting at 1, bucket index, bucket expiration ms), or None when
        it is in no bucket (never added, cancelled, run, or handed to the executor on add)."""
        entry = task._timer_task_entry
        if entry is None:
            return None
        bucket = entry.list
        if bucket is None:
            return None
        return (bucket.level, bucket.index, bucket.expiration)

    def close(self) -> None:
        """Shut the executor down (Kafka's `close()`): tasks that expire from now on are not run."""
        self._executor = _drop_task

    def __repr__(self) -> str:
        return f"SystemTimer({self._name!r}, size={self.size}, next_expiration_ms={self.next_expiration_ms})"
