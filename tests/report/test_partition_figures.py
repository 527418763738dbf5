"""Figures stay readable with many partitions: aggregated by default beyond 8 partitions, partition by
partition on request; the purgatory figure per broker, summed beyond 3 busy brokers."""

from __future__ import annotations

import pandas as pd
import pytest

from kafkasim.report import isr_size_figure, log_offsets_figure, purgatory_figure
from kafkasim.report.partition_aggregate import elr_counts, isr_counts, offline_counts, offset_spreads


def _cluster_timeseries(partitions: int, *, leader_of=lambda p: p % 3) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """Two samples of `partitions` RF 3 partitions on brokers 0-2: at t=100 partition p's leader has LEO 10 + p,
    HW 10, one follower lags 2 behind the leader and the other is caught up; partition 0 lost a follower."""
    rows = []
    for t in (0.0, 100.0):
        for p in range(partitions):
            name, leader = f"t-{p}", leader_of(p)
            leo = 0.0 if t == 0 else 10.0 + p
            followers = [b for b in range(3) if b != leader]
            rows += [(t, "HighWatermark", name, 0.0 if t == 0 else 10.0), (t, "LeaderId", name, float(leader)),
                     (t, "IsrSize", name, 2.0 if (p == 0 and t > 0) else 3.0),
                     (t, "UnderMinIsr", name, 0.0),
                     (t, "LogEndOffset", f"{name}/replica-{leader}", leo),
                     (t, "LogEndOffset", f"{name}/replica-{followers[0]}", max(leo - 2.0, 0.0)),
                     (t, "LogEndOffset", f"{name}/replica-{followers[1]}", leo)]
    return pd.DataFrame(rows, columns=["time_ms", "metric", "entity", "value"])


def test_offset_spreads_measure_each_partition_from_its_own_leader() -> None:
    tail, lag = offset_spreads(_cluster_timeseries(4))
    # leader LEO - HW at t=100: p for partition p = 0..3
    assert tail.loc[100.0].to_dict() == {"min": 0.0, "median": 1.5, "max": 3.0, "count": 4, "down": 0}
    # follower lags: 2 and 0 for every partition
    assert tail.loc[0.0, "max"] == 0.0
    assert lag.loc[100.0].to_dict() == {"min": 0.0, "median": 1.0, "max": 2.0, "count": 8, "down": 0}


def test_isr_counts_per_size_and_time() -> None:
    counts, under = isr_counts(_cluster_timeseries(12))
    assert counts.loc[0.0].to_dict() == {2.0: 0, 3.0: 12}
    assert counts.loc[100.0].to_dict() == {2.0: 1, 3.0: 11}
    assert under.max() == 0


def test_partitions_without_a_leader_are_drawn_from_offline_partitions_count() -> None:
    ts = _cluster_timeseries(12)
    assert offline_counts(ts).empty  # an older result without the gauge
    offline = pd.DataFrame([(0.0, "OfflinePartitionsCount", "controller", 0.0),
                            (100.0, "OfflinePartitionsCount", "controller", 3.0)], columns=list(ts.columns))
    ts = pd.concat([ts, offline], ignore_index=True)
    assert offline_counts(ts).to_dict() == {0.0: 0.0, 100.0: 3.0}
    figure = isr_size_figure(ts)
    assert figure is not None
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert "offline: no leader (OfflinePartitionsCount)" in labels


def test_partitions_with_eligible_leader_replicas_are_counted_while_their_elr_lasts() -> None:
    """ElrSize is written while a partition has eligible leader replicas and once (0) when they are gone: each
    value holds until the partition's next row."""
    ts = _cluster_timeseries(12)
    assert elr_counts(ts).empty  # no ELR in the run: nothing drawn
    more = [(t, "IsrSize", "t-1", 3.0) for t in (200.0, 300.0)]
    elr = [(0.0, "ElrSize", "t-0", 2.0), (100.0, "ElrSize", "t-1", 1.0), (200.0, "ElrSize", "t-0", 0.0)]
    ts = pd.concat([ts, pd.DataFrame(more + elr, columns=list(ts.columns))], ignore_index=True)
    assert elr_counts(ts).to_dict() == {0.0: 1.0, 100.0: 2.0, 200.0: 1.0, 300.0: 1.0}
    figure = isr_size_figure(ts)
    assert figure is not None
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert "with eligible leader replicas (ElrSize > 0)" in labels


def test_many_partitions_are_aggregated_by_default_and_drawn_each_on_request() -> None:
    ts = _cluster_timeseries(12)
    aggregate = log_offsets_figure(ts)
    assert aggregate is not None and "across 12 partitions" in aggregate.get_suptitle()  # type: ignore[attr-defined]
    assert len(aggregate.axes) == 2
    each = log_offsets_figure(ts, per_partition=True)
    assert each is not None and len(each.subfigs) == 12  # type: ignore[attr-defined]
    few = log_offsets_figure(_cluster_timeseries(3))
    assert few is not None and len(few.subfigs) == 3  # type: ignore[attr-defined]
    forced = log_offsets_figure(_cluster_timeseries(3), per_partition=False)
    assert forced is not None and not forced.subfigs  # type: ignore[attr-defined]

    isr = isr_size_figure(ts)
    assert isr is not None
    labels = [t.get_text() for t in isr.axes[0].get_legend().get_texts()]
    assert labels == ["ISR size 3", "ISR size 2"]
    isr_each = isr_size_figure(ts, per_partition=True)
    assert isr_each is not None
    assert [t.get_text() for t in isr_each.axes[0].get_legend().get_texts()][:3] == ["ISR shrinks", "t-0", "t-1"]


@pytest.mark.parametrize(("busy", "panels"), [(1, 2), (2, 4), (5, 2)])
def test_purgatory_panels_per_busy_broker_summed_beyond_three(busy: int, panels: int) -> None:
    rows = []
    for t in (0.0, 100.0, 200.0):
        for b in range(6):
            for kind in ("Produce", "Fetch"):
                value = 1.0 if b < busy and t == 100.0 else 0.0
                rows += [(t, "PurgatorySize", f"broker-{b}/{kind}", value),
                         (t, "NumDelayedOperations", f"broker-{b}/{kind}", value)]
    figure = purgatory_figure(pd.DataFrame(rows, columns=["time_ms", "metric", "entity", "value"]))
    assert figure is not None and len(figure.axes) == panels
    titles = [ax.get_title(loc="left").splitlines()[0] for ax in figure.axes]
    if busy > 3:
        assert titles == ["Fetch purgatory, summed over 6 brokers", "Produce purgatory, summed over 6 brokers"]
        assert max(figure.axes[0].get_lines()[0].get_ydata()) == busy  # the mean line reaches the sum
    elif busy == 1:  # a run without a cluster: broker 0 leads everything and goes unnamed
        assert titles == ["Fetch purgatory", "Produce purgatory"]
    elif busy == 2:
        assert titles == ["Fetch purgatory, broker-0", "Produce purgatory, broker-0",
                          "Fetch purgatory, broker-1", "Produce purgatory, broker-1"]
