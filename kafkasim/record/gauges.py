"""The gauges an operator watches, sampled every ``sample_interval`` into the ``timeseries`` table.

Names are Kafka's metric names where Kafka has one (tidy rows: time_ms, metric, entity, value):

* ``HighWatermark`` / ``IsrSize`` per partition (entity ``orders-0``); ``UnderMinIsr`` (0/1).
* ``LogEndOffset`` per replica (entity ``orders-0/replica-<broker id>``; replica-0 is the leader): each
  broker's own LEO. ``ReplicaLogEndOffsetAtLeader``: the leader's view of each follower's LEO (what the
  HW is computed from; it lags the follower's own LEO by up to one fetch).
* ``PurgatorySize`` (watch-list entries) and ``NumDelayedOperations`` (ops in the timer) per purgatory
  (entity ``Produce`` / ``Fetch``).
* ``RequestQueueSize`` (entity ``broker``; includes requests of processors blocked on a full queue),
  ``ResponseQueueSize`` per processor (entity ``processor-<i>``).
* ``RequestHandlerAvgIdlePercent`` and ``NetworkProcessorAvgIdlePercent`` (entity ``broker``): the idle
  fraction (0..1) over the last interval, from the service time started in it. (Kafka's meter is the same
  ratio; a service that straddles two intervals is counted in the one where it started.)
* ``InFlightRequests`` per producer (entity = producer name).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkasim.clients.producer import Producer
    from kafkasim.server.broker_server import BrokerServer
    from kafkasim.server.replica_fetcher_thread import ReplicaFetcherThread


class GaugeSampler:
    """Reads the broker, its request plane and clients and writes one row per gauge to ``sink(t, metric, entity, v)``."""

    def __init__(
        self,
        replica_manager: Any,
        broker: BrokerServer,
        followers: Sequence[ReplicaFetcherThread],
        producers: Sequence[Producer],
        sink: Any,
    ) -> None:
        self.replica_manager = replica_manager
        self.broker = broker
        self.followers = list(followers)
        self.producers = list(producers)
        self._sink = sink
        self._last_t: float | None = None
        self._last_handler_busy = 0.0
        self._last_processor_busy = 0.0
        self._partition_names = {tp: str(tp) for tp in replica_manager.partitions}

    def sample(self, t: float) -> None:
        sink = self._sink
        rm = self.replica_manager
        for tp, partition in rm.partitions.items():
            if not partition.is_leader:
                continue  # a replica this broker follows: its LEO comes with its fetcher's partitions below
            name = self._partition_names.get(tp) or str(tp)
            sink(t, "HighWatermark", name, float(partition.high_watermark))
            sink(t, "IsrSize", name, float(len(partition.isr)))
            sink(t, "UnderMinIsr", name, 1.0 if partition.is_under_min_isr else 0.0)
            sink(t, "LogEndOffset", f"{name}/replica-{rm.broker_id}", float(partition.log_end_offset))
            for replica in partition.remote_replicas:
                sink(t, "ReplicaLogEndOffsetAtLeader", f"{name}/replica-{replica.broker_id}",
                     float(replica.log_end_offset))
        for follower in self.followers:
            for tp, fp in follower.partitions.items():
                name = self._partition_names.get(tp) or str(tp)
                sink(t, "LogEndOffset", f"{name}/replica-{follower.broker_id}", float(fp.log.log_end_offset))
        for purgatory in (rm.produce_purgatory, rm.fetch_purgatory):
            sink(t, "PurgatorySize", purgatory.name, float(purgatory.watched))
            sink(t, "NumDelayedOperations", purgatory.name, float(purgatory.num_delayed))
        channel = self.broker.request_channel
        handlers = self.broker.handlers
        processors = self.broker.socket_server.processors
        sink(t, "RequestQueueSize", "broker", float(channel.request_queue_size))
        for i, size in enumerate(channel.response_queue_sizes()):
            sink(t, "ResponseQueueSize", f"processor-{i}", float(size))
        handler_busy = handlers.handler_busy_ms
        processor_busy = sum(p.busy_ms for p in processors)
        if self._last_t is not None and t > self._last_t:
            span = t - self._last_t
            handler_idle = 1.0 - (handler_busy - self._last_handler_busy) / (span * handlers.num_io_threads)
            processor_idle = 1.0 - (processor_busy - self._last_processor_busy) / (span * len(processors))
            sink(t, "RequestHandlerAvgIdlePercent", "broker", min(1.0, max(0.0, handler_idle)))
            sink(t, "NetworkProcessorAvgIdlePercent", "broker", min(1.0, max(0.0, processor_idle)))
        self._last_t = t
        self._last_handler_busy = handler_busy
        self._last_processor_busy = processor_busy
        for producer in self.producers:
            sink(t, "InFlightRequests", producer.name, float(producer.in_flight))
