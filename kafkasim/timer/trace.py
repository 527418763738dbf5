"""Events a `SystemTimer` reports to an optional listener, for teaching and tests.

With no listener the timer takes its untraced code path and none of these objects are built.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkasim.timer.timer_task import TimerTask


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
