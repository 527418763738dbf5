"""Run a small schedule of adds on a fresh timer in simulated time and collect its trace.

This is what `kafkasim wheel` shows: where each task sits and how it cascades down the levels until it
runs. Time travels from one event to the next (the next add or the next bucket expiration), with the
reaper prompt (Kafka's `SystemTimer.advanceClock` polls the delay queue until the next bucket is due).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafkasim.timer.system_timer import SystemTimer
from kafkasim.timer.time import ManualTime
from kafkasim.timer.timer_task import TimerTask
from kafkasim.timer.trace import TimerEvent


@dataclass(frozen=True, slots=True)
class ScheduledAdd:
    """Add a task with `delay_ms` at time `at_ms`."""

    delay_ms: int
    at_ms: int = 0


class TraceTask(TimerTask):
    """A named task that remembers when it ran."""

    __slots__ = ("name", "ran_at_ms", "_time")

    def __init__(self, delay_ms: int, name: str, time: ManualTime) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.ran_at_ms: int | None = None
        self._time = time

    def run(self) -> None:
        self.ran_at_ms = self._time.milliseconds()

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"TraceTask({self.name!r}, delay_ms={self.delay_ms})"


@dataclass(frozen=True, slots=True)
class Walkthrough:
    tick_ms: int
    wheel_size: int
    tasks: tuple[TraceTask, ...]  # in the order the adds were given
    events: tuple[TimerEvent, ...]


def trace_schedule(adds: Sequence[ScheduledAdd], *, tick_ms: int = 1, wheel_size: int = 20) -> Walkthrough:
    """Run `adds` on `SystemTimer(tick_ms, wheel_size, start 0)` until every task ran; return the trace.

    Tasks are named T1, T2, … in the order given and added in time order (ties keep that order). A bucket
    due at the same millisecond as an add is flushed first: the reaper processes expirations at their due
    time. Raises ValueError for negative delays or times.
    """
    for add in adds:
        if add.delay_ms < 0 or add.at_ms < 0:
            raise ValueError(f"delays and add times must be >= 0 ms, got delay {add.delay_ms} at {add.at_ms}")
    time = ManualTime(0)
    events: list[TimerEvent] = []
    timer = SystemTimer("walkthrough", tick_ms, wheel_size, time=time, listener=events.append)
    tasks = tuple(TraceTask(add.delay_ms, f"T{i + 1}", time) for i, add in enumerate(adds))
    pending = sorted(zip(adds, tasks, strict=True), key=lambda pair: pair[0].at_ms)
    i = 0
    while True:
        next_expiration = timer.next_expiration_ms
        next_add = pending[i][0].at_ms if i < len(pending) else None
        if next_expiration is None and next_add is None:
            break
        if next_add is None or (next_expiration is not None and next_expiration <= next_add):
            assert next_expiration is not None
            time.set(max(next_expiration, time.milliseconds()))
            timer.advance_clock()
        else:
            time.set(max(next_add, time.milliseconds()))
            timer.add(pending[i][1])
            i += 1
    return Walkthrough(tick_ms=tick_ms, wheel_size=wheel_size, tasks=tasks, events=tuple(events))
