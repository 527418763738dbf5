"""Kafka's RequestMetrics breakdown (``RequestMetrics``, ``RequestChannel.Request.updateRequestMetrics``) per
API: where a request's TotalTimeMs goes.

Each API gets its own panel (its own y scale: a 500 ms consumer long poll would flatten a 2 ms produce)
with two stacked bars. "mean": the phase means, which add up to the mean TotalTimeMs. "p99": each phase's
own 99th percentile, which is what Kafka's per-phase histograms report over JMX; those do NOT add up to
the TotalTimeMs p99 (the slowest requests are not slow in every phase at once), so the real TotalTimeMs
p99 is drawn as a black marker next to the stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import after_warmup, finite, require_columns, warmup_ms
from kafkasim.report.latency_scale import short_ms
from kafkasim.report.palette import API_ORDER, PHASE_COLOURS, PHASES, api_colour
from kafkasim.report.skip import SkipFigure, skippable

STATISTICS = ("mean", "p99")


def phase_statistics(requests: pd.DataFrame, statistic: str) -> tuple[dict[str, float], float]:
    """({phase: value}, TotalTimeMs value) for "mean" or "p99" over requests that completed."""
    done = requests[np.isfinite(requests["TotalTimeMs"].to_numpy(dtype=float, na_value=np.nan))]

    def reduce(values: np.ndarray) -> float:
        if values.size == 0:
            return 0.0
        if statistic == "mean":
            return float(values.mean())
        return float(np.quantile(values, 0.99, method="inverted_cdf"))

    phases = {phase: reduce(finite(done[phase])) for phase in PHASES}
    return phases, reduce(finite(done["TotalTimeMs"]))


def _draw_api(ax: Axes, api: str, requests: pd.DataFrame) -> None:
    tops: list[float] = []
    for position, statistic in enumerate(STATISTICS):
        phases, total = phase_statistics(requests, statistic)
        bottom = 0.0
        for phase in PHASES:
            ax.bar(position, phases[phase], bottom=bottom, width=0.6, color=PHASE_COLOURS[phase],
                   edgecolor="white", linewidth=0.5)
            bottom += phases[phase]
        # Beside the bar, not across it, so the thin top phases stay visible.
        ax.plot([position + 0.32, position + 0.46], [total, total], color="black", lw=2.5)
        ax.annotate(f"{short_ms(total)} ms", (position, max(bottom, total)), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize="small")
        tops.append(max(bottom, total))
    # Phase values inside the bars once the axis scale is known, and only where they fit.
    top = max(tops) if max(tops) > 0 else 1.0
    ax.set_ylim(0, top * 1.15)
    for position, statistic in enumerate(STATISTICS):
        phases, _ = phase_statistics(requests, statistic)
        bottom = 0.0
        for phase in PHASES:
            height = phases[phase]
            if height >= 0.07 * top:
                ax.text(position, bottom + height / 2, short_ms(height), ha="center",
                        va="center", fontsize="x-small", color="black")
            bottom += height
    completed = finite(requests["TotalTimeMs"]).size
    ax.set_xticks(range(len(STATISTICS)), [f"{s}\n(n={completed})" if s == "mean" else s for s in STATISTICS])
    ax.set_xlim(-0.6, len(STATISTICS) - 0.4)
    ax.set_title(api, color=api_colour(api), fontweight="bold")
    ax.grid(True, axis="y", alpha=0.3)


@skippable("request_breakdown")
def request_breakdown_figure(requests: pd.DataFrame | None, summary: Mapping[str, Any] | None = None) -> Figure:
    """Stacked RequestQueue/Local/Remote/ResponseQueue/ResponseSend (mean and p99) per API, in ms."""
    frame = require_columns(requests, ["api", "TotalTimeMs", *PHASES], "requests")
    frame = after_warmup(frame, warmup_ms(summary))
    apis = [a for a in API_ORDER if (frame["api"] == a).any()]
    apis += sorted(set(frame["api"].astype(str)) - set(API_ORDER))
    apis = [a for a in apis if finite(frame.loc[frame["api"] == a, "TotalTimeMs"]).size]
    if not apis:
        raise SkipFigure("no completed requests after warm-up")
    figure = new_figure(max(4.2 * len(apis), 8.0), 5.8)
    axes = figure.subplots(1, len(apis), squeeze=False)[0]
    for ax, api in zip(axes, apis, strict=True):
        _draw_api(ax, api, frame[frame["api"] == api])
    axes[0].set_ylabel("time (ms)")
    handles: list[Artist] = [Patch(color=PHASE_COLOURS[p], label=p) for p in reversed(PHASES)]
    handles.append(Line2D([], [], color="black", lw=2.5, label="TotalTimeMs\n(mean / p99)"))
    figure.legend(handles=handles, loc="outside right center", fontsize="small", title="RequestMetrics")
    figure.suptitle("Where request time goes (Kafka RequestMetrics, per API)\n"
                    "p99 bars stack each phase's own p99, so they can exceed the TotalTimeMs p99 (black marker)",
                    fontsize="large")
    return figure
