"""Placing duration labels next to swimlane bars without any two overlapping.

Each label is measured with the figure's own renderer, then put in the first free slot of its lane:
inside its bar if it fits there, else above the bar, below it, or higher above. A slot is free when no
label already in it overlaps horizontally. Labels are kept inside the axes.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.text import Text

INSIDE = 0.0
SLOTS = (INSIDE, 0.31, -0.31, 0.47)
GAP_PX = 6.0


@dataclass(frozen=True)
class LaneLabel:
    lane_y: float
    x: float
    text: str
    bar: tuple[float, float] | None = None
    bar_colour: str = "white"


def _ink_for(colour: str) -> str:
    r, g, b = to_rgb(colour)
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


def place_lane_labels(ax: Axes, labels: list[LaneLabel], fontsize: float = 8.0) -> list[Text]:
    figure = ax.get_figure()
    assert figure is not None
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    to_pixels = ax.transData.transform
    x_lo, x_hi = ax.get_xlim()
    taken: dict[tuple[float, float], list[tuple[float, float]]] = {}
    placed: list[Text] = []
    for label in sorted(labels, key=lambda lbl: (lbl.lane_y, lbl.x)):
        artist = ax.text(label.x, label.lane_y, label.text, ha="center", va="center", fontsize=fontsize,
                         zorder=5)
        artist.set_in_layout(False)
        width_px = artist.get_window_extent(renderer).width
        left_px, right_px = to_pixels((x_lo, 0))[0], to_pixels((x_hi, 0))[0]
        centre_px = to_pixels((label.x, 0))[0]
        centre_px = min(max(centre_px, left_px + width_px / 2 + 2), right_px - width_px / 2 - 2)
        span = (centre_px - width_px / 2 - GAP_PX / 2, centre_px + width_px / 2 + GAP_PX / 2)
        chosen = None
        for offset in SLOTS:
            if offset == INSIDE:
                if label.bar is None:
                    continue
                bar_lo, bar_hi = (to_pixels((x, 0))[0] for x in label.bar)
                if not (bar_lo + 2 <= span[0] and span[1] <= bar_hi - 2):
                    continue
            used = taken.setdefault((label.lane_y, offset), [])
            if all(span[1] <= a or b <= span[0] for a, b in used):
                chosen = offset
                break
        if chosen is None:
            chosen = SLOTS[-1]  # crowded lane: the top slot, rather than dropping the label
        taken.setdefault((label.lane_y, chosen), []).append(span)
        x_data = ax.transData.inverted().transform((centre_px, 0))[0]
        artist.set_position((x_data, label.lane_y + chosen))
        if chosen == INSIDE:
            artist.set_color(_ink_for(label.bar_colour))
        else:
            # A white backing keeps a label readable where it crosses a marker line.
            artist.set_bbox({"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.0})
        placed.append(artist)
    return placed
