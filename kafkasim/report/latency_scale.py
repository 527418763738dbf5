"""A latency y (or x) axis in milliseconds that stays readable whatever the spread.

Produce latencies of a few ms and 500 ms consumer long polls share one figure; a linear axis would flatten
the produce lines to zero, so the axis goes logarithmic once the spread passes SPREAD_FOR_LOG.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

SPREAD_FOR_LOG = 20.0


def plain_ms(value: float, _pos: int | None = None) -> str:
    """0.5, 2, 500, 30000 rather than 5x10^-1 ... : readers compare these to config values in ms."""
    return f"{value:,.6g}".replace(",", "\u2009")


def short_ms(value: float) -> str:
    """Three significant digits for labels: 0.125, 1.41, 32.5, 500, 30000."""
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def latency_scale(values: np.ndarray) -> tuple[Literal["linear", "log", "symlog"], float]:
    """The scale for these latencies and, for symlog, the linear threshold.

    Zeros are legitimate (an immediate response with zero network delay in virtual time), and a log axis
    would hide them, so a wide spread with zeros uses symlog, linear below the smallest positive value.
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    positive = values[values > 0]
    if positive.size == 0 or positive.max() / positive.min() < SPREAD_FOR_LOG:
        return "linear", 0.0
    if positive.size < values.size:
        return "symlog", float(10 ** np.floor(np.log10(positive.min())))
    return "log", 0.0


def apply_latency_scale(ax: Axes, values: np.ndarray, axis: Literal["x", "y"] = "y") -> None:
    scale, linthresh = latency_scale(values)
    set_scale = ax.set_yscale if axis == "y" else ax.set_xscale
    target = ax.yaxis if axis == "y" else ax.xaxis
    if scale == "symlog":
        set_scale("symlog", linthresh=linthresh)
    else:
        set_scale(scale)
    if scale != "linear":
        # Decide on intermediate ticks from what is on show, not from the samples: a percentile plot
        # starts at p50, far above the fastest request.
        low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
        low = max(low, linthresh, float(np.min(values[values > 0])))
        plain_ms_ticks(target, float(np.log10(high / low)) if high > low > 0 else 99.0)


def plain_ms_ticks(axis: Axis, decades: float = 99.0) -> None:
    """Label a log axis in plain milliseconds: every decade, and 2 and 5 in between when the data spans
    under three decades (otherwise a 1.3-3 ms produce curve would have no labelled tick at all)."""
    if decades < 3:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=30))
    axis.set_major_formatter(FuncFormatter(plain_ms))
    axis.set_minor_formatter(NullFormatter())
