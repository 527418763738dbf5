"""Read-only snapshots of a running engine, for live views (``kafkasim run --live``, notebooks).

    recent = RecentLatencies(window_ms=5_000)
    engine = Engine(scenario, progress=..., on_request=recent)
    ... inside the progress callback:  view.update(take_snapshot(engine, recent))

A snapshot reads the same state the gauge sampler reads (kafkasim/record/gauges.py) and changes nothing, so
taking snapshots never alters a run. Call it from the thread that runs the engine (the progress callback):
the engine is not thread-safe.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkasim.record.recorder import APIS

if TYPE_CHECKING:
    from kafkasim.network.messages import RequestEnvelope
    from kafkasim.run.engine import Engine


@dataclass(frozen=True)
class ReplicaSnapshot:
    """One replica of a partition: its own log end offset; for followers also the leader's view of it
    (what the HW is computed from, one fetch behind) and whether the follower is crashed or paused."""

    broker_id: int
    log_end_offset: int
    log_end_offset_at_leader: int | None
    in_isr: bool
    down: bool


@dataclass(frozen=True)
class PartitionSnapshot:
    """One partition as the controller's metadata names it (`leader` −1: none), with the leader's high
    watermark and view of its followers when the leader is up and has applied its leadership (else the
    replicas' own log ends only, and `high_watermark` the last one a replica knows)."""

    name: str
    leader: int
    high_watermark: int
    isr: tuple[int, ...]
    under_min_isr: bool
    replicas: tuple[ReplicaSnapshot, ...]  # the leader first


@dataclass(frozen=True)
class BrokerSnapshot:
    broker_id: int
    state: str  # "up", "crashed" (down until it restarts) or "paused" (a stalled JVM: alive, answers nothing)


@dataclass(frozen=True)
class PurgatorySnapshot:
    name: str
    watched: int  # Kafka's PurgatorySize: watch-list entries
    num_delayed: int  # NumDelayedOperations: operations in the timer


@dataclass(frozen=True)
class LatencySnapshot:
    """TotalTimeMs percentiles of one api over the requests that finished in the recent window."""

    api: str
    count: int
    p50: float | None
    p99: float | None
    max: float | None


@dataclass(frozen=True)
class EngineSnapshot:
    now_ms: float
    duration_ms: float
    wallclock: bool
    speed: float
    brokers: tuple[BrokerSnapshot, ...]
    partitions: tuple[PartitionSnapshot, ...]
    purgatories: tuple[PurgatorySnapshot, ...]
    request_queue_size: int
    response_queue_sizes: tuple[int, ...]
    latency_window_ms: float
    latencies: tuple[LatencySnapshot, ...]


class RecentLatencies:
    """An ``on_request`` hook for ``Engine``: keeps the TotalTimeMs of requests that finished in the last
    ``window_ms`` of simulated time, per api."""

    def __init__(self, window_ms: float = 5_000.0) -> None:
        if not (math.isfinite(window_ms) and window_ms > 0):
            raise ValueError(f"the latency window must be a finite number of ms > 0, got {window_ms!r}")
        self.window_ms = float(window_ms)
        self._by_api: dict[str, deque[tuple[float, float]]] = {api: deque() for api in APIS}

    def __call__(self, envelope: RequestEnvelope) -> None:
        # TotalTimeMs as Kafka's RequestMetrics has it: broker arrival to response sent (NaN if never sent).
        total = envelope.end_ms - envelope.start_ms
        if total == total:  # not NaN
            self._by_api.setdefault(envelope.api, deque()).append((envelope.end_ms, max(0.0, total)))

    def latencies(self, now_ms: float) -> tuple[LatencySnapshot, ...]:
        from kafkasim.record.summary import percentiles  # pandas/hdrhistogram only when a view asks

        out = []
        horizon = now_ms - self.window_ms
        for api, rows in self._by_api.items():
            while rows and rows[0][0] < horizon:
                rows.popleft()
            stats: dict[str, Any] = percentiles([total for _, total in rows])
            out.append(LatencySnapshot(api, int(stats["count"]), stats["p50"], stats["p99"], stats["max"]))
        return tuple(out)


def take_snapshot(engine: Engine, recent: RecentLatencies | None = None) -> EngineSnapshot:
    """The engine's state now: per partition HW, every replica's LEO and the ISR, purgatory sizes, the
    request and response queues, and (with ``recent``) the recent latency percentiles."""
    c = engine.components
    brokers = {b.broker_id: b for b in c.brokers}
    # A stop-the-world pause stops the broker's fetchers too; a crash stops everything until a restart.
    states = {b.broker_id: "crashed" if b.crashed else ("up" if b.responsive and not any(f.paused for f in b.fetchers)
                                                          else "paused") for b in c.brokers}
    replication = c.controller.core.replication_control
    partitions = []
    # One row per partition, as the controller's metadata has it: a deposed leader that has not applied the
    # change yet (or a crashed one, frozen) still calls itself leader, and is not asked.
    for tp, registration in replication.partitions().items():
        leader = registration.leader
        hosting = brokers.get(leader)
        at_leader = hosting.replica_manager.partitions.get(tp) if hosting is not None else None
        led = at_leader if at_leader is not None and at_leader.is_leader and states[leader] != "crashed" else None
        views = {r.broker_id: r.log_end_offset for r in led.remote_replicas} if led is not None else {}
        order = sorted(registration.replicas, key=lambda k: k != leader)
        replicas = []
        high_watermark = -1
        for k in order:
            hosted = brokers[k].replica_manager.partitions.get(tp) if k in brokers else None
            own = hosted.log_end_offset if hosted is not None else -1
            if hosted is not None:
                high_watermark = max(high_watermark, hosted.high_watermark)
            replicas.append(ReplicaSnapshot(k, own, views.get(k), k in registration.isr, states.get(k) != "up"))
        if led is not None:
            high_watermark = led.high_watermark
        min_isr = replication.effective_min_isr(tp.topic)
        partitions.append(PartitionSnapshot(str(tp), leader, high_watermark, tuple(sorted(registration.isr)),
                                            len(registration.isr) < min_isr, tuple(replicas)))
    # The purgatories and queues of the brokers that lead partitions (named by broker when there are several).
    leaders = {p.leader for p in partitions}
    leading = [b for b in c.brokers if b.broker_id in leaders and states[b.broker_id] != "crashed"]
    several = len(leading) > 1
    purgatories = tuple(
        PurgatorySnapshot(f"broker-{b.broker_id}/{p.name}" if several else p.name, p.watched, p.num_delayed)
        for b in leading
        for p in (b.replica_manager.produce_purgatory, b.replica_manager.fetch_purgatory)
    )
    now = engine.env.now
    return EngineSnapshot(
        now_ms=now,
        duration_ms=float(engine.scenario.duration),
        wallclock=engine.clock.is_wallclock,
        speed=engine.clock.speed,
        brokers=tuple(BrokerSnapshot(k, states[k]) for k in sorted(states)),
        partitions=tuple(partitions),
        purgatories=purgatories,
        request_queue_size=sum(b.request_channel.request_queue_size for b in leading),
        response_queue_sizes=tuple(n for b in leading for n in b.request_channel.response_queue_sizes()),
        latency_window_ms=recent.window_ms if recent is not None else 0.0,
        latencies=recent.latencies(now) if recent is not None else (),
    )
