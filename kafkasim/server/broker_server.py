"""One broker (Kafka's ``BrokerServer``, a KRaft broker): everything a broker owns, built from its id and
its configuration.

* the request plane: ``SocketServer`` processors, the ``RequestChannel`` queues and the
  ``KafkaRequestHandler`` threads running ``KafkaApis``;
* its ``ReplicaManager`` (partitions it leads or follows, the Produce and Fetch purgatories);
* one ``ExpirationReaper`` per purgatory, poked after every handled request;
* its periodic tasks: ``isr-expiration`` every ``replica.lag.time.max.ms / 2`` (first run at start,
  Kafka's ``ReplicaManager.startup``) and ``kafka-log-retention`` every
  ``log.retention.check.interval.ms`` (first run ``log.initial.task.delay.ms`` = 30 s after start,
  Kafka's ``LogManager.startup``);
* the replica fetcher threads that run on it, copying the partitions it follows from their leaders.

Nothing here assumes it is the only broker or that it leads every partition. Simplification: a broker
that leads no partition when the run starts runs no expiration reaper and no isr-expiration task (its
purgatories stay empty and it has no ISR to shrink; leadership never moves in a run today).

``start`` is split in three so that the engine can start every component's first events in a fixed
order (simulated ties are broken by scheduling order, and the golden runs pin it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkasim.broker.config import BrokerConfig
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.network.socket_server import ProcessorCosts, SocketServer
from kafkasim.server.expiration_reaper import ExpirationReaper
from kafkasim.server.kafka_apis import KafkaApis
from kafkasim.server.kafka_request_handler import KafkaRequestHandlerPool, RequestHandlerCosts
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherThread
from kafkasim.sim.calls import Call

if TYPE_CHECKING:
    import random

    from simpy import Environment

    from kafkasim.broker.alter_partition import AlterPartitionManager
    from kafkasim.timer import Time

# Kafka's LogManager.InitialTaskDelayMs (log.initial.task.delay.ms): the retention task's first run.
RETENTION_INITIAL_DELAY_MS = 30_000.0


@dataclass(frozen=True, slots=True)
class BrokerServerConfig:
    """A broker's configuration: the state machines' (``BrokerConfig``) and the server's own."""

    broker: BrokerConfig
    num_network_threads: int = 3  # num.network.threads
    num_io_threads: int = 8  # num.io.threads
    queued_max_requests: int = 500  # queued.max.requests
    log_retention_check_interval_ms: float = 300_000.0  # log.retention.check.interval.ms


@dataclass(frozen=True, slots=True)
class BrokerServerCosts:
    """The service-time samplers of a broker's network threads and of its request handlers."""

    processor: ProcessorCosts
    handler: RequestHandlerCosts


class BrokerServer:
    """Broker ``broker_id``: request plane, ReplicaManager, reapers, periodic tasks, replica fetchers."""

    def __init__(
        self,
        env: Environment,
        time: Time,
        broker_id: int,
        config: BrokerServerConfig,
        costs: BrokerServerCosts,
        *,
        log_rng: random.Random,
        alter_partition_manager: AlterPartitionManager,
        observer: Observer,
        fetchers: Sequence[ReplicaFetcherThread] = (),
    ) -> None:
        self.env = env
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = ReplicaManager(
            broker_id,
            config.broker,
            time,
            alter_partition_manager=alter_partition_manager,
            rng=log_rng,
            observer=observer,
        )
        rm = self.replica_manager
        self.reapers = (ExpirationReaper(env, rm.produce_purgatory), ExpirationReaper(env, rm.fetch_purgatory))
        self.request_channel = RequestChannel(env, config.queued_max_requests)
        self.socket_server = SocketServer(
            env, self.request_channel, costs.processor, num_network_threads=config.num_network_threads,
            observer=observer, broker_id=broker_id,
        )
        self.apis = KafkaApis(rm, config.broker, self.request_channel, observer=observer)
        self.handlers = KafkaRequestHandlerPool(
            env,
            self.request_channel,
            self.apis,
            costs.handler,
            num_io_threads=config.num_io_threads,
            observer=observer,
            reapers=self.reapers,
        )
        self.fetchers = tuple(fetchers)

    # --- start -------------------------------------------------------------------------------------

    def start_fetchers(self) -> None:
        for fetcher in self.fetchers:
            fetcher.start()

    def start_purgatory_tasks(self) -> None:
        """The expiration reapers, then the isr-expiration task (first run now)."""
        if not self.replica_manager.partitions:
            return
        for reaper in self.reapers:
            reaper.start()
        Call(self.env, 0.0, self._isr_expiration)

    def start_log_retention(self) -> None:
        Call(self.env, RETENTION_INITIAL_DELAY_MS, self._log_retention)

    # --- tasks -------------------------------------------------------------------------------------

    def _isr_expiration(self, _event: Any) -> None:
        self.replica_manager.maybe_shrink_isr()
        period = self.config.broker.isr_expiration_interval_ms
        if period > 0:  # KafkaScheduler.schedule runs a task whose period is not > 0 once only
            Call(self.env, float(period), self._isr_expiration)

    def _log_retention(self, _event: Any) -> None:
        # LogManager.cleanupLogs over the logs this broker hosts: the partitions it leads, and those its
        # fetchers replicate. A paused fetcher (a stalled JVM) runs it when it resumes; a crashed one not.
        for partition in self.replica_manager.partitions.values():
            partition.log.delete_old_segments()
        for fetcher in self.fetchers:
            if not fetcher.crashed:
                fetcher.run_or_defer(fetcher.delete_old_segments)
        Call(self.env, self.config.log_retention_check_interval_ms, self._log_retention)

    # --- state -------------------------------------------------------------------------------------

    @property
    def crashed(self) -> bool:
        return any(f.crashed for f in self.fetchers)

    @property
    def reaper_passes(self) -> int:
        return sum(r.passes for r in self.reapers)
