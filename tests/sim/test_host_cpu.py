"""``HostCpu``: a host's cores, first come first served; its busy and run-queue integrals; a pause starts
nothing; a crash drops the work waiting and on a core."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import simpy

from kafkasim.sim.calls import Call
from kafkasim.sim.host_cpu import HostCpu


def _recorder(env: simpy.Environment, log: list[tuple[str, float]], name: str) -> Callable[[object], None]:
    return lambda _e: log.append((name, env.now))


def _at(env: simpy.Environment, t: float, fn: Callable[[], None]) -> None:
    Call(env, t, lambda _e: fn())


def test_one_core_runs_the_second_thread_s_work_after_the_first_s() -> None:
    env = simpy.Environment()
    cpu = HostCpu(env, 1)
    log: list[tuple[str, float]] = []
    cpu.run(2.0, _recorder(env, log, "a"))
    cpu.run(3.0, _recorder(env, log, "b"))
    _at(env, 1.0, lambda: cpu.run(0.5, _recorder(env, log, "c")))  # queued behind b: first come first served
    assert cpu.run_queue == 1
    env.run()
    assert log == [("a", 2.0), ("b", 5.0), ("c", 5.5)]
    assert (cpu.slices, cpu.waits) == (3, 2)


def test_as_many_cores_as_busy_threads_means_no_wait() -> None:
    env = simpy.Environment()
    cpu = HostCpu(env, 2)
    log: list[tuple[str, float]] = []
    cpu.run(2.0, _recorder(env, log, "a"))
    cpu.run(3.0, _recorder(env, log, "b"))
    cpu.run(1.0, _recorder(env, log, "c"))  # the third waits for the first core free (a's, at 2)
    env.run()
    assert log == [("a", 2.0), ("b", 3.0), ("c", 3.0)]


def test_busy_core_ms_and_run_queue_ms_are_exact_integrals() -> None:
    env = simpy.Environment()
    cpu = HostCpu(env, 2)
    for cost in (4.0, 4.0, 2.0):
        cpu.run(cost, lambda _e: None)
    env.run(until=3.0)
    # Two cores busy 0..3; the third thread waits 0..3 (it starts at 4).
    assert cpu.busy_core_ms == pytest.approx(6.0)
    assert cpu.run_queue_ms == pytest.approx(3.0)
    env.run()
    # 4 + 4 + 2 core-ms in all; it waited 4 ms.
    assert cpu.busy_core_ms == pytest.approx(10.0) and cpu.run_queue_ms == pytest.approx(4.0)


def test_a_pause_starts_nothing_until_dispatch() -> None:
    env = simpy.Environment()
    cpu = HostCpu(env, 1)
    log: list[tuple[str, float]] = []
    cpu.run(2.0, _recorder(env, log, "a"))
    cpu.run(1.0, _recorder(env, log, "b"))
    _at(env, 1.0, cpu.stw.pause)
    _at(env, 1.5, lambda: cpu.run(1.0, _recorder(env, log, "c")))  # asked during the pause: queued

    def resume() -> None:
        cpu.stw.resume()
        cpu.dispatch()

    _at(env, 10.0, resume)
    env.run()
    # a ends during the pause (its core is free), but b starts only at the resume, then c.
    assert log == [("a", 2.0), ("b", 11.0), ("c", 12.0)]


def test_a_crash_drops_the_work_waiting_and_on_a_core_and_frees_the_cores() -> None:
    env = simpy.Environment()
    cpu = HostCpu(env, 1)
    log: list[tuple[str, float]] = []
    cpu.run(2.0, _recorder(env, log, "running"))
    cpu.run(2.0, _recorder(env, log, "queued"))
    _at(env, 1.0, cpu.crash)
    _at(env, 1.5, lambda: cpu.run(1.0, _recorder(env, log, "new process")))  # a core free at once
    env.run()
    assert log == [("new process", 2.5)]
    assert cpu.run_queue == 0
    # Busy 0..1 (the crashed work), then 1.5..2.5; the queued work waited 0..1.
    assert cpu.busy_core_ms == pytest.approx(2.0) and cpu.run_queue_ms == pytest.approx(1.0)


def test_no_core_is_an_error() -> None:
    with pytest.raises(ValueError, match="cores must be >= 1"):
        HostCpu(simpy.Environment(), 0)
