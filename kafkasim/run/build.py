"""Scenario -> components: the brokers (each leading some partitions and following others), producers,
consumers, links.

Every component gets, at construction, its configuration from the validated ``Scenario`` (canonical
units), its own named random stream (``RandomStreams``, so adding a producer never changes a follower's
draws) and the run's one observer. Nothing is wired afterwards, so the order in which components are
built does not matter; the order in which they *start* does (``Engine._start``).

The brokers and replicas come from the ``ClusterLayout``, never from "broker 0 is the leader": every
broker is a ``BrokerServer``; a partition's preferred replica leads it, the others follow it through their
broker's ``ReplicaFetcherManager``. Each broker's configs and costs are ``broker:`` with its
``cluster.overrides`` entry applied (``Scenario.broker_for``). Simplifications: a fetcher thread's path to its source broker uses the followers' link config (``followers.link``);
without a cluster a client's connections share its one network path (in a cluster it has one per broker,
through that broker's NIC, to every broker: leadership moves); a client's Metadata request is answered
from a live broker's metadata cache one mean round trip later (``ControllerLink.metadata_for``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.config import ArrivalConfig, ConsumerClientConfig, ProducerClientConfig
from kafkasim.clients.consumer import Consumer
from kafkasim.clients.producer import Producer
from kafkasim.controller.quorum_controller import QuorumController, fence_stale_broker_period_ms
from kafkasim.network.cluster_connection_states import ConnectionConfig
from kafkasim.network.connection import Connection, NetworkPath, open_connection
from kafkasim.network.ids import IdSource
from kafkasim.network.nic import Nic
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import NetworkPartitions, broker_host
from kafkasim.network.socket_server import ProcessorCosts
from kafkasim.run.cluster_layout import ClusterLayout, cluster_layout
from kafkasim.run.controller_link import ControllerLink
from kafkasim.run.faults import network_partitions
from kafkasim.server.broker_server import BrokerServer, BrokerServerConfig, BrokerServerCosts
from kafkasim.server.kafka_request_handler import RequestHandlerCosts
from kafkasim.server.replica_fetcher_manager import fetcher_thread_name, get_fetcher_id
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig, ReplicaFetcherThread
from kafkasim.sim.distributions import sampler_from_spec, zero_arg_sampler
from kafkasim.sim.random_streams import RandomStreams

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.scenario import Scenario
    from kafkasim.scenario.broker import BrokerConfig
    from kafkasim.scenario.clients import ConsumerConfig, ProducerConfig
    from kafkasim.scenario.network import Link
    from kafkasim.sim.clock import SimClock

LEADER_ID = 0
PRODUCER_ID_SPACING = 1000  # producer ids: 1000, 2000, ... in scenario order


def client_deadlines(scenario: Scenario, layout: ClusterLayout | None = None) -> dict[str, float]:
    """How long each client may take to give a request an outcome: its request timeout, plus the time it
    spends paused (a paused client notices its timeouts only when it resumes)."""
    from kafkasim.server.replica_fetcher_thread import FOLLOWER_REQUEST_TIMEOUT_MS

    layout = layout if layout is not None else cluster_layout(scenario)
    deadlines: dict[str, float] = {
        name: FOLLOWER_REQUEST_TIMEOUT_MS for name in fetcher_names(layout, fetcher_counts(scenario, layout))
    }
    for p in scenario.producers:
        deadlines[p.name] = float(p.request_timeout_ms)
    for c in scenario.consumers:
        deadlines[c.name] = float(c.request_timeout_ms)
    counts = fetcher_counts(scenario, layout)
    for fault in scenario.faults:
        if fault.type != "pause":
            continue
        if fault.target in deadlines:
            deadlines[fault.target] += float(fault.duration)
        elif layout.clustered and scenario.target_kind(fault.target) == "broker":
            # A paused broker's fetcher threads are paused with it.
            broker_id = int(fault.target.removeprefix("broker-"))
            for name in fetcher_names(layout, counts, only_broker=broker_id):
                deadlines[name] += float(fault.duration)
    return deadlines


def log_config_of(topic: Any) -> LogConfig:
    return LogConfig(
        segment_bytes=topic.segment_bytes,
        segment_ms=int(topic.segment_ms),
        segment_jitter_ms=int(topic.segment_jitter_ms),
        segment_index_bytes=topic.segment_index_bytes,
        index_interval_bytes=topic.index_interval_bytes,
        max_message_bytes=topic.max_message_bytes,
        min_insync_replicas=topic.min_insync_replicas,
        retention_ms=int(topic.retention_ms),
        retention_bytes=int(topic.retention_bytes),
    )


def broker_state_config(scenario: Scenario, broker_id: int = LEADER_ID) -> KafkaConfig:
    b = scenario.broker_for(broker_id)
    return KafkaConfig(
        replica_lag_time_max_ms=int(b.replica_lag_time_max_ms),
        fetch_max_bytes=b.fetch_max_bytes,
        producer_purgatory_purge_interval_requests=b.producer_purgatory_purge_interval_requests,
        fetch_purgatory_purge_interval_requests=b.fetch_purgatory_purge_interval_requests,
        purgatory_timer=b.purgatory,
    )


def producer_config_of(p: ProducerConfig, producer_id: int = 0) -> ProducerClientConfig:
    arrival = p.arrival
    return ProducerClientConfig(
        name=p.name,
        acks=p.acks,
        linger_ms=float(p.linger_ms),
        batch_size=p.batch_size,
        max_in_flight_requests_per_connection=p.max_in_flight_requests_per_connection,
        request_timeout_ms=p.request_timeout_ms,
        partitioner=p.partitioner,
        rate_per_s=p.rate,
        arrival=ArrivalConfig(
            arrival.type,
            on_ms=float(getattr(arrival, "on", 0.0)),
            off_ms=float(getattr(arrival, "off", 0.0)),
            pattern=getattr(arrival, "pattern", arrival.type),
        ),
        retries=p.retries,
        retry_backoff_ms=float(p.retry_backoff_ms),
        retry_backoff_max_ms=float(p.retry_backoff_max_ms),
        delivery_timeout_ms=float(p.delivery_timeout_ms),
        enable_idempotence=p.enable_idempotence,
        producer_id=producer_id,
        buffer_memory=p.buffer_memory,
        max_block_ms=float(p.max_block_ms),
        connection=connection_config_of(p),
    )


def consumer_config_of(c: ConsumerConfig) -> ConsumerClientConfig:
    return ConsumerClientConfig(
        name=c.name,
        fetch_min_bytes=c.fetch_min_bytes,
        fetch_max_wait_ms=c.fetch_max_wait_ms,
        max_partition_fetch_bytes=c.max_partition_fetch_bytes,
        fetch_max_bytes=c.fetch_max_bytes,
        request_timeout_ms=c.request_timeout_ms,
        connection=connection_config_of(c),
    )


def connection_config_of(client: ProducerConfig | ConsumerConfig) -> ConnectionConfig:
    """A client's reconnect.backoff.* and socket.connection.setup.timeout.* configs."""
    return ConnectionConfig(
        float(client.reconnect_backoff_ms),
        float(client.reconnect_backoff_max_ms),
        float(client.socket_connection_setup_timeout_ms),
        float(client.socket_connection_setup_timeout_max_ms),
    )


def replica_fetcher_config_of(b: BrokerConfig) -> ReplicaFetcherConfig:
    """The fetching broker's replica.fetch.* configs (broker configs in Kafka, ReplicationConfigs)."""
    return ReplicaFetcherConfig(
        wait_max_ms=b.replica_fetch_wait_max_ms,
        min_bytes=b.replica_fetch_min_bytes,
        max_bytes=b.replica_fetch_max_bytes,
        response_max_bytes=b.replica_fetch_response_max_bytes,
        backoff_ms=b.replica_fetch_backoff_ms,
        socket_connection_setup_timeout_ms=b.socket_connection_setup_timeout_ms,
        socket_connection_setup_timeout_max_ms=b.socket_connection_setup_timeout_max_ms,
    )


@dataclass
class Components:
    """Everything a run is made of, built from one scenario."""

    env: Environment
    clock: SimClock
    streams: RandomStreams
    config: KafkaConfig
    controller_link: ControllerLink
    ids: IdSource
    partitions_by_topic: dict[str, list[TopicPartition]]
    observer: Observer
    brokers: list[BrokerServer] = field(default_factory=list)
    producers: list[Producer] = field(default_factory=list)
    consumers: list[Consumer] = field(default_factory=list)
    links: dict[str, NetworkPath] = field(default_factory=dict)
    layout: ClusterLayout | None = None
    nics: dict[int, Nic] = field(default_factory=dict)
    """Each broker host's NIC (cluster runs only)."""
    client_paths: dict[str, list[NetworkPath]] = field(default_factory=dict)
    """A cluster client's paths, one per broker it talks to (a client's link faults act on all of them)."""
    partitions: NetworkPartitions | None = None
    """The scenario's network partitions (None without any): every connection and the controller link
    consult them by host pair."""

    @property
    def leader(self) -> BrokerServer:
        """The broker that leads every partition (broker 0) in a scenario without a cluster; in a cluster,
        broker 0 (the gauges still read it alone)."""
        return self.brokers[LEADER_ID]

    def broker(self, broker_id: int) -> BrokerServer:
        for broker in self.brokers:
            if broker.broker_id == broker_id:
                return broker
        raise KeyError(f"no broker {broker_id} in this run")

    @property
    def replica_manager(self) -> ReplicaManager:
        return self.leader.replica_manager

    @property
    def followers(self) -> list[ReplicaFetcherThread]:
        """Every broker's replica fetcher threads, by broker id."""
        return [f for broker in self.brokers for f in broker.fetchers]


def _network_path(
    env: Environment, name: str, link: Link, streams: RandomStreams, *, client_nic: Nic | None = None,
    broker_nic: Nic | None = None,
) -> NetworkPath:
    """The client's two links, each with its own latency distribution, bandwidth and random stream, through
    the hosts' NICs if given (requests out of ``client_nic`` into ``broker_nic``, responses back)."""
    return NetworkPath.create(
        env,
        name,
        sampler_from_spec(link.latency_for("to_broker")),
        lambda stream: streams.stream(f"link/{stream}"),
        link.bandwidth_for("to_broker") / 1000.0,  # bytes per second -> bytes per ms
        from_broker_latency=sampler_from_spec(link.latency_for("from_broker")),
        from_broker_bandwidth_bytes_per_ms=link.bandwidth_for("from_broker") / 1000.0,
        client_nic=client_nic,
        broker_nic=broker_nic,
    )


def broker_nics(scenario: Scenario, layout: ClusterLayout, env: Environment) -> dict[int, Nic]:
    """One NIC per broker host of a ``cluster:`` (``cluster.nic``); none without a cluster."""
    if scenario.cluster is None or not layout.clustered:
        return {}
    nic = scenario.cluster.nic
    return {b: Nic(env, f"broker-{b}", nic.bandwidth_in / 1000.0, nic.bandwidth_out / 1000.0) for b in layout.broker_ids}


def client_path_name(client: str, broker_id: int) -> str:
    """A cluster client's network path to one broker (its links' and random streams' name)."""
    return f"{client}/broker-{broker_id}"


def broker_costs(scenario: Scenario, broker_id: int, streams: RandomStreams) -> BrokerServerCosts:
    """The broker's service-time samplers, each on its own stream ``broker-<id>/costs/<name>``."""
    costs_cfg = scenario.broker_for(broker_id).costs

    def cost(name: str, spec: Any) -> Callable[[], float]:
        return zero_arg_sampler(spec, streams.stream(f"broker-{broker_id}/costs/{name}"))

    return BrokerServerCosts(
        processor=ProcessorCosts(
            network_read=cost("network_read", costs_cfg.network_read),
            network_read_per_kib=cost("network_read_per_kib", costs_cfg.network_read_per_kib),
            network_send=cost("network_send", costs_cfg.network_send),
            network_send_per_kib=cost("network_send_per_kib", costs_cfg.network_send_per_kib),
        ),
        handler=RequestHandlerCosts(
            request=cost("request", costs_cfg.request),
            append_per_kib=cost("append_per_kib", costs_cfg.append_per_kib),
            read_per_kib=cost("read_per_kib", costs_cfg.read_per_kib),
            per_partition=cost("per_partition", costs_cfg.per_partition),
        ),
    )


def broker_server_config(scenario: Scenario, broker_id: int = LEADER_ID) -> BrokerServerConfig:
    """Broker ``broker_id``'s configuration: ``broker:`` with its ``cluster.overrides`` entry applied."""
    b = scenario.broker_for(broker_id)
    return BrokerServerConfig(
        broker=broker_state_config(scenario, broker_id),
        num_network_threads=b.num_network_threads,
        num_io_threads=b.num_io_threads,
        queued_max_requests=b.queued_max_requests,
        log_retention_check_interval_ms=float(b.log_retention_check_interval_ms),
        num_replica_fetchers=b.num_replica_fetchers,
        max_incremental_fetch_session_cache_slots=b.max_incremental_fetch_session_cache_slots,
    )


def fetcher_name(layout: ClusterLayout, num_fetchers: int, broker_id: int, fetcher_id: int, source: int) -> str:
    """A fetcher thread's client name: ``follower-<k>`` in a scenario without a cluster (one thread per
    follower broker, the names its faults and results have always used), else Kafka's thread name
    ``ReplicaFetcherThread-<fetcherId>-<sourceBrokerId>`` on ``broker-<k>``."""
    if not layout.clustered and num_fetchers == 1:
        return f"follower-{broker_id}"
    return fetcher_thread_name(broker_id, fetcher_id, source)


def fetcher_counts(scenario: Scenario, layout: ClusterLayout) -> dict[int, int]:
    """Each broker's ``num.replica.fetchers`` (a per-broker config: overrides may differ)."""
    return {b: scenario.broker_for(b).num_replica_fetchers for b in layout.broker_ids}


def fetcher_names(layout: ClusterLayout, num_fetchers: Mapping[int, int], only_broker: int | None = None) -> list[str]:
    """Every fetcher thread the run will have (``ReplicaFetcherManager.addFetcherForPartitions``' keys), or
    broker ``only_broker``'s; ``num_fetchers``: each broker's ``num.replica.fetchers``."""
    names: dict[str, None] = {}
    for broker_id in layout.broker_ids:
        if only_broker is not None and broker_id != only_broker:
            continue
        count = num_fetchers[broker_id]
        for tp in layout.partitions_followed_by(broker_id):
            fid = get_fetcher_id(tp.topic, tp.partition, count)
            names[fetcher_name(layout, count, broker_id, fid, layout.leader_of(tp))] = None
    return list(names)


def build(
    scenario: Scenario, clock: SimClock, seed: int, observer: Observer, layout: ClusterLayout | None = None
) -> Components:
    """The run's components, one ``BrokerServer`` per broker of ``layout`` (default: the scenario's,
    ``cluster_layout``); ``observer`` (recording, and the invariant checks if enabled) reaches every one of
    them at construction.

    Each partition's preferred replica leads it with every replica in the ISR; every other replica's broker
    makes it a follower, and that broker's ``ReplicaFetcherManager`` gives it to a fetcher thread toward the
    leader. A fetcher thread talks to its source broker's ``SocketServer`` over a network path of its own
    (the followers' link config, its own random streams)."""
    env = clock.env
    streams = RandomStreams(seed)
    layout = layout if layout is not None else cluster_layout(scenario, seed=seed)
    server_configs = {b: broker_server_config(scenario, b) for b in layout.broker_ids}
    config = server_configs[layout.broker_ids[0]].broker
    session_timeout_ms = scenario.controller.broker_session_timeout_ms
    controller = QuorumController(
        env,
        sampler_from_spec(scenario.controller.metadata_propagation),
        streams.stream("controller/metadata_propagation"),
        session_timeout_ms=session_timeout_ms,
        append_linger_ms=float(scenario.controller.controller_quorum_append_linger_ms),
        unclean_leader_election_interval_ms=float(scenario.controller.unclean_leader_election_interval_ms),
        auto_leader_rebalance_enable=scenario.controller.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_ms=1000.0 * scenario.controller.leader_imbalance_check_interval_seconds,
        # The periodic stale-broker check runs from the controller's activation: a real cluster's start puts
        # it anywhere against the brokers' heartbeats.
        fence_check_phase_ms=streams.stream("controller/fence_check_phase").uniform(
            0.0, fence_stale_broker_period_ms(session_timeout_ms)),
        eligible_leader_replicas_version=scenario.controller.eligible_leader_replicas_version,
    )
    brokers_by_id: dict[int, BrokerServer] = {}
    partitions = network_partitions(scenario)
    controller_link = ControllerLink(
        env, controller, brokers_by_id, sampler_from_spec(scenario.controller.link_latency),
        {b: streams.stream(f"controller/link/broker-{b}") for b in layout.broker_ids}, observer,
        partitions=partitions,
        apply_costs={b: zero_arg_sampler(scenario.controller.metadata_apply, streams.stream(f"broker-{b}/metadata_apply"))
                     for b in layout.broker_ids},
    )
    ids = IdSource()
    partitions_by_topic = {topic: list(tps) for topic, tps in layout.partitions_by_topic.items()}
    c = Components(env, clock, streams, config, controller_link, ids, partitions_by_topic, observer, layout=layout,
                   partitions=partitions)
    nics = c.nics = broker_nics(scenario, layout, env)
    fetcher_hosts: dict[str, str] = {}  # a fetcher thread's name -> its broker's host (a client is its own host)

    def connect_to(broker_id: int, name: str, path: NetworkPath) -> Connection:
        # Any connection, opened whenever, between two hosts that a network partition separates obeys its cut.
        # Its SYN reaches whichever process of the broker listens when it arrives (a restart makes a new one).
        cut = None if partitions is None else partitions.between(fetcher_hosts.get(name, name), broker_host(broker_id))
        broker = brokers_by_id[broker_id]
        return open_connection(env, name, path, lambda: broker.socket_server, observer, cut)

    f_cfg = scenario.followers
    assert f_cfg.link is not None
    follower_link = f_cfg.link

    def create_fetcher_thread(broker: BrokerServer, fetcher_id: int, source: int) -> ReplicaFetcherThread:
        fetcher_config = replica_fetcher_config_of(scenario.broker_for(broker.broker_id))
        name = fetcher_name(layout, broker.config.num_replica_fetchers, broker.broker_id, fetcher_id, source)
        fetcher_hosts[name] = broker_host(broker.broker_id)
        # Replication leaves the leader's host (its NIC's outbound) and enters the follower's (inbound).
        links = c.links[name] = _network_path(env, name, follower_link, streams, client_nic=nics.get(broker.broker_id),
                                              broker_nic=nics.get(source))
        return ReplicaFetcherThread(
            env,
            name,
            broker.broker_id,
            source,
            fetcher_config,
            broker.replica_manager,
            lambda broker_id: connect_to(broker_id, name, links),
            zero_arg_sampler(f_cfg.costs.append, streams.stream(f"{name}/append")),
            zero_arg_sampler(f_cfg.costs.append_per_kib, streams.stream(f"{name}/append_per_kib")),
            ids,
            observer,
            connection_rng=streams.stream(f"{name}/connection_states"),
        )

    for broker_id in layout.broker_ids:
        broker = BrokerServer(
            env,
            clock.time,
            broker_id,
            server_configs[broker_id],
            broker_costs(scenario, broker_id, streams),
            log_rng=streams.stream(f"broker-{broker_id}/log"),
            fetch_session_rng=streams.stream(f"broker-{broker_id}/fetch_sessions"),
            alter_partition_manager=controller_link,
            observer=observer,
            fetcher_factory=create_fetcher_thread,
        )
        brokers_by_id[broker_id] = broker
        c.brokers.append(broker)
    log_configs = {topic.name: log_config_of(topic) for topic in scenario.topics}
    # Leaders first (every broker), then followers: a follower's fetcher thread, and so its connection,
    # is created in partition order, broker by broker.
    for tp, replicas in layout.replicas.items():
        brokers_by_id[replicas[0]].make_leader(tp, replicas, log_configs[tp.topic])
    for broker in c.brokers:
        for tp in layout.partitions_followed_by(broker.broker_id):
            replicas = layout.replicas[tp]
            broker.make_follower(tp, replicas[0], replicas, log_configs[tp.topic])

    # The KRaft controller knows the same cluster: every broker registered and unfenced, every partition led
    # by its preferred replica with all replicas in the ISR. Each broker heartbeats from now on and applies
    # what the controller commits.
    controller.bootstrap(
        layout.broker_ids,
        {topic: [tuple(layout.replicas[tp]) for tp in tps] for topic, tps in layout.partitions_by_topic.items()},
        frozenset(t.name for t in scenario.topics if t.unclean_leader_election_enable),
        {t.name: int(t.min_insync_replicas) for t in scenario.topics},
    )

    def log_config_for(tp: TopicPartition) -> LogConfig:
        return log_configs[tp.topic]

    racks = scenario.cluster.racks if scenario.cluster is not None else None
    for broker in c.brokers:
        b = broker.broker_id
        controller_link.subscribe(b, log_config_for, catch_up=False)
        lifecycle = controller_link.lifecycle(
            b,
            heartbeat_interval_ms=scenario.broker.broker_heartbeat_interval_ms,
            rack=racks[b] if racks else None,
        )
        registration = controller.image.brokers[b]
        # Each broker started on its own: its heartbeats have their own phase (BrokerLifecycleManager).
        interval = float(scenario.broker.broker_heartbeat_interval_ms)
        phase = streams.stream(f"broker-{b}/heartbeat_phase").uniform(0.0, interval)
        lifecycle.start_running(registration.epoch, first_heartbeat_ms=phase)

    # Clients route by leadership: a connection per broker they talk to, all over the client's one path.
    leaders: Mapping[TopicPartition, int] = MappingProxyType({tp: r[0] for tp, r in layout.replicas.items()})

    def client_connector(name: str, path: NetworkPath) -> Callable[[int], Connection]:
        return lambda broker_id: connect_to(broker_id, name, path)

    def client_paths(name: str, link: Link) -> Callable[[int], Connection]:
        """Without a cluster, the client's one path. In a cluster, one path per broker (leadership moves,
        so a client may talk to any of them), through that broker's NIC: a NIC belongs to the destination
        host, so one shared path cannot carry it. Each path has its own named streams
        (``link/<client>/broker-<id>/...``), so a path never used draws nothing."""
        if not nics:
            path = c.links[name] = _network_path(env, name, link, streams)
            return client_connector(name, path)
        paths: dict[int, NetworkPath] = {}
        for b in layout.broker_ids:
            path_name = client_path_name(name, b)
            paths[b] = c.links[path_name] = _network_path(env, path_name, link, streams, broker_nic=nics[b])
        c.client_paths[name] = list(paths.values())
        return lambda broker_id: connect_to(broker_id, name, paths[broker_id])

    def metadata_of(topic: str) -> Callable[[], dict[TopicPartition, tuple[int, int]]]:
        # A Metadata request of the client: answered from a live broker's metadata cache.
        tps = partitions_by_topic[topic]
        return lambda: controller_link.metadata_for(tps)

    def round_trip_ms(link: Link) -> float:
        # Simplification: a Metadata request costs the link's mean round trip, no broker CPU.
        return (sampler_from_spec(link.latency_for("to_broker")).mean
                + sampler_from_spec(link.latency_for("from_broker")).mean)

    def validate(broker_id: int, tp: TopicPartition, epoch: int) -> int | None:
        # An OffsetsForLeaderEpoch request at broker_id (KafkaApis.handleOffsetForLeaderEpochRequest ->
        # Partition.lastOffsetForLeaderEpoch, leader only); None when it cannot answer.
        broker = brokers_by_id[broker_id]
        if broker.crashed:
            return None
        partition = broker.replica_manager.partitions.get(tp)
        if partition is None:
            return None
        answer = partition.last_offset_for_leader_epoch(-1, epoch, True)
        if answer.error is not Errors.NONE:
            return None
        # UNDEFINED: the consumer resets per auto.offset.reset (earliest here).
        return answer.end_offset if answer.end_offset >= 0 else partition.log.log_start_offset

    for index, p_cfg in enumerate(scenario.producers):
        assert p_cfg.link is not None
        connect = client_paths(p_cfg.name, p_cfg.link)
        c.producers.append(
            Producer(
                env,
                # Distinct producer ids (InitProducerId is not simulated), spaced so that a new id after an
                # epoch overflow never collides with another producer's.
                producer_config_of(p_cfg, producer_id=PRODUCER_ID_SPACING * (index + 1)),
                partitions_by_topic[p_cfg.topic],
                connect,
                zero_arg_sampler(p_cfg.record_size, streams.stream(f"{p_cfg.name}/record_size")),
                streams.stream(f"{p_cfg.name}/arrivals"),
                streams.stream(f"{p_cfg.name}/partitioner"),
                ids,
                observer,
                leaders=leaders,
                retry_rng=streams.stream(f"{p_cfg.name}/retry_backoff"),
                connection_rng=streams.stream(f"{p_cfg.name}/connection_states"),
                fetch_metadata=metadata_of(p_cfg.topic),
                metadata_round_trip_ms=round_trip_ms(p_cfg.link),
            )
        )
    for c_cfg in scenario.consumers:
        assert c_cfg.link is not None
        connect = client_paths(c_cfg.name, c_cfg.link)
        c.consumers.append(
            Consumer(env, consumer_config_of(c_cfg), partitions_by_topic[c_cfg.topic],
                     connect, ids, observer, leaders=leaders, fetch_metadata=metadata_of(c_cfg.topic),
                     validate=validate, metadata_round_trip_ms=round_trip_ms(c_cfg.link),
                     retry_rng=streams.stream(f"{c_cfg.name}/retry_backoff"),
                     connection_rng=streams.stream(f"{c_cfg.name}/connection_states"))
        )
    return c
