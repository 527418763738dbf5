"""The HdrHistogram-style percentile axis: x = 1 / (1 - q) on a log scale.

Each "nine" gets the same width: 50% -> 2, 90% -> 10, 99% -> 100, 99.9% -> 1000, 99.99% -> 10000. The
tail, where purgatory timeouts and long polls live, is as visible as the median.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

TICK_PERCENTILES: Final = (50.0, 90.0, 99.0, 99.9, 99.99)
LOWEST_PERCENTILE: Final = 50.0
HIGHEST_PERCENTILE: Final = 99.99


def percentile_to_x(percentile: float | np.ndarray) -> float | np.ndarray:
    """Map a percentile in [0, 100) to the axis position 1 / (1 - q), e.g. 99 -> 100."""
    q = np.asarray(percentile, dtype=float) / 100.0
    if np.any((q < 0) | (q >= 1)):
        raise ValueError(f"percentile must be in [0, 100), got {percentile!r}")
    x = 1.0 / (1.0 - q)
    return float(x) if np.ndim(x) == 0 else x


def x_to_percentile(x: float | np.ndarray) -> float | np.ndarray:
    """Inverse of percentile_to_x, e.g. 1000 -> 99.9."""
    xs = np.asarray(x, dtype=float)
    if np.any(xs < 1):
        raise ValueError(f"axis position must be >= 1, got {x!r}")
    p = 100.0 * (1.0 - 1.0 / xs)
    return float(p) if np.ndim(p) == 0 else p


def percentile_label(percentile: float) -> str:
    """'99.9%' rather than '99.900000%': as many decimals as the percentile has, no more."""
    return f"{percentile:.4f}".rstrip("0").rstrip(".") + "%"


def percentile_curve(values: np.ndarray, points: int = 240) -> tuple[np.ndarray, np.ndarray]:
    """(axis x, latency) pairs from the 50th percentile up to the highest the sample resolves, then the max.

    n samples resolve percentiles up to 1 - 1/n; beyond that every percentile is just the maximum, so the
    curve stops there (with a last step up to the maximum) instead of drawing a flat line that looks like
    measured 99.99% latency. The value at
    q is the smallest sample with at least a fraction q of samples at or below it (HdrHistogram's rule).
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.empty(0), np.empty(0)
    lowest = float(percentile_to_x(LOWEST_PERCENTILE))
    highest = min(float(percentile_to_x(HIGHEST_PERCENTILE)), max(float(values.size), lowest))
    xs = np.geomspace(lowest, highest, points)
    quantiles = np.clip(1.0 - 1.0 / xs, 0.0, 1.0)
    ys = np.quantile(values, quantiles, method="inverted_cdf")
    # The last step goes up to the maximum, as HdrHistogram's plots do: with n samples the slowest one is
    # "the rest" above 1 - 1/n, so without this step the worst request would never show.
    return np.append(xs, xs[-1]), np.append(ys, values.max())


def format_percentile_axis(ax: Axes) -> None:
    """Log-scaled x with ticks at 50%, 90%, 99%, 99.9%, 99.99% and no other labels."""
    ax.set_xscale("log")
    ticks = [float(percentile_to_x(p)) for p in TICK_PERCENTILES]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([percentile_label(p) for p in TICK_PERCENTILES]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(ticks[0], ticks[-1])
    ax.set_xlabel("percentile")
