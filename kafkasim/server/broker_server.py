"""One broker (Kafka's ``BrokerServer``, a KRaft broker): everything a broker owns, built from its id and
its configuration.

* the request plane: ``SocketServer`` processors, the ``RequestChannel`` queues and the
  ``KafkaRequestHandler`` threads running ``KafkaApis``;
* its ``ReplicaManager`` (partitions it leads or follows, the Produce and Fetch purgatories) and its
  ``FetchManager`` (the incremental fetch sessions of the fetchers reading from it, KIP-227);
* one ``ExpirationReaper`` per purgatory, poked after every handled request;
* its periodic tasks: ``isr-expiration`` every ``replica.lag.time.max.ms / 2`` (first run when the process
  starts, Kafka's ``ReplicaManager.startup``: a broker of the run started before the workload did, so its
  runs fall at a phase of their own, ``set_started_ms``, drawn from the seed by the cluster; a restarted
  process runs it at its restart) and ``kafka-log-retention`` every
  ``log.retention.check.interval.ms`` (first run ``log.initial.task.delay.ms`` = 30 s after start,
  Kafka's ``LogManager.startup``); and, when the run models the disk, ``kafka-log-flusher``
  (``LogManager.flushDirtyLogs``) every ``log.flush.scheduler.interval.ms`` from that same first run;
* its ``Disk`` (kafkasim.broker.disk), when the run models flushes: every log it hosts flushes to it, and
  the handler or fetcher thread whose append flushed waits for it;
* its host's cores (``HostCpu``, kafkasim.sim.host_cpu), when the scenario sets ``cores``: the service times
  of its network threads, request handlers and fetcher threads' appends each wait for a free core; a
  pause starts nothing on them, a crash drops the work waiting for or on a core (the host outlives the
  process: a restarted process gets the same cores);
* its ``ReplicaFetcherManager`` and the replica fetcher threads it creates, copying the partitions the
  broker follows from their leaders (``make_follower``, as Kafka's ``ReplicaManager.makeFollowers``:
  ``Partition.makeFollower`` then ``addFetcherForPartitions``).

Nothing here assumes it is the only broker or that it leads every partition. A broker that leads no
partition when the run starts runs no expiration reaper and no isr-expiration task (its purgatories stay
empty and it has no ISR to shrink) until a metadata delta makes it leader (``apply_delta``).

``apply_delta(delta)`` is how leadership moves: the controller channel calls it when a committed metadata
delta reaches this broker (Kafka's ``ReplicaManager.applyDelta``, then the fetcher manager's changes).

Faults on the whole broker (``broker-<id>`` targets):

* ``pause()`` / ``resume()``: a stop-the-world pause (a long GC pause, SIGSTOP of the JVM), leaders
  included. Its network processors, request handlers, expiration reapers, isr-expiration and retention
  tasks share one ``Pausable`` (``stw``): work that falls in the pause waits for its end (requests in their
  sockets, responses in their queues, a read, send or service time in progress completes late, periodic
  tasks run late), and its replica fetcher threads pause. Other brokers keep running.
* ``scale_disk(factor)``: its appends cost ``factor`` times more: a produce's append in its request
  handlers, and its fetcher threads' appends of replicated data; and so do its disk's flushes.
* ``crash()`` / ``restart()``: the process dies (connections reset, memory lost, logs kept): its fetcher
  threads stop, and on restart fetch again from each log's end with its latest leader epoch (Kafka 4.x: a
  diverging epoch in the leader's answer truncates what the leader lacks).
* ``begin_controlled_shutdown()``: a controlled shutdown starts (``ReplicaManager.beginControlledShutdown``);
  the process stops with ``crash()`` once the controller has moved its leaderships away and agreed
  (``kafkasim.run.faults``).

``start`` is split in three so that the run can start every component's first events in a fixed
order (simulated ties are broken by scheduling order, and the golden runs pin it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from kafkasim.broker.config import LONG_MAX, KafkaConfig, LogConfig
from kafkasim.broker.disk import Disk
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch_session import (
    MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS,
    FetchManager,
    FetchSessionCache,
)
from kafkasim.broker.partition import Partition
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import AppliedDelta, ReplicaManager
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.network.socket_server import ProcessorCosts, SocketServer
from kafkasim.server.expiration_reaper import ExpirationReaper
from kafkasim.server.kafka_apis import KafkaApis
from kafkasim.server.kafka_request_handler import KafkaRequestHandlerPool, RequestHandlerCosts
from kafkasim.server.replica_fetcher_manager import InitialFetchState, ReplicaFetcherManager
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherThread
from kafkasim.sim.calls import Call, Pausable
from kafkasim.sim.cpu_meter import CpuMeter
from kafkasim.sim.host_cpu import HostCpu
from kafkasim.sim.machine_load import MachineLoad

if TYPE_CHECKING:
    import random

    from simpy import Environment

    from kafkasim.broker.alter_partition import AlterPartitionManager
    from kafkasim.broker.metadata import MetadataDelta
    from kafkasim.timer import Time

# The run's way of creating a fetcher thread for broker ``broker`` toward ``source_broker``
# (run/cluster.py's ReplicaFetcherFactory).
FetcherFactory = Callable[["BrokerServer", int, int], ReplicaFetcherThread]

# Kafka's LogManager.InitialTaskDelayMs (log.initial.task.delay.ms): the retention task's first run.
RETENTION_INITIAL_DELAY_MS: Final = 30_000.0


@dataclass(frozen=True, slots=True)
class BrokerServerConfig:
    """A broker's configuration: the state machines' (``KafkaConfig``) and the server's own."""

    broker: KafkaConfig
    num_network_threads: int = 3  # num.network.threads
    num_io_threads: int = 8  # num.io.threads
    queued_max_requests: int = 500  # queued.max.requests
    log_retention_check_interval_ms: float = 300_000.0  # log.retention.check.interval.ms
    num_replica_fetchers: int = 1  # num.replica.fetchers: fetcher threads per source broker
    # max.incremental.fetch.session.cache.slots: the fetch session cache's size (8 shards)
    max_incremental_fetch_session_cache_slots: int = MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS
    log_flush_scheduler_interval_ms: int = LONG_MAX  # log.flush.scheduler.interval.ms: the log flusher's period
    # Simulator-only: the host's cores shared by the network, request handler and fetcher threads (None: as
    # many as there are threads, no thread ever waits for one).
    cores: int | None = None


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
        fetch_session_rng: random.Random,
        alter_partition_manager: AlterPartitionManager,
        observer: Observer,
        fetcher_factory: FetcherFactory | None = None,
        disk: Disk | None = None,
        load: MachineLoad | None = None,
        acceptor_rng: random.Random | None = None,
        acceptor_fetcher: Callable[[str], bool] | None = None,
    ) -> None:
        self.env = env
        self.disk = disk
        # The machine's running threads when every broker of the run shares one (kafkasim.sim.machine_load).
        self.load = load
        self.broker_id = broker_id
        self.config = config
        self.name = f"broker-{broker_id}"
        # The broker's JVM: a stop-the-world pause defers the work of everything that shares it.
        self.stw = Pausable()
        # The host's cores (kafkasim.sim.host_cpu), when the scenario sets `cores`; they outlive a crash.
        self.cpu: HostCpu | None = HostCpu(env, config.cores) if config.cores is not None else None
        self.replica_manager = ReplicaManager(
            broker_id,
            config.broker,
            time,
            alter_partition_manager=alter_partition_manager,
            rng=log_rng,
            observer=observer,
        )
        self.replica_manager.disk = disk
        self._costs = costs
        self._observer = observer
        self._fetch_session_rng = fetch_session_rng
        # Each connection's network thread, drawn (the scenario's `connection_layout: random`); None: round robin.
        self._acceptor_rng = acceptor_rng
        # With it, whether a connection is a follower's fetcher (`connection_layout: groups`: the fetchers' and
        # the clients' connections each go round robin from a drawn thread).
        self._acceptor_fetcher = acceptor_fetcher
        self._incarnation = 0  # bumped by each restart: tasks scheduled by an earlier process do not run
        # When this process started (KafkaScheduler's periodic tasks count from there): the run's start
        # unless the cluster says the broker was started earlier (set_started_ms), a restart's instant after.
        self._started_ms = 0.0
        self._down = False
        self._fault_paused = 0  # pause faults in force (a crash does not end them)
        # Told of every request a processor of this broker puts, in every process it runs (count_requests).
        self._on_request: Callable[[], None] | None = None
        # Told of every fetch response this broker's replica fetchers receive (count_fetches).
        self._on_fetch: Callable[[], None] | None = None
        # The CPU its threads spend on modelled work, across its restarts (the summary's per_broker cores).
        self.cpu_meter = CpuMeter()
        self._build_request_plane()
        if load is not None:
            load.add(self.running_threads, self.appending_fetchers)
        factory = fetcher_factory

        def create_fetcher_thread(fetcher_id: int, source_broker: int) -> ReplicaFetcherThread:
            if factory is None:
                raise ValueError(f"broker {broker_id} cannot follow partitions: it was built without fetchers")
            thread = factory(self, fetcher_id, source_broker)
            # A thread created by a metadata delta during a slow_disk fault appends as slowly as the others.
            thread.disk_factor = self.handlers.disk_factor
            thread.disk = self.disk
            thread.cpu = self.cpu
            thread.cold = load.cold if load is not None else None
            thread.meter = self.cpu_meter
            thread.on_response = self._on_fetch
            return thread

        self.replica_fetcher_manager: ReplicaFetcherManager[ReplicaFetcherThread] = ReplicaFetcherManager(
            broker_id, config.num_replica_fetchers, create_fetcher_thread
        )
        # Whether the run has started this broker's fetchers and its purgatory tasks (start_fetchers,
        # start_purgatory_tasks): threads and tasks a metadata delta needs later start at once.
        self._fetchers_started = False
        self._purgatory_tasks_started = False

    def _build_request_plane(self, previous: tuple[KafkaRequestHandlerPool, SocketServer] | None = None) -> None:
        """What a broker process holds in memory besides its logs: the JVM (``stw``), the expiration reapers,
        the request channel, the socket server, the fetch sessions, ``KafkaApis`` and the request handlers.
        A restart builds them again; the old ones keep their dead ``stw``, so their work in flight is dropped."""
        config = self.config
        env = self.env
        observer = self._observer
        costs = self._costs
        rm = self.replica_manager
        cpu = self.cpu
        if cpu is not None:
            cpu.stw = self.stw  # a pause of this process starts no work on the cores
        self.reapers = (
            ExpirationReaper(env, rm.produce_purgatory, stw=self.stw),
            ExpirationReaper(env, rm.fetch_purgatory, stw=self.stw),
        )
        self.request_channel = RequestChannel(env, config.queued_max_requests)
        self.request_channel.on_request = self._on_request
        self.socket_server = SocketServer(
            env, self.request_channel, costs.processor, num_network_threads=config.num_network_threads,
            observer=observer, broker_id=self.broker_id, stw=self.stw, cpu=cpu, load=self.load,
            acceptor_rng=self._acceptor_rng, fetcher=self._acceptor_fetcher,
        )
        # Kafka's BrokerServer.startup: one FetchManager over a FetchSessionCache of 8 shards; session ids
        # come from the broker's own stream.
        self.fetch_manager = FetchManager(
            rm.time,
            FetchSessionCache.create(self._fetch_session_rng, config.max_incremental_fetch_session_cache_slots),
        )
        self.apis = KafkaApis(
            rm, config.broker, self.request_channel, fetch_manager=self.fetch_manager, observer=observer
        )
        self.handlers = KafkaRequestHandlerPool(
            env,
            self.request_channel,
            self.apis,
            costs.handler,
            num_io_threads=config.num_io_threads,
            observer=observer,
            reapers=self.reapers,
            stw=self.stw,
            load=self.load,
        )
        self.handlers.disk = self.disk
        self.handlers.cpu = cpu
        self.handlers.meter = self.cpu_meter
        for processor in self.socket_server.processors:
            processor.meter = self.cpu_meter
        if previous is not None:
            # The counters the gauges and the summary read go on across incarnations.
            old_handlers, old_processors = previous
            self.handlers.handler_busy_ms = old_handlers.handler_busy_ms
            self.handlers.requests_handled = old_handlers.requests_handled
            self.handlers.disk_factor = old_handlers.disk_factor
            for new, old in zip(self.socket_server.processors, old_processors.processors, strict=True):
                new.busy_ms = old.busy_ms

    # --- partitions --------------------------------------------------------------------------------

    def make_leader(self, tp: TopicPartition, replicas: Sequence[int], log_config: LogConfig) -> Partition:
        """Host ``tp`` and lead it with every replica in the ISR (leader epoch 0)."""
        rm = self.replica_manager
        rm.create_partition(tp, log_config=log_config)
        return rm.make_leader(tp, replicas=replicas, leader_epoch=0, partition_epoch=0)

    def make_follower(self, tp: TopicPartition, leader: int, replicas: Sequence[int], log_config: LogConfig) -> Partition:
        """Host ``tp`` as a follower of ``leader`` and fetch it (Kafka's ``ReplicaManager.makeFollowers``:
        ``Partition.makeFollower``, then ``ReplicaFetcherManager.addFetcherForPartitions``)."""
        rm = self.replica_manager
        rm.create_partition(tp, log_config=log_config)
        partition = rm.make_follower(tp, leader=leader, replicas=replicas, leader_epoch=0, partition_epoch=0)
        self.replica_fetcher_manager.add_fetcher_for_partitions({tp: InitialFetchState(leader, partition.leader_epoch)})
        return partition

    def apply_delta(
        self, delta: MetadataDelta, *, log_config_for: Callable[[TopicPartition], LogConfig] | None = None
    ) -> AppliedDelta | None:
        """A committed metadata delta reached this broker (``BrokerMetadataPublisher`` ->
        ``ReplicaManager.applyDelta``): the ReplicaManager makes leaders and followers, then the fetchers
        follow -- partitions leave their threads (``removeFetcherForPartitions``), restarted followers join
        the thread of their new leader (``addFetcherForPartitions``; a new thread starts at once), idle threads
        stop (``shutdownIdleFetcherThreads``). A broker that now leads a partition for the first time starts
        its expiration reapers and isr-expiration task. ``log_config_for`` gives the log config of a
        partition created by the delta.

        A broker in a stop-the-world pause applies it when the pause ends (its metadata publisher is
        stopped too): then it returns None, and the delta is applied, in order, at the resume."""
        if self.stw.paused:

            def apply_later() -> None:
                self._apply_delta_now(delta, log_config_for)

            self.stw.defer(apply_later)
            return None
        return self._apply_delta_now(delta, log_config_for)

    def _apply_delta_now(
        self, delta: MetadataDelta, log_config_for: Callable[[TopicPartition], LogConfig] | None
    ) -> AppliedDelta:
        result = self.replica_manager.apply_delta(delta, log_config_for=log_config_for)
        manager = self.replica_fetcher_manager
        if result.fetchers_to_remove:
            manager.remove_fetcher_for_partitions(result.fetchers_to_remove)
        if result.fetchers_to_add:
            manager.add_fetcher_for_partitions(
                {
                    tp: InitialFetchState(start.leader, start.leader_epoch, start.init_offset)
                    for tp, start in result.fetchers_to_add.items()
                }
            )
            if self._fetchers_started:
                # Kafka's addPartitions signals the thread; a thread created now starts.
                touched = {
                    id(t): t
                    for tp, start in result.fetchers_to_add.items()
                    if (t := manager.fetcher_for(tp, start.leader)) is not None
                }
                for thread in touched.values():
                    if thread.started:
                        thread.wake()
                    else:
                        thread.start()
        manager.shutdown_idle_fetcher_threads()
        if result.leaders and self._fetchers_started:
            self.start_purgatory_tasks()
        return result

    @property
    def fetchers(self) -> list[ReplicaFetcherThread]:
        """This broker's replica fetcher threads, in creation order."""
        return self.replica_fetcher_manager.threads

    @property
    def leads_partitions(self) -> bool:
        return any(p.is_leader for p in self.replica_manager.partitions.values())

    # --- start -------------------------------------------------------------------------------------

    def start_fetchers(self) -> None:
        self._fetchers_started = True
        for fetcher in self.fetchers:
            fetcher.start()

    def set_started_ms(self, started_ms: float) -> None:
        """The process started at ``started_ms`` (before the run: a negative instant)."""
        self._started_ms = started_ms

    def start_purgatory_tasks(self) -> None:
        """The expiration reapers, then the isr-expiration task: at its next run of the schedule that began
        when the process started (``ReplicaManager.startup``: ``scheduler.schedule("isr-expiration", ...,
        0L, replicaLagTimeMaxMs / 2)``). Simplification: a broker that leads nothing runs no task until a
        metadata delta makes it leader; Kafka's runs it from start on, finding nothing to shrink, on the same
        schedule."""
        if self._purgatory_tasks_started or not self.leads_partitions:
            return
        self._purgatory_tasks_started = True
        for reaper in self.reapers:
            reaper.start()
        period = float(self.config.broker.isr_expiration_interval_ms)
        since = self.env.now - self._started_ms
        delay = 0.0 if period <= 0 else (-since) % period
        Call(self.env, delay, partial(self._isr_expiration, self._incarnation))

    def start_log_retention(self) -> None:
        Call(self.env, RETENTION_INITIAL_DELAY_MS, partial(self._log_retention, self._incarnation))
        if self.disk is not None:
            # LogManager.startup: `scheduler.schedule("kafka-log-flusher", flushDirtyLogs, initialTaskDelayMs,
            # flushCheckMs)`, first run with the retention task's.
            Call(self.env, RETENTION_INITIAL_DELAY_MS, partial(self._log_flusher, self._incarnation))

    # --- tasks -------------------------------------------------------------------------------------

    def _isr_expiration(self, incarnation: int, _event: object) -> None:
        if incarnation != self._incarnation:
            return  # scheduled by a process that crashed
        if self.stw.paused:
            self.stw.defer(lambda: self._isr_expiration(incarnation, _event))
            return
        self.replica_manager.maybe_shrink_isr()
        period = self.config.broker.isr_expiration_interval_ms
        if period > 0:  # KafkaScheduler.schedule runs a task whose period is not > 0 once only
            Call(self.env, float(period), partial(self._isr_expiration, incarnation))

    def _log_retention(self, incarnation: int, _event: object) -> None:
        if incarnation != self._incarnation:
            return  # scheduled by a process that crashed
        if self.stw.paused:
            self.stw.defer(lambda: self._log_retention(incarnation, _event))
            return
        # LogManager.cleanupLogs over the logs this broker hosts: the partitions it leads, and those its
        # fetchers replicate. A paused fetcher (a stalled JVM) runs it when it resumes; a crashed one not.
        for partition in self.replica_manager.partitions.values():
            if partition.is_leader:
                partition.log.delete_old_segments()
        for fetcher in self.fetchers:
            if not fetcher.crashed:
                fetcher.run_or_defer(fetcher.delete_old_segments)
        Call(self.env, self.config.log_retention_check_interval_ms, partial(self._log_retention, incarnation))

    def _log_flusher(self, incarnation: int, _event: object) -> None:
        """Kafka's ``LogManager.flushDirtyLogs``: flush every log whose last flush is ``flush.ms`` old, one
        after the other on the scheduler's thread. Simplification: the next run is a period after this one
        began, even if its flushes took longer (KafkaScheduler runs at a fixed rate, late when a run
        overruns); a period of Long.MAX_VALUE (the default), or one not > 0, runs it once."""
        if incarnation != self._incarnation:
            return  # scheduled by a process that crashed
        if self.stw.paused:
            self.stw.defer(lambda: self._log_flusher(incarnation, _event))
            return
        disk = self.disk
        assert disk is not None  # started only with a disk
        now = self.replica_manager.time.milliseconds()
        disk.begin()
        for partition in self.replica_manager.partitions.values():
            log = partition.log
            if now - log.last_flush_time >= log.config.flush_ms:
                log.flush()
        disk.take_delay()  # the scheduler's thread waits for them; no other thread does
        period = self.config.log_flush_scheduler_interval_ms
        if 0 < period < LONG_MAX:  # KafkaScheduler runs a task whose period is not > 0 once only
            Call(self.env, float(period), partial(self._log_flusher, incarnation))

    # --- faults ------------------------------------------------------------------------------------

    def pause(self) -> None:
        """Stop the world (the fault schedule nests overlapping pauses: one pause() per resume())."""
        self._fault_paused += 1
        if self._down:
            return
        self.stw.pause()
        for fetcher in self.fetchers:
            if not fetcher.crashed:
                fetcher.pause()

    def resume(self) -> None:
        """The work deferred during the pause runs, in the order it fell due; then the fetchers resume."""
        self._fault_paused -= 1
        if self._down:
            return
        self.stw.resume()
        if self.cpu is not None:
            self.cpu.dispatch()  # the threads queued for a core before or during the pause
        for fetcher in self.fetchers:
            if fetcher.paused:
                fetcher.resume()

    def scale_disk(self, factor: float) -> None:
        """Multiply the cost of every append on this broker by ``factor`` (overlapping faults multiply)."""
        self.handlers.disk_factor *= factor
        for fetcher in self.fetchers:
            fetcher.disk_factor *= factor
        if self.disk is not None:
            self.disk.factor *= factor

    def begin_controlled_shutdown(self) -> None:
        """The start of Kafka's ``BrokerServer.shutdown`` with ``controlled.shutdown.enable``:
        ``ReplicaManager.beginControlledShutdown``; the run's fault schedule then has the broker's
        ``BrokerLifecycleManager.beginControlledShutdown`` ask the controller, and stops the process
        (``crash``) once the controller answers shouldShutDown. The process keeps serving meanwhile: produce
        requests for partitions it no longer leads get NOT_LEADER_OR_FOLLOWER."""
        if not self._down:
            self.replica_manager.begin_controlled_shutdown()

    def crash(self) -> None:
        """The broker process dies (``kill -9``; the host stays up). Everything it holds in memory is gone:
        the kernel resets its connections (clients see a disconnect: ``SocketServer.crash``), the requests
        it had read, queued, parked in a purgatory or was handling are never answered, its handlers,
        reapers and periodic tasks stop (``stw`` dies), its fetcher threads stop. Its logs stay on disk
        (the page cache survives a process crash). The controller fences it once its heartbeats stop
        (``NodeToControllerChannelManager.broker_crashed``)."""
        if self._down:
            return
        self._down = True
        self.stw.kill()
        if self.cpu is not None:
            self.cpu.crash()  # its threads' work waiting for a core, or on one, is gone with them
        self.socket_server.crash()
        for fetcher in self.fetchers:
            fetcher.crash()

    def count_requests(self, callback: Callable[[], None]) -> None:
        """``callback`` is told of every request this broker's processors put on its request channel, in this
        process and every restarted one (kafkasim.run.stalls: a broker's stalls every so many requests)."""
        self._on_request = callback
        self.request_channel.on_request = callback

    def count_fetches(self, callback: Callable[[], None]) -> None:
        """``callback`` is told of every fetch response this broker's replica fetchers receive (its threads now
        and any a metadata delta creates later; kafkasim.run.stalls: a follower's stalls every so many)."""
        self._on_fetch = callback
        for fetcher in self.fetchers:
            fetcher.on_response = callback

    def restart(self) -> None:
        """A new process over the same logs (``BrokerServer.startup``): new request plane and fetch sessions,
        the ReplicaManager's partitions forgotten until the metadata image it loads makes them leader or
        follower again (``ReplicaManager.restart``; ``NodeToControllerChannelManager.broker_restarted`` registers
        the broker, ``broker_logs_loaded`` delivers the image); its fetcher threads come back with its logs
        (``logs_loaded``). The run calls it once the new process has started
        (``kafkasim.run.faults``: ``broker.startup.process_start`` after the restart); it accepts connections
        from then on."""
        if not self._down:
            return
        self._down = False
        self._incarnation += 1
        self._started_ms = self.env.now
        previous = (self.handlers, self.socket_server)
        self.stw = Pausable()
        self.replica_manager.restart()
        self._build_request_plane(previous)
        self._purgatory_tasks_started = False
        if self._fault_paused > 0:
            self.stw.pause()  # a pause fault still in force when it comes back

    def logs_loaded(self) -> None:
        """The restarted process's first metadata publish ran ``LogManager.startup``: its logs are loaded, the
        retention task starts and its fetcher threads come back (Kafka adds the partitions to new fetchers as it
        makes them followers, ``ReplicaManager.applyDelta``, right after)."""
        if self._down:
            return
        for fetcher in self.fetchers:
            if self._fault_paused > 0:
                fetcher.pause()  # its threads are in the same stopped JVM: they start when it resumes
            fetcher.restart()
        if self._fetchers_started:
            self.start_log_retention()

    # --- requests answered outside the request plane ------------------------------------------------

    def handle_offset_for_leader_epoch(self, tp: TopicPartition, leader_epoch: int) -> int | None:
        """A consumer's OffsetsForLeaderEpoch request (``KafkaApis.handleOffsetForLeaderEpochRequest`` ->
        ``Partition.lastOffsetForLeaderEpoch``, leader only): the end offset of ``leader_epoch``, or None when
        this broker cannot answer (down, not hosting ``tp``, not its leader). Simplification: answered at
        once, without the request plane."""
        if self.crashed:
            return None
        partition = self.replica_manager.partitions.get(tp)
        if partition is None:
            return None
        answer = partition.last_offset_for_leader_epoch(-1, leader_epoch, True)
        if answer.error is not Errors.NONE:
            return None
        # UNDEFINED: the consumer resets per auto.offset.reset (earliest here).
        return answer.end_offset if answer.end_offset >= 0 else partition.log.log_start_offset

    # --- state -------------------------------------------------------------------------------------

    def running_threads(self) -> int:
        """This process's request handlers, network threads and replica fetcher threads running now (none while it
        is down or stopped): what it adds to the machine's running threads (MachineLoad)."""
        if self._down or self.stw.paused:
            return 0
        return self.handlers.running + self.socket_server.running_threads() + self.appending_fetchers()

    def appending_fetchers(self) -> int:
        """This process's replica fetcher threads appending now (none while it is down or stopped)."""
        if self._down or self.stw.paused:
            return 0
        appending = 0
        for fetcher in self.replica_fetcher_manager.fetcher_thread_map.values():
            if fetcher.running:
                appending += 1
        return appending

    @property
    def responsive(self) -> bool:
        """Up and not stopped by a pause fault: it can answer a request now."""
        return not self._down and self._fault_paused == 0

    @property
    def crashed(self) -> bool:
        return self._down

    @property
    def reaper_passes(self) -> int:
        return sum(r.passes for r in self.reapers)

    def counters(self) -> dict[str, int]:
        """This broker's counters (its ``ReplicaManager``'s metrics, its request handlers' and reapers'),
        what the run's summary sums over the brokers."""
        m = self.replica_manager.metrics
        return {
            "isr_shrinks": m.isr_shrinks,
            "isr_expands": m.isr_expands,
            "failed_isr_updates": m.failed_isr_updates,
            "produce_expires": m.produce_expires,
            "fetch_expires_follower": m.fetch_expires_follower,
            "fetch_expires_consumer": m.fetch_expires_consumer,
            "requests_handled": self.handlers.requests_handled,
            "reaper_passes": self.reaper_passes,
        }
