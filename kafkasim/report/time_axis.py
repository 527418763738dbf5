"""Simulated time on an x axis, and the warm-up region every time-series figure shades."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from kafkasim.report.palette import WARMUP_COLOUR

WARMUP_LABEL = "warm-up (excluded from latency figures)"


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
               **style: Any) -> None:
    """A sampled gauge as a step line: each value holds until the next sample ("post"), and the last
    one holds until the run's last sample of any gauge, so lines of one figure all end together."""
    times, ys = np.asarray(times_ms, dtype=float), np.asarray(values, dtype=float)
    if times.size and times[-1] < until_ms:
        times, ys = np.append(times, until_ms), np.append(ys, ys[-1])
    ax.step(times / unit.per_ms, ys, where="post", **style)


def legend_outside(ax: Axes, **options: Any) -> None:
    """Legend to the right of the axes: time series fill the whole plot area, so inside it covers data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small", **options)


def last_time_ms(timeseries: pd.DataFrame) -> float:
    times = timeseries["time_ms"].to_numpy(dtype=float, na_value=np.nan)
    return float(np.nanmax(times)) if np.isfinite(times).any() else 0.0
