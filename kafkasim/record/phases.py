"""A run with faults cut into phases: before, during and after each fault, so an operator reads each phase's
latency and errors instead of the whole run's (whose p99 describes none of them).

The cuts are each fault's start and end and the instants the KRaft controller fenced a broker while a fault
was on (``ReplicationControlManager.handleBrokerFenced``: the fence and the election of new leaders for the
partitions the broker led are one metadata change). A crashed broker's partitions have no reachable leader
until then; acks=all produce to partitions whose ISR still names it waits in the purgatory until the fence
shrinks the ISR. So "crash broker-2, until fenced" is the failover, and "crash broker-2, broker-2 fenced" the
cluster running without it.

A phase is named by the faults active in it (``crash broker-2``; several joined by " + "), with the brokers
fenced since they began; a time with no fault on is "before" (the first fault), "after" (the last fault) or
"between faults". Phases start at the end of the warm-up; a batch belongs to the phase its first record was
meant to be sent in, a request to the phase it was sent in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FaultSpan:
    """One fault of the scenario: ``end_ms`` None means it lasts to the end of the run."""

    label: str
    start_ms: float
    end_ms: float | None


@dataclass(frozen=True)
class Phase:
    name: str
    from_ms: float
    to_ms: float


def fault_spans(faults: Iterable[Any], unfenced: Sequence[tuple[float, int]] = ()) -> list[FaultSpan]:
    """The spans of a scenario's faults (``kafkasim.scenario.faults``): "<type> <target>" from ``at`` to
    ``end``; a crash or shutdown that restarts its broker adds "restart <target>" from the restart until the
    controller unfenced the broker again (``unfenced``: the controller's (time, broker) unfences; none seen:
    to the end of the run): the new process starting, loading its logs and catching up."""
    spans = []
    for fault in faults:
        end = None if fault.end is None else float(fault.end)
        spans.append(FaultSpan(f"{fault.type} {fault.target}", float(fault.at), end))
        broker = broker_of_target(str(fault.target))
        if end is not None and getattr(fault, "restart_after", None) is not None and broker is not None:
            back = [t for t, b in unfenced if b == broker and t >= end]
            spans.append(FaultSpan(f"restart {fault.target}", end, min(back) if back else None))
    return spans


def broker_of_target(target: str) -> int | None:
    """The broker a fault's target runs on: ``broker-<k>``, or ``follower-<k>`` (broker k's fetcher)."""
    kind, _, number = target.partition("-")
    return int(number) if kind in ("broker", "follower") and number.isdigit() else None


def cut_phases(spans: Sequence[FaultSpan], fences: Sequence[tuple[float, int]], start_ms: float,
               end_ms: float) -> list[Phase]:
    """The phases of a run from ``start_ms`` (the end of the warm-up) to ``end_ms``; ``fences`` are the
    controller's (time, broker) fences. No faults: no phases (the whole run is one)."""
    if not spans or end_ms <= start_ms:
        return []
    first_start = min(s.start_ms for s in spans)
    last_end = math.inf if any(s.end_ms is None for s in spans) else max(s.end_ms or 0.0 for s in spans)
    cuts = {start_ms, end_ms}
    for span in spans:
        cuts.add(span.start_ms)
        if span.end_ms is not None:
            cuts.add(span.end_ms)
    for at, _ in fences:
        if any(_active(s, at) for s in spans):
            cuts.add(at)
    edges = sorted(c for c in cuts if start_ms <= c <= end_ms)
    phases: list[Phase] = []
    for a, b in zip(edges, edges[1:], strict=False):
        if b <= a:
            continue
        name = _name(spans, fences, a, first_start, last_end)
        if phases and phases[-1].name == name:
            phases[-1] = Phase(name, phases[-1].from_ms, b)
        else:
            phases.append(Phase(name, a, b))
    return phases


def _active(span: FaultSpan, at: float) -> bool:
    return span.start_ms <= at and (span.end_ms is None or at < span.end_ms)


def _name(spans: Sequence[FaultSpan], fences: Sequence[tuple[float, int]], at: float, first_start: float,
          last_end: float) -> str:
    active = [s for s in spans if _active(s, at)]
    if not active:
        if at < first_start:
            return "before"
        return "after" if at >= last_end else "between faults"
    since = min(s.start_ms for s in active)
    fenced = sorted({broker for t, broker in fences if since <= t <= at})
    label = " + ".join(s.label for s in active)
    if fenced:
        label += ", " + ", ".join(f"broker-{b}" for b in fenced) + " fenced"
    elif any(t > at for t, _ in fences if any(_active(s, t) for s in active)):
        label += ", until fenced"
    return label
