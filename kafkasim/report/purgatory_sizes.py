"""The two purgatory gauges over time, per purgatory (Kafka's ``DelayedOperationPurgatory`` gauges
``PurgatorySize`` and ``NumDelayedOperations``).

They differ on purpose: PurgatorySize counts watch-list entries (an operation once per key, completed
operations included until a checkAndComplete on that key or a purge removes them), NumDelayedOperations
counts operations still waiting in the timer. A growing gap between them is what triggers a purge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import metric, require_columns, warmup_ms
from kafkasim.report.palette import PURGATORY_COLOURS, replica_colour
from kafkasim.report.skip import SkipFigure, skippable
from kafkasim.report.time_axis import (
    SUMMARY_NOTE,
    last_time_ms,
    legend_outside,
    shade_warmup,
    step_gauge,
    time_unit,
)

GAUGES = (
    ("PurgatorySize", "PurgatorySize: watch-list entries (once per key, completed ops until purged)"),
    ("NumDelayedOperations", "NumDelayedOperations: operations waiting in the timer"),
)


@skippable("purgatory")
def purgatory_figure(timeseries: pd.DataFrame | None, summary: Mapping[str, Any] | None = None) -> Figure:
    """PurgatorySize (top) and NumDelayedOperations (bottom), one step line per purgatory."""
    frame = require_columns(timeseries, ("time_ms", "metric", "entity", "value"), "time series")
    gauges = [(name, title, metric(frame, name)) for name, title in GAUGES]
    if all(rows.empty for _, _, rows in gauges):
        raise SkipFigure("no PurgatorySize or NumDelayedOperations samples")
    end = last_time_ms(frame)
    unit = time_unit(end)
    purgatories = sorted({e for _, _, rows in gauges for e in rows["entity"]},
                         key=lambda e: (e not in PURGATORY_COLOURS, e))
    figure = new_figure(11.5, 6.5)
    axes = figure.subplots(2, 1, sharex=True)
    for ax, (_name, title, rows) in zip(axes, gauges, strict=True):
        dense = False
        shade_warmup(ax, warmup_ms(summary), unit, label=ax is axes[0])
        for index, purgatory in enumerate(purgatories):
            mine = rows[rows["entity"] == purgatory]
            if mine.empty:
                continue
            summarised = step_gauge(ax, mine["time_ms"].to_numpy(float), mine["value"].to_numpy(float), unit,
                                    end, lw=1.6, color=PURGATORY_COLOURS.get(purgatory, replica_colour(index + 3)),
                                    label=f"{purgatory} purgatory")
            dense |= summarised
        if rows.empty:
            ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(f"{title}\n({SUMMARY_NOTE})" if dense else title, loc="left", fontsize="medium")
        ax.set_ylabel("operations")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        legend_outside(ax)
    axes[-1].set_xlabel(unit.label)
    figure.suptitle("Purgatory sizes over time", fontsize="x-large")
    return figure
