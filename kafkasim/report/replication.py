"""Replication over time: the high watermark against every replica's log end offset, and ISR size.

Kafka's `Partition.maybeIncrementLeaderHW`: the leader's HW is the minimum LEO over the ISR, so the HW
line can only step up once the slowest in-sync replica's LEO line has. The lower panel shows each
replica's LEO − HW: how many offsets are written but not yet committed (not yet visible to consumers, not
yet acknowledged to acks=all). The leader's line is drawn on top of the followers' and named in the
legend; fault windows and ISR changes are marked on both panels.

With more than `MAX_PARTITIONS` partitions both figures aggregate across partitions instead
(`kafkasim.report.partition_aggregate`); `per_partition=True` (`kafkasim plot --per-partition`) draws
partitions one by one (up to `MAX_PARTITIONS_ON_REQUEST`), `per_partition=False` always aggregates.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import metric, natural_key, require_columns, warmup_ms
from kafkasim.report.palette import BLUE, HIGH_WATERMARK_COLOUR, MIN_ISR_COLOUR, ORANGE, replica_colour
from kafkasim.report.partition_aggregate import (
    draw_isr_counts,
    draw_spread,
    elr_counts,
    isr_counts,
    offline_counts,
    offset_spreads,
)
from kafkasim.report.replica_presence import NO_LEADER, Span, down_spans, leader_spans, replica_broker
from kafkasim.report.run_events import RunEvents, mark_events, run_events
from kafkasim.report.skip import SkipFigure, skippable
from kafkasim.report.time_axis import (
    MAX_STEP_POINTS,
    SUMMARY_NOTE,
    TimeUnit,
    last_time_ms,
    legend_outside,
    shade_warmup,
    step_gauge,
    time_unit,
)

if TYPE_CHECKING:
    from kafkasim.scenario import Scenario

MAX_PARTITIONS = 8  # drawn one by one by default; more are aggregated
MAX_PARTITIONS_ON_REQUEST = 24  # drawn one by one with per_partition=True (the first ones)
TIMESERIES_COLUMNS = ("time_ms", "metric", "entity", "value")
NEGATIVE_NOTE = "below 0: the replica is behind the high watermark (out of the ISR, catching up)"


def _step(ax: Axes, rows: pd.DataFrame, unit: TimeUnit, until_ms: float, **style: Any) -> bool:
    return step_gauge(ax, rows["time_ms"].to_numpy(float), rows["value"].to_numpy(float), unit, until_ms, **style)


def replica_entities(leo: pd.DataFrame, partition: str) -> list[str]:
    """The partition's "<partition>/replica-<id>" entities in broker-id order."""
    prefix = f"{partition}/"
    return sorted({e for e in leo["entity"] if e.startswith(prefix)}, key=natural_key)


def leader_entity(replicas: list[str], frame: pd.DataFrame, partition: str) -> str | None:
    """The leader's "<partition>/replica-<id>": the one replica the leader does not track as a follower
    (no ReplicaLogEndOffsetAtLeader gauge), else replica-0 (the leader of a one-broker run)."""
    followers = set(metric(frame, "ReplicaLogEndOffsetAtLeader")["entity"])
    candidates = [r for r in replicas if r not in followers]
    if len(candidates) == 1:
        return candidates[0]
    fallback = f"{partition}/replica-0"
    return fallback if fallback in replicas else None


def partitions_of(hw: pd.DataFrame, leo: pd.DataFrame) -> list[str]:
    names = set(hw["entity"]) | {e.split("/", 1)[0] for e in leo["entity"]}
    return sorted(names, key=natural_key)


def _lag_behind(replica: pd.DataFrame, hw: pd.DataFrame) -> pd.DataFrame:
    """LEO − HW at every time either gauge changed (each side carried forward to the other's samples)."""
    times = np.union1d(replica["time_ms"].to_numpy(float), hw["time_ms"].to_numpy(float))
    grid = pd.DataFrame({"time_ms": times})
    merged = pd.merge_asof(grid, replica[["time_ms", "value"]].rename(columns={"value": "leo"}), on="time_ms")
    merged = pd.merge_asof(merged, hw[["time_ms", "value"]].rename(columns={"value": "hw"}), on="time_ms")
    merged = merged.dropna()
    return pd.DataFrame({"time_ms": merged["time_ms"], "value": merged["leo"] - merged["hw"]})


def _roles(led: list[Span], down: list[Span], spans: list[Span], unit: TimeUnit) -> str:
    """" (leader 0–17.8 s; down 9.9–25.1 s)": when the replica led and when its broker was down."""
    seconds = unit.per_ms == 1000.0

    def window(span: Span) -> str:
        start, end = span.start_ms / unit.per_ms, span.end_ms / unit.per_ms
        return f"{start:.1f}–{end:.1f} s" if seconds else f"{start:.0f}–{end:.0f} ms"

    parts = []
    if led:
        parts.append("leader" if len(spans) == 1 else "leader " + ", ".join(window(s) for s in led))
    if down:
        parts.append("down " + ", ".join(window(s) for s in down))
    return f" ({'; '.join(parts)})" if parts else ""


def _live_pieces(rows: pd.DataFrame, down: list[Span], end_ms: float) -> list[tuple[pd.DataFrame, float, bool]]:
    """The replica's samples cut at its down windows: (samples, drawn until, first piece?) for each stretch
    its broker was up."""
    times = rows["time_ms"].to_numpy(float)
    bounds = [0.0, *[x for s in down for x in (s.start_ms, s.end_ms)], end_ms]
    pieces: list[tuple[pd.DataFrame, float, bool]] = []
    for start, until in zip(bounds[::2], bounds[1::2], strict=True):
        piece = rows[(times >= start) & (times <= until)]
        if not piece.empty:
            pieces.append((piece, until, not pieces))
    return pieces


def one_by_one(partitions: int, per_partition: bool | None) -> bool:
    """Whether the replication figures draw partitions one by one (else aggregated across them)."""
    return partitions <= MAX_PARTITIONS if per_partition is None else per_partition


def _faults_only(events: RunEvents) -> RunEvents:
    # Across many partitions one line per ISR change would cover the axes; the ISR figure counts them.
    return RunEvents(events.faults, (), events.min_insync_replicas)


@skippable("log_offsets")
def log_offsets_figure(timeseries: pd.DataFrame | None, summary: Mapping[str, Any] | None = None, *,
                       scenario: Scenario | None = None, per_partition: bool | None = None) -> Figure:
    """Per partition: HighWatermark and each replica's LogEndOffset (step lines), and LEO − HW below;
    `scenario` (optional) adds its fault windows. Aggregated across partitions when there are more than
    `MAX_PARTITIONS` (see `per_partition`)."""
    frame = require_columns(timeseries, TIMESERIES_COLUMNS, "time series")
    hw_all, leo_all = metric(frame, "HighWatermark"), metric(frame, "LogEndOffset")
    partitions = partitions_of(hw_all, leo_all)
    if not partitions:
        raise SkipFigure("no HighWatermark or LogEndOffset samples")
    if not one_by_one(len(partitions), per_partition):
        return _aggregate_offsets_figure(frame, summary, scenario, len(partitions))
    shown = partitions[:MAX_PARTITIONS_ON_REQUEST if per_partition else MAX_PARTITIONS]
    end = last_time_ms(frame)
    unit, warmup = time_unit(end), warmup_ms(summary)
    events = run_events(frame, scenario)
    interval = float(scenario.sample_interval) if scenario is not None else None
    figure = new_figure(11.0, 1.2 + 4.2 * len(shown))
    grid = figure.subfigures(len(shown), 1, squeeze=False)[:, 0]
    for sub, partition in zip(grid, shown, strict=True):
        top, bottom = sub.subplots(2, 1, sharex=True, height_ratios=[3, 1.4])
        hw = hw_all[hw_all["entity"] == partition]
        replicas = replica_entities(leo_all, partition)
        if not replicas and (leo_all["entity"] == partition).any():
            replicas = [partition]  # only the leader's LEO was recorded
        shade_warmup(top, warmup, unit)
        shade_warmup(bottom, warmup, unit, label=False)
        mine = RunEvents(events.faults, tuple(c for c in events.isr_changes if c.partition == partition))
        mark_events(top, mine, unit, end)
        mark_events(bottom, mine, unit, end, label=False)
        if not hw.empty:
            # Wide and translucent under the replicas' lines: where they coincide, both stay visible.
            _step(top, hw, unit, end, color=HIGH_WATERMARK_COLOUR, lw=5, alpha=0.3, label="HighWatermark")
        spans = leader_spans(metric(frame, "LeaderId").query("entity == @partition"), end)
        if not spans and replicas != [partition]:
            # Results without a LeaderId gauge: the one replica the leader does not track as a follower.
            static = leader_entity(replicas, frame, partition)
            spans = [Span(replica_broker(static) or 0, 0.0, end)] if static is not None else []
        leaders = {s.broker for s in spans}
        # Replicas that led first in the legend, and on top of the others (zorder): a leader's line is the
        # one the followers' fetches chase, and a follower that caught up would otherwise hide it.
        ordered = sorted(replicas, key=lambda e: replica_broker(e) not in leaders and e != partition)
        summarised = negative = False
        for entity in ordered:
            index = replicas.index(entity)
            broker = replica_broker(entity)
            led = [s for s in spans if s.broker == broker] if broker is not None else []
            is_leader = bool(led) or entity == partition
            rows = leo_all[leo_all["entity"] == entity]
            down = down_spans(rows["time_ms"].to_numpy(float), interval, broker, events.faults, end)
            name = entity.split("/", 1)[1] if "/" in entity else "leader"
            style: dict[str, Any] = ({"lw": 1.6, "zorder": 4} if is_leader
                                     else {"lw": 3.2, "alpha": 0.75, "zorder": 3})
            label = f"LogEndOffset {name}{_roles(led, down, spans, unit)}"
            pieces = _live_pieces(rows, down, end)
            for piece, until, first in pieces:
                _step(top, piece, unit, until, color=replica_colour(index), label=label if first else None, **style)
            for gap in down:
                # Down: its log is frozen at its last value (a crashed broker's log ends there) -- drawn
                # dotted, and left out of the LEO − HW panel, where it would dive as the HW moves on.
                before = rows[rows["time_ms"] <= gap.start_ms]["value"]
                if not before.empty:
                    level = float(before.iloc[-1])
                    top.plot([gap.start_ms / unit.per_ms, gap.end_ms / unit.per_ms], [level, level],
                             color=replica_colour(index), lw=1.0, ls=(0, (1, 2)), zorder=2)
                    top.annotate(f"broker-{broker} down", (gap.start_ms / unit.per_ms, level), fontsize="x-small",
                                 color=replica_colour(index), xytext=(3, -10), textcoords="offset points")
            if hw.empty:
                continue
            for piece, until, _ in pieces:
                lag = _lag_behind(piece, hw[hw["time_ms"] < until])
                lag = lag[lag["time_ms"] < until]
                negative |= bool((lag["value"] < 0).any())
                summarised |= _step(bottom, lag, unit, until, color=replica_colour(index),
                                    lw=1.6 if is_leader else 1.2, zorder=4 if is_leader else 3)
            for span, (piece, until, _) in product(led, pieces):
                # The leader's uncommitted tail as a shaded area while it leads and is up; the followers'
                # lines over it show how much of it each holds.
                start, stop = max(span.start_ms, float(piece["time_ms"].iloc[0])), min(span.end_ms, until)
                lag = _lag_behind(piece[piece["time_ms"] < stop], hw[hw["time_ms"] < stop])
                lag = lag[(lag["time_ms"] >= start) & (lag["time_ms"] < stop)]
                if 0 < len(lag) <= MAX_STEP_POINTS:
                    times = np.append(lag["time_ms"].to_numpy(float), stop) / unit.per_ms
                    values = lag["value"].to_numpy(float)
                    bottom.fill_between(times, np.append(values, values[-1:]), step="post",
                                        color=replica_colour(index), alpha=0.3, lw=0)
        for change in spans[1:]:
            text = "no leader" if change.broker == NO_LEADER else f"leader → broker-{change.broker}"
            top.axvline(change.start_ms / unit.per_ms, color="#444444", lw=0.8, ls=(0, (4, 2)), zorder=1)
            top.annotate(text, (change.start_ms / unit.per_ms, 1.0), xycoords=("data", "axes fraction"),
                         fontsize="x-small", color="#444444", xytext=(3, -12), textcoords="offset points")
        sub.suptitle(f"Partition {partition}", fontweight="bold")
        top.set_ylabel("offset")
        top.yaxis.set_major_locator(MaxNLocator(integer=True))
        legend_outside(top)
        top.grid(True, alpha=0.3)
        bottom.set_ylabel("LEO − HW\n(offsets)")
        notes = [SUMMARY_NOTE] if summarised else []
        if negative:
            notes.append(NEGATIVE_NOTE)
        if notes:
            bottom.set_title("; ".join(notes), loc="left", fontsize="small", color="#555555")
        bottom.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))
        bottom.grid(True, alpha=0.3)
        bottom.set_xlabel(unit.label)
        if hw.empty:
            bottom.text(0.5, 0.5, "no HighWatermark samples for this partition", ha="center", va="center",
                        transform=bottom.transAxes)
    more = f" (first {len(shown)} of {len(partitions)} partitions)" if len(partitions) > len(shown) else ""
    figure.suptitle(f"High watermark and replica log end offsets{more}", fontsize="x-large")
    return figure


def _aggregate_offsets_figure(frame: pd.DataFrame, summary: Mapping[str, Any] | None, scenario: Scenario | None,
                              partitions: int) -> Figure:
    end = last_time_ms(frame)
    unit, warmup = time_unit(end), warmup_ms(summary)
    events = _faults_only(run_events(frame, scenario))
    tail, lag = offset_spreads(frame)
    figure = new_figure(11.0, 7.5)
    top, bottom = figure.subplots(2, 1, sharex=True)
    for ax, spread, colour, what, title in (
        (top, tail, BLUE, "partitions", "Uncommitted offsets per partition: leader LogEndOffset − HighWatermark"),
        (bottom, lag, ORANGE, "follower replicas", "Follower lag: leader LogEndOffset − follower LogEndOffset"),
    ):
        shade_warmup(ax, warmup, unit, label=ax is top)
        mark_events(ax, events, unit, end, label=ax is top)
        draw_spread(ax, spread, unit, end, colour, what)
        ax.set_title(title, loc="left", fontsize="medium")
        ax.set_ylabel("offsets")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        legend_outside(ax)
    bottom.set_xlabel(unit.label)
    figure.suptitle(f"Replication across {partitions} partitions (kafkasim plot --per-partition draws each)",
                    fontsize="x-large")
    return figure


@skippable("isr_size")
def isr_size_figure(timeseries: pd.DataFrame | None, summary: Mapping[str, Any] | None = None, *,
                    scenario: Scenario | None = None, per_partition: bool | None = None) -> Figure:
    """ISR size per partition over time (Kafka's `Partition.maybeShrinkIsr`: a follower leaves after
    replica.lag.time.max.ms without catching up), its eligible leader replicas dotted while it has some,
    with min.insync.replicas drawn as a level when
    `scenario` gives it, and its fault windows shaded. With more than `MAX_PARTITIONS` partitions (see
    `per_partition`): how many partitions have each ISR size, how many are under min ISR, how many have
    eligible leader replicas (the controller's ElrSize) and how many no leader at all (the controller's
    OfflinePartitionsCount)."""
    frame = require_columns(timeseries, TIMESERIES_COLUMNS, "time series")
    isr = metric(frame, "IsrSize")
    partitions = sorted(set(isr["entity"]), key=natural_key)
    if not partitions:
        raise SkipFigure("no IsrSize samples")
    if not one_by_one(len(partitions), per_partition):
        return _aggregate_isr_figure(frame, summary, scenario, len(partitions))
    partitions = partitions[:MAX_PARTITIONS_ON_REQUEST] if len(partitions) > MAX_PARTITIONS else partitions
    isr = isr[isr["entity"].isin(partitions)]
    end = last_time_ms(frame)
    unit = time_unit(end)
    figure = new_figure(11.0, 4.5)
    ax = figure.subplots()
    shade_warmup(ax, warmup_ms(summary), unit)
    events = run_events(frame, scenario)
    mark_events(ax, events, unit, end)
    levels = sorted({level for p in partitions if (level := events.min_isr_of(p)) is not None})
    for level in levels:
        # Below this line acks=all produces fail with NOT_ENOUGH_REPLICAS (Partition.appendRecordsToLeader).
        ax.axhline(level, color=MIN_ISR_COLOUR, lw=1.4, ls=(0, (6, 3)), zorder=2,
                   label="min.insync.replicas" if len(levels) == 1 else f"min.insync.replicas = {level}")
    for index, partition in enumerate(partitions):
        # Partitions usually agree; the first is drawn widest so later ones show as stripes on top of it.
        width = 1.6 + 1.8 * max(0, min(len(partitions), 5) - 1 - index)
        rows = isr[isr["entity"] == partition]
        _step(ax, rows, unit, end, color=replica_colour(index), lw=width, label=partition)
    # Eligible leader replicas (KIP-966): replicas that left the ISR while it was below min.insync.replicas
    # and may still be elected (PartitionChangeBuilder); the controller's ElrSize, dotted.
    elr = metric(frame, "ElrSize")
    for index, partition in enumerate(partitions):
        rows = elr[elr["entity"] == partition]
        if len(rows):
            _step(ax, rows, unit, end, color=replica_colour(index), lw=1.8, ls=(0, (1, 1.5)),
                  label=f"{partition} eligible leader replicas")
    top = max(float(isr["value"].max()), float(elr["value"].max()) if len(elr) else 0.0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, top + 0.7)
    ax.set_ylabel("in-sync replicas")
    ax.set_xlabel(unit.label)
    ax.grid(True, alpha=0.3)
    legend_outside(ax, ncol=1 if len(partitions) <= 12 else 2)
    ax.set_title("ISR size per partition", fontsize="x-large")
    return figure


def _aggregate_isr_figure(frame: pd.DataFrame, summary: Mapping[str, Any] | None, scenario: Scenario | None,
                          partitions: int) -> Figure:
    end = last_time_ms(frame)
    unit = time_unit(end)
    figure = new_figure(11.0, 4.5)
    ax = figure.subplots()
    shade_warmup(ax, warmup_ms(summary), unit)
    mark_events(ax, _faults_only(run_events(frame, scenario)), unit, end)
    counts, under = isr_counts(frame)
    draw_isr_counts(ax, counts, under, unit, end, offline_counts(frame), elr_counts(frame))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, partitions * 1.05 + 0.5)
    ax.set_ylabel("partitions")
    ax.set_xlabel(unit.label)
    ax.grid(True, alpha=0.3)
    legend_outside(ax)
    ax.set_title(f"Partitions by ISR size ({partitions} partitions; kafkasim plot --per-partition draws each)",
                 fontsize="x-large")
    return figure
