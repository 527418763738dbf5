"""Work started after a thread has been idle costs more (kafkasim.sim.cold_start): nothing after no idle or within
the grace, the whole cost after a long one, 1 - e^-1 of it one ramp after the grace; a pool of threads shares one
idle time."""

from __future__ import annotations

import math

import pytest

from kafkasim.sim.cold_start import ColdStart, PoolClock


def test_the_extra_work_grows_with_the_idle_time_up_to_the_cost() -> None:
    cold = ColdStart(0.2, 4.0)
    assert cold.extra(0.0) == 0.0
    assert cold.extra(-1.0) == 0.0  # work due to end later than now: not idle
    assert cold.extra(4.0) == pytest.approx(0.2 * (1 - math.exp(-1)))
    assert cold.extra(12.0) == pytest.approx(0.2 * (1 - math.exp(-3)))
    assert cold.extra(1e6) == pytest.approx(0.2)
    assert cold.extra(1.0) < cold.extra(2.0) < cold.extra(8.0)


def test_nothing_within_the_grace_then_the_ramp_from_its_end() -> None:
    cold = ColdStart(0.2, 3.5, grace_ms=0.5)
    assert cold.extra(0.5) == 0.0 and cold.extra(0.3) == 0.0
    assert cold.extra(4.0) == pytest.approx(0.2 * (1 - math.exp(-1)))
    assert cold.extra(1e6) == pytest.approx(0.2)


def test_a_pool_is_idle_from_the_end_of_its_last_work_whichever_thread_did_it() -> None:
    """Two network threads of one broker: the second's work right after the first's began finds the pool warm;
    work after both have ended pays for the time since the later end."""
    cold = ColdStart(0.2, 1.0)
    clock = PoolClock()
    first = clock.start(cold, 10.0, 0.5)  # idle since 0: the whole cost, nearly
    assert first == pytest.approx(0.2 * (1 - math.exp(-10)))
    assert clock.due == pytest.approx(10.5 + first)
    assert clock.start(cold, 10.1, 0.1) == 0.0  # the pool is at work: due later than now
    assert clock.due == pytest.approx(10.5 + first)  # a shorter work does not bring the end forward
    assert clock.start(cold, clock.due + 2.0, 0.1) == pytest.approx(0.2 * (1 - math.exp(-2)))


@pytest.mark.parametrize(("cost", "ramp", "grace", "message"), [(-0.1, 1.0, 0.0, "cost_ms"), (0.1, 0.0, 0.0, "ramp_ms"),
                                                                (float("nan"), 1.0, 0.0, "cost_ms"),
                                                                (0.1, 1.0, -1.0, "grace_ms")])
def test_a_bad_cost_ramp_or_grace_is_refused(cost: float, ramp: float, grace: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ColdStart(cost, ramp, grace)
