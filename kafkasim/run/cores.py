"""The cores each simulated broker's threads used after the warm-up, from its CPU meter
(kafkasim.sim.cpu_meter): the summary's ``per_broker`` ``cores``, which a real run fills from its JVMs' threads
(kafkasim.real.process_cpu)."""

from __future__ import annotations

from collections.abc import Sequence

from kafkasim.record.summary import (
    CORES_DATA_PLANE,
    CORES_NETWORK_THREADS,
    CORES_REPLICA_FETCHERS,
    CORES_REQUEST_HANDLERS,
)
from kafkasim.server.broker_server import BrokerServer


class WarmupCores:
    """Each broker's meter read when the warm-up ends (``at_warmup``), and the cores used since (``cores``)."""

    def __init__(self) -> None:
        self._at: dict[int, tuple[float, float, float]] | None = None
        self._at_ms = 0.0

    def at_warmup(self, brokers: Sequence[BrokerServer], now: float) -> None:
        self._at = {b.broker_id: b.cpu_meter.totals() for b in brokers}
        self._at_ms = now

    def cores(self, brokers: Sequence[BrokerServer], end: float) -> dict[str, dict[str, float]] | None:
        """``{"broker-<id>": {"request handlers", "network threads", "data plane", "replica fetchers"}}``: each
        kind's modelled CPU after the warm-up over the time since (a broker added later counts from zero).
        None for a run that ended before its warm-up did."""
        at = self._at
        span = end - self._at_ms
        if at is None or span <= 0:
            return None
        out: dict[str, dict[str, float]] = {}
        for broker in sorted(brokers, key=lambda b: b.broker_id):
            then = at.get(broker.broker_id, (0.0, 0.0, 0.0))
            handlers, network, fetchers = (now - before for now, before in zip(broker.cpu_meter.totals(), then,
                                                                                strict=True))
            out[f"broker-{broker.broker_id}"] = {
                CORES_REQUEST_HANDLERS: round(handlers / span, 4),
                CORES_NETWORK_THREADS: round(network / span, 4),
                CORES_DATA_PLANE: round((handlers + network) / span, 4),
                CORES_REPLICA_FETCHERS: round(fetchers / span, 4),
            }
        return out
