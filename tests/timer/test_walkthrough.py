"""trace_schedule: the simulated-time walkthrough behind `kafkasim wheel`."""

from __future__ import annotations

import pytest

from kafkasim.timer import BucketExpired, TaskExecuted, TaskPlaced
from kafkasim.timer.walkthrough import ScheduledAdd, trace_schedule


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
