"""Latency distributions: the HdrHistogram-style percentile plot and per-API histograms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import acks_column, acks_label, after_warmup, finite, warmup_ms
from kafkasim.report.latency_scale import apply_latency_scale, plain_ms, plain_ms_ticks, short_ms
from kafkasim.report.palette import ACKS_LINESTYLES, API_ORDER, END_TO_END_COLOUR, api_colour
from kafkasim.report.percentile_axis import format_percentile_axis, percentile_curve
from kafkasim.report.skip import SkipFigure, skippable


class Curve(NamedTuple):
    """One latency sample to draw: `key` is the API for broker curves."""

    key: str
    label: str
    values: np.ndarray
    style: dict[str, Any]


Series = list[Curve]


def _apis(requests: pd.DataFrame) -> list[str]:
    """The known APIs in their fixed order, then any others alphabetically."""
    present = set(requests["api"].astype(str))
    return [a for a in API_ORDER if a in present] + sorted(present - set(API_ORDER))


def _broker_series(requests: pd.DataFrame | None, warmup: float) -> Series:
    if requests is None or requests.empty or not {"api", "TotalTimeMs"} <= set(requests.columns):
        return []
    kept = after_warmup(requests, warmup)
    series: Series = []
    for api in _apis(kept):
        values = finite(kept.loc[kept["api"].astype(str) == api, "TotalTimeMs"])
        if values.size:
            series.append(Curve(api, f"{api} TotalTimeMs (n={values.size})", values, {"color": api_colour(api)}))
    return series


def _records_after_warmup(records: pd.DataFrame, warmup: float) -> pd.DataFrame:
    """Batches the producer sent after warm-up (same rule as requests' client_send_ms)."""
    if warmup <= 0 or "send_ms" not in records.columns:
        return records
    return records[records["send_ms"].to_numpy(dtype=float, na_value=np.nan) >= warmup]


def _client_series(records: pd.DataFrame | None, warmup: float) -> Series:
    if records is None or records.empty:
        return []
    kept = _records_after_warmup(records, warmup)
    series: Series = []
    if {"acks", "produce_latency_ms"} <= set(kept.columns):
        acks = acks_column(kept)
        for value in (-1, 1, 0):
            values = finite(kept.loc[(acks == value).fillna(False), "produce_latency_ms"])
            if values.size:
                style = {"color": api_colour("Produce"), "linestyle": ACKS_LINESTYLES[value]}
                label = f"produce, {acks_label(value)} (n={values.size})"
                series.append(Curve(acks_label(value), label, values, style))
    if "e2e_latency_ms" in kept.columns:
        values = finite(kept["e2e_latency_ms"])
        if values.size:
            label = f"end-to-end, produce \u2192 first consume (n={values.size})"
            series.append(Curve("end-to-end", label, values, {"color": END_TO_END_COLOUR}))
    return series


def _draw_percentiles(ax: Axes, series: Series) -> None:
    for _, label, values, style in series:
        xs, ys = percentile_curve(values)
        (line,) = ax.plot(xs, ys, lw=2, label=label, **style)
        # The dot is the maximum, at the highest percentile the sample resolves; no fake flat tail beyond it.
        ax.plot(xs[-1:], ys[-1:], "o", ms=4, color=line.get_color())
    format_percentile_axis(ax)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize="small", framealpha=0.9)


@skippable("latency_cdf")
def latency_cdf_figure(requests: pd.DataFrame | None, records: pd.DataFrame | None,
                       summary: Mapping[str, Any] | None = None) -> Figure:
    """Latency by percentile: broker TotalTimeMs per API (left), produce per acks and end-to-end (right).

    Requests the client sent during warm-up are left out. The two panels share the y axis so a
    producer-observed latency can be read against the broker's share of it.
    """
    warmup = warmup_ms(summary)
    panels = [
        ("Broker: TotalTimeMs per API", _broker_series(requests, warmup)),
        ("Client-observed: produce per acks, end-to-end", _client_series(records, warmup)),
    ]
    panels = [(title, series) for title, series in panels if series]
    if not panels:
        raise SkipFigure("no request or batch latencies after warm-up")
    figure = new_figure(7.0 * len(panels), 5.5)
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    every_value = np.concatenate([curve.values for _, series in panels for curve in series])
    for ax, (title, series) in zip(axes, panels, strict=True):
        _draw_percentiles(ax, series)
        ax.set_title(title)
    apply_latency_scale(axes[0], every_value)
    axes[0].set_ylabel("latency (ms)")
    suffix = f" (after {plain_ms(warmup)} ms warm-up)" if warmup > 0 else ""
    figure.suptitle(f"Latency by percentile{suffix}", fontsize="x-large")
    return figure


def _log_bins(values: np.ndarray, count: int = 50) -> np.ndarray:
    positive = values[values > 0]
    low, high = float(positive.min()), float(positive.max())
    if high <= low * 1.01:
        low, high = low / 1.5, high * 1.5
    return np.geomspace(low, high, count + 1)


@skippable("latency_histogram")
def latency_histogram_figure(requests: pd.DataFrame | None, summary: Mapping[str, Any] | None = None) -> Figure:
    """TotalTimeMs histogram per API on shared log-spaced bins (one row per API), p50 and p99 marked."""
    series = _broker_series(requests, warmup_ms(summary))
    every_value = np.concatenate([curve.values for curve in series]) if series else np.empty(0)
    if not (every_value > 0).any():
        raise SkipFigure("no positive TotalTimeMs after warm-up")
    bins = _log_bins(every_value)
    figure = new_figure(9.0, 1.0 + 2.4 * len(series))
    axes = figure.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (api, _, values, style) in zip(axes, series, strict=True):
        ax.hist(values[values > 0], bins=bins, color=style["color"], alpha=0.85, label=f"{api} requests")
        for q, ls in ((50, "--"), (99, ":")):
            value = float(np.quantile(values, q / 100, method="inverted_cdf"))
            ax.axvline(value, color="black", ls=ls, lw=1.2, label=f"p{q} = {short_ms(value)} ms")
        zeros = int((values <= 0).sum())
        note = f", {zeros} at 0 ms not shown" if zeros else ""
        ax.set_title(f"{api}: {values.size} requests{note}", loc="left", fontsize="medium")
        ax.set_ylabel("requests")
        ax.legend(loc="best", fontsize="small", framealpha=0.9)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xscale("log")
    plain_ms_ticks(axes[-1].xaxis, float(np.log10(bins[-1] / bins[0])))
    axes[-1].set_xlabel("TotalTimeMs (ms, log-spaced bins)")
    figure.suptitle("Request latency histogram per API", fontsize="x-large")
    return figure
