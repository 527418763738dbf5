"""TimingWheel: one level of Kafka's hierarchical timing wheel."""

from __future__ import annotations

from kafkasim.timer.delay_queue import DelayQueue
from kafkasim.timer.timer_task_entry import TimerTaskEntry
from kafkasim.timer.timer_task_list import TaskCounter, TimerTaskList


class TimingWheel:
    """`wheel_size` buckets of `tick_ms` each, covering `[current_time_ms, current_time_ms + interval)`.

    An entry too far in the future goes to the overflow wheel, created on first need with
    `tick = this interval` and `start = this wheel's *current* time` (Kafka's `TimingWheel.addOverflowWheel`).
    Worked example (tick 1, size 20, start 0): expiration 450 is beyond level 1 ([0, 20)) and level 2
    ([0, 400)), so it lands in level 3 (tick 400) bucket 450 // 400 = 1, which expires at 400; at 400 it is
    re-added and falls into level 2 bucket 22 % 20 = 2 (expires 440), at 440 into level 1 bucket
    450 % 20 = 10, and runs at 450. The wheel clock moves only in `advance_clock`, i.e. when a bucket expires (Kafka's
    `TimingWheel.advanceClock`).
    """

    __slots__ = (
        "_tick_ms",
        "_wheel_size",
        "_interval",
        "_task_counter",
        "_queue",
        "_buckets",
        "_current_time_ms",
        "_overflow_wheel",
        "_level",
    )

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        task_counter: TaskCounter,
        queue: DelayQueue,
        *,
        level: int = 1,
    ) -> None:
        self._tick_ms = tick_ms
        self._wheel_size = wheel_size
        self._interval = tick_ms * wheel_size
        self._task_counter = task_counter
        self._queue = queue
        self._buckets = [
            TimerTaskList(task_counter, level=level, index=i, tick_ms=tick_ms) for i in range(wheel_size)
        ]
        # Rounded down to a whole tick (Python's % floors, Java's truncates: they agree for times >= 0).
        self._current_time_ms = start_ms - (start_ms % tick_ms)
        self._overflow_wheel: TimingWheel | None = None
        self._level = level

    @property
    def tick_ms(self) -> int:
        return self._tick_ms

    @property
    def wheel_size(self) -> int:
        return self._wheel_size

    @property
    def interval(self) -> int:
        return self._interval

    @property
    def current_time_ms(self) -> int:
        return self._current_time_ms

    @property
    def overflow_wheel(self) -> TimingWheel | None:
        return self._overflow_wheel

    @property
    def level(self) -> int:
        return self._level

    def bucket(self, index: int) -> TimerTaskList:
        return self._buckets[index]

    def add(self, entry: TimerTaskEntry) -> bool:
        """Place `entry` in this wheel or an overflow wheel; False if it is cancelled or already expired.

        Kafka recurses into the overflow wheel; walking the chain in a loop does the same checks level by
        level without a Python call per level (a 30 s request timeout lives on level 4).
        """
        if entry.timer_task._timer_task_entry is not entry:
            return False  # cancelled (or re-added since): dropped silently
        expiration = entry.expiration_ms
        wheel = self
        while True:
            current = wheel._current_time_ms
            tick = wheel._tick_ms
            # TimingWheel.add: "already expired" is judged against the wheel clock, which may lag real time.
            # (An entry that overflowed from the level below is never expired here.)
            if expiration < current + tick:
                return False
            if expiration < current + wheel._interval:
                virtual_id = expiration // tick
                bucket = wheel._buckets[virtual_id % wheel._wheel_size]
                bucket.add(entry)
                # Bucket expiration = start of its range; queue it only if that changed
                # (TimerTaskList.setExpiration).
                if bucket.set_expiration(virtual_id * tick):
                    wheel._queue.offer(bucket)
                return True
            overflow = wheel._overflow_wheel
            wheel = overflow if overflow is not None else wheel._add_overflow_wheel()

    def _add_overflow_wheel(self) -> TimingWheel:
        # TimingWheel.addOverflowWheel: the parent's interval and its CURRENT wheel time, not the wall clock.
        self._overflow_wheel = TimingWheel(
            self._interval,
            self._wheel_size,
            self._current_time_ms,
            self._task_counter,
            self._queue,
            level=self._level + 1,
        )
        return self._overflow_wheel

    def advance_clock(self, time_ms: int) -> None:
        """Move this wheel (and its overflow wheels) to `time_ms`, rounded down to a tick."""
        if time_ms >= self._current_time_ms + self._tick_ms:
            self._current_time_ms = time_ms - (time_ms % self._tick_ms)
            if self._overflow_wheel is not None:
                self._overflow_wheel.advance_clock(self._current_time_ms)

    def __repr__(self) -> str:
        return (
            f"TimingWheel(level={self._level}, tick_ms={self._tick_ms}, wheel_size={self._wheel_size}, "
            f"current_time_ms={self._current_time_ms})"
        )
