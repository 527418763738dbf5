"""Property: under any schedule of add / cancel / re-add / advance, every task that is not cancelled runs
exactly once, at exactly the time a simple heap says (its expiration with tick 1), and `size`, `locate`
and `next_expiration_ms` stay consistent. Wheel size 3 forces deep cascades, as in Kafka's TimerTest."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkasim.timer import ManualTime, SystemTimer, TimerTask

N_TASKS = 6


class Task(TimerTask):
    def __init__(self, ident: int, time: ManualTime, runs: list[tuple[int, int]]) -> None:
        super().__init__(0)
        self.ident = ident
        self.time = time
        self.runs = runs

    def run(self) -> None:
        self.runs.append((self.ident, self.time.milliseconds()))


class HeapOracle:
    """What should happen: each (re-)add schedules the task at max(now, floor(now + delay, tick)); a later
    add or a cancel supersedes it."""

    def __init__(self, tick_ms: int) -> None:
        self.tick_ms = tick_ms
        self.heap: list[tuple[int, int, int]] = []
        self.generation = [0] * N_TASKS
        self.pending: dict[int, int] = {}
        self.runs: list[tuple[int, int]] = []

    def add(self, ident: int, now: int, delay: int) -> None:
        expiration = now + delay
        fire = max(now, expiration - expiration % self.tick_ms)
        self.generation[ident] += 1
        self.pending[ident] = fire
        heapq.heappush(self.heap, (fire, self.generation[ident], ident))

    def cancel(self, ident: int) -> None:
        self.generation[ident] += 1
        self.pending.pop(ident, None)

    def advance(self, now: int) -> None:
        while self.heap and self.heap[0][0] <= now:
            fire, generation, ident = heapq.heappop(self.heap)
            if generation == self.generation[ident]:
                self.runs.append((ident, fire))
                del self.pending[ident]


ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, N_TASKS - 1), st.integers(-3, 1200)),
        st.tuples(st.just("add"), st.integers(0, N_TASKS - 1), st.integers(0, 30)),
        st.tuples(st.just("cancel"), st.integers(0, N_TASKS - 1), st.just(0)),
        st.tuples(st.just("advance"), st.just(0), st.integers(0, 700)),
    ),
    max_size=40,
)


def check(tick_ms: int, wheel_size: int, start_ms: int, schedule: list[tuple[str, int, int]]) -> None:
    time = ManualTime(start_ms)
    timer = SystemTimer("prop", tick_ms, wheel_size, time=time)
    runs: list[tuple[int, int]] = []
    tasks = [Task(i, time, runs) for i in range(N_TASKS)]
    oracle = HeapOracle(tick_ms)

    def reap_until(target: int) -> None:
        # The reaper wakes at each bucket expiration (or at once for buckets already due).
        while (t := timer.next_expiration_ms) is not None and t <= target:
            time.set(max(t, time.milliseconds()))
            timer.advance_clock()
        time.set(target)

    for op, ident, value in schedule + [("advance", 0, 10**6)]:
        now = time.milliseconds()
        if op == "add":
            tasks[ident].delay_ms = value
            oracle.add(ident, now, value)
            timer.add(tasks[ident])
            reap_until(now)
        elif op == "cancel":
            oracle.cancel(ident)
            tasks[ident].cancel()
        else:
            reap_until(now + value)
            oracle.advance(now + value)
        oracle.advance(time.milliseconds())
        assert sorted(runs) == sorted(oracle.runs)
        assert timer.size == len(oracle.pending)
        for task in tasks:
            where = timer.locate(task)
            assert (where is not None) == (task.ident in oracle.pending)
            if where is not None:
                level, index, bucket_start = where
                level_tick = tick_ms * wheel_size ** (level - 1)
                entry = task.timer_task_entry
                assert entry is not None
                assert bucket_start <= entry.expiration_ms < bucket_start + level_tick
                assert index == (bucket_start // level_tick) % wheel_size
        if oracle.pending:
            next_expiration = timer.next_expiration_ms
            assert next_expiration is not None and next_expiration <= min(oracle.pending.values())
    assert timer.size == 0 and not oracle.pending


@settings(max_examples=120, deadline=None)
@given(wheel_size=st.sampled_from([2, 3, 5, 20]), start_ms=st.integers(0, 50), schedule=ops)
def test_every_live_task_runs_once_at_its_expiration_tick_1(
    wheel_size: int, start_ms: int, schedule: list[tuple[str, int, int]]
) -> None:
    check(1, wheel_size, start_ms, schedule)


@settings(max_examples=50, deadline=None)
@given(
    tick_ms=st.sampled_from([2, 5]),
    wheel_size=st.sampled_from([3, 8]),
    start_ms=st.integers(0, 50),
    schedule=ops,
)
def test_coarser_ticks_fire_at_the_start_of_the_expirations_tick(
    tick_ms: int, wheel_size: int, start_ms: int, schedule: list[tuple[str, int, int]]
) -> None:
    # A bucket expires at the start of its range, so with tick > 1 a task runs up to tick - 1 ms early.
    check(tick_ms, wheel_size, start_ms, schedule)
