"""A consumer fetch that found records costs its segment read (`broker.costs.segment_read`), one at the log's end
does not, and the request log's `fetch read` reads that cost back (kafkasim.calibrate.fetch_read)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kafkasim.calibrate.completion import MIN_GAPS, consumer_completions
from kafkasim.calibrate.fetch_read import fetch_read_ms, fetch_reads
from kafkasim.calibrate.fit import starting_point
from kafkasim.calibrate.targets import measured, targets, with_request_log
from kafkasim.run import run_scenario
from kafkasim.scenario import load_scenario, with_overrides

from .test_fit import SCENARIO


def _log(at_once: list[float], parked: list[float]) -> pd.DataFrame:
    rows = [("FetchConsumer", 0.0, local) for local in at_once] + [("FetchConsumer", 500.0, local) for local in parked]
    rows += [("FetchFollower", 0.0, 9.0)] * MIN_GAPS  # another API's rows count for nothing
    return pd.DataFrame(rows, columns=["api", "RemoteTimeMs", "LocalTimeMs"])


def test_a_fetch_read_is_a_consumer_fetch_answered_at_once_beyond_the_median_parked_one() -> None:
    log = _log([0.09, 0.10, 0.11] * MIN_GAPS, [0.05, 0.06, 0.07] * MIN_GAPS)
    assert np.median(fetch_reads(log)) == pytest.approx(0.04)
    assert fetch_read_ms([log, log]) == pytest.approx(0.04)
    assert fetch_reads(_log([0.1] * (MIN_GAPS - 1), [0.05] * MIN_GAPS)).size == 0  # too few to say
    assert fetch_reads(log.drop(columns=["RemoteTimeMs"])).size == 0
    assert fetch_read_ms([]) is None


def test_a_simulated_fetch_read_is_the_segment_read_cost_and_the_fit_starts_there() -> None:
    """A segment read of 0.3 ms: a consumer fetch answered at once with one 1 KiB batch takes that much (plus the
    read of its bytes at 0.002 ms per KiB) longer than one that parked at the log's end; a parked one completed
    later pays it on the completing request's thread instead. Without the cost the two take the same."""
    scenario = load_scenario(SCENARIO)
    result = run_scenario(with_overrides(scenario, ["broker.costs.segment_read=0.3ms"]))
    reads = fetch_reads(result.requests)
    assert len(reads) >= MIN_GAPS
    assert float(np.median(reads)) == pytest.approx(0.3 + 0.002 * (1024 + 70) / 1024, abs=0.01)
    assert starting_point(measured([result.summary]), [result.requests])["segment_read_ms"] == pytest.approx(
        float(np.median(reads)))
    # A parked fetch completed by a follower's high-watermark advance: its read holds the follower's thread.
    assert float(np.median(consumer_completions(result.requests))) == pytest.approx(
        0.3 + 0.002 * (1024 + 70) / 1024, abs=0.01)
    assert "fetch read p50" in {t.key for t in targets(with_request_log(result.summary, result.requests))}
    none = fetch_reads(run_scenario(scenario).requests)
    assert float(np.median(none)) == pytest.approx(0.002 * (1024 + 70) / 1024, abs=0.01)
