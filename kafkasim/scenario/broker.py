"""Kafka's broker configs (ServerConfigs, ReplicationConfigs, LogConfig defaults) and the simulator's handler costs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.disk import DiskConfig
from kafkasim.scenario.distributions import DurationDistribution, constant_ms
from kafkasim.scenario.errors import fail_at
from kafkasim.scenario.stalls import Stalls
from kafkasim.scenario.units import KafkaBytes, KafkaMs

INT32_MAX = 2**31 - 1  # Kafka's INT configs; larger values fail Kafka's own parsing
LONG_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: Kafka's "never" for the flush configs
MAX_REPLICATION_FACTOR = 32  # one leader and up to 31 simulated followers: plenty for teaching
# Kafka reads every partition of a fetch's session on every fetch (IncrementalFetchContext); the simulator
# reads the changed ones with the same answers, so a request costs ~1.4x one partition's at 1,000 partitions
# and ~4x at 10,000 (benchmarks/README.md, "Partitions"), where each full fetch and the start-up still walk
# them all. Kafka's own guidance is a few thousand partitions per broker.
MAX_PARTITIONS = 10_000
# Kafka does not bound num.replica.fetchers; each thread is a fetch request in flight per source broker.
MAX_REPLICA_FETCHERS = 64
# Each broker of a `cluster:` is a whole node (threads, purgatories, one replica fetcher per source broker and
# fetcher id: up to N*(N-1) fetcher threads), sampled every sample_interval. The clusters published
# measurements use have 3 to 12 brokers; 64 leaves room for "what does a bigger cluster change" without
# runs that never end.
MAX_BROKERS = 64
# A broker host's cores (`cores`): far more than any Kafka host has.
MAX_CORES = 1024


class HandlerCosts(ScenarioModel):
    """CPU time the broker spends on a request (simulator-only; Kafka has no such config).

    Handler costs occupy one of the `num.io.threads` request handler threads; network costs occupy the
    connection's processor (one of `num.network.threads`). A per-KiB cost is drawn once per request and
    multiplied by the request's (or response's) size in KiB.
    """

    request: DurationDistribution = Field(default_factory=lambda: constant_ms(0.05))
    """Fixed handler-thread cost of every request (parsing, bookkeeping, building the response)."""
    append_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.005))
    """Handler-thread cost of appending produce data to the leader's log, per KiB."""
    read_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.002))
    """Handler-thread cost of reading fetch data from the log, per KiB."""
    segment_read: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Handler-thread cost of each partition a fetch's answer holds records of, beyond their bytes
    (`read_per_kib`): Kafka's LocalLog.read finds the fetch offset in the segment (LogSegment.read ->
    translateOffset: the offset index, then FileRecords.searchForOffsetWithSize reading batch headers from the
    file) and slices it; a fetch at the log's end returns before any of that (LocalLog.read: `startOffset ==
    maxOffsetMetadata.messageOffset`). 0 by default; on a real broker (Kafka 4.3.1, 2 shared cores) a consumer
    fetch answered with one 1 KiB batch had a LocalTimeMs p50 of 0.08-0.10 ms against 0.05-0.06 ms for one that
    found nothing and parked (`kafkasim calibrate` fits it)."""
    per_partition: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Handler-thread cost per partition of a produce request, and per partition a fetch reads (an
    incremental fetch reads every partition of its session: Kafka's IncrementalFetchContext.foreachPartition,
    with ReplicaManager.readFromLog and, for a follower, Partition.updateFollowerFetchState for each). 0 by
    default: kafkasim has no measurement to calibrate it, and a non-zero default would change every
    result; set it to see why more partitions cost latency (scenarios/more_partitions_same_bytes.yaml)."""
    append: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Handler-thread cost of each partition a produce appends to, beyond its bytes (`append_per_kib`):
    Kafka's Partition.appendRecordsToLeader and UnifiedLog.append (LogValidator assigning offsets, the
    segment's write, the offset and time indexes, the producer state). 0 by default (a fresh default would
    change every result); measured on a real broker (`kafkasim calibrate`), a produce's LocalTimeMs is about
    twice a consumer fetch's even for one small record."""
    follower_fetch: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Handler-thread cost of each partition a follower's fetch names, beyond what a consumer's costs:
    Kafka's Partition.updateFollowerFetchState moving the follower's log end offset (maybeExpandIsr,
    maybeIncrementLeaderHW). An incremental fetch names the partitions whose fetch offset moved; its session's
    idle partitions cost only their read (`per_partition`). 0 by default; on a real broker a FetchFollower's
    LocalTimeMs is about twice a FetchConsumer's, and grew by a fifth from one partition to six (Kafka
    4.3.1; `kafkasim calibrate` fits it)."""
    complete_fetch: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Handler-thread cost of each parked fetch a request completes, beyond its read (`read_per_kib`,
    `per_partition`): Kafka's DelayedFetch.onComplete and the response callback of KafkaApis, run on the thread
    of the request that completed it -- a produce's ReplicaManager.tryCompleteActions wakes its followers'
    and consumers' fetches, a follower fetch's high-watermark advance its consumers'. A parked acks=all produce
    that a follower fetch completes costs that fetch's handler the same (DelayedProduce.onComplete runs the
    produce's response callback there; one cost for both kinds, which acks=1 runs cannot tell apart). The handler answers
    them one after another before it takes its next request, and an acks=all produce's LocalTimeMs includes
    them. 0 by default. On a real broker of 2 shared cores (Kafka 4.3.1) the first parked follower was
    answered about 0.3 ms after an acks=1 produce's response and the second about 0.1 ms after the first: the
    first waits for a core as well, which no cost here represents. `kafkasim calibrate` fits it to what a
    completion adds to a follower fetch's LocalTimeMs (docs/calibration.md)."""
    network_read: DurationDistribution = Field(default_factory=lambda: constant_ms(0.01))
    """Processor-thread cost of reading one request off the socket."""
    network_read_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.001))
    """Processor-thread cost per KiB of request read."""
    network_send: DurationDistribution = Field(default_factory=lambda: constant_ms(0.01))
    """Processor-thread cost of writing one response to the socket."""
    network_send_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.001))
    """Processor-thread cost per KiB of response sent."""
    network_complete: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Processor-thread work once a response is written (or, for acks=0, none is: Processor.processNewResponses does
    the same for a NoOpResponse), before the thread unmutes the connection and goes on
    (Kafka's Processor.processCompletedSends: RequestChannel's updateRequestMetrics, which with
    kafka.request.logger at DEBUG builds and writes the request log's line, then tryUnmuteChannel). The
    request's ResponseSendTimeMs and TotalTimeMs end before it; the next request of the same connection is read
    after it, and responses queued for the thread meanwhile wait. 0 by default. On the project's machine, whose
    real brokers log every request (kafkasim run --on-kafka), a produce read right after the previous one's
    response on the same connection started 0.07-0.2 ms after it (never under 0.05 ms), where the read alone
    takes `network_read`; `kafkasim calibrate` fits it (docs/calibration.md)."""
    wakeup: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """How long a thread that was waiting takes to run once there is work for it: the host's scheduling
    latency. A request handler waiting in RequestChannel.receiveRequest that a put signals, and a network thread
    waiting in Selector.poll that is woken for a response or a request, each wait for it (the handler its
    `handler_wakeup` when set) before they run: the first then takes the oldest request, unless a handler that
    asked before it has (Kafka's request queue is one ArrayBlockingQueue), and its wait is the request's
    RequestQueueTimeMs when handlers are idle; the second's is the response's ResponseQueueTimeMs when the
    network thread is. 0 by default (a host with idle cores: at once); on a host whose cores are shared by busy
    processes (several JVMs on a few cores) it is tenths of a ms and more (`kafkasim calibrate` fits it). Each
    thread's wait is a fresh draw; a negative draw is 0."""
    handler_wakeup: DurationDistribution | None = None
    """A request handler's own wait once a put signals it, in place of `wakeup` (which the network threads keep);
    unset: `wakeup`. Kafka's RequestQueueTimeMs runs from `startTimeNanos`, stamped by the network thread before
    it builds the request (Processor.processCompletedReceives: the body parsed and, with kafka.request.logger at
    DEBUG, its JSON built in RequestChannel.Request's constructor), to the handler's return from
    ArrayBlockingQueue.poll: kafkasim draws all of it as the handler's wait. On the project's machine a request's
    RequestQueueTimeMs p99 was 0.83-0.97 times its ResponseQueueTimeMs p99 (Produce, FetchFollower,
    FetchConsumer; medians of five runs), although a response also waits for the network thread's work on other
    connections; with one `wakeup` for both, a fitted run's was 0.42-0.68 times (docs/calibration.md)."""


class BrokerStartup(ScenarioModel):
    """How long a restarted broker takes to serve again (simulator-only; a real broker takes its own time).

    Measured on the project's machine (Kafka 4.3.1, 2 shared cores; docs/validation.md): a broker restarted
    after a SIGKILL sent its BrokerRegistration 2.2-3.5 s after the new process started and was unfenced
    0.8-1.4 s after that. The defaults are the quieter run's."""

    process_start: DurationDistribution = Field(default_factory=lambda: constant_ms(2300.0))
    """From the restart (a new process) until its BrokerLifecycleManager sends the BrokerRegistration: the
    JVM's start, KafkaConfig, the metadata log and KRaft client (SharedServer), BrokerServer.startup up to
    the lifecycle manager's start. The broker refuses connections until then."""
    log_load: DurationDistribution = Field(default_factory=lambda: constant_ms(800.0))
    """From the BrokerRegistration until the broker applies the metadata image: its BrokerMetadataPublisher's
    first publish runs LogManager.startup (loading the logs; after a crash, recovering them) and starts the log
    cleaner and the coordinators; only then are its partitions made leader or follower (its fetchers start),
    and its heartbeats report it caught up, so that the controller unfences it."""


class PerBrokerConfig(ScenarioModel):
    """The broker configs a `cluster.overrides` entry may set for one broker: its threads, queues,
    purgatories, replica fetchers and costs. The others are cluster-wide here (topic defaults, the
    purgatory kind, the controller's AlterPartition latency)."""

    num_network_threads: int = Field(default=3, alias="num.network.threads", ge=1, le=1000)
    """Processor threads per listener; each owns its connections' response queues (SocketServer's Processor)."""
    num_io_threads: int = Field(default=8, alias="num.io.threads", ge=1, le=1000)
    """Request handler threads polling the shared request queue (KafkaRequestHandlerPool)."""
    queued_max_requests: int = Field(default=500, alias="queued.max.requests", ge=1, le=INT32_MAX)
    """Capacity of the request queue; a full queue blocks the processors (back-pressure)."""
    replica_lag_time_max_ms: KafkaMs = Field(default=30_000, alias="replica.lag.time.max.ms", ge=1)
    """A follower not caught up for this long leaves the ISR (Partition.maybeShrinkIsr)."""
    fetch_max_bytes: KafkaBytes = Field(default=55 * 1024 * 1024, alias="fetch.max.bytes", ge=1024, le=INT32_MAX)
    """Caps the maxBytes of every fetch request (KafkaApis.handleFetchRequest)."""
    producer_purgatory_purge_interval_requests: int = Field(
        default=1000, alias="producer.purgatory.purge.interval.requests", ge=1, le=INT32_MAX
    )
    """Produce purgatory purgeInterval (DelayedOperationPurgatory)."""
    fetch_purgatory_purge_interval_requests: int = Field(
        default=1000, alias="fetch.purgatory.purge.interval.requests", ge=1, le=INT32_MAX
    )
    """Fetch purgatory purgeInterval (DelayedOperationPurgatory)."""
    num_replica_fetchers: int = Field(default=1, alias="num.replica.fetchers", ge=1, le=MAX_REPLICA_FETCHERS)
    """Replica fetcher threads this broker runs per source broker; a partition goes to the thread
    AbstractFetcherManager.getFetcherId picks (ReplicationConfigs)."""
    replica_fetch_wait_max_ms: KafkaMs = Field(default=500, alias="replica.fetch.wait.max.ms", ge=0, le=INT32_MAX)
    """Long-poll time of a follower fetch in the leader's fetch purgatory (ReplicationConfigs); must be <=
    replica.lag.time.max.ms, as KafkaConfig requires."""
    replica_fetch_min_bytes: KafkaBytes = Field(default=1, alias="replica.fetch.min.bytes", ge=0, le=INT32_MAX)
    """Bytes a follower fetch waits for in the leader's purgatory (ReplicationConfigs)."""
    replica_fetch_max_bytes: KafkaBytes = Field(default=1024 * 1024, alias="replica.fetch.max.bytes", ge=0, le=INT32_MAX)
    """Bytes a follower fetch asks for per partition (ReplicationConfigs)."""
    replica_fetch_response_max_bytes: KafkaBytes = Field(
        default=10 * 1024 * 1024, alias="replica.fetch.response.max.bytes", ge=0, le=INT32_MAX
    )
    """Bytes a follower fetch asks for in all (ReplicationConfigs)."""
    replica_fetch_backoff_ms: KafkaMs = Field(default=1000, alias="replica.fetch.backoff.ms", ge=0, le=INT32_MAX)
    """A follower's wait after an error or when no partition is ready to fetch (ReplicationConfigs)."""
    max_incremental_fetch_session_cache_slots: int = Field(
        default=1000, alias="max.incremental.fetch.session.cache.slots", ge=0, le=INT32_MAX
    )
    """Incremental fetch sessions (KIP-227) this broker caches, split into 8 shards of slots / 8 each
    (KafkaBroker.NumFetchSessionCacheShards). A fetcher (a follower's replica fetcher thread, or a consumer)
    with a session sends only the partitions whose fetch position changed and gets back only the partitions
    with news; without one, every request and response lists every partition. A full shard evicts a
    session by FetchSessionCacheShard.tryEvict's rules (a consumer never evicts a follower's session unless
    it sat unused 120 s); below 8 slots no session is ever created (ServerConfigs)."""
    socket_connection_setup_timeout_ms: KafkaMs = Field(default=10_000, alias="socket.connection.setup.timeout.ms", ge=0)
    """How long this broker's replica fetchers wait for a connection to the leader to be set up (its TCP
    handshake: no SYN-ACK comes through a cut link) before the fetch fails and its partitions back off
    replica.fetch.backoff.ms (ServerConfigs; the NetworkClient of BrokerBlockingSender, which Kafka builds with
    no reconnect backoff: reconnect.backoff.ms is not a broker config). A failed connection closes that client,
    so every new attempt starts from this value (+/-20% jitter)."""
    socket_connection_setup_timeout_max_ms: KafkaMs = Field(
        default=30_000, alias="socket.connection.setup.timeout.max.ms", ge=0
    )
    """The cap of the replica fetchers' connection setup timeout (ServerConfigs); below
    socket.connection.setup.timeout.ms it is the timeout."""
    costs: HandlerCosts = Field(default_factory=HandlerCosts)
    """Simulator-only: service times of the request pipeline."""
    startup: BrokerStartup = Field(default_factory=BrokerStartup)
    """Simulator-only: how long a restarted broker takes to register and to be unfenced."""
    stalls: Stalls | None = None
    """Simulator-only: the broker's stop-the-world stalls (JVM garbage collection), drawn all run long; absent
    = none. In `cluster.overrides` it replaces the whole block (`stalls: {}`: this broker does not stall)."""
    disk: DiskConfig = Field(default_factory=DiskConfig)
    """Simulator-only: the cost of a log flush on this broker's disk (used only when a topic flushes)."""
    cores: int | None = Field(default=None, ge=1, le=MAX_CORES, strict=True)
    """Simulator-only: the CPU cores of this broker's host, shared by its network threads
    (num.network.threads), request handlers (num.io.threads) and replica fetcher threads: each of their
    service times (`costs`, a follower's append cost) waits for a free core, first come first served, so
    the threads contend for the CPU when more of them are busy than there are cores. Unset (the default):
    no contention, every thread runs at once. Timeseries `CpuUtilisation` and `CpuRunQueue`."""
    connection_layout: Literal["round_robin", "random", "groups"] = "round_robin"
    """Simulator-only: which network thread each connection to this broker gets. `round_robin` (the default):
    Kafka's `Acceptor.assignNewConnection` over the scenario's connections alone, in the order its clients and
    the followers' fetchers first connect. A real broker's round robin also
    counts the connections a scenario does not model (admin clients', the clients' bootstrap and metadata
    connections), in whatever order they and the fetchers came: three real runs of
    scenarios/calibration_base.yaml on 2026-12-04 had three layouts (the producer sharing a network thread with
    a follower in two, alone in one). `random`: each connection's thread is drawn from the stream
    `broker-<id>/acceptor`, as if any number of other connections came before it, so runs of different seeds
    see different layouts (docs/calibration.md). `groups`: the followers' fetchers' connections go round robin
    from a thread drawn from that stream, and the clients' from another: each group connects in one go (the
    fetchers as the brokers start, the clients once they have their metadata), the connections nobody models
    before or between the groups. On the project's machine, in fourteen real runs of 2026-12-04 (Kafka 4.3.1's
    request log names each connection's network thread: `<local>-<remote>-<processor>-<index>`), the leader's
    two followers never shared a network thread, nor its producer and its consumer; each client shared one with
    a follower or had one of its own. Drawn one by one, the followers would share one in a third of the runs.
    The fitted presets keep `random`: fitted with `groups`, their fitted run came out worse (docs/calibration.md)."""


OVERRIDABLE_KEYS: tuple[str, ...] = tuple(f.alias or n for n, f in PerBrokerConfig.model_fields.items())
"""The keys a `cluster.overrides` entry may set."""


REMOVED_BROKER_KEYS: dict[str, str] = {
    "alter_partition_latency": "was removed: an ISR change now goes to the KRaft controller and back "
    "(controller.link_latency each way, committed after controller.quorum.append.linger.ms)",
}


class BrokerConfig(PerBrokerConfig):
    """Kafka broker configs (Kafka 4.3.1's defaults) of every broker, plus their simulator costs.

    In a scenario with `cluster:` they apply to every broker, and `cluster.overrides` sets the ones that
    differ; without it they configure broker 0 (the leader) and the follower brokers 1..RF-1.
    """

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        if isinstance(data, dict):
            removed = [((key,), why) for key, why in REMOVED_BROKER_KEYS.items() if key in data]
            if removed:
                fail_at(removed)
        return data

    min_insync_replicas: int = Field(default=1, alias="min.insync.replicas", ge=1, le=INT32_MAX)
    """Default for topics that do not set their own."""
    unclean_leader_election_enable: bool = Field(default=False, alias="unclean.leader.election.enable")
    """Default for topics that do not set their own."""
    broker_heartbeat_interval_ms: KafkaMs = Field(default=2000, alias="broker.heartbeat.interval.ms", ge=1)
    """How often a running broker heartbeats to the controller (BrokerLifecycleManager); a broker whose
    heartbeats stop for controller.broker.session.timeout.ms is fenced."""
    default_replication_factor: int = Field(
        default=1, alias="default.replication.factor", ge=1, le=MAX_REPLICATION_FACTOR
    )
    """Replication factor of topics that do not set `replication.factor`."""
    num_partitions: int = Field(default=1, alias="num.partitions", ge=1, le=MAX_PARTITIONS)
    """Partition count of topics that do not set `partitions`."""
    message_max_bytes: KafkaBytes = Field(default=1_048_588, alias="message.max.bytes", ge=0, le=INT32_MAX)
    """Largest record batch accepted; topics inherit it as `max.message.bytes`."""
    log_segment_bytes: KafkaBytes = Field(default=1024**3, alias="log.segment.bytes", ge=14, le=INT32_MAX)
    """Default `segment.bytes` of topics."""
    log_roll_ms: KafkaMs = Field(default=604_800_000, alias="log.roll.ms", ge=1)
    """Default `segment.ms` of topics (Kafka derives it from log.roll.hours = 168 when unset)."""
    log_roll_jitter_ms: KafkaMs = Field(default=0, alias="log.roll.jitter.ms", ge=0)
    """Default `segment.jitter.ms` of topics."""
    log_index_size_max_bytes: KafkaBytes = Field(default=10 * 1024 * 1024, alias="log.index.size.max.bytes", ge=4, le=INT32_MAX)
    """Default `segment.index.bytes` of topics."""
    log_index_interval_bytes: KafkaBytes = Field(default=4096, alias="log.index.interval.bytes", ge=0, le=INT32_MAX)
    """Default `index.interval.bytes` of topics."""
    log_retention_ms: Literal[-1] | KafkaMs = Field(default=604_800_000, alias="log.retention.ms")
    """Default `retention.ms` of topics; -1 = no time limit. Kafka derives it from log.retention.hours = 168
    when unset (log.retention.hours and .minutes are not accepted here: write "7d" or "30m")."""
    log_retention_bytes: Literal[-1] | KafkaBytes = Field(default=-1, alias="log.retention.bytes")
    """Default `retention.bytes` of topics; -1 = no size limit."""
    log_retention_check_interval_ms: KafkaMs = Field(default=300_000, alias="log.retention.check.interval.ms", ge=1)
    """How often the retention task deletes old segments of every log, leader's and followers' alike
    (Kafka's LogManager `kafka-log-retention` task, first run 30 s after start)."""
    log_flush_interval_messages: int = Field(default=LONG_MAX, alias="log.flush.interval.messages", ge=1, le=LONG_MAX)
    """Default `flush.messages` of topics: Long.MAX_VALUE (9223372036854775807), flushing left to the OS."""
    log_flush_interval_ms: Literal[9223372036854775807] | KafkaMs | None = Field(
        default=None, alias="log.flush.interval.ms"
    )
    """Default `flush.ms` of topics; unset (Kafka's null): log.flush.scheduler.interval.ms."""
    log_flush_scheduler_interval_ms: Literal[9223372036854775807] | KafkaMs = Field(
        default=LONG_MAX, alias="log.flush.scheduler.interval.ms"
    )
    """How often the log flusher (LogManager's `kafka-log-flusher` task, first run 30 s after start, with the
    retention task) flushes the logs whose last flush is `flush.ms` old; Long.MAX_VALUE (the default): it runs
    once, at 30 s."""

    @property
    def log_flush_interval_ms_or_default(self) -> int:
        """`log.flush.interval.ms`, or `log.flush.scheduler.interval.ms` when unset (KafkaConfig.logFlushIntervalMs)."""
        value = self.log_flush_interval_ms
        return int(self.log_flush_scheduler_interval_ms if value is None else value)

    purgatory: Literal["timing_wheel", "delay_queue"] = "timing_wheel"
    """Simulator-only: the purgatories' timer. `timing_wheel`: Kafka's hierarchical timing wheel
    (SystemTimer, Kafka 0.9+), which a completed operation leaves at once. `delay_queue`: Kafka 0.8's
    RequestPurgatory, one priority queue (java.util.DelayQueue) in which a completed operation stays until
    its timeout, with the watch lists purged after every purge interval (*.purgatory.purge.interval.requests)
    of watched operations. Requests complete and expire at the same times with either; what differs is
    NumDelayedOperations (the entries the timer holds) and how often the expiration reaper wakes
    (`reaper_passes` in summary.json)."""
