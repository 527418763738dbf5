"""`TracedSystemTimer`: a `SystemTimer` that reports what it does to a listener, for teaching and tests.

The events it reports are below. `SystemTimer` itself builds none of them and pays nothing for tracing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafkasim.timer.system_timer import SystemTimer
from kafkasim.timer.time import Time
from kafkasim.timer.timer_task import TimerTask
from kafkasim.timer.timer_task_entry import TimerTaskEntry
from kafkasim.timer.timer_task_list import TimerTaskList
from kafkasim.timer.timing_wheel import TimingWheel


@dataclass(frozen=True, slots=True)
class TaskPlaced:
    """An entry went into a bucket: on `add` (`from_level` None) or demoted out of a level-`from_level`
    bucket while that bucket was flushed."""

    time_ms: int
    task: TimerTask
    expiration_ms: int
    level: int
    bucket_index: int
    bucket_start_ms: int
    bucket_end_ms: int
    wheel_time_ms: int  # current time of the wheel at `level`
    wheel_interval_ms: int  # that wheel covers [wheel_time_ms, wheel_time_ms + wheel_interval_ms)
    from_level: int | None
    bucket_queued: bool  # the bucket's expiration changed, so it was (re)offered to the delay queue
    size: int  # timer size after the placement
    queued: int  # buckets in the delay queue after the placement


@dataclass(frozen=True, slots=True)
class BucketExpired:
    """A due bucket left the delay queue; the wheel clocks were advanced to its expiration and it is about
    to be flushed."""

    time_ms: int
    level: int
    bucket_index: int
    bucket_start_ms: int
    bucket_end_ms: int
    entries: int
    wheel_times_ms: tuple[int, ...]  # current time of every level after the advance, level 1 first
    size: int  # timer size before the flush
    queued: int  # buckets left in the delay queue once this one was taken out


@dataclass(frozen=True, slots=True)
class TaskExecuted:
    """A task was handed to the executor: already expired on `add` (`from_level` None) or when the
    level-`from_level` bucket holding it was flushed."""

    time_ms: int
    task: TimerTask
    expiration_ms: int
    wheel_time_ms: int  # level-1 wheel time: the task is expired because expiration < this + tick_ms
    tick_ms: int
    from_level: int | None
    size: int
    queued: int  # buckets in the delay queue


@dataclass(frozen=True, slots=True)
class TaskDropped:
    """A cancelled entry was refused by the wheel (it is neither bucketed nor run)."""

    time_ms: int
    task: TimerTask
    expiration_ms: int
    from_level: int | None
    size: int
    queued: int  # buckets in the delay queue


@dataclass(frozen=True, slots=True)
class TaskCancelled:
    """`TimerTask.cancel()` was called: by hand (`completed` False) or because the operation completed
    before its timeout (`completed` True: Kafka's `DelayedOperation.forceComplete` cancels its timer task).

    The timer never sees a cancel (Kafka's `TimerTask.cancel` unlinks the entry from its bucket with
    `TimerTaskEntry.remove`, O(1)), so whoever cancels reports it; `kafkasim wheel` does. `level` is None
    when the task was in no bucket (it had run or was cancelled before): then nothing changes. The bucket
    itself stays in the delay queue, with one entry fewer, until its expiration.
    """

    time_ms: int
    task: TimerTask
    completed: bool
    level: int | None
    bucket_index: int | None
    bucket_start_ms: int | None
    bucket_end_ms: int | None
    bucket_entries: int  # entries left in that bucket after the removal (0 if in no bucket)
    size: int  # timer size after the removal
    queued: int  # buckets in the delay queue: a cancel does not change it


TimerEvent = TaskPlaced | BucketExpired | TaskExecuted | TaskDropped | TaskCancelled


class TracedSystemTimer(SystemTimer):
    """A `SystemTimer` whose `listener` receives a `TimerEvent` for every placement, bucket expiry, demotion
    and execution (`kafkasim wheel`, the walkthrough, the timer's tests)."""

    __slots__ = ("_listener", "_flushing_level")

    def __init__(
        self,
        name: str,
        tick_ms: int = 1,
        wheel_size: int = 20,
        start_ms: int | None = None,
        time: Time | None = None,
        executor: Callable[[TimerTask], None] | None = None,
        *,
        listener: Callable[[TimerEvent], None],
    ) -> None:
        super().__init__(name, tick_ms, wheel_size, start_ms, time, executor)
        self._listener = listener
        # The level of the bucket being flushed: where a re-inserted entry comes from (None: from `add`).
        self._flushing_level: int | None = None

    def _wheel_at(self, level: int) -> TimingWheel:
        wheel = self._timing_wheel
        for _ in range(level - 1):
            overflow = wheel.overflow_wheel
            assert overflow is not None, "a bucket's level always has a wheel"
            wheel = overflow
        return wheel

    def _wheel_times(self) -> tuple[int, ...]:
        times = []
        wheel: TimingWheel | None = self._timing_wheel
        while wheel is not None:
            times.append(wheel.current_time_ms)
            wheel = wheel.overflow_wheel
        return tuple(times)

    def _flush(self, bucket: TimerTaskList) -> None:
        listener = self._listener
        listener(
            BucketExpired(
                time_ms=self._time.milliseconds(),
                level=bucket.level,
                bucket_index=bucket.index,
                bucket_start_ms=bucket.expiration,
                bucket_end_ms=bucket.expiration + bucket.tick_ms,
                entries=len(bucket),
                wheel_times_ms=self._wheel_times(),
                size=self.size,
                queued=len(self._delay_queue),
            )
        )
        outer = self._flushing_level
        self._flushing_level = bucket.level
        try:
            bucket.flush(self._add_timer_task_entry)
        finally:
            self._flushing_level = outer

    def _add_timer_task_entry(self, entry: TimerTaskEntry) -> None:
        listener = self._listener
        from_level = self._flushing_level
        task = entry.timer_task
        queued_before = len(self._delay_queue)
        if self._timing_wheel.add(entry):
            bucket = entry.list
            assert bucket is not None
            wheel = self._wheel_at(bucket.level)
            listener(
                TaskPlaced(
                    time_ms=self._time.milliseconds(),
                    task=task,
                    expiration_ms=entry.expiration_ms,
                    level=bucket.level,
                    bucket_index=bucket.index,
                    bucket_start_ms=bucket.expiration,
                    bucket_end_ms=bucket.expiration + bucket.tick_ms,
                    wheel_time_ms=wheel.current_time_ms,
                    wheel_interval_ms=wheel.interval,
                    from_level=from_level,
                    bucket_queued=len(self._delay_queue) > queued_before,
                    size=self.size,
                    queued=len(self._delay_queue),
                )
            )
        elif entry.cancelled:
            listener(
                TaskDropped(
                    time_ms=self._time.milliseconds(),
                    task=task,
                    expiration_ms=entry.expiration_ms,
                    from_level=from_level,
                    size=self.size,
                    queued=len(self._delay_queue),
                )
            )
        else:
            listener(
                TaskExecuted(
                    time_ms=self._time.milliseconds(),
                    task=task,
                    expiration_ms=entry.expiration_ms,
                    wheel_time_ms=self._timing_wheel.current_time_ms,
                    tick_ms=self._timing_wheel.tick_ms,
                    from_level=from_level,
                    size=self.size,
                    queued=len(self._delay_queue),
                )
            )
            self._executor(task)
