"""One produce batch across a leader failover as a swimlane: attempt 1 to the old leader fails, the
producer's metadata refreshes while no new leader is known, the leader moves, the last attempt goes to the
new leader and is acknowledged (the story and its sources: ``failover_story``).

Top panel, the whole failover in seconds: the producer's lane (the batch in flight, waiting to be retried
with a tick per metadata refresh, in flight again), and a lane per broker involved with its leadership of
the partition as read from the ``LeaderId`` gauge. Bottom panel, the last attempt in milliseconds, phase by
phase (Kafka's RequestMetrics, the colours of the produce swimlane). The figure exists only for runs where
a batch was retried across a leader change.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kafkasim.report.canvas import new_figure
from kafkasim.report.failover_story import Attempt, FailoverStory, build_failover_story
from kafkasim.report.frames import metric
from kafkasim.report.label_layout import LaneLabel, place_lane_labels
from kafkasim.report.palette import (
    CLIENT_WAIT_COLOUR,
    FAULT_COLOUR,
    GREEN,
    HIGH_WATERMARK_COLOUR,
    LIGHT_GREY,
    NETWORK_COLOUR,
    PHASE_COLOURS,
    PHASE_LABELS,
    PHASES,
    api_colour,
)
from kafkasim.report.skip import skippable
from kafkasim.report.swimlane import draw_lane
from kafkasim.report.swimlane_story import PHASE_BOUNDS, Lane, Span, duration

WIDTH_IN = 15.0
LEADERSHIP_COLOUR = "#CFE3F1"
BAR = 0.34


def _leadership(timeseries: pd.DataFrame | None, partition: str, broker: int) -> list[tuple[float, float]]:
    """The stretches of time the partition's LeaderId gauge named `broker` (consecutive samples)."""
    if timeseries is None or timeseries.empty:
        return []
    rows = metric(timeseries, "LeaderId")
    rows = rows[rows["entity"] == partition]
    every = np.unique(rows["time_ms"].to_numpy(float))
    step = float(np.median(np.diff(every))) if every.size > 1 else 0.0
    times = np.unique(rows.loc[rows["value"].to_numpy(float) == broker, "time_ms"].to_numpy(float))
    stretches: list[tuple[float, float]] = []
    for t in times:
        if stretches and t - stretches[-1][1] <= 1.5 * step:
            stretches[-1] = (stretches[-1][0], float(t))
        else:
            stretches.append((float(t), float(t)))
    return stretches


def _attempt_spans(attempt: Attempt, label: str) -> list[Span]:
    """A send drawn with its own timestamps: the wire, Kafka's five phases, the wire back."""
    stamps = {"client_send_ms": attempt.send_ms, "start_ms": attempt.start_ms, "dequeue_ms": attempt.dequeue_ms,
              "local_complete_ms": attempt.local_complete_ms, "response_complete_ms": attempt.response_complete_ms,
              "response_dequeue_ms": attempt.response_dequeue_ms, "end_ms": attempt.end_ms,
              "client_receive_ms": attempt.receive_ms}
    spans = [Span(attempt.send_ms, attempt.start_ms, "network", "request")]
    for phase, (begin, end) in PHASE_BOUNDS.items():
        spans.append(Span(stamps[begin], stamps[end], phase, label if phase == "LocalTimeMs" else ""))
    spans.append(Span(attempt.end_ms, attempt.receive_ms, "network", "response"))
    return [s for s in spans if np.isfinite(s.start_ms) and np.isfinite(s.end_ms)]


def _overview(ax: Axes, story: FailoverStory, timeseries: pd.DataFrame | None) -> None:
    """The whole failover, in seconds since attempt 1 was sent."""
    first, last = story.first, story.last
    origin = first.send_ms
    start = min(story.intended_ms, origin)
    span = max(story.ack_ms - start, 1.0)
    lo, hi = start - 0.06 * span, story.ack_ms + 0.06 * span

    def x(ms: float) -> float:
        return (ms - origin) / 1000.0

    ax.set_xlim(x(lo), x(hi))
    lanes = [f"{story.producer}\n(producer)", f"broker {story.old_leader}\n(old leader)",
             f"broker {story.new_leader}\n(new leader)"]
    ys = [2.0, 1.0, 0.0]
    ax.set_ylim(-0.7, 2.7)
    ax.set_yticks(ys, lanes)
    ax.get_yticklabels()[0].set_color(api_colour("Produce"))
    for y in ys[:-1]:
        ax.axhline(y - 0.5, color=LIGHT_GREY, lw=0.8, zorder=1)
    labels: list[LaneLabel] = []

    def bar(y: float, a_ms: float, b_ms: float, colour: str, text: str, edge: str = "#999999") -> None:
        a, b = x(max(a_ms, lo)), x(min(b_ms, hi))
        ax.broken_barh([(a, max(b - a, 0.0))], (y - BAR / 2, BAR), facecolors=colour, edgecolors=edge,
                       linewidth=0.6, zorder=2)
        if text:
            labels.append(LaneLabel(y, (a + b) / 2, text, (a, b), colour))

    producer_y = ys[0]
    if first.send_ms - story.intended_ms > 1e-6:
        bar(producer_y, story.intended_ms, first.send_ms, CLIENT_WAIT_COLOUR, "")
    bar(producer_y, first.send_ms, last.send_ms, CLIENT_WAIT_COLOUR,
        f"waits to retry: {len(story.refreshes_ms)} metadata refreshes (ticks)")
    bar(producer_y, last.send_ms, story.ack_ms, api_colour("Produce"), "")
    ax.plot([x(first.send_ms)], [producer_y], marker="X", color=FAULT_COLOUR, ms=11, zorder=4)
    labels.append(LaneLabel(producer_y, x(first.send_ms), f"attempt 1 fails: {first.outcome}"))
    for refresh in story.refreshes_ms:
        ax.plot([x(refresh)] * 2, [producer_y - BAR / 2, producer_y + BAR / 2], color="#555555", lw=1.2, zorder=3)
    ax.plot([x(story.ack_ms)], [producer_y], marker="o", color=GREEN, ms=8, zorder=4)
    labels.append(LaneLabel(producer_y, x(last.send_ms), f"attempt {story.attempts} \u2192 acknowledged"))

    for y, broker in ((ys[1], story.old_leader), (ys[2], story.new_leader)):
        for a, b in _leadership(timeseries, story.partition, broker):
            bar(y, a, b, LEADERSHIP_COLOUR, f"leads {story.partition}", edge="none")
    for attempt, y in ((first, ys[1]), (last, ys[2])):
        where = attempt.start_ms if attempt.reached_broker else attempt.send_ms
        marker = "v" if attempt.reached_broker else "x"
        ax.plot([x(where)], [y + BAR / 2 + 0.12], marker=marker,
                color=FAULT_COLOUR if attempt is first else api_colour("Produce"), ms=9, zorder=4)

    # One row of text per line above the axes, so that lines close together keep readable labels.
    for row, (when, text, style) in enumerate((
            (first.send_ms, f"attempt 1 \u2192 broker {first.broker}", ":"),
            (story.leader_moved_ms, f"LeaderId: broker {story.new_leader} leads", "--"),
            (last.send_ms, f"attempt {story.attempts} \u2192 broker {last.broker}", ":"))):
        ax.axvline(x(when), color=HIGH_WATERMARK_COLOUR, ls=style, lw=1.1, zorder=1)
        where = (x(when) - x(lo)) / (x(hi) - x(lo))
        ax.annotate(text, (x(when), 1.0), xycoords=("data", "axes fraction"), xytext=(0, 3 + 11 * row),
                    textcoords="offset points", ha="right" if where > 0.7 else "left" if where < 0.3 else "center",
                    va="bottom", fontsize="small", fontweight="bold", annotation_clip=False)
    ax.set_xlabel("time since attempt 1 was sent (s)")
    ax.grid(True, axis="x", alpha=0.25)
    ax.tick_params(axis="y", length=0)
    place_lane_labels(ax, labels)


def _last_attempt(ax: Axes, story: FailoverStory) -> None:
    """The acknowledged attempt at the new leader, in milliseconds since it was sent."""
    last = story.last
    producer = Lane(f"{story.producer}\n(producer)", api_colour("Produce"),
                    [Span(last.send_ms, last.receive_ms, "client_wait",
                          f"attempt {story.attempts}: send \u2192 ack {duration(last.receive_ms - last.send_ms)}")])
    broker = Lane(f"broker {story.new_leader}\n(new leader)", "black",
                  _attempt_spans(last, f"appended at offset {story.offset}"))
    origin = last.send_ms
    end = last.receive_ms if np.isfinite(last.receive_ms) else story.ack_ms
    span = max(end - origin, 1e-3)
    window = (-0.04 * span, span * 1.04)
    ax.set_xlim(*window)
    ax.set_ylim(-0.7, 1.7)
    ax.set_yticks([1.0, 0.0], [producer.name, broker.name])
    ax.get_yticklabels()[0].set_color(producer.colour)
    ax.axhline(0.5, color=LIGHT_GREY, lw=0.8, zorder=1)
    labels = draw_lane(ax, producer, 1.0, window, origin) + draw_lane(ax, broker, 0.0, window, origin)
    ax.set_xlabel(f"time since attempt {story.attempts} was sent (ms): its RequestMetrics phases at the new leader")
    ax.grid(True, axis="x", alpha=0.25)
    ax.tick_params(axis="y", length=0)
    place_lane_labels(ax, labels)


def _legend(figure: Figure, height: float) -> None:
    handles: list[Artist] = [Patch(facecolor=PHASE_COLOURS[p], label=PHASE_LABELS[p]) for p in PHASES]
    handles += [
        Patch(facecolor=NETWORK_COLOUR, edgecolor="#999999", label="network transfer"),
        Patch(facecolor=CLIENT_WAIT_COLOUR, edgecolor="#999999", label="producer waiting"),
        Patch(facecolor=LEADERSHIP_COLOUR, label="leads the partition (LeaderId samples)"),
        Line2D([], [], color="#555555", marker="|", ls="none", ms=10, label="metadata refresh (MetadataAgeMs)"),
        Line2D([], [], color=FAULT_COLOUR, marker="X", ls="none", ms=9, label="attempt fails"),
        Line2D([], [], color=GREEN, marker="o", ls="none", ms=8, label="acknowledged"),
    ]
    figure.legend(handles=handles, loc="lower center", ncol=6, fontsize="small", frameon=False,
                  bbox_to_anchor=(0.5, 1.0 / height))


def _draw(story: FailoverStory, timeseries: pd.DataFrame | None) -> Figure:
    height = 8.8
    figure = new_figure(WIDTH_IN, height, constrained=False)
    figure.subplots_adjust(left=1.9 / WIDTH_IN, right=1 - 0.3 / WIDTH_IN, top=1 - 1.1 / height,
                           bottom=2.15 / height, hspace=0.6)
    top, bottom = figure.subplots(2, 1, gridspec_kw={"height_ratios": [3, 2]})
    _overview(top, story, timeseries)
    _last_attempt(bottom, story)
    _legend(figure, height)
    figure.suptitle(f"One produce batch across a leader failover: batch #{story.batch_id} of {story.producer}, "
                    f"{story.partition}, {story.attempts} attempts", fontsize="large", y=1 - 0.12 / height,
                    va="top")
    text = "\n".join(textwrap.fill(s, 190) for s in story.sentences())
    figure.text(0.5, 0.1 / height, text, ha="center", va="bottom", fontsize="small", color="#333333")
    return figure


@skippable("failover_swimlane")
def failover_swimlane_figure(requests: pd.DataFrame | None, records: pd.DataFrame | None = None,
                             timeseries: pd.DataFrame | None = None) -> Figure:
    """The swimlane of one batch retried across a leader change (see ``build_failover_story`` for which);
    None (the reason logged) when the run has no such batch."""
    return _draw(build_failover_story(requests, records, timeseries), timeseries)

