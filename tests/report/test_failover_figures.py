"""The replication figures through a failover: the leader label follows leadership, a replica whose broker is
down is drawn as down (dotted at its frozen offset, out of the LEO − HW panel) instead of as live, and the
aggregated follower lag keeps it, its lag growing while it is down."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kafkasim.report import log_offsets_figure
from kafkasim.report.partition_aggregate import offset_spreads
from kafkasim.report.replica_presence import Span, down_spans, leader_spans
from kafkasim.report.replication import NEGATIVE_NOTE
from kafkasim.scenario import load_scenario

CRASH_MS, FENCED_MS, BACK_MS, END_MS = 10_000.0, 17_800.0, 25_000.0, 35_000.0
SCENARIO = """
name: crash
description: broker 0 crashes at 10 s and comes back 15 s later
duration: 35s
topics: [{name: t, partitions: 1, replication.factor: 3}]
cluster: {brokers: 3}
producers: [{name: p, topic: t, rate: 100/s}]
faults: [{type: crash, target: broker-0, at: 10s, restart_after: 15s}]
"""


def _failover_timeseries(partitions: int = 1) -> pd.DataFrame:
    """Broker 0 leads until it crashes at 10 s (no samples until it is back at 25 s); broker 1 leads from
    17.8 s. Every replica's log grows one offset per sample while up; broker 0's log is frozen while down."""
    rows = []
    for p in range(partitions):
        name = f"t-{p}"
        for t in np.arange(0.0, END_MS, 100.0):
            up0 = not (CRASH_MS <= t < BACK_MS)
            hw = min(t, CRASH_MS) / 100 if t < FENCED_MS else (t - FENCED_MS + CRASH_MS) / 100
            if t < CRASH_MS or t >= FENCED_MS:
                rows.append((t, "LeaderId", name, 0.0 if t < CRASH_MS else 1.0))
                rows.append((t, "HighWatermark", name, hw))
            for broker in (0, 1, 2):
                if broker == 0 and not up0:
                    continue
                leo = hw if broker else (min(t, CRASH_MS) / 100 if t < BACK_MS else hw)
                rows.append((t, "LogEndOffset", f"{name}/replica-{broker}", leo))
    return pd.DataFrame(rows, columns=["time_ms", "metric", "entity", "value"])


def test_leadership_spans_follow_the_leader_id_gauge_and_a_deposed_leaders_own_report_loses() -> None:
    ids = pd.DataFrame({"time_ms": [0.0, 100.0, 200.0, 200.0, 300.0], "value": [0.0, 0.0, 0.0, 1.0, 1.0]})
    assert leader_spans(ids, 400.0) == [Span(0, 0.0, 200.0), Span(1, 200.0, 400.0)]


def test_a_replica_is_down_where_its_samples_stop_only_when_the_gauge_is_sampled() -> None:
    times = np.array([0.0, 100.0, 200.0, 1500.0, 1600.0])
    assert down_spans(times, 100.0, 0, (), 1700.0) == [Span(0, 200.0, 1500.0)]
    assert down_spans(times, 100.0, 0, (), 2000.0)[-1] == Span(0, 1600.0, 2000.0)  # never came back
    # Written at each change (a hand-made or an older result): its gaps are not downtime.
    assert down_spans(times, None, 0, (), 1700.0) == []


def test_the_leader_label_follows_leadership_and_a_down_replica_does_not_dive_below_the_high_watermark() -> None:
    figure = log_offsets_figure(_failover_timeseries(), None, scenario=load_scenario(SCENARIO))
    assert figure is not None
    top, bottom = figure.axes[0], figure.axes[1]
    labels = [line.get_label() for line in top.get_lines()]
    assert "LogEndOffset replica-0 (leader 0.0–17.8 s; down 9.9–25.0 s)" in labels
    assert "LogEndOffset replica-1 (leader 17.8–34.9 s)" in labels  # the label used to stay on replica-0
    assert not any("(leader)" in label for label in labels)
    assert any(t.get_text() == "leader → broker-1" for t in top.texts)
    assert any(t.get_text() == "broker-0 down" for t in top.texts)
    # Without the fix replica-0's frozen offset was carried on against a moving HW: LEO − HW fell to −72.
    lowest = min(float(np.nanmin(line.get_ydata())) for line in bottom.get_lines())
    assert lowest >= 0
    assert NEGATIVE_NOTE not in bottom.get_title(loc="left")


def test_a_follower_on_a_down_broker_stays_in_the_aggregated_lag_and_its_lag_grows() -> None:
    _, lag = offset_spreads(_failover_timeseries(partitions=12))
    during = lag.loc[20_000.0]
    # Broker 0 is a follower now, down: each partition's replica-0 lags with its frozen offset (99 vs 122).
    assert during["count"] == 24 and during["down"] == 12
    assert during["max"] == 23.0 and lag.loc[24_000.0, "max"] == 63.0
    assert lag.loc[30_000.0, "down"] == 0 and lag.loc[30_000.0, "max"] == 0.0
    figure = log_offsets_figure(_failover_timeseries(partitions=12), None)
    assert figure is not None
    assert any("on a down broker (last offset held)" in c.get_label() for c in figure.axes[1].collections)
