"""trace_schedule: the simulated-time walkthrough behind `kafkasim wheel`."""

from __future__ import annotations

import random

import pytest

from kafkasim.timer import BucketExpired, TaskCancelled, TaskExecuted, TaskPlaced
from kafkasim.timer.walkthrough import ScheduledAdd, ScheduledCancel, trace_schedule


def test_readme_schedule_every_task_runs_at_its_expiration_after_its_cascade() -> None:
    walk = trace_schedule([ScheduledAdd(450), ScheduledAdd(8, 2), ScheduledAdd(19, 2), ScheduledAdd(350)])
    assert [t.name for t in walk.tasks] == ["T1", "T2", "T3", "T4"]
    assert [t.ran_at_ms for t in walk.tasks] == [450, 10, 21, 350]
    path = {
        t.name: [(e.level, e.bucket_index) for e in walk.events if isinstance(e, TaskPlaced) and e.task is t]
        for t in walk.tasks
    }
    assert path == {
        "T1": [(3, 1), (2, 2), (1, 10)],
        "T2": [(1, 10)],
        "T3": [(2, 1), (1, 1)],  # 21 >= 0 + 20: level 2 although only 19 ms away
        "T4": [(2, 17), (1, 10)],
    }
    times = [e.time_ms for e in walk.events]
    assert times == sorted(times)


def test_bucket_due_at_the_same_ms_as_an_add_is_flushed_first() -> None:
    walk = trace_schedule([ScheduledAdd(5), ScheduledAdd(3, 5)])
    kinds = [(type(e).__name__, e.time_ms) for e in walk.events]
    assert kinds.index(("BucketExpired", 5)) < kinds.index(("TaskPlaced", 5))
    assert [t.ran_at_ms for t in walk.tasks] == [5, 8]


def test_stale_clock_example_5() -> None:
    walk = trace_schedule([ScheduledAdd(1), ScheduledAdd(0, 1000)])
    runs = [e for e in walk.events if isinstance(e, TaskExecuted)]
    assert [(str(e.task), e.time_ms, e.from_level) for e in runs] == [("T1", 1, 1), ("T2", 1000, 2)]
    flushed = [(e.level, e.bucket_start_ms) for e in walk.events if isinstance(e, BucketExpired)]
    assert flushed[-2:] == [(3, 800), (2, 1000)]


def test_wheel_size_and_tick_are_honoured() -> None:
    walk = trace_schedule([ScheduledAdd(10)], tick_ms=2, wheel_size=3)
    placed = [(e.level, e.bucket_start_ms, e.bucket_end_ms) for e in walk.events if isinstance(e, TaskPlaced)]
    # L1 covers [0, 6), L2 (tick 6) covers [0, 18): 10 lands in L2 [6, 12), then L1 [10, 12).
    assert placed == [(2, 6, 12), (1, 10, 12)]
    assert walk.tasks[0].ran_at_ms == 10


def test_negative_schedules_are_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        trace_schedule([ScheduledAdd(-1)])


def test_cancel_removes_the_task_at_once_and_its_bucket_is_flushed_empty_at_its_time() -> None:
    walk = trace_schedule([ScheduledAdd(450), ScheduledAdd(30)], [ScheduledCancel(1, 7)])
    cancel = next(e for e in walk.events if isinstance(e, TaskCancelled))
    assert (cancel.time_ms, cancel.completed, cancel.level, cancel.bucket_index) == (7, False, 3, 1)
    assert (cancel.bucket_entries, cancel.size, cancel.queued) == (0, 1, 2)  # size drops, queue does not
    t1 = walk.tasks[0]
    assert (t1.ran_at_ms, t1.removed_at_ms, t1.completed) == (None, 7, False)
    assert not [e for e in walk.events if isinstance(e, (TaskPlaced, TaskExecuted)) and e.task is t1 and e.time_ms > 0]
    last = walk.events[-1]
    assert isinstance(last, BucketExpired) and (last.time_ms, last.level, last.entries) == (400, 3, 0)


def test_complete_is_a_cancel_marked_completed_and_leaves_the_other_entries_of_its_bucket() -> None:
    walk = trace_schedule([ScheduledAdd(30), ScheduledAdd(25)], [ScheduledCancel(1, 5, completed=True)])
    cancel = next(e for e in walk.events if isinstance(e, TaskCancelled))
    assert cancel.completed and (cancel.level, cancel.bucket_start_ms, cancel.bucket_entries) == (2, 20, 1)
    assert [(t.name, t.ran_at_ms, t.removed_at_ms, t.completed) for t in walk.tasks] == [
        ("T1", None, 5, True),
        ("T2", 25, None, False),
    ]


def test_cancel_of_a_task_that_ran_is_reported_and_changes_nothing() -> None:
    walk = trace_schedule([ScheduledAdd(5)], [ScheduledCancel(1, 9)])
    cancel = walk.events[-1]
    assert isinstance(cancel, TaskCancelled) and cancel.level is None and cancel.size == 0
    assert walk.tasks[0].ran_at_ms == 5 and walk.tasks[0].removed_at_ms is None


def test_at_one_ms_the_due_bucket_is_flushed_before_a_cancel_and_an_add_before_a_cancel() -> None:
    walk = trace_schedule([ScheduledAdd(5), ScheduledAdd(3, 5)], [ScheduledCancel(1, 5), ScheduledCancel(2, 5)])
    assert [t.ran_at_ms for t in walk.tasks] == [5, None]
    assert walk.tasks[1].removed_at_ms == 5


@pytest.mark.parametrize(
    ("cancel", "message"),
    [(ScheduledCancel(3, 1), "no task T3"), (ScheduledCancel(0, 1), "no task T0"), (ScheduledCancel(1, 1), "before")],
)
def test_impossible_cancels_are_refused(cancel: ScheduledCancel, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trace_schedule([ScheduledAdd(5, 2), ScheduledAdd(1)], [cancel])


def test_the_delay_queue_holds_one_entry_per_bucket_at_most_wheel_size_per_level() -> None:
    # Kafka's TimingWheel.add offers a bucket only when its expiration changes: however many tasks, the
    # delay queue never holds a bucket twice, so it holds at most wheel_size buckets per level in use.
    rng = random.Random(12)
    adds = [ScheduledAdd(rng.randrange(0, 3000), rng.randrange(0, 500)) for _ in range(400)]
    cancels = [ScheduledCancel(rng.randrange(1, 401), 500 + rng.randrange(0, 500)) for _ in range(100)]
    walk = trace_schedule(adds, cancels, tick_ms=1, wheel_size=8)
    levels = max(e.level for e in walk.events if isinstance(e, TaskPlaced))
    queued = [e.queued for e in walk.events]
    assert max(queued) <= 8 * levels < len(adds)
    assert max(e.size for e in walk.events) > max(queued)  # many more tasks than queue entries
