"""Simulated time on an x axis, and the warm-up region every time-series figure shades."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from kafkasim.report.palette import WARMUP_COLOUR

WARMUP_LABEL = "warm-up (excluded from latency figures)"
# Beyond this many changes a step line is denser than the pixels it is drawn on.
MAX_STEP_POINTS = 2000
SUMMARY_SLICES = 500


@dataclass(frozen=True)
class TimeUnit:
    """Divide simulated milliseconds by `per_ms` to get the axis value labelled `label`."""

    per_ms: float
    label: str


def time_unit(span_ms: float) -> TimeUnit:
    """Seconds for runs of 10 s or more (tick labels stay short), milliseconds otherwise."""
    return TimeUnit(1000.0, "simulated time (s)") if span_ms >= 10_000 else TimeUnit(1.0, "simulated time (ms)")


def shade_warmup(ax: Axes, warmup_ms: float, unit: TimeUnit, *, label: bool = True) -> None:
    """Grey band from t=0 to the end of warm-up; labelled once so it appears in the legend."""
    if warmup_ms <= 0:
        return
    ax.axvspan(0.0, warmup_ms / unit.per_ms, color=WARMUP_COLOUR, alpha=0.15, lw=0,
               label=WARMUP_LABEL if label else None)


def step_gauge(ax: Axes, times_ms: np.ndarray, values: np.ndarray, unit: TimeUnit, until_ms: float,
               **style: Any) -> bool:
    """A sampled gauge as a step line: each value holds until the next sample ("post"), and the last
    one holds until the run's last sample of any gauge, so lines of one figure all end together.

    A gauge that changes more often than the figure has pixels for would print as a solid block; it is
    drawn summarised instead (see `slice_summary`) and the function returns True so the caller can say so.
    """
    times, ys = np.asarray(times_ms, dtype=float), np.asarray(values, dtype=float)
    if times.size and times[-1] < until_ms:
        times, ys = np.append(times, until_ms), np.append(ys, ys[-1])
    if times.size <= MAX_STEP_POINTS:
        ax.step(times / unit.per_ms, ys, where="post", **style)
        return False
    edges, low, mean, high = slice_summary(times, ys, SUMMARY_SLICES)
    x = edges / unit.per_ms
    ax.fill_between(x, np.append(low, low[-1]), np.append(high, high[-1]), step="post", lw=0,
                    color=style.get("color"), alpha=0.25)
    ax.step(x, np.append(mean, mean[-1]), where="post", **style)
    return True


def slice_summary(times: np.ndarray, values: np.ndarray, slices: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(edges, min, time-weighted mean, max) of a step function over equal time slices.

    The value in force when a slice starts counts as one of its values, so a slice without a change still
    has the right min and max, and a spike shorter than a slice still reaches the max band.
    """
    edges = np.linspace(times[0], times[-1], slices + 1)
    # Integral of the step function from times[0] up to each change point, then up to each edge.
    area = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    at = np.clip(np.searchsorted(times, edges, side="right") - 1, 0, times.size - 1)
    integral = area[at] + values[at] * (edges - times[at])
    widths = np.diff(edges)
    mean = np.diff(integral) / np.where(widths > 0, widths, 1.0)
    ends = np.searchsorted(times, edges[1:], side="left")
    low, high = np.empty(slices), np.empty(slices)
    for k in range(slices):
        window = values[at[k]: max(ends[k], at[k] + 1)]
        low[k], high[k] = window.min(), window.max()
    return edges, low, mean, high


SUMMARY_NOTE = "dense gauge: line = time-weighted mean, band = min\u2013max per time slice"


def legend_outside(ax: Axes, **options: Any) -> None:
    """Legend to the right of the axes: time series fill the whole plot area, so inside it covers data."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small", **options)


def last_time_ms(timeseries: pd.DataFrame) -> float:
    times = timeseries["time_ms"].to_numpy(dtype=float, na_value=np.nan)
    return float(np.nanmax(times)) if np.isfinite(times).any() else 0.0
