"""Every figure of a run, written as PNGs to <out_dir>/figures/."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.figure import Figure

from kafkasim.report.breakdown import request_breakdown_figure
from kafkasim.report.failover_swimlane import failover_swimlane_figure
from kafkasim.report.fetch_waits import fetch_waits_figure
from kafkasim.report.latency import latency_cdf_figure, latency_histogram_figure
from kafkasim.report.purgatory_sizes import purgatory_figure
from kafkasim.report.replication import isr_size_figure, log_offsets_figure
from kafkasim.report.skip import logger
from kafkasim.report.swimlane import produce_swimlane_figure

if TYPE_CHECKING:
    from kafkasim.scenario import Scenario

DPI = 130


def figure_builders(requests: pd.DataFrame | None, records: pd.DataFrame | None, timeseries: pd.DataFrame | None,
              summary: Mapping[str, Any] | None, swimlane_request_id: Any, scenario: Scenario | None = None,
              per_partition: bool | None = None, segments: pd.DataFrame | None = None
              ) -> list[tuple[str, Callable[[], Figure | None]]]:
    return [
        ("latency_cdf", lambda: latency_cdf_figure(requests, records, summary)),
        ("latency_histogram", lambda: latency_histogram_figure(requests, summary)),
        ("request_breakdown", lambda: request_breakdown_figure(requests, summary)),
        ("log_offsets", lambda: log_offsets_figure(timeseries, summary, scenario=scenario,
                                                   per_partition=per_partition)),
        ("isr_size", lambda: isr_size_figure(timeseries, summary, scenario=scenario, per_partition=per_partition)),
        ("purgatory", lambda: purgatory_figure(timeseries, summary, scenario=scenario)),
        ("fetch_waits", lambda: fetch_waits_figure(requests, segments, summary, scenario=scenario,
                                                   timeseries=timeseries)),
        ("produce_swimlane",
         lambda: produce_swimlane_figure(requests, records, timeseries, summary, swimlane_request_id)),
        ("failover_swimlane", lambda: failover_swimlane_figure(requests, records, timeseries)),
    ]


def save_png(figure: Figure, path: Path, dpi: int = DPI) -> Path:
    """Write to a temporary name, then rename, so a crash never leaves a half-written PNG behind."""
    partial = path.with_name(f".{path.name}.partial")
    figure.savefig(partial, format="png", dpi=dpi)
    os.replace(partial, path)
    return path


def write_figures(requests: pd.DataFrame | None, records: pd.DataFrame | None, timeseries: pd.DataFrame | None,
                  summary: Mapping[str, Any] | None, out_dir: str | Path, *,
                  swimlane_request_id: Any = None, dpi: int = DPI, scenario: Scenario | None = None,
                  per_partition: bool | None = None, segments: pd.DataFrame | None = None) -> list[Path]:
    """Write every figure the data supports to `out_dir`/figures/<name>.png and return their paths.

    A figure the data cannot support (no consumers, acks=0 only, ...) is skipped with its reason logged on
    the "kafkasim.report" logger; `swimlane_request_id` picks the produce the swimlane follows; `scenario`
    (the run's, optional) adds its fault windows and min.insync.replicas to the time-axis figures;
    `per_partition` (None: only up to 8 partitions) draws the replication figures partition by partition
    rather than aggregated across partitions; `segments` (the run's segments table) marks segment rolls.
    """
    folder = Path(out_dir) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, build in figure_builders(requests, records, timeseries, summary, swimlane_request_id, scenario,
                                       per_partition, segments):
        figure = build()
        if figure is None:
            continue
        written.append(save_png(figure, folder / f"{name}.png", dpi))
        logger.debug("wrote %s", written[-1])
    return written
