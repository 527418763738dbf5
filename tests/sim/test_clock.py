import random
import time

import pytest

from kafkasim.sim.clock import PacedEnvironment, SimClock, SimTime


def _traced_model(clock: SimClock, switches: list[tuple[float, float | None]]) -> list[tuple[float, str]]:
    """Three processes with random waits, plus mode switches at given times (speed None = virtual)."""
    env = clock.env
    trace: list[tuple[float, str]] = []

    def worker(name: str, seed: int):
        rng = random.Random(seed)
        while True:
            yield env.timeout(rng.choice([0.0, 0.25, 1.0, 3.0]))
            trace.append((env.now, name))

    def switcher():
        for at, speed in switches:
            yield env.timeout(at - env.now)
            if speed is None:
                clock.set_virtual()
            else:
                clock.set_wallclock(speed)

    for i, name in enumerate(["a", "b", "c"]):
        env.process(worker(name, i))
    env.process(switcher())
    env.run(until=120)
    return trace


def test_switching_pacing_never_changes_the_event_trace():
    virtual = _traced_model(SimClock(), [])
    mixed = _traced_model(SimClock(), [(10, 20.0), (40, None), (60, 50.0), (80.5, None), (100, 100.0)])
    assert len(virtual) > 100
    assert mixed == virtual


def _wall_seconds(clock: SimClock, sim_ms: float) -> float:
    env = clock.env

    def ticker():
        while True:
            yield env.timeout(10)

    env.process(ticker())
    start = time.perf_counter()
    env.run(until=env.now + sim_ms)
    return time.perf_counter() - start


def test_wallclock_paces_at_real_time():
    assert 0.18 <= _wall_seconds(SimClock(wallclock=True, speed=1.0), 200) < 0.6


def test_wallclock_speed_factor_runs_faster():
    elapsed = _wall_seconds(SimClock(wallclock=True, speed=10.0), 200)
    assert 0.018 <= elapsed < 0.15


def test_virtual_mode_does_not_sleep():
    assert _wall_seconds(SimClock(), 100_000) < 0.5


def test_switching_mid_run_paces_only_the_wallclock_stretch():
    clock = SimClock()
    env = clock.env

    def switch():
        yield env.timeout(50_000)  # a long virtual stretch first: must not be paced
        clock.set_wallclock(1.0)
        yield env.timeout(100)
        clock.set_virtual()

    env.process(switch())
    start = time.perf_counter()
    env.run(until=200_000)
    elapsed = time.perf_counter() - start
    assert 0.09 <= elapsed < 0.5
    assert not clock.is_wallclock


def test_time_spent_before_run_is_not_caught_up():
    clock = SimClock(wallclock=True, speed=1.0)
    time.sleep(0.15)  # e.g. building the scenario after creating the clock
    assert _wall_seconds(clock, 100) >= 0.09


def test_set_wallclock_updates_factor_and_flags():
    clock = SimClock()
    assert not clock.is_wallclock
    clock.set_wallclock(0.1)
    assert clock.is_wallclock and clock.speed == 0.1
    assert clock.env.factor == pytest.approx(0.01)  # 10 wall ms per simulated ms
    assert clock.env.strict is False


@pytest.mark.parametrize("speed", [0, -1, float("inf"), float("nan"), "fast"])
def test_invalid_speed_is_a_clear_error(speed):
    with pytest.raises(ValueError, match="speed must be a finite number > 0"):
        PacedEnvironment(wallclock=True, speed=speed)
    with pytest.raises(ValueError, match="speed must be"):
        SimClock().set_wallclock(speed)


def test_sim_time_is_floor_of_env_now():
    clock = SimClock()
    assert isinstance(clock.time, SimTime)
    seen = []

    def proc():
        for delay in [0.4, 0.6, 0.999, 1.5]:
            yield clock.env.timeout(delay)
            seen.append(clock.time.milliseconds())

    clock.env.process(proc())
    clock.env.run()
    # now = 0.4, 1.0, 1.999, 3.499
    assert seen == [0, 1, 1, 3]
    assert all(type(v) is int for v in seen)
