"""Property: Kafka 0.8's delay queue and Kafka's timing wheel run the same tasks at the same times.

Under any schedule of add / cancel / re-add / advance (time moving by any step, as the reaper's 200 ms
polls and the timers' own next expirations move it), each `advance_clock()` runs the same tasks on both
timers, in expiration order. Only the order of tasks due in the same millisecond may differ: the wheel
runs a bucket in the order entries arrived in it (a task cascaded down from a coarser level arrives after
one added straight into the bucket), the heap in the order they were added. A second property drives two
purgatories with the same operations: same completions and expirations, and the delay queue always holds
at least what the wheel holds (completed operations stay in it until their timeout).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkasim.purgatory import DelayedOperationPurgatory, DelayQueueTimer
from kafkasim.timer import ManualTime, SystemTimer, TimerTask

from .support import Op

N_TASKS = 8


class Task(TimerTask):
    def __init__(self, ident: int, runs: list[int]) -> None:
        super().__init__(0)
        self.ident = ident
        self.runs = runs

    def run(self) -> None:
        self.runs.append(self.ident)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, N_TASKS - 1), st.integers(1, 3_000)),
        st.tuples(st.just("cancel"), st.integers(0, N_TASKS - 1), st.just(0)),
        st.tuples(st.just("advance"), st.integers(0, 600), st.just(0)),
        st.tuples(st.just("to_next"), st.just(0), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps=steps, wheel_size=st.sampled_from((3, 20)), start_ms=st.integers(0, 1_000))
def test_both_timers_run_the_same_tasks_at_the_same_advance(
    steps: list[tuple[str, int, int]], wheel_size: int, start_ms: int
) -> None:
    time = ManualTime(start_ms)
    wheel_runs: list[int] = []
    queue_runs: list[int] = []
    wheel = SystemTimer("wheel", wheel_size=wheel_size, time=time)
    queue = DelayQueueTimer("queue", time=time)
    wheel_tasks = [Task(i, wheel_runs) for i in range(N_TASKS)]
    queue_tasks = [Task(i, queue_runs) for i in range(N_TASKS)]
    expiration: dict[int, int] = {}
    pending: set[int] = set()

    def advance() -> None:
        wheel_runs.clear()
        queue_runs.clear()
        wheel.advance_clock()
        queue.advance_clock()
        now = time.milliseconds()
        wheel_order = [expiration[i] for i in wheel_runs]
        queue_order = [expiration[i] for i in queue_runs]
        assert wheel_order == sorted(wheel_order) and queue_order == sorted(queue_order)
        assert sorted(wheel_runs) == sorted(queue_runs) == sorted(i for i in pending if expiration[i] <= now)
        pending.difference_update(queue_runs)
        assert wheel.size == len(pending) <= queue.size

    for op, a, b in steps:
        if op == "add":
            wheel_tasks[a].delay_ms = queue_tasks[a].delay_ms = b
            wheel.add(wheel_tasks[a])
            queue.add(queue_tasks[a])
            expiration[a] = time.milliseconds() + b
            pending.add(a)
        elif op == "cancel":
            wheel_tasks[a].cancel()
            queue_tasks[a].cancel()
            pending.discard(a)
        elif op == "advance":
            time.sleep(a)
            advance()
        else:
            nxt = queue.next_expiration_ms
            if nxt is not None:
                time.set(max(nxt, time.milliseconds()))
            advance()
    time.sleep(10_000)
    advance()
    assert not pending and wheel.size == queue.size == 0


KEYS = ("a", "b", "c")
purgatory_steps = st.lists(
    st.one_of(
        st.tuples(st.just("watch"), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True),
                  st.integers(1, 2_000)),
        st.tuples(st.just("completable"), st.integers(0, 30), st.just(0)),
        st.tuples(st.just("check"), st.sampled_from(KEYS), st.just(0)),
        st.tuples(st.just("advance"), st.integers(0, 500), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(steps=purgatory_steps, purge_interval=st.integers(1, 5))
def test_purgatories_on_either_timer_complete_and_expire_the_same_operations(
    steps: list[tuple[str, object, int]], purge_interval: int
) -> None:
    time = ManualTime(0)
    logs: dict[str, list[tuple[int, str, int]]] = {"wheel": [], "queue": []}
    purgatories = {
        "wheel": DelayedOperationPurgatory("p", SystemTimer("p", time=time), purge_interval=purge_interval),
        "queue": DelayedOperationPurgatory("p", DelayQueueTimer("p", time=time), purge_interval=purge_interval),
    }
    ops: dict[str, list[Op]] = {"wheel": [], "queue": []}
    for op, a, b in steps:
        for name, purgatory in purgatories.items():
            if op == "watch":
                assert isinstance(a, list)
                new = Op(len(ops[name]), b, time, logs[name])
                ops[name].append(new)
                purgatory.try_complete_else_watch(new, a)
            elif op == "completable":
                assert isinstance(a, int)
                if a < len(ops[name]):
                    ops[name][a].completable = True
            elif op == "check":
                purgatory.check_and_complete(a)
            else:
                purgatory.advance_clock()
        if op == "advance":
            assert isinstance(a, int)
            time.sleep(a)
            for purgatory in purgatories.values():
                purgatory.advance_clock()
        assert sorted(logs["wheel"]) == sorted(logs["queue"])
        assert purgatories["wheel"].num_delayed <= purgatories["queue"].num_delayed
    time.sleep(5_000)
    for purgatory in purgatories.values():
        purgatory.advance_clock()
    assert sorted(logs["wheel"]) == sorted(logs["queue"])
    assert purgatories["queue"].num_delayed == purgatories["wheel"].num_delayed == 0
