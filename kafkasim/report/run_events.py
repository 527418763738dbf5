"""What happened to a run over time that its time-axis figures and its report mark: the scenario's faults
(a window from `at` to its end) and the ISR changes read off the sampled `IsrSize` gauge.

ISR changes come from the gauge, so their times are those of the first sample showing the new size (the
scenario's `sample_interval` after the change at most); Kafka's `Partition.maybeShrinkIsr` and
`maybeExpandIsr` changed it at or before that sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from kafkasim.report.frames import metric, natural_key
from kafkasim.report.palette import FAULT_COLOUR, ISR_EXPAND_COLOUR, ISR_SHRINK_COLOUR
from kafkasim.report.skip import logger
from kafkasim.report.time_axis import TimeUnit

if TYPE_CHECKING:
    from kafkasim.scenario import Scenario

FAULT_LABEL = "fault window"
ISR_SHRINK_LABEL = "ISR shrinks"
ISR_EXPAND_LABEL = "ISR expands"


@dataclass(frozen=True)
class FaultWindow:
    """One fault of the scenario: `end_ms` None means it lasts to the end of the run."""

    kind: str
    target: str
    start_ms: float
    end_ms: float | None

    @property
    def text(self) -> str:
        return f"{self.kind} {self.target}"


@dataclass(frozen=True)
class IsrChange:
    time_ms: float
    partition: str
    before: int
    after: int

    @property
    def shrink(self) -> bool:
        return self.after < self.before


@dataclass(frozen=True)
class HostStalls:
    """One host's stalls (the result's stalls table): (start_ms, duration_ms) each, in time order."""

    host: str
    stalls: tuple[tuple[float, float], ...]

    @property
    def stalled_ms(self) -> float:
        return sum(d for _, d in self.stalls)


@dataclass(frozen=True)
class LossEpisode:
    """One loss on one direction of one connection, as its TCP retransmissions show it (the result's
    retransmissions table): the head segment sent at `lost_since_ms`, retransmitted at each of `times_ms`, the
    last one's `outcome` (got through, lost again: the run ended first, gave up)."""

    connection: str
    lost_since_ms: float
    times_ms: tuple[float, ...]
    outcome: str


@dataclass(frozen=True)
class RunEvents:
    """Everything a time axis marks, plus each topic's min.insync.replicas (the ISR figure draws it). `stalls`
    (the hosts' stop-the-world stalls) is marked on the report's timeline only."""

    faults: tuple[FaultWindow, ...] = ()
    isr_changes: tuple[IsrChange, ...] = ()
    min_insync_replicas: tuple[tuple[str, int], ...] = ()
    stalls: tuple[HostStalls, ...] = ()
    retransmissions: tuple[LossEpisode, ...] = ()

    def min_isr_of(self, partition: str) -> int | None:
        topic = partition.rsplit("-", 1)[0]
        return dict(self.min_insync_replicas).get(topic)


def scenario_from_yaml(text: str | None) -> Scenario | None:
    """The saved result's scenario, or None (logged) when there is none or it no longer validates (a result
    written by an older kafkasim): the figures and the report then go without fault windows."""
    if text is None:
        return None
    from kafkasim.scenario import ScenarioError, load_scenario

    try:
        return load_scenario(text)
    except ScenarioError as exc:
        logger.info("the result's scenario.yaml does not load (%s); faults are not marked", str(exc).splitlines()[0])
        return None


def fault_windows(scenario: Scenario | None) -> tuple[FaultWindow, ...]:
    if scenario is None:
        return ()
    return tuple(FaultWindow(f.type, f.target, float(f.at), None if f.end is None else float(f.end))
                 for f in scenario.faults)


def isr_changes(timeseries: pd.DataFrame | None) -> tuple[IsrChange, ...]:
    """Every change of a partition's sampled IsrSize, in time order."""
    if timeseries is None or timeseries.empty or not {"time_ms", "metric", "entity", "value"} <= set(timeseries):
        return ()
    isr = metric(timeseries, "IsrSize")
    changes: list[IsrChange] = []
    # groupby, not a filter per partition: a run may have a thousand partitions.
    by_partition: dict[str, pd.DataFrame] = {str(k): g for k, g in isr.groupby("entity", sort=False)}
    for partition in sorted(by_partition, key=natural_key):
        rows = by_partition[partition]
        values = rows["value"].to_numpy(float)
        times = rows["time_ms"].to_numpy(float)
        for i in np.flatnonzero(np.diff(values) != 0) + 1:
            changes.append(IsrChange(float(times[i]), partition, int(values[i - 1]), int(values[i])))
    return tuple(sorted(changes, key=lambda c: (c.time_ms, natural_key(c.partition))))


def host_stalls(stalls: pd.DataFrame | None) -> tuple[HostStalls, ...]:
    """The stalls table by host (hosts in natural order: broker-2 before broker-10), or () without one."""
    if stalls is None or stalls.empty:
        return ()
    hosts: dict[str, list[tuple[float, float]]] = {}
    for host, start, duration in zip(stalls["host"], stalls["start_ms"].to_numpy(float),
                                     stalls["duration_ms"].to_numpy(float), strict=True):
        hosts.setdefault(str(host), []).append((float(start), float(duration)))
    return tuple(HostStalls(h, tuple(sorted(hosts[h]))) for h in sorted(hosts, key=natural_key))


def loss_episodes(retransmissions: pd.DataFrame | None) -> tuple[LossEpisode, ...]:
    """The retransmissions table as loss episodes (one per connection, direction and lost head segment), in
    the order they began, or () without one."""
    if retransmissions is None or retransmissions.empty:
        return ()
    episodes: dict[tuple[str, float], list[tuple[float, str]]] = {}
    for t, client, broker, direction, since, outcome in zip(
            retransmissions["time_ms"].to_numpy(float), retransmissions["client"], retransmissions["broker"],
            retransmissions["direction"], retransmissions["lost_since_ms"].to_numpy(float),
            retransmissions["outcome"], strict=True):
        what = "requests" if direction == "to_broker" else "responses"
        peer = f"broker-{int(broker)}" if int(broker) >= 0 else "a broker"
        episodes.setdefault((f"{client} \u2192 {peer} ({what})", float(since)), []).append((float(t), str(outcome)))
    return tuple(LossEpisode(connection, since, tuple(t for t, _ in tries), tries[-1][1])
                 for (connection, since), tries in sorted(episodes.items(), key=lambda kv: (kv[0][1], kv[0][0])))


def run_events(timeseries: pd.DataFrame | None, scenario: Scenario | None,
               stalls: pd.DataFrame | None = None, retransmissions: pd.DataFrame | None = None) -> RunEvents:
    min_isr = () if scenario is None else tuple((t.name, int(t.min_insync_replicas)) for t in scenario.topics)
    return RunEvents(fault_windows(scenario), isr_changes(timeseries), min_isr, host_stalls(stalls),
                     loss_episodes(retransmissions))


def mark_events(ax: Axes, events: RunEvents, unit: TimeUnit, end_ms: float, *, label: bool = True) -> None:
    """Shade every fault window (hatched, named at its top) and draw each ISR change as a vertical line:
    red dashed for a shrink, green dotted for an expand. Labelled once for the legend when `label`."""
    labelled: set[str] = set()

    def once(name: str) -> str | None:
        if not label or name in labelled:
            return None
        labelled.add(name)
        return name

    for row, fault in enumerate(events.faults):
        start = fault.start_ms / unit.per_ms
        stop = (fault.end_ms if fault.end_ms is not None else max(end_ms, fault.start_ms)) / unit.per_ms
        ax.axvspan(start, stop, facecolor=FAULT_COLOUR, alpha=0.08, edgecolor=FAULT_COLOUR, hatch="//",
                   lw=0, zorder=0, label=once(FAULT_LABEL))
        ax.annotate(fault.text, (start, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2 - 9 * row),
                    textcoords="offset points", ha="left", va="top", fontsize="x-small", color=FAULT_COLOUR,
                    annotation_clip=True)
    for change in events.isr_changes:
        name = ISR_SHRINK_LABEL if change.shrink else ISR_EXPAND_LABEL
        ax.axvline(change.time_ms / unit.per_ms, color=ISR_SHRINK_COLOUR if change.shrink else ISR_EXPAND_COLOUR,
                   ls="--" if change.shrink else ":", lw=1.3, zorder=1, label=once(name))
