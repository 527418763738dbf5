"""A real run's leadership changes, phase by phase: summary.json ``failovers`` as a simulated run writes it.

A simulated run reads its controller's metadata log (``kafkasim.run.failovers``). A real cluster's log is
not at hand, but its nodes say what happened: each broker's state.change.logger logs the leadership it takes
(``LeaderStart``: the new leader applied the change), and the controller logs the fences, controlled
shutdowns and unclean or ELR elections that made a change (``ControllerEvents``). A leadership change is a
leader start whose epoch is above the partition's first; its old leader is the broker of the start before it;
its cause is the latest controller event on that partition or old leader since that start:

* the old leader fenced -> ``fenced`` (the election is in the fence's event: ``elected_ms`` = the fence);
* the old leader's controlled shutdown -> ``shutdown`` (``enterControlledShutdown`` moves its leaderships);
* an unclean election or one from the ELR of this partition to this leader -> ``unclean`` / ``from the ELR``;
* else ``election`` (a preferred-leader election or a broker unfenced: the controller logs neither at INFO),
  with ``elected_ms`` unknown: the new leader's apply stands in.

Every row also has ``applied_ms``: when the new leader took the leadership; a fenced old leader's row has
``last_heartbeat_ms``, its last BROKER_HEARTBEAT in the controller's request log before the fence. A
simulated run's rows carry the same fields, from its own brokers and controller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from kafkasim.real.server_log import ControllerEvents, LeaderStart
from kafkasim.run.failovers import acks_by_partition, failover_row
from kafkasim.scenario.faults import Fault


def real_failovers(starts: Sequence[LeaderStart], events: ControllerEvents, topic_names: Mapping[str, str],
                   faults: Sequence[Fault], records: pd.DataFrame, end_ms: float,
                   heartbeats: Mapping[int, Sequence[float]] | None = None) -> list[dict[str, Any]]:
    """The leadership changes of a real run (see the module's docstring), in time order. ``topic_names`` maps
    the controller's topic ids to names; changes after ``end_ms`` (the cluster's own stop) are left out."""
    acks = acks_by_partition(records)
    by_partition: dict[tuple[str, int], list[LeaderStart]] = {}
    for start in sorted(starts, key=lambda s: (s.epoch, s.at_ms)):
        runs = by_partition.setdefault((start.topic, start.partition), [])
        if not runs or start.epoch > runs[-1].epoch:  # a broker restarted as leader logs its epoch again
            runs.append(start)
    out: list[tuple[float, dict[str, Any]]] = []
    for (topic, partition), runs in by_partition.items():
        if topic.startswith("__"):
            continue  # Kafka's internal topics (and kafkasim.real's warm-up topic)
        for before, start in zip(runs, runs[1:], strict=False):
            if start.at_ms > end_ms:
                break
            kind, elected = _cause(events, topic_names, topic, partition, before, start)
            fenced_ms = elected if kind in ("fenced", "shutdown") else _last_fence(events, before.broker, before,
                                                                                  start)
            row = failover_row(topic, partition, before.broker, start.broker, kind, faults, fenced_ms,
                               elected if elected is not None else start.at_ms, acks, applied_ms=start.at_ms,
                               heartbeats=(heartbeats or {}).get(before.broker))
            out.append((start.at_ms, row))
    return [row for _, row in sorted(out, key=lambda item: item[0])]


def _cause(events: ControllerEvents, topic_names: Mapping[str, str], topic: str, partition: int,
           before: LeaderStart, start: LeaderStart) -> tuple[str, float | None]:
    """(kind, when the controller made the change) for the change from ``before`` to ``start``."""
    found: list[tuple[float, str]] = []
    for t, topic_id, p, leader in events.unclean:
        if topic_names.get(topic_id, topic_id) == topic and p == partition and leader == start.broker:
            found.append((t, "unclean"))
    for t, topic_id, p, leader in events.elr:
        if topic_names.get(topic_id, topic_id) == topic and p == partition and leader == start.broker:
            found.append((t, "from the ELR"))
    found += [(t, "fenced") for t, broker in events.fenced if broker == before.broker]
    found += [(t, "shutdown") for t, broker in events.shutdown if broker == before.broker]
    found = [(t, kind) for t, kind in found if before.at_ms <= t <= start.at_ms]
    if not found:
        return "election", None
    # An unclean or ELR election happens in the fence's own event: it names the change better than the fence.
    t, kind = max(found, key=lambda item: (item[0], item[1] in ("unclean", "from the ELR")))
    return kind, t


def _last_fence(events: ControllerEvents, broker: int, before: LeaderStart, start: LeaderStart) -> float | None:
    fences = [t for t, b in events.fenced if b == broker and before.at_ms <= t <= start.at_ms]
    return max(fences) if fences else None
