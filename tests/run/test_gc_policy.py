"""The collector's thresholds during a run (kafkasim.run.gc_policy): raised for the run, the caller's back after."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from kafkasim.run.gc_policy import RUN_GC_THRESHOLDS, run_gc_thresholds


@pytest.fixture
def default_thresholds() -> Iterator[tuple[int, ...]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield (700, 10, 10)
    gc.set_threshold(*before)


def test_a_run_raises_the_thresholds_and_gives_the_callers_back(default_thresholds: tuple[int, ...]) -> None:
    with run_gc_thresholds():
        assert gc.get_threshold() == RUN_GC_THRESHOLDS
    assert gc.get_threshold() == default_thresholds
    with pytest.raises(RuntimeError), run_gc_thresholds():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == default_thresholds


def test_a_callers_higher_threshold_stays(default_thresholds: tuple[int, ...]) -> None:
    gc.set_threshold(100_000, 5, 500)
    with run_gc_thresholds():
        assert gc.get_threshold() == (100_000, 20, 500)
    assert gc.get_threshold() == (100_000, 5, 500)


def test_runs_that_overlap_in_threads_give_the_callers_back_whatever_order_they_end_in(
        default_thresholds: tuple[int, ...]) -> None:
    # Run A starts, run B starts, A ends, B ends: saving and restoring per run, B would restore A's raise.
    a_entered, b_entered, a_left = threading.Event(), threading.Event(), threading.Event()
    during_b_after_a: list[tuple[int, ...]] = []

    def run_a() -> None:
        with run_gc_thresholds():
            a_entered.set()
            b_entered.wait(5)
        a_left.set()

    def run_b() -> None:
        a_entered.wait(5)
        with run_gc_thresholds():
            b_entered.set()
            a_left.wait(5)
            during_b_after_a.append(gc.get_threshold())

    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert during_b_after_a == [RUN_GC_THRESHOLDS]  # still raised: B's run goes on after A's ended
    assert gc.get_threshold() == default_thresholds
