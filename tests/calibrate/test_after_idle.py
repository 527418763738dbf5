"""A produce taken after the broker's request handlers had been idle takes longer than one taken right after their
last work: the request log's `Produce after idle` reads that difference (kafkasim.calibrate.after_idle), and the
fit starts the cold start's cost from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kafkasim.calibrate.after_idle import (
    BUSY_MS,
    IDLE_MS,
    handler_idle,
    produces_after_idle,
)
from kafkasim.calibrate.completion import MIN_GAPS
from kafkasim.calibrate.fit import starting_point
from kafkasim.calibrate.targets import REQUEST_LOG_STATISTICS


def _log(gaps_and_locals: list[tuple[float, float]], broker: int = 0, start: float = 0.0) -> pd.DataFrame:
    """Produces one after another at one broker, each taken `gap` ms after the last one's local completion, each
    handled for `local` ms; microsecond times (not whole milliseconds)."""
    rows = []
    end = start + 0.0137
    for gap, local in gaps_and_locals:
        dequeue = end + gap
        end = dequeue + local
        rows.append(("Produce", broker, dequeue, end, end, end + 0.2, local))
    return pd.DataFrame(rows, columns=["api", "broker", "dequeue_ms", "local_complete_ms", "response_complete_ms",
                                       "end_ms", "LocalTimeMs"])


def test_a_produce_after_idle_is_its_local_time_beyond_the_median_warm_ones() -> None:
    warm = [(0.2, 0.15), (0.3, 0.14), (0.1, 0.16)] * MIN_GAPS
    cold = [(5.0, 0.35), (8.0, 0.40), (IDLE_MS, 0.30)] * MIN_GAPS
    between = [(1.5, 9.0)] * MIN_GAPS  # neither kind: counts for nothing
    log = _log(warm + between + cold)
    values = produces_after_idle(log)
    assert len(values) == len(cold)
    assert float(np.median(values)) == pytest.approx(0.35 - 0.15)
    gaps = handler_idle(log).to_numpy()
    assert np.isnan(gaps[0]) and gaps[1:] == pytest.approx([g for g, _ in warm + between + cold][1:])


def test_each_broker_has_its_own_handlers() -> None:
    """A produce at broker 1 idle since broker 1's last work, whatever broker 0 did meanwhile."""
    one = _log([(0.2, 0.1)] * 3, broker=0)
    other = _log([(10.0, 0.1)] * 3, broker=1, start=float(one["end_ms"].iloc[0]))
    assert handler_idle(pd.concat([one, other], ignore_index=True)).to_numpy()[4:] == pytest.approx([10.0, 10.0])


def test_too_few_missing_columns_or_whole_milliseconds_give_nothing() -> None:
    warm = [(0.2, 0.15)] * MIN_GAPS
    cold = [(5.0, 0.35)] * MIN_GAPS
    assert produces_after_idle(_log(warm + cold[1:])).size == 0
    assert produces_after_idle(_log(warm + cold).drop(columns=["response_complete_ms"])).size == 0
    whole = _log(warm + cold)
    whole["end_ms"] = np.round(whole["end_ms"])
    assert produces_after_idle(whole).size == 0
    assert BUSY_MS < IDLE_MS


def test_the_fit_starts_the_cold_start_from_it() -> None:
    assert "Produce after idle p50" in REQUEST_LOG_STATISTICS
    start = starting_point({"Produce after idle p50": ("request_log", 0.14, 800)})
    assert start["cold_start_ms"] == pytest.approx(0.2)
    assert starting_point({})["cold_start_ms"] == pytest.approx(0.2)  # its default
