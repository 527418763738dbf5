"""The life of one acks=all produce request as a swimlane (Kafka's ``DelayedProduce`` waiting for the
followers' fetches to raise the HW), for teaching.

Lanes top to bottom: the producer, the broker's network processor, the request handler thread, the
Produce purgatory, each follower's fetches and each consumer's fetch that returned the batch. Colours are
Kafka's RequestMetrics phases (the same as the breakdown figure), every bar is labelled with its duration,
and the dashed line is the moment the high watermark reached the batch's end offset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kafkasim.report.canvas import new_figure
from kafkasim.report.label_layout import LaneLabel, place_lane_labels
from kafkasim.report.palette import (
    CLIENT_WAIT_COLOUR,
    HIGH_WATERMARK_COLOUR,
    LIGHT_GREY,
    NETWORK_COLOUR,
    PHASE_COLOURS,
    PHASE_LABELS,
    PHASES,
)
from kafkasim.report.skip import skippable
from kafkasim.report.swimlane_story import Lane, Story, build_story, duration

WIDTH_IN = 15.0
LANE_IN = 0.95
LEFT_IN, RIGHT_IN, TOP_IN, BOTTOM_IN = 1.9, 0.3, 1.25, 1.25
BAR = 0.34
FETCH_BAR = 0.24
BRACKET_Y = 0.225
KIND_COLOURS = {**PHASE_COLOURS, "network": NETWORK_COLOUR, "client_wait": CLIENT_WAIT_COLOUR,
                "follower_append": "#BBD7EA"}


def _is_fetch_lane(lane: Lane) -> bool:
    return "Fetch" in lane.name


def draw_lane(ax: Axes, lane: Lane, y: float, window: tuple[float, float], origin: float) -> list[LaneLabel]:
    x_lo, x_hi = window
    height = FETCH_BAR if _is_fetch_lane(lane) else BAR
    labels: list[LaneLabel] = []
    for span in lane.spans:
        start, end = max(span.start_ms, x_lo + origin), min(span.end_ms, x_hi + origin)
        if end < start:
            continue  # wholly outside the window
        colour = KIND_COLOURS[span.kind]
        edge = "#999999" if span.kind in ("client_wait", "network") else "none"
        hatch = "////" if span.kind == "follower_append" else None
        ax.broken_barh([(start - origin, max(end - start, 0.0))], (y - height / 2, height), facecolors=colour,
                       edgecolors=edge, linewidth=0.6, hatch=hatch, zorder=2)
        if end - start <= 0:
            ax.plot([start - origin] * 2, [y - height / 2, y + height / 2], color=colour, lw=2, zorder=3)
        if span.label:
            bar = (start - origin, end - origin)
            labels.append(LaneLabel(y, (bar[0] + bar[1]) / 2, span.label, bar, colour))
        if span.start_ms < x_lo + origin < span.end_ms and span.kind in PHASES:
            labels.append(LaneLabel(y, x_lo, f"\u25c0 from t = \u2212{duration(origin - span.start_ms)}"))
        if span.start_ms < x_hi + origin < span.end_ms and span.kind in PHASES:
            labels.append(LaneLabel(y, x_hi, f"until t = +{duration(span.end_ms - origin)} \u25b6"))
    return labels


def _intended_bracket(ax: Axes, producer: Lane, y: float, origin: float) -> list[LaneLabel]:
    """When the batch waited in the producer before it was sent, a bracket over both of the producer's
    bars: the produce latency from the intended send (what summary.json's "intended" percentiles count),
    so that each number in the lane labels exactly the span it measures."""
    if len(producer.spans) < 2:
        return []
    start, end = producer.spans[0].start_ms - origin, producer.spans[-1].end_ms - origin
    ax.annotate("", (start, y + BRACKET_Y), xytext=(end, y + BRACKET_Y),
                arrowprops={"arrowstyle": "|-|,widthA=0.25,widthB=0.25", "color": "#555555", "lw": 0.9,
                            "shrinkA": 0, "shrinkB": 0}, zorder=4)
    return [LaneLabel(y, (start + end) / 2, f"produce latency from the intended send {duration(end - start)}")]


def _legend(figure: Figure, story: Story) -> None:
    handles: list[Artist] = [Patch(facecolor=PHASE_COLOURS[p], label=f"{PHASE_LABELS[p]}") for p in PHASES]
    handles += [
        Patch(facecolor=NETWORK_COLOUR, edgecolor="#999999", label="network transfer"),
        Patch(facecolor=CLIENT_WAIT_COLOUR, edgecolor="#999999", label="client waiting"),
        Patch(facecolor=KIND_COLOURS["follower_append"], hatch="////", label="follower appends to its log"),
        Line2D([], [], color=HIGH_WATERMARK_COLOUR, ls="--", lw=1.5,
               label="produce completes with an error" if "completed with" in story.hw_text
               else "high watermark reaches the batch"),
    ]
    figure.legend(handles=handles, loc="lower center", ncol=5, fontsize="small", frameon=False,
                  bbox_to_anchor=(0.5, 0.0))


def _draw(story: Story) -> Figure:
    lanes = story.lanes
    height = TOP_IN + BOTTOM_IN + LANE_IN * len(lanes)
    figure = new_figure(WIDTH_IN, height, constrained=False)
    figure.subplots_adjust(left=LEFT_IN / WIDTH_IN, right=1 - RIGHT_IN / WIDTH_IN,
                           top=1 - TOP_IN / height, bottom=BOTTOM_IN / height)
    ax = figure.add_subplot()
    origin = story.origin_ms
    window = (story.window_ms[0] - origin, story.window_ms[1] - origin)
    ax.set_xlim(*window)
    ax.set_ylim(-0.7, len(lanes) - 0.3)
    ys = [len(lanes) - 1 - i for i in range(len(lanes))]
    ax.set_yticks(ys, [lane.name for lane in lanes])
    for tick, lane in zip(ax.get_yticklabels(), lanes, strict=True):
        tick.set_color(lane.colour)
    for y in ys[:-1]:
        ax.axhline(y - 0.5, color=LIGHT_GREY, lw=0.8, zorder=1)
    for instant in story.instants_ms:
        ax.axvline(instant - origin, color="#BBBBBB", lw=0.7, ls=":", zorder=1)
    hw_x = story.hw_time_ms - origin
    ax.axvline(hw_x, color=HIGH_WATERMARK_COLOUR, ls="--", lw=1.5, zorder=4)
    # Anchored on the side with room, so a long text near either edge stays inside the figure.
    where = (hw_x - window[0]) / (window[1] - window[0])
    align = "right" if where > 0.7 else "left" if where < 0.3 else "center"
    ax.annotate(story.hw_text.replace(" (implied", "\n(implied"), (hw_x, 1.0), xycoords=("data", "axes fraction"),
                xytext=(0, 4), textcoords="offset points", ha=align, va="bottom", fontsize="small",
                fontweight="bold", annotation_clip=False)
    ax.set_xlabel(story.x_label)
    ax.grid(True, axis="x", alpha=0.25)
    ax.tick_params(axis="y", length=0)
    labels: list[LaneLabel] = []
    for lane, y in zip(lanes, ys, strict=True):
        labels.extend(draw_lane(ax, lane, y, window, origin))
    labels.extend(_intended_bracket(ax, lanes[0], ys[0], origin))
    figure.suptitle(story.title, fontsize="large", y=1 - 0.1 / height, va="top")
    subtitle = story.subtitle + ("; " + "; ".join(story.late_consumers) if story.late_consumers else "")
    figure.text(0.5, 1 - 0.68 / height, subtitle, ha="center", va="top", fontsize="medium", color="#333333")
    _legend(figure, story)
    place_lane_labels(ax, labels)
    return figure


@skippable("produce_swimlane")
def produce_swimlane_figure(requests: pd.DataFrame | None, records: pd.DataFrame | None = None,
                            timeseries: pd.DataFrame | None = None, summary: Mapping[str, Any] | None = None,
                            request_id: Any = None) -> Figure:
    """Swimlane of one acks=all Produce: `request_id`, or the one closest to the median TotalTimeMs after
    warm-up. Returns None (and logs why) when the run has no completed acks=all produce; raises
    ValueError when `request_id` is not such a request."""
    return _draw(build_story(requests, records, timeseries, summary, request_id))
