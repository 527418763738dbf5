"""``Preemption``: waits for a core within a thread's work, as a Poisson process per ms of work."""

from __future__ import annotations

import math
import random

import pytest

from kafkasim.sim.preemption import Preemption


def _share_waiting(work_ms: float, every_ms: float, draws: int = 20_000) -> float:
    preemption = Preemption(1.0 / every_ms, lambda: 1.0, random.Random(5))
    return sum(preemption.waits(work_ms) > 0.0 for _ in range(draws)) / draws


@pytest.mark.parametrize("work_ms", [0.05, 0.16, 1.0])
def test_a_step_waits_as_often_as_a_poisson_process_over_its_work_says(work_ms: float) -> None:
    """At least one interruption within `work_ms` of work: 1 - exp(-work / every)."""
    expected = 1.0 - math.exp(-work_ms / 1.5)
    assert _share_waiting(work_ms, 1.5) == pytest.approx(expected, abs=0.01)


def test_longer_work_waits_more_often_than_shorter() -> None:
    """A produce's handling (~0.16 ms on the project's machine) waits about three times as often as a consumer
    fetch's (~0.05 ms): what a tail drawn per step, whatever its length, could not give."""
    assert _share_waiting(0.16, 1.5) > 2.5 * _share_waiting(0.05, 1.5)


def test_each_interruption_adds_a_draw_of_the_wait() -> None:
    """Long work is interrupted several times: its waits add up (a mean of work / every waits)."""
    preemption = Preemption(1.0, lambda: 0.25, random.Random(9))
    total = sum(preemption.waits(10.0) for _ in range(5000)) / 5000
    assert total == pytest.approx(10.0 * 0.25, rel=0.05)


def test_no_work_no_wait_and_no_draw() -> None:
    rng = random.Random(1)
    state = rng.getstate()
    assert Preemption(1.0, lambda: 1.0, rng).waits(0.0) == 0.0
    assert rng.getstate() == state


def test_a_negative_wait_draw_counts_as_none() -> None:
    preemption = Preemption(1000.0, lambda: -1.0, random.Random(2))
    assert preemption.waits(1.0) == 0.0


@pytest.mark.parametrize("rate", [0.0, -1.0, math.nan])
def test_a_rate_that_is_not_positive_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="rate must be > 0"):
        Preemption(rate, lambda: 1.0, random.Random(0))

