"""Every fetch's wait in the fetch purgatory over time, with the leaders' segment rolls marked.

A fetch that cannot be answered with ``fetch.min.bytes`` (``replica.fetch.min.bytes`` for followers) parks in
the fetch purgatory as a ``DelayedFetch`` and waits up to its max wait: the dots along the top of a panel.
``DelayedFetch.tryComplete`` also completes it early when the end of the log it reads up to lies beyond its
fetch offset on a newer segment (its case F): for a follower (reading up to the log end offset) the moment
the leader rolls a segment and appends to it; for a consumer (reading up to the high watermark) the moment
the leader's high watermark reaches the new segment. The vertical lines mark those moments (the segments
table, ``segments.parquet``), so the early completions a roll causes line up under them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kafkasim.record.recorder import SEGMENT_HW_REACHED, SEGMENT_ROLLED
from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import require_columns, warmup_ms
from kafkasim.report.palette import API_COLOURS, BLACK, GREY
from kafkasim.report.run_events import mark_events, run_events
from kafkasim.report.skip import SkipFigure, skippable
from kafkasim.report.time_axis import legend_outside, shade_warmup, time_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from kafkasim.scenario import Scenario

FETCH_APIS = ("FetchFollower", "FetchConsumer")
# What ends a parked fetch early, per api: the event in the segments table that moves its end to a new segment.
_WAKING_EVENT = {"FetchFollower": SEGMENT_ROLLED, "FetchConsumer": SEGMENT_HW_REACHED}
_EVENT_LABEL = {
    "FetchFollower": "a leader rolled a segment (followers' parked fetches complete)",
    "FetchConsumer": "a leader's high watermark reached a new segment (consumers' parked fetches complete)",
}
# Beyond this many marks a panel is a grey wall: draw them as short ticks along the top instead.
MAX_LINES = 150


def _marks(ax: Axes, times_ms: np.ndarray, unit_per_ms: float, label: str) -> None:
    x = times_ms / unit_per_ms
    if x.size <= MAX_LINES:
        for i, t in enumerate(x):
            ax.axvline(t, color=GREY, lw=0.8, ls="--", alpha=0.7, zorder=0, label=label if i == 0 else None)
    else:
        ax.plot(x, np.full(x.size, 1.0), "|", color=GREY, ms=8, transform=ax.get_xaxis_transform(), label=label)


@skippable("fetch_waits")
def fetch_waits_figure(requests: pd.DataFrame | None, segments: pd.DataFrame | None,
                       summary: Mapping[str, Any] | None = None, *, scenario: Scenario | None = None,
                       timeseries: pd.DataFrame | None = None) -> Figure:
    """One panel per fetch api: each fetch's RemoteTimeMs at the time it completed; the leaders' segment rolls
    (followers) or the high watermark reaching a new segment (consumers) as vertical lines."""
    frame = require_columns(requests, ("api", "response_complete_ms", "RemoteTimeMs"), "requests")
    fetches = frame[frame["api"].isin(FETCH_APIS) & np.isfinite(frame["RemoteTimeMs"].to_numpy(dtype=float))]
    apis = [api for api in FETCH_APIS if (fetches["api"] == api).any()]
    if not apis:
        raise SkipFigure("no fetch requests")
    leaders = (segments[segments["leader"]] if segments is not None and not segments.empty
               and "leader" in segments.columns else None)
    end = float(np.nanmax(fetches["response_complete_ms"].to_numpy(dtype=float)))
    unit = time_unit(end)
    events = run_events(timeseries, scenario)
    figure = new_figure(11.5, 1.2 + 2.8 * len(apis))
    axes = figure.subplots(len(apis), 1, sharex=True, squeeze=False)[:, 0]
    for index, (ax, api) in enumerate(zip(axes, apis, strict=True)):
        first = index == 0
        rows = fetches[fetches["api"] == api]
        shade_warmup(ax, warmup_ms(summary), unit, label=first)
        mark_events(ax, events, unit, end, label=first)
        if leaders is not None:
            woken = leaders[leaders["event"] == _WAKING_EVENT[api]]["time_ms"].to_numpy(dtype=float)
            if woken.size:
                _marks(ax, woken, unit.per_ms, _EVENT_LABEL[api])
        ax.scatter(rows["response_complete_ms"].to_numpy(dtype=float) / unit.per_ms,
                   rows["RemoteTimeMs"].to_numpy(dtype=float), s=9, color=API_COLOURS.get(api, BLACK),
                   label=f"{api}: time parked in the fetch purgatory (RemoteTimeMs)", zorder=2)
        rolled = 0 if leaders is None else int((leaders["event"] == SEGMENT_ROLLED).sum())
        ax.set_title(f"{api}" + ("" if rolled else " (no segment rolled on a leader)"), loc="left",
                     fontsize="medium")
        ax.set_ylabel("RemoteTimeMs (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        legend_outside(ax)
    axes[-1].set_xlabel(unit.label)
    figure.suptitle("Fetch waits and segment rolls", fontsize="x-large")
    return figure
