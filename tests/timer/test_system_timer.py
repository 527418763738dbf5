"""SystemTimer: Kafka's TimerTest, five worked examples (tick 1, wheel size 20, via `locate` and
the trace), and SystemTimer's and TimingWheel's rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafkasim.timer import (
    BucketExpired,
    ManualTime,
    SystemTimer,
    TaskExecuted,
    TaskPlaced,
    TimerEvent,
    TimerTask,
    TracedSystemTimer,
)


class Task(TimerTask):
    def __init__(self, delay_ms: int, name: str, time: ManualTime, log: list[tuple[str, int]]) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.time = time
        self.log = log

    def run(self) -> None:
        self.log.append((self.name, self.time.milliseconds()))

    def __str__(self) -> str:
        return self.name


def drain(timer: SystemTimer, time: ManualTime, until_ms: int | None = None) -> None:
    """ARCHITECTURE.md's time travel: jump to each bucket expiration and advance (reaper prompt)."""
    while (t := timer.next_expiration_ms) is not None and (until_ms is None or t <= until_ms):
        time.set(max(t, time.milliseconds()))
        timer.advance_clock()
    if until_ms is not None:
        time.set(max(until_ms, time.milliseconds()))


def make(wheel_size: int = 20, start_ms: int = 0) -> tuple[SystemTimer, ManualTime, list[tuple[str, int]], list[TimerEvent]]:
    time = ManualTime(start_ms)
    events: list[TimerEvent] = []
    return TracedSystemTimer("test", 1, wheel_size, time=time, listener=events.append), time, [], events


# ---- Kafka's TimerTest (tick 1, wheel size 3) ----


def test_kafka_already_expired_tasks_run_immediately() -> None:
    timer, time, log, _ = make(wheel_size=3)
    tasks = [Task(i, str(i), time, log) for i in range(-5, 0)]
    for task in tasks:
        timer.add(task)
    assert log == [(str(i), 0) for i in range(-5, 0)]  # ran inside add, in submission order
    assert timer.size == 0 and timer.next_expiration_ms is None
    assert timer.advance_clock() is False


def test_kafka_task_expiration_every_task_runs_once_at_its_expiration() -> None:
    timer, time, log, _ = make(wheel_size=3)
    delays = list(range(0, 5)) + [d for d in range(10, 100) for _ in range(2)] + list(range(100, 500))
    for i, delay in enumerate(delays):
        timer.add(Task(delay, f"{delay}#{i}", time, log))
    drain(timer, time)
    assert sorted(log) == sorted((f"{delay}#{i}", delay) for i, delay in enumerate(delays))
    assert timer.size == 0


# ---- worked examples (tick 1, wheel size 20, start 0, reaper prompt) ----


def test_example_1_delay_5_runs_from_level_1_bucket_5() -> None:
    timer, time, log, _ = make()
    task = Task(5, "a", time, log)
    timer.add(task)
    assert timer.locate(task) == (1, 5, 5)
    drain(timer, time, until_ms=4)
    assert log == []
    drain(timer, time)
    assert log == [("a", 5)]


def test_example_2_delay_25_goes_to_level_2_and_reuses_flushed_bucket_5() -> None:
    timer, time, log, events = make()
    early, task = Task(5, "a", time, log), Task(25, "b", time, log)
    timer.add(early)
    timer.add(task)
    assert timer.locate(task) == (2, 1, 20)
    drain(timer, time, until_ms=20)
    # Level-1 bucket 5 was flushed at 5 (expiration reset to -1), so it is queued again for 25.
    assert timer.locate(task) == (1, 5, 25)
    assert timer.next_expiration_ms == 25
    drain(timer, time)
    assert log == [("a", 5), ("b", 25)]
    demotion = next(e for e in events if isinstance(e, TaskPlaced) and e.from_level == 2)
    assert (demotion.time_ms, demotion.level, demotion.bucket_index, demotion.bucket_queued) == (20, 1, 5, True)


def test_example_3_delay_450_cascades_l3_l2_l1_with_size_1_throughout() -> None:
    timer, time, log, events = make()
    task = Task(450, "c", time, log)
    timer.add(task)
    where = [timer.locate(task)]
    sizes = [timer.size]
    for until in (400, 440):
        drain(timer, time, until_ms=until)
        where.append(timer.locate(task))
        sizes.append(timer.size)
    assert where == [(3, 1, 400), (2, 2, 440), (1, 10, 450)]
    assert sizes == [1, 1, 1]
    drain(timer, time)
    assert log == [("c", 450)] and timer.size == 0
    steps = [
        (type(e).__name__, e.time_ms, getattr(e, "level", None), getattr(e, "bucket_start_ms", None))
        for e in events
    ]
    assert steps == [
        ("TaskPlaced", 0, 3, 400),
        ("BucketExpired", 400, 3, 400),
        ("TaskPlaced", 400, 2, 440),
        ("BucketExpired", 440, 2, 440),
        ("TaskPlaced", 440, 1, 450),
        ("BucketExpired", 450, 1, 450),
        ("TaskExecuted", 450, None, None),
    ]
    # "transiently 0 during each flush": the entry has left its bucket when it is re-added or run.
    assert [e.size for e in events] == [1, 1, 1, 1, 1, 1, 0]
    assert [e.wheel_times_ms for e in events if isinstance(e, BucketExpired)] == [
        (400, 400, 400),
        (440, 440, 400),
        (450, 440, 400),
    ]


def test_example_4_delay_0_on_a_fresh_clock_is_already_expired_and_never_counted() -> None:
    timer, time, log, events = make()
    task = Task(0, "d", time, log)
    timer.add(task)
    assert log == [("d", 0)]
    assert timer.size == 0 and timer.locate(task) is None
    assert len(events) == 1 and isinstance(events[0], TaskExecuted) and events[0].from_level is None


def test_example_5_stale_wheel_clock_buckets_delay_0_and_it_runs_via_the_cascade() -> None:
    timer, time, log, events = make()
    timer.add(Task(1, "tick", time, log))
    drain(timer, time)  # the last bucket expiry: the wheel clock stays at 1 from now on
    time.set(1000)
    task = Task(0, "e", time, log)
    timer.add(task)
    # TimingWheel.add: not "already expired", because the wheel clock lags; L3 (interval 8000) vid 2 = [800,
    # 1200).
    assert log == [("tick", 1)]
    assert timer.locate(task) == (3, 2, 800) and timer.size == 1
    assert timer.next_expiration_ms == 800  # already due
    assert timer.advance_clock() is True
    assert log == [("tick", 1), ("e", 1000)]
    placed = [(e.level, e.bucket_start_ms) for e in events if isinstance(e, TaskPlaced) and e.task is task]
    assert placed == [(3, 800), (2, 1000)]
    run = [e for e in events if isinstance(e, TaskExecuted) and e.task is task]
    assert len(run) == 1 and run[0].from_level == 2 and run[0].time_ms == 1000


# ---- other SystemTimer rules ----


def test_fires_at_exactly_the_expiration_unlike_kafkas_mock_timer() -> None:
    # Kafka's MockTimer needs now > expiration (tests call advanceClock(1001) for 1000 ms);
    # the real timer, and so kafkasim, runs at now == expiration.
    timer, time, log, _ = make()
    timer.add(Task(1000, "x", time, log))
    drain(timer, time, until_ms=999)
    assert log == []
    drain(timer, time, until_ms=1000)
    assert log == [("x", 1000)]


def test_cancel_removes_at_once_and_the_empty_bucket_is_still_flushed() -> None:
    timer, time, log, events = make()
    task = Task(7, "x", time, log)
    timer.add(task)
    task.cancel()
    assert timer.size == 0 and timer.locate(task) is None
    assert timer.next_expiration_ms == 7  # SystemTimer: the bucket stays in the delay queue
    time.set(7)
    assert timer.advance_clock() is True
    assert log == [] and timer.next_expiration_ms is None
    assert [type(e).__name__ for e in events] == ["TaskPlaced", "BucketExpired"]


def test_re_adding_a_task_moves_it() -> None:
    timer, time, log, _ = make()
    task = Task(30, "x", time, log)
    timer.add(task)
    assert timer.locate(task) == (2, 1, 20)
    time.set(3)
    timer.add(task)  # new expiration 33: the old entry leaves level 2, bucket 1
    assert timer.locate(task) == (2, 1, 20) and timer.size == 1
    time.set(5)
    task.delay_ms = 4
    timer.add(task)
    assert timer.locate(task) == (1, 9, 9) and timer.size == 1
    drain(timer, time)
    assert log == [("x", 9)]


def test_advance_clock_returns_false_when_nothing_is_due() -> None:
    timer, time, log, _ = make()
    timer.add(Task(10, "x", time, log))
    time.set(9)
    assert timer.advance_clock() is False
    time.set(10)
    assert timer.advance_clock() is True
    assert timer.advance_clock() is False


def test_one_advance_flushes_every_due_bucket_in_expiration_order() -> None:
    timer, time, log, _ = make()
    for delay in (300, 3, 45, 17):
        timer.add(Task(delay, str(delay), time, log))
    time.set(1000)  # the reaper was late: everything is due
    assert timer.advance_clock() is True
    assert log == [("3", 1000), ("17", 1000), ("45", 1000), ("300", 1000)]


def test_start_ms_defaults_to_the_time_and_the_clock_is_rounded_to_a_tick() -> None:
    time = ManualTime(1234)
    timer = SystemTimer("t", 10, 20, time=time)
    assert timer.timing_wheel.current_time_ms == 1230


def test_custom_executor_receives_expired_tasks() -> None:
    time = ManualTime(0)
    handed: list[TimerTask] = []
    timer = SystemTimer("t", time=time, executor=handed.append)
    log: list[tuple[str, int]] = []
    now, later = Task(0, "now", time, log), Task(3, "later", time, log)
    timer.add(now)
    timer.add(later)
    drain(timer, time)
    assert handed == [now, later] and log == []


def test_close_stops_running_tasks() -> None:
    timer, time, log, _ = make()
    timer.add(Task(5, "x", time, log))
    timer.close()
    drain(timer, time)
    assert log == []


@pytest.mark.parametrize(("tick_ms", "wheel_size"), [(0, 20), (-1, 20), (1, 1), (1, 0)])
def test_rejects_impossible_wheels(tick_ms: int, wheel_size: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        SystemTimer("bad", tick_ms, wheel_size)


def test_manual_time_is_monotonic() -> None:
    time = ManualTime(5)
    time.sleep(3)
    time.set(10)
    assert time.milliseconds() == 10
    with pytest.raises(ValueError, match="monotonic"):
        time.set(9)
    with pytest.raises(ValueError, match="negative"):
        time.sleep(-1)


def test_timer_and_purgatory_never_import_simpy() -> None:
    root = Path(__file__).resolve().parents[2] / "kafkasim"
    offenders = []
    for package in ("timer", "purgatory"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                if any(n.split(".")[0] in ("simpy", "rich") for n in names):
                    offenders.append(f"{path.name}: {names}")
    assert offenders == []
