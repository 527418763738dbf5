"""Sweep figures: each metric against the first parameter, one line per value of the others, with 95% bands.

For every (metric, group) — e.g. (TotalTimeMs, Produce) — one figure with a panel per percentile (p50, p95,
p99, p99.9): the x axis is the sweep's first dimension, each line is one value of the second dimension (or
one combination of all remaining dimensions), the line is the mean over seeds and the band its 95%
confidence interval (no band where a variant has a single seed). A sweep with exactly two dimensions also
gets a heatmap of the mean p99 per (metric, group).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from kafkasim.report.canvas import new_figure
from kafkasim.sweep.dimensions import Dimension
from kafkasim.sweep.metrics import PERCENTILES, STAT_LABELS

HEATMAP_STAT = "p99"


def _file_stem(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", "-".join(parts)).strip("_")


def _x_positions(dimension: Dimension) -> list[float]:
    if dimension.numeric:
        return [float(v[0]) for v in dimension.values]
    return [float(i) for i in range(len(dimension.values))]


def _series_label(dimensions: list[Dimension], coords: tuple[int, ...]) -> str:
    return ", ".join(f"{d.label}={d.value_label(i)}" for d, i in zip(dimensions, coords, strict=True))


def _stat_lookup(rows: pd.DataFrame, stat: str) -> dict[str, tuple[float, float, float]]:
    """variant_id -> (mean, ci95_low, ci95_high) of one statistic; NaN where undefined."""
    picked = rows[rows["stat"] == stat]
    return {
        str(r.variant_id): (_num(r.mean), _num(r.ci95_low), _num(r.ci95_high))
        for r in picked.itertuples(index=False)
    }


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float | np.number) else float("nan")


def line_figure(
    rows: pd.DataFrame,
    title: str,
    dimensions: list[Dimension],
    variant_coords: dict[str, tuple[int, ...]],
    path: Path,
) -> Path:
    """Percentile panels of one (metric, group): mean vs the first dimension, bands = 95% CI."""
    x_dim, rest = dimensions[0], dimensions[1:]
    xs = _x_positions(x_dim)
    by_coords = {coords: vid for vid, coords in variant_coords.items()}
    series = sorted({coords[1:] for coords in variant_coords.values()})
    # Fixed margins: constrained layout would double the drawing time of a sweep's many small figures.
    figure = new_figure(3.6 * len(PERCENTILES), 3.4, constrained=False)
    figure.subplots_adjust(left=0.06, right=0.99, bottom=0.16, top=0.82, wspace=0.28)
    axes = figure.subplots(1, len(PERCENTILES), squeeze=False)[0]
    for ax, stat in zip(axes, PERCENTILES, strict=True):
        values = _stat_lookup(rows, stat)
        for rest_coords in series:
            points = [
                (xs[i], *values[vid])
                for i in range(len(xs))
                if (vid := by_coords.get((i, *rest_coords))) is not None and vid in values
            ]
            if not points:
                continue
            px, mean, low, high = (np.array(col, dtype=float) for col in zip(*points, strict=True))
            label = _series_label(rest, rest_coords) if rest else None
            (line,) = ax.plot(px, mean, marker="o", label=label)
            if np.isfinite(low).any():
                ax.fill_between(px, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_title(STAT_LABELS[stat])
        ax.set_xlabel(x_dim.label)
        if not x_dim.numeric:
            ax.set_xticks(xs, [x_dim.value_label(i) for i in range(len(xs))])
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(title)
    if rest:
        axes[-1].legend(fontsize="small", loc="upper left")
    figure.suptitle(f"{title} (mean over seeds, band: 95% CI)")
    figure.savefig(path, dpi=110)
    return path


def heatmap_figure(
    rows: pd.DataFrame,
    title: str,
    dimensions: list[Dimension],
    variant_coords: dict[str, tuple[int, ...]],
    path: Path,
) -> Path:
    """Mean p99 of one (metric, group) over a two-dimensional grid, one annotated cell per variant."""
    x_dim, y_dim = dimensions
    grid = np.full((len(y_dim.values), len(x_dim.values)), np.nan)
    for vid, (mean, _low, _high) in _stat_lookup(rows, HEATMAP_STAT).items():
        if vid in variant_coords:
            xi, yi = variant_coords[vid]
            grid[yi, xi] = mean
    width, height = 3.6 + 1.2 * len(x_dim.values), 1.8 + 0.7 * len(y_dim.values)
    figure = new_figure(width, height, constrained=False)
    figure.subplots_adjust(left=1.7 / width, right=1 - 1.2 / width, bottom=0.9 / height, top=1 - 0.6 / height)
    ax = figure.subplots()
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(x_dim.values)), [x_dim.value_label(i) for i in range(len(x_dim.values))])
    ax.set_yticks(range(len(y_dim.values)), [y_dim.value_label(i) for i in range(len(y_dim.values))])
    ax.set_xlabel(x_dim.label)
    ax.set_ylabel(y_dim.label)
    finite = grid[np.isfinite(grid)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
    for yi in range(grid.shape[0]):
        for xi in range(grid.shape[1]):
            value = grid[yi, xi]
            if math.isfinite(value):
                ax.text(xi, yi, f"{value:.3g}", ha="center", va="center", fontsize="small",
                        color="black" if value > middle else "white")
            else:  # every run of this variant failed, or it has no rows of this group
                ax.text(xi, yi, "no data", ha="center", va="center", fontsize="small", color="grey")
    figure.colorbar(image, ax=ax, label=f"mean {STAT_LABELS[HEATMAP_STAT]}")
    ax.set_title(f"{title}: mean {STAT_LABELS[HEATMAP_STAT]} over seeds", fontsize="medium")
    figure.savefig(path, dpi=110)
    return path


def plot_sweep(
    per_variant: pd.DataFrame,
    dimensions: list[Dimension],
    variant_coords: dict[str, tuple[int, ...]],
    figures_dir: Path,
) -> list[Path]:
    """Write every sweep figure into `figures_dir`; returns their paths (none for a sweep without axes)."""
    if not dimensions or per_variant.empty:
        return []
    figures_dir.mkdir(parents=True, exist_ok=True)
    written = []
    pairs = per_variant[["metric", "group"]].drop_duplicates().itertuples(index=False)
    for metric, group in pairs:
        rows = per_variant[(per_variant["metric"] == metric) & (per_variant["group"] == group)]
        title = str(metric) if group == "all" else f"{metric} [{group}]"
        stem = _file_stem(str(metric), str(group))
        written.append(line_figure(rows, title, dimensions, variant_coords, figures_dir / f"{stem}.png"))
        if len(dimensions) == 2:
            written.append(
                heatmap_figure(rows, title, dimensions, variant_coords, figures_dir / f"{stem}-heatmap.png")
            )
    return written
