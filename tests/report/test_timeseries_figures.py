"""HW/LEO, ISR size and purgatory gauges over time, with warm-up shaded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from kafkasim.report import isr_size_figure, log_offsets_figure, purgatory_figure
from kafkasim.report.frames import metric
from kafkasim.report.replication import partitions_of
from kafkasim.report.run_events import FAULT_LABEL, ISR_EXPAND_LABEL, ISR_SHRINK_LABEL, isr_changes
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
    assert _labels(top) == [WARMUP_LABEL, "HighWatermark", "LogEndOffset replica-0 (leader)",
                            "LogEndOffset replica-1", "LogEndOffset replica-2"]
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
    # orders-1 shrinks at 100 ms and expands at 400 ms: both changes are marked.
    assert _labels(ax) == [WARMUP_LABEL, ISR_SHRINK_LABEL, ISR_EXPAND_LABEL, "orders-0", "orders-1"]
    shrunk = next(line for line in ax.get_lines() if line.get_label() == "orders-1")
    assert list(shrunk.get_ydata())[:3] == [3.0, 2.0, 3.0]
    assert ax.get_ylabel() == "in-sync replicas"


def test_purgatory_figure_has_a_panel_per_purgatory_with_both_gauges(tables: Tables) -> None:
    figure = purgatory_figure(tables.timeseries, tables.summary)
    assert figure is not None
    fetch, produce = figure.axes
    assert fetch.get_title(loc="left").startswith("Fetch purgatory")
    assert produce.get_title(loc="left").startswith("Produce purgatory")
    labels = _labels(fetch)
    assert labels[0] == WARMUP_LABEL
    assert [label.split(",")[0] for label in labels[1:]] == ["NumDelayedOperations", "NumDelayedOperations",
                                                             "PurgatorySize"]
    size_max = fetch.get_lines()[-1].get_ydata()
    assert max(size_max) == 3  # two parked follower fetches and one parked consumer fetch
    # The hand-made run removes every completed operation at once: the panel says so.
    assert "PurgatorySize = NumDelayedOperations throughout" in fetch.get_title(loc="left")


def test_purgatory_figure_names_the_gap_when_completed_operations_stay_watched(tables: Tables) -> None:
    frame = tables.timeseries.copy()
    held = (frame["metric"] == "PurgatorySize") & (frame["entity"] == "Produce")
    frame.loc[held, "value"] += 2  # two completed produces still on a watch list
    figure = purgatory_figure(frame, tables.summary)
    assert figure is not None
    produce = figure.axes[1]
    assert "PurgatorySize up to 2 above NumDelayedOperations" in produce.get_title(loc="left")


def test_purgatory_slices_keep_the_barcode_readable() -> None:
    # A gauge flipping between 0 and 3 at every one of 3000 samples: drawn per slice, not per sample.
    times = np.arange(3000) * 10.0
    values = np.where(np.arange(3000) % 2 == 0, 3.0, 0.0)
    frame = pd.concat([pd.DataFrame({"time_ms": times, "metric": name, "entity": "Fetch", "value": values})
                       for name in ("PurgatorySize", "NumDelayedOperations")])
    figure = purgatory_figure(frame, None)
    assert figure is not None
    ax = figure.axes[0]
    size_max, delayed_mean = ax.get_lines()[-1], ax.get_lines()[0]
    assert len(size_max.get_xdata()) <= 61
    assert set(size_max.get_ydata()) == {3.0}  # the max of every slice
    assert np.asarray(delayed_mean.get_ydata()) == pytest.approx(1.5, abs=0.02)  # time-weighted mean
    assert "per 0.5 s" in _labels(ax)[0]  # a round slice: 60 of them over 30 s


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
    dense = pd.DataFrame({"time_ms": times, "metric": "LogEndOffset", "entity": "orders-0/replica-0",
                          "value": np.cumsum(rng.integers(0, 5, times.size)).astype(float)})
    hw = dense.assign(metric="HighWatermark", entity="orders-0", value=dense["value"] - 1)
    figure = log_offsets_figure(pd.concat([dense, hw]), None)
    assert figure is not None
    lag = figure.axes[1]
    assert SUMMARY_NOTE in lag.get_title(loc="left")
    assert len(lag.collections) == 1  # the min-max band (the leader's shaded tail is left out when dense)
    assert len(lag.get_lines()[0].get_xdata()) <= 501
    sparse = log_offsets_figure(tables.timeseries, None)
    assert sparse is not None and SUMMARY_NOTE not in sparse.axes[1].get_title(loc="left")


def _scenario(min_isr: int = 2):  # type: ignore[no-untyped-def]
    from kafkasim.scenario import load_scenario

    return load_scenario(f"""
name: marks
description: a follower paused from 100 ms to 250 ms
duration: 500ms
topics: [{{name: orders, partitions: 1, replication.factor: 3, min.insync.replicas: {min_isr}}}]
producers: [{{name: producer-1, topic: orders, acks: all, rate: 100/s}}]
faults: [{{type: pause, target: follower-2, at: 100ms, duration: 150ms}}]
""")


def _shrinking(tables: Tables) -> pd.DataFrame:
    """The ISR sampled every 50 ms: follower-2 out from the 150 ms sample to the 300 ms one."""
    times = np.arange(0.0, 700.0, 50.0)
    isr = pd.DataFrame({"time_ms": times, "metric": "IsrSize", "entity": "orders-0",
                        "value": np.where((times >= 150) & (times < 300), 2.0, 3.0)})
    return pd.concat([tables.timeseries[tables.timeseries["metric"] != "IsrSize"], isr], ignore_index=True)


@pytest.mark.parametrize("figure_fn", [log_offsets_figure, isr_size_figure, purgatory_figure])
def test_every_time_axis_figure_shades_faults_and_marks_isr_changes(tables: Tables, figure_fn) -> None:  # type: ignore[no-untyped-def]
    frame = _shrinking(tables)
    changes = isr_changes(frame)
    assert [(c.partition, c.before, c.after) for c in changes] == [("orders-0", 3, 2), ("orders-0", 2, 3)]
    figure = figure_fn(frame, tables.summary, scenario=_scenario())
    assert figure is not None
    ax = figure.axes[0]
    assert {FAULT_LABEL, ISR_SHRINK_LABEL, ISR_EXPAND_LABEL} <= set(_labels(ax))
    (fault,) = [p for p in ax.patches if p.get_label() == FAULT_LABEL]
    assert (fault.get_x(), fault.get_x() + fault.get_width()) == pytest.approx((100.0, 250.0))  # type: ignore[attr-defined]
    assert "pause follower-2" in [t.get_text() for t in ax.texts]
    marks = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines()
             if line.get_label() in (ISR_SHRINK_LABEL, ISR_EXPAND_LABEL)}
    assert marks == {ISR_SHRINK_LABEL: changes[0].time_ms, ISR_EXPAND_LABEL: changes[1].time_ms}


def test_isr_figure_draws_min_insync_replicas(tables: Tables) -> None:
    figure = isr_size_figure(tables.timeseries, tables.summary, scenario=_scenario(min_isr=2))
    assert figure is not None
    ax = figure.axes[0]
    (level,) = [line for line in ax.get_lines() if line.get_label() == "min.insync.replicas"]
    assert set(level.get_ydata()) == {2}
    without = isr_size_figure(tables.timeseries, tables.summary)
    assert without is not None and "min.insync.replicas" not in _labels(without.axes[0])


def test_the_leader_is_named_and_drawn_on_top_of_its_followers(tables: Tables) -> None:
    figure = log_offsets_figure(tables.timeseries, tables.summary)
    assert figure is not None
    top = figure.axes[0]
    lines = {line.get_label(): line for line in top.get_lines()}
    leader = lines["LogEndOffset replica-0 (leader)"]
    for follower in ("LogEndOffset replica-1", "LogEndOffset replica-2"):
        assert leader.get_zorder() > lines[follower].get_zorder()
        assert leader.get_linewidth() < lines[follower].get_linewidth()  # the follower shows around it


def test_the_leader_is_the_replica_the_leader_does_not_track(tables: Tables) -> None:
    # Leadership moved to broker 2: the leader tracks replicas 0 and 1 as followers.
    # A result without the LeaderId gauge (an older kafkasim): the leader is read from who tracks whom.
    tracked = pd.DataFrame({"time_ms": 0.0, "metric": "ReplicaLogEndOffsetAtLeader",
                            "entity": ["orders-0/replica-0", "orders-0/replica-1"], "value": 0.0})
    frame = pd.concat([tables.timeseries[tables.timeseries["metric"] != "LeaderId"], tracked], ignore_index=True)
    figure = log_offsets_figure(frame, tables.summary)
    assert figure is not None
    assert "LogEndOffset replica-2 (leader)" in _labels(figure.axes[0])
