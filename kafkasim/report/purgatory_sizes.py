"""The two purgatory gauges over time, one panel per purgatory (Kafka's `DelayedOperationPurgatory`).

They differ on purpose: PurgatorySize (`watched`) counts watch-list entries (an operation once per key,
completed operations included until a checkAndComplete on that key or a purge removes them),
NumDelayedOperations (`numDelayed`) counts operations still waiting in the timer. A growing gap between
them is what triggers a purge (`purgeInterval`).

Sampled every `sample_interval`, both gauges jump between 0 and a few operations from one sample to the
next, which drawn sample by sample prints as a barcode. Each panel therefore shows them per time slice:
NumDelayedOperations as a shaded area up to its maximum in the slice with its time-weighted mean as a
line, and PurgatorySize's maximum as a black step line. Where the black line runs along the top of the
area, completed operations left their watch lists at once; above it, entries were held until a purge.

Every broker has both purgatories (entities `broker-<id>/Produce`, `broker-<id>/Fetch`). The figure shows
the purgatories of the brokers whose purgatories ever held an operation, one panel each, up to
`MAX_BROKERS` brokers; beyond that, one panel per purgatory with the gauges summed over the brokers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import metric, natural_key, require_columns, warmup_ms
from kafkasim.report.latency_scale import short_ms
from kafkasim.report.palette import BLACK, PURGATORY_COLOURS, replica_colour
from kafkasim.report.run_events import mark_events, run_events
from kafkasim.report.skip import SkipFigure, skippable
from kafkasim.report.time_axis import (
    TimeUnit,
    last_time_ms,
    legend_outside,
    shade_warmup,
    slice_summary,
    time_unit,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from kafkasim.scenario import Scenario

SLICES = 60
MAX_BROKERS = 3  # brokers drawn panel by panel; more are summed per purgatory


def split_entity(entity: str) -> tuple[str | None, str]:
    """("broker-1", "Fetch") from "broker-1/Fetch"; (None, "Fetch") from a result that had one broker."""
    broker, _, kind = entity.rpartition("/")
    return (broker or None), kind


def _per_broker_or_summed(size_all: pd.DataFrame, delayed_all: pd.DataFrame
                          ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str], int]:
    """The rows to draw, each panel's title by entity, and how many brokers were summed (0: none)."""
    both = pd.concat([size_all, delayed_all])
    active = sorted({b for e in both.loc[both["value"] > 0, "entity"] if (b := split_entity(e)[0]) is not None},
                    key=natural_key)
    brokers = sorted({b for e in both["entity"] if (b := split_entity(e)[0]) is not None}, key=natural_key)
    if len(active) > MAX_BROKERS:
        def summed(rows: pd.DataFrame) -> pd.DataFrame:
            kinds = rows["entity"].map(lambda e: split_entity(e)[1])
            out = rows.assign(entity=kinds).groupby(["entity", "time_ms"])["value"].sum().reset_index()
            return out.sort_values(["entity", "time_ms"], kind="stable")

        size_all, delayed_all = summed(size_all), summed(delayed_all)
        titles = {k: f"{k} purgatory, summed over {len(brokers)} brokers"
                  for k in set(size_all["entity"]) | set(delayed_all["entity"])}
        return size_all, delayed_all, titles, len(brokers)
    shown = set(active or brokers[:1])
    keep_size = size_all["entity"].map(lambda e: split_entity(e)[0] in shown or split_entity(e)[0] is None)
    keep_delayed = delayed_all["entity"].map(lambda e: split_entity(e)[0] in shown or split_entity(e)[0] is None)
    size_all, delayed_all = size_all[keep_size], delayed_all[keep_delayed]
    titles = {}
    for entity in set(size_all["entity"]) | set(delayed_all["entity"]):
        broker, kind = split_entity(entity)
        # Named unless the one broker shown is broker 0 (a run without a cluster: the leader of everything).
        named = broker is not None and (len(shown) > 1 or broker != "broker-0")
        titles[entity] = f"{kind} purgatory" + (f", {broker}" if named else "")
    return size_all, delayed_all, titles, 0


def nice_width(span_ms: float, slices: int) -> float:
    """A slice width of 1, 2 or 5 times a power of ten ms, giving about `slices` slices over the span."""
    raw = max(span_ms / slices, 1e-3)
    power = 10.0 ** np.floor(np.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def _sliced(rows: pd.DataFrame, start: float, end: float, slices: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edges, time-weighted mean, max) of a gauge over `slices` equal slices of [start, end]."""
    times, values = rows["time_ms"].to_numpy(float), rows["value"].to_numpy(float)
    if times[0] > start:
        times, values = np.insert(times, 0, start), np.insert(values, 0, 0.0)
    if times[-1] < end:
        times, values = np.append(times, end), np.append(values, values[-1])
    edges, _low, mean, high = slice_summary(times, values, slices)
    return edges, mean, high


def _gap_note(size: pd.DataFrame, delayed: pd.DataFrame) -> str:
    """How far PurgatorySize ran above NumDelayedOperations at the same samples."""
    if size.empty or delayed.empty:
        return ""
    # The value in force after each instant (a gauge may log several changes at one instant), each gauge
    # carried forward to the other's times.
    def settled(rows: pd.DataFrame, name: str) -> pd.DataFrame:
        last = rows.drop_duplicates("time_ms", keep="last")
        return last[["time_ms", "value"]].rename(columns={"value": name}).astype(float)

    a, b = settled(size, "value_size"), settled(delayed, "value_delayed")
    grid = pd.DataFrame({"time_ms": np.union1d(a["time_ms"], b["time_ms"])})
    both = pd.merge_asof(pd.merge_asof(grid, a, on="time_ms"), b, on="time_ms").dropna()
    if both.empty:
        return ""
    gap = float((both["value_size"] - both["value_delayed"]).max())
    if gap <= 0:
        return "PurgatorySize = NumDelayedOperations throughout: completed operations left their watch lists at once"
    return f"PurgatorySize up to {gap:.0f} above NumDelayedOperations: completed operations held until a purge"


def _panel(ax: Axes, title: str, size: pd.DataFrame, delayed: pd.DataFrame, unit: TimeUnit,
           width: float, slices: int, colour: str, run_end: float) -> None:
    end = width * slices
    per = f"per {short_ms(width / unit.per_ms)} {'s' if unit.per_ms > 1 else 'ms'}"
    if not delayed.empty:
        edges, mean, high = _sliced(delayed, 0.0, end, slices)
        x = np.minimum(edges, run_end) / unit.per_ms  # the last slice stops where the run did
        ax.fill_between(x, np.append(high, high[-1]), step="post", color=colour, alpha=0.3, lw=0,
                        label=f"NumDelayedOperations, max {per}")
        ax.step(x, np.append(mean, mean[-1]), where="post", color=colour, lw=1.4,
                label=f"NumDelayedOperations, mean {per}")
    if not size.empty:
        edges, _mean, high = _sliced(size, 0.0, end, slices)
        ax.step(np.minimum(edges, run_end) / unit.per_ms, np.append(high, high[-1]), where="post", color=BLACK,
                lw=1.1,
                label=f"PurgatorySize, max {per}")
    note = _gap_note(size, delayed)
    ax.set_title(title + (f"\n{note}" if note else ""), loc="left", fontsize="medium")
    ax.set_ylabel("operations")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)


@skippable("purgatory")
def purgatory_figure(timeseries: pd.DataFrame | None, summary: Mapping[str, Any] | None = None, *,
                     scenario: Scenario | None = None) -> Figure:
    """One panel per purgatory: NumDelayedOperations (area: max per slice; line: mean) and PurgatorySize
    (black line: max per slice); fault windows (from `scenario`) and ISR changes marked."""
    frame = require_columns(timeseries, ("time_ms", "metric", "entity", "value"), "time series")
    size_all, delayed_all = metric(frame, "PurgatorySize"), metric(frame, "NumDelayedOperations")
    if size_all.empty and delayed_all.empty:
        raise SkipFigure("no PurgatorySize or NumDelayedOperations samples")
    size_all, delayed_all, titles, _summed = _per_broker_or_summed(size_all, delayed_all)
    end = last_time_ms(frame)
    unit = time_unit(end)

    def order(entity: str) -> tuple[Any, ...]:
        broker, kind = split_entity(entity)
        return (natural_key(broker or ""), kind not in PURGATORY_COLOURS, kind)

    purgatories = sorted(set(size_all["entity"]) | set(delayed_all["entity"]), key=order)
    samples = max(len(size_all), len(delayed_all)) // max(len(purgatories), 1)
    width = nice_width(max(end, 1e-3), max(1, min(SLICES, samples)))
    slices = max(1, int(np.ceil(end / width - 1e-9)))
    events = run_events(frame, scenario)
    figure = new_figure(11.5, 1.2 + 2.9 * len(purgatories))
    axes = figure.subplots(len(purgatories), 1, sharex=True, squeeze=False)[:, 0]
    for index, (ax, purgatory) in enumerate(zip(axes, purgatories, strict=True)):
        first = index == 0
        shade_warmup(ax, warmup_ms(summary), unit, label=first)
        mark_events(ax, events, unit, end, label=first)
        colour = PURGATORY_COLOURS.get(split_entity(purgatory)[1], replica_colour(index + 3))
        _panel(ax, titles[purgatory], size_all[size_all["entity"] == purgatory],
               delayed_all[delayed_all["entity"] == purgatory], unit, width, slices, colour, end)
        legend_outside(ax)
    axes[-1].set_xlabel(unit.label)
    figure.suptitle("Purgatory sizes over time", fontsize="x-large")
    return figure
