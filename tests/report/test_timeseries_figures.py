"""HW/LEO, ISR size and purgatory gauges over time, with warm-up shaded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from kafkasim.report import isr_size_figure, log_offsets_figure, purgatory_figure
from kafkasim.report.frames import metric
from kafkasim.report.replication import partitions_of
from kafkasim.report.time_axis import MAX_STEP_POINTS, SUMMARY_NOTE, WARMUP_LABEL, slice_summary

from .conftest import Tables


def _labels(ax) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _warmup_band(ax) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    bands = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_label() == WARMUP_LABEL]
    assert len(bands) == 1
    return bands[0].get_x(), bands[0].get_x() + bands[0].get_width()


def test_offsets_figure_draws_hw_and_every_replica_leo_as_steps(tables: Tables) -> None:
    figure = log_offsets_figure(tables.timeseries, tables.summary)
    assert figure is not None
    top = figure.axes[0]
    assert _labels(top) == [WARMUP_LABEL, "HighWatermark", "LogEndOffset replica-0", "LogEndOffset replica-1",
                            "LogEndOffset replica-2"]
    assert _warmup_band(top) == (0.0, 30.0)
    assert top.get_ylabel() == "offset"
    assert figure.axes[1].get_xlabel() == "simulated time (ms)"
    hw_line = top.get_lines()[0]
    assert hw_line.get_drawstyle() == "steps-post"
    hw = metric(tables.timeseries, "HighWatermark")
    assert list(hw_line.get_ydata())[: len(hw)] == list(hw["value"])
    assert "orders-0" in figure.subfigs[0].get_suptitle()  # type: ignore[attr-defined]


def test_leo_minus_hw_is_never_negative_and_shows_the_uncommitted_batch(tables: Tables) -> None:
    figure = log_offsets_figure(tables.timeseries, tables.summary)
    assert figure is not None
    lags = np.concatenate([line.get_ydata() for line in figure.axes[1].get_lines()])
    assert lags.min() == 0  # Partition.maybeIncrementLeaderHW: HW <= every ISR replica's LEO
    assert lags.max() == 5  # the leader holds one 5-record batch the followers have not confirmed


def test_partitions_sort_naturally() -> None:
    hw = pd.DataFrame({"entity": ["t-10", "t-2"]})
    leo = pd.DataFrame({"entity": ["t-1/replica-0", "t-2/replica-1"]})
    assert partitions_of(hw, leo) == ["t-1", "t-2", "t-10"]


def test_time_axis_switches_to_seconds_for_long_runs(tables: Tables) -> None:
    stretched = tables.timeseries.assign(time_ms=tables.timeseries["time_ms"] * 100)
    figure = isr_size_figure(stretched, {"warmup_ms": 3000})
    assert figure is not None
    ax = figure.axes[0]
    assert ax.get_xlabel() == "simulated time (s)"
    assert _warmup_band(ax) == (0.0, 3.0)


def test_isr_figure_has_a_line_per_partition(tables: Tables) -> None:
    extra = pd.DataFrame({"time_ms": [0.0, 100.0, 400.0], "metric": "IsrSize", "entity": "orders-1",
                          "value": [3.0, 2.0, 3.0]})
    figure = isr_size_figure(pd.concat([tables.timeseries, extra]), tables.summary)
    assert figure is not None
    ax = figure.axes[0]
    assert ax.get_title() == "ISR size per partition"
    assert _labels(ax) == [WARMUP_LABEL, "orders-0", "orders-1"]
    shrunk = ax.get_lines()[1]
    assert list(shrunk.get_ydata())[:3] == [3.0, 2.0, 3.0]
    assert ax.get_ylabel() == "in-sync replicas"


def test_purgatory_figure_shows_both_gauges_per_purgatory(tables: Tables) -> None:
    figure = purgatory_figure(tables.timeseries, tables.summary)
    assert figure is not None
    size, delayed = figure.axes
    assert size.get_title(loc="left").startswith("PurgatorySize")
    assert delayed.get_title(loc="left").startswith("NumDelayedOperations")
    assert _labels(size) == [WARMUP_LABEL, "Fetch purgatory", "Produce purgatory"]
    assert _labels(delayed) == ["Fetch purgatory", "Produce purgatory"]
    fetch = size.get_lines()[0].get_ydata()
    assert max(fetch) == 3  # two parked follower fetches and one parked consumer fetch


@pytest.mark.parametrize("figure_fn", [log_offsets_figure, isr_size_figure, purgatory_figure])
def test_missing_gauges_skip_the_figure(tables: Tables, figure_fn) -> None:  # type: ignore[no-untyped-def]
    assert figure_fn(None, tables.summary) is None
    assert figure_fn(tables.timeseries.iloc[0:0], tables.summary) is None
    only_queue = pd.DataFrame({"time_ms": [0.0], "metric": ["RequestQueueSize"], "entity": ["broker"],
                               "value": [0.0]})
    assert figure_fn(only_queue, tables.summary) is None


def test_slice_summary_keeps_spikes_and_the_time_weighted_mean() -> None:
    # 0 everywhere except a 1 ms spike to 10 inside the first of two 50 ms slices.
    times = np.array([0.0, 20.0, 21.0, 100.0])
    values = np.array([0.0, 10.0, 0.0, 0.0])
    edges, low, mean, high = slice_summary(times, values, 2)
    assert list(edges) == [0.0, 50.0, 100.0]
    assert list(high) == [10.0, 0.0] and list(low) == [0.0, 0.0]
    assert mean == pytest.approx([10.0 * 1 / 50, 0.0])


def test_slice_summary_carries_the_value_in_force_into_quiet_slices() -> None:
    times = np.array([0.0, 10.0, 100.0])
    values = np.array([1.0, 3.0, 3.0])
    _, low, mean, high = slice_summary(times, values, 4)
    assert list(low) == [1.0, 3.0, 3.0, 3.0]
    assert list(high) == [3.0, 3.0, 3.0, 3.0]
    assert mean[0] == pytest.approx((1 * 10 + 3 * 15) / 25)


def test_dense_gauges_are_drawn_as_mean_and_band_and_say_so(tables: Tables) -> None:
    rng = np.random.default_rng(1)
    times = np.sort(rng.uniform(0, 60_000, MAX_STEP_POINTS + 500))
    dense = pd.DataFrame({"time_ms": times, "metric": "PurgatorySize", "entity": "Fetch",
                          "value": rng.integers(0, 5, times.size).astype(float)})
    figure = purgatory_figure(dense, None)
    assert figure is not None
    size = figure.axes[0]
    assert SUMMARY_NOTE in size.get_title(loc="left")
    assert len(size.collections) == 1  # the min-max band
    assert len(size.get_lines()[0].get_xdata()) <= 501
    sparse = purgatory_figure(tables.timeseries, None)
    assert sparse is not None and SUMMARY_NOTE not in sparse.axes[0].get_title(loc="left")
