"""Run a small schedule of adds and cancels on a fresh timer in simulated time and collect its trace.

This is what `kafkasim wheel` shows: where each task sits and how it cascades down the levels until it
runs, or leaves its bucket at once when it is cancelled or its operation completes first. Time travels from
one event to the next (the next add or cancel, or the next bucket expiration), with the reaper prompt (as
Kafka's `ExpirationReaper` calling `SystemTimer.advanceClock`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafkasim.timer.system_timer import SystemTimer
from kafkasim.timer.time import ManualTime
from kafkasim.timer.timer_task import TimerTask
from kafkasim.timer.trace import TaskCancelled, TimerEvent, TracedSystemTimer


@dataclass(frozen=True, slots=True)
class ScheduledAdd:
    """Add a task with `delay_ms` at time `at_ms`."""

    delay_ms: int
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class ScheduledCancel:
    """Cancel task number `task` (1 for T1) at time `at_ms`; `completed`: because its operation completed
    before its timeout (Kafka's `DelayedOperation.forceComplete`, which calls `TimerTask.cancel`)."""

    task: int
    at_ms: int
    completed: bool = False


class TraceTask(TimerTask):
    """A named task that remembers when it ran, or when it was cancelled or completed."""

    __slots__ = ("name", "ran_at_ms", "removed_at_ms", "completed", "_time")

    def __init__(self, delay_ms: int, name: str, time: ManualTime) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.ran_at_ms: int | None = None
        self.removed_at_ms: int | None = None  # left its bucket by a cancel before it ran
        self.completed = False  # that cancel was a completion before the timeout
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
    added_at_ms: tuple[int, ...]  # when each task was added
    events: tuple[TimerEvent, ...]


def _cancel(timer: SystemTimer, task: TraceTask, action: ScheduledCancel, time: ManualTime) -> TaskCancelled:
    entry = task.timer_task_entry
    bucket = entry.list if entry is not None else None
    task.cancel()  # Kafka's TimerTask.cancel: TimerTaskEntry.remove unlinks it from its bucket, O(1)
    if bucket is not None:
        task.removed_at_ms = time.milliseconds()
        task.completed = action.completed
    return TaskCancelled(
        time_ms=time.milliseconds(),
        task=task,
        completed=action.completed,
        level=None if bucket is None else bucket.level,
        bucket_index=None if bucket is None else bucket.index,
        bucket_start_ms=None if bucket is None else bucket.expiration,
        bucket_end_ms=None if bucket is None else bucket.expiration + bucket.tick_ms,
        bucket_entries=0 if bucket is None else len(bucket),
        size=timer.size,
        queued=timer.queued_buckets,
    )


def trace_schedule(
    adds: Sequence[ScheduledAdd],
    cancels: Sequence[ScheduledCancel] = (),
    *,
    tick_ms: int = 1,
    wheel_size: int = 20,
) -> Walkthrough:
    """Run `adds` and `cancels` on `SystemTimer(tick_ms, wheel_size, start 0)` until no bucket is left in
    the delay queue; return the trace.

    Tasks are named T1, T2, … in the order given and added in time order (ties keep that order). A bucket
    due at the same millisecond as an add or a cancel is flushed first: the reaper processes expirations
    at their due time. At one millisecond adds go before cancels. Raises ValueError for negative delays or
    times, a cancel of a task that does not exist, or one before the task is added.
    """
    for add in adds:
        if add.delay_ms < 0 or add.at_ms < 0:
            raise ValueError(f"delays and add times must be >= 0 ms, got delay {add.delay_ms} at {add.at_ms}")
    for cancel in cancels:
        if not 1 <= cancel.task <= len(adds):
            known = f"T1 to T{len(adds)}" if adds else "no tasks"
            raise ValueError(f"there is no task T{cancel.task} to cancel or complete; the adds make {known}")
        added_at = adds[cancel.task - 1].at_ms
        if cancel.at_ms < added_at:
            raise ValueError(
                f"T{cancel.task} is cancelled or completed at {cancel.at_ms} ms, before it is added at {added_at} ms"
            )
    time = ManualTime(0)
    events: list[TimerEvent] = []
    timer = TracedSystemTimer("walkthrough", tick_ms, wheel_size, time=time, listener=events.append)
    tasks = tuple(TraceTask(add.delay_ms, f"T{i + 1}", time) for i, add in enumerate(adds))
    # (time, adds before cancels, given order): sorted() is stable, so ties keep the order given.
    actions: list[tuple[int, int, ScheduledAdd | ScheduledCancel, TraceTask]] = sorted(
        [(add.at_ms, 0, add, task) for add, task in zip(adds, tasks, strict=True)]
        + [(cancel.at_ms, 1, cancel, tasks[cancel.task - 1]) for cancel in cancels],
        key=lambda action: (action[0], action[1]),
    )
    i = 0
    while True:
        next_expiration = timer.next_expiration_ms
        next_action = actions[i][0] if i < len(actions) else None
        if next_expiration is None and next_action is None:
            break
        if next_action is None or (next_expiration is not None and next_expiration <= next_action):
            assert next_expiration is not None
            time.set(max(next_expiration, time.milliseconds()))
            timer.advance_clock()
            continue
        time.set(max(next_action, time.milliseconds()))
        _, _, action, task = actions[i]
        if isinstance(action, ScheduledAdd):
            timer.add(task)
        else:
            events.append(_cancel(timer, task, action, time))
        i += 1
    return Walkthrough(
        tick_ms=tick_ms,
        wheel_size=wheel_size,
        tasks=tasks,
        added_at_ms=tuple(add.at_ms for add in adds),
        events=tuple(events),
    )
