"""Figures a user looks at after a run (matplotlib, Agg canvases, never pyplot's global state).

Every figure function takes the run's DataFrames / summary dict and returns a matplotlib Figure, or None
(with the reason logged on the "kafkasim.report" logger) when the data cannot support it.
"""

from kafkasim.report.breakdown import request_breakdown_figure
from kafkasim.report.figures import write_figures
from kafkasim.report.latency import latency_cdf_figure, latency_histogram_figure
from kafkasim.report.percentile_axis import percentile_to_x, x_to_percentile
from kafkasim.report.purgatory_sizes import purgatory_figure
from kafkasim.report.replication import isr_size_figure, log_offsets_figure
from kafkasim.report.swimlane import produce_swimlane_figure

__all__ = [
    "isr_size_figure",
    "latency_cdf_figure",
    "latency_histogram_figure",
    "log_offsets_figure",
    "percentile_to_x",
    "produce_swimlane_figure",
    "purgatory_figure",
    "request_breakdown_figure",
    "write_figures",
    "x_to_percentile",
]
