"""``Preemption``: waits for a core within a thread's work, as a Poisson process per ms of work, more often the
more other threads of the machine are at work (``per_running_thread``)."""

from __future__ import annotations

import math
import random

import pytest

from kafkasim.sim.machine_load import MachineLoad
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



def _crowded(running: int, per_running_thread: float, seed: int = 5) -> Preemption:
    """One broker's waits on a machine where `running` threads run, the one whose work it draws for among them."""
    load = MachineLoad(0.0)
    load.add(lambda: running)
    return Preemption(1.0 / 1.5, lambda: 1.0, random.Random(seed), load, per_running_thread)


@pytest.mark.parametrize(("running", "times"), [(0, 1.0), (1, 1.0), (2, 2.5), (3, 4.0)])
def test_waits_come_more_often_for_each_other_thread_at_work(running: int, times: float) -> None:
    """`per_running_thread` 1.5: with one other thread at work the waits come 2.5 times as often, with two 4 times;
    the thread doing the work is one of those running and adds nothing."""
    preemption = _crowded(running, 1.5)
    share = sum(preemption.waits(0.16) > 0.0 for _ in range(20_000)) / 20_000
    assert share == pytest.approx(1.0 - math.exp(-times * 0.16 / 1.5), abs=0.01)


def test_no_growth_draws_exactly_as_a_machine_without_the_count() -> None:
    plain = Preemption(1.0 / 1.5, lambda: 1.0, random.Random(5))
    crowded = _crowded(3, 0.0)
    assert [plain.waits(0.3) for _ in range(2000)] == [crowded.waits(0.3) for _ in range(2000)]


def test_growth_needs_the_machines_count_and_is_not_negative() -> None:
    with pytest.raises(ValueError, match="needs the machine's load"):
        Preemption(1.0, lambda: 1.0, random.Random(0), None, 1.0)
    with pytest.raises(ValueError, match="per_running_thread must be >= 0"):
        Preemption(1.0, lambda: 1.0, random.Random(0), MachineLoad(0.0), -1.0)
