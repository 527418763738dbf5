"""Who led a partition when, and when a replica's broker was down, from the sampled gauges.

Leadership is the partition's `LeaderId` gauge (−1: no leader, as Kafka's metadata reports it). A broker
that is down reports nothing (a crashed JVM's JMX does not answer), so a replica is *down* where its
`LogEndOffset` samples, taken every sample_interval (or a whole multiple of it: many partitions are sampled
in turns), stop for more than `GAP_FACTOR` of its usual steps; a pause fault on its broker
(a stalled JVM, whose frozen state the simulator keeps sampling) counts as down too. The figures draw a
down replica as such instead of carrying its frozen value forward as if it were live.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kafkasim.report.run_events import FaultWindow

NO_LEADER = -1
REPLICA_SEPARATOR = "/replica-"  # a replica's entity: "<partition>/replica-<broker id>"
GAP_FACTOR = 3.0
"""A sampled replica is down where two of its samples are more than this many usual steps apart."""


@dataclass(frozen=True)
class Span:
    """[start_ms, end_ms): who led (`broker`, −1 for nobody), or a window a replica was down."""

    broker: int
    start_ms: float
    end_ms: float


def replica_broker(entity: str) -> int | None:
    """The broker id of a "<partition>/replica-<id>" entity (None for anything else)."""
    _, _, tail = entity.rpartition(REPLICA_SEPARATOR)
    return int(tail) if tail.isdigit() else None


def leader_spans(leader_ids: pd.DataFrame, end_ms: float) -> list[Span]:
    """One partition's leadership over time from its `LeaderId` rows (time_ms, value), in time order.

    Two brokers can report the partition at one sample: a deposed leader that has not yet applied the
    change still reports itself (Kafka's `ReplicaManager.applyDelta` runs on each broker in its own time).
    The one that differs from the leader so far is the news, so it wins."""
    spans: list[Span] = []
    current: int | None = None
    start = 0.0
    for at, values in leader_ids.groupby("time_ms", sort=True)["value"]:
        time_ms = float(at)  # type: ignore[arg-type]
        seen = {int(v) for v in values}
        news = seen - {current}
        new = max(news) if news else current  # a real leader before −1 (the controller's "none")
        if new != current:
            if current is not None:
                spans.append(Span(current, start, time_ms))
            current, start = new, time_ms
    if current is not None:
        spans.append(Span(current, start, max(end_ms, start)))
    return spans


def down_spans(times_ms: np.ndarray, sample_interval_ms: float | None, broker: int | None,
               faults: tuple[FaultWindow, ...], end_ms: float) -> list[Span]:
    """Where one replica's samples (`times_ms`, sorted) show its broker down: gaps of more than `GAP_FACTOR`
    usual steps (from its last sample before to its first after, or `end_ms` when it never came back) --
    only for a gauge sampled at `sample_interval_ms` (None, or a series written at each change rather than
    sampled: no gaps are read) -- and its broker's pause faults, merged."""
    windows: list[tuple[float, float]] = []
    if sample_interval_ms is not None and times_ms.size >= 3:
        steps = np.diff(times_ms)
        usual = float(np.median(steps))
        if usual >= 0.9 * sample_interval_ms:
            for k in np.flatnonzero(steps > GAP_FACTOR * usual):
                windows.append((float(times_ms[k]), float(times_ms[k + 1])))
            if end_ms - float(times_ms[-1]) > GAP_FACTOR * usual:
                windows.append((float(times_ms[-1]), end_ms))
    if broker is not None:
        for fault in faults:
            if fault.kind == "pause" and fault.target == f"broker-{broker}":
                windows.append((fault.start_ms, end_ms if fault.end_ms is None else fault.end_ms))
    merged: list[Span] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1].end_ms:
            last = merged.pop()
            merged.append(Span(last.broker, last.start_ms, max(last.end_ms, end)))
        else:
            merged.append(Span(broker if broker is not None else NO_LEADER, start, end))
    return merged

