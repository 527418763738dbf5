"""Figures built without pyplot, so a report never touches matplotlib's global figure registry.

Each figure gets its own Agg canvas: it renders (and measures text) the same way in a notebook, a test,
a headless CI box or a Spark executor, and it is garbage-collected like any other object.
"""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def new_figure(width_in: float, height_in: float, *, constrained: bool = True) -> Figure:
    """A figure with its own Agg canvas; `constrained=False` for figures that place text by measuring it."""
    figure = Figure(figsize=(width_in, height_in), layout="constrained" if constrained else None)
    FigureCanvasAgg(figure)
    return figure
