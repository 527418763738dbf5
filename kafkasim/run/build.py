"""Scenario -> the run's ``Cluster`` (``run/cluster.py``): the brokers (each leading some partitions and
following others), the KRaft controller and the brokers' channel to it, producers, consumers, links.

Every component gets, at construction, its configuration from the validated ``Scenario`` (canonical
units), its own named random stream (``RandomStreams``, so adding a producer never changes a follower's
draws) and the run's one observer. ``build()`` is the list of those constructor calls, in the order the
golden runs pin (the order of SimPy process creation); the cluster starts them (``Cluster.start``).

The brokers and replicas come from the ``ClusterLayout``, never from "broker 0 is the leader": every
broker is a ``BrokerServer``; a partition's preferred replica leads it, the others follow it through their
broker's ``ReplicaFetcherManager``. Each broker's configs and costs are ``broker:`` with its
``cluster.overrides`` entry applied (``Scenario.broker_for``). Simplifications: a fetcher thread's path to its
source broker uses the followers' link config (``followers.link``); without a cluster a client's connections
share its one network path (in a cluster it has one per broker, through that broker's NIC, to every broker:
leadership moves); a client's Metadata request is answered from a live broker's metadata cache one mean round
trip later (``Cluster.metadata_for``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.disk import Disk
from kafkasim.clients.config import ArrivalConfig, ConsumerClientConfig, ProducerClientConfig
from kafkasim.clients.consumer import Consumer, ConsumerCosts
from kafkasim.clients.producer import Producer, SenderCosts
from kafkasim.controller.quorum_controller import QuorumController, fence_stale_broker_period_ms
from kafkasim.network.cluster_connection_states import ConnectionConfig
from kafkasim.network.ids import IdSource
from kafkasim.network.nic import Nic
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import NetworkPartitions, network_partitions
from kafkasim.network.socket_server import ProcessorCosts
from kafkasim.network.tcp import TcpSettings
from kafkasim.run.cluster import LEADER_ID, Cluster, ClusterNetwork, ReplicaFetcherFactory, fetcher_name
from kafkasim.run.cluster_layout import ClusterLayout, cluster_layout
from kafkasim.run.faults import partition_windows
from kafkasim.server.broker_server import BrokerServer, BrokerServerConfig, BrokerServerCosts
from kafkasim.server.kafka_request_handler import RequestHandlerCosts
from kafkasim.server.node_to_controller_channel_manager import NodeToControllerChannelManager
from kafkasim.server.replica_fetcher_manager import get_fetcher_id
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig
from kafkasim.sim.cold_start import ColdStart
from kafkasim.sim.distributions import Constant, constant_value, sampler_from_spec, zero_arg_sampler
from kafkasim.sim.machine_load import MachineLoad
from kafkasim.sim.preemption import Preemption
from kafkasim.sim.random_streams import RandomStreams

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.scenario import Scenario
    from kafkasim.scenario.broker import BrokerConfig
    from kafkasim.scenario.clients import ConsumerConfig, ProducerConfig
    from kafkasim.scenario.distributions import DurationDistribution
    from kafkasim.scenario.network import Link
    from kafkasim.scenario.topics import TopicConfig
    from kafkasim.sim.clock import SimClock

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


def log_config_of(topic: TopicConfig) -> LogConfig:
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
        flush_messages=topic.flush_messages,
        flush_ms=int(topic.flush_ms),
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


def broker_nics(scenario: Scenario, layout: ClusterLayout, env: Environment) -> dict[int, Nic]:
    """One NIC per broker host of a ``cluster:`` (``cluster.nic``); none without a cluster."""
    if scenario.cluster is None or not layout.clustered:
        return {}
    nic = scenario.cluster.nic
    return {b: Nic(env, f"broker-{b}", nic.bandwidth_in / 1000.0, nic.bandwidth_out / 1000.0, nic.sharing)
            for b in layout.broker_ids}


def broker_costs(scenario: Scenario, broker_id: int, streams: RandomStreams,
                 load: MachineLoad | None = None) -> BrokerServerCosts:
    """The broker's service-time samplers, each on its own stream ``broker-<id>/costs/<name>``; ``load``: the
    machine's running threads, when the waits for a core grow with them (``machine_preemption``)."""
    costs_cfg = scenario.broker_for(broker_id).costs

    def cost(name: str, spec: DurationDistribution) -> Callable[[], float]:
        return zero_arg_sampler(spec, streams.stream(f"broker-{broker_id}/costs/{name}"))

    def wakeup(thread: str, spec: DurationDistribution) -> Callable[[], float] | None:
        # None when always 0 (the default): the threads then run at once, with no event and no draw.
        return unless_zero(spec, streams, f"broker-{broker_id}/costs/wakeup/{thread}")

    # The machine's waits for a core within its threads' work: one process per broker, its handlers' and its
    # network threads' (kafkasim.sim.preemption).
    machine = scenario.machine_preemption
    preemption = None if machine is None else Preemption(
        1.0 / float(machine.every), zero_arg_sampler(machine.wait, streams.stream(f"broker-{broker_id}/preemption/wait")),
        streams.stream(f"broker-{broker_id}/preemption"), load, float(machine.per_running_thread))
    return BrokerServerCosts(
        processor=ProcessorCosts(
            network_read=cost("network_read", costs_cfg.network_read),
            network_read_per_kib=cost("network_read_per_kib", costs_cfg.network_read_per_kib),
            network_send=cost("network_send", costs_cfg.network_send),
            network_send_per_kib=cost("network_send_per_kib", costs_cfg.network_send_per_kib),
            wakeup=wakeup("network", costs_cfg.wakeup),
            preemption=preemption,
            network_complete=unless_zero(costs_cfg.network_complete, streams,
                                         f"broker-{broker_id}/costs/network_complete"),
        ),
        handler=RequestHandlerCosts(
            request=cost("request", costs_cfg.request),
            append_per_kib=cost("append_per_kib", costs_cfg.append_per_kib),
            read_per_kib=cost("read_per_kib", costs_cfg.read_per_kib),
            per_partition=cost("per_partition", costs_cfg.per_partition),
            append=cost("append", costs_cfg.append),
            follower_fetch=cost("follower_fetch", costs_cfg.follower_fetch),
            complete_fetch=cost("complete_fetch", costs_cfg.complete_fetch),
            segment_read=cost("segment_read", costs_cfg.segment_read),
            # The same stream either way: a scenario that names no handler_wakeup draws as before.
            wakeup=wakeup("handler", costs_cfg.wakeup if costs_cfg.handler_wakeup is None
                          else costs_cfg.handler_wakeup),
            preemption=preemption,
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
        log_flush_scheduler_interval_ms=int(b.log_flush_scheduler_interval_ms),
        cores=b.cores,
    )


def broker_disk(scenario: Scenario, clock: SimClock, broker_id: int, streams: RandomStreams) -> Disk | None:
    """Broker ``broker_id``'s disk (its `disk:` costs on the streams ``broker-<id>/disk/<name>``), or None when
    no topic flushes and its page cache is unlimited."""
    disk = scenario.broker_for(broker_id).disk
    if disk.page_cache is None and not scenario.flushes:
        return None
    env = clock.env

    def cost(name: str, spec: DurationDistribution) -> Callable[[], float]:
        return zero_arg_sampler(spec, streams.stream(f"broker-{broker_id}/disk/{name}"))

    return Disk(
        lambda: env.now,
        cost("fsync", disk.fsync),
        cost("write_per_kib", disk.write_per_kib),
        page_cache_bytes=-1 if disk.page_cache is None else disk.page_cache,
        read_latency=cost("read_latency", disk.read_latency),
        read_per_kib=cost("read_per_kib", disk.read_per_kib),
    )


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


def quorum_controller(scenario: Scenario, env: Environment, streams: RandomStreams) -> QuorumController:
    """The KRaft controller with the scenario's ``controller:`` configs."""
    c = scenario.controller
    return QuorumController(
        env,
        sampler_from_spec(c.metadata_propagation),
        streams.stream("controller/metadata_propagation"),
        session_timeout_ms=c.broker_session_timeout_ms,
        append_linger_ms=float(c.controller_quorum_append_linger_ms),
        unclean_leader_election_interval_ms=float(c.unclean_leader_election_interval_ms),
        auto_leader_rebalance_enable=c.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_ms=1000.0 * c.leader_imbalance_check_interval_seconds,
        # The periodic stale-broker check runs from the controller's activation: a real cluster's start puts
        # it anywhere against the brokers' heartbeats.
        fence_check_phase_ms=streams.stream("controller/fence_check_phase").uniform(
            0.0, fence_stale_broker_period_ms(c.broker_session_timeout_ms)),
        eligible_leader_replicas_version=c.eligible_leader_replicas_version,
    )


def controller_link_of(scenario: Scenario, env: Environment, controller: QuorumController, layout: ClusterLayout,
                       streams: RandomStreams, observer: Observer,
                       partitions: NetworkPartitions | None) -> NodeToControllerChannelManager:
    """The brokers' channel to the controller (``controller.link_latency``, ``controller.metadata_apply``)."""
    return NodeToControllerChannelManager(
        env, controller, {}, sampler_from_spec(scenario.controller.link_latency),
        {b: streams.stream(f"controller/link/broker-{b}") for b in layout.broker_ids}, observer,
        partitions=partitions,
        apply_costs={b: zero_arg_sampler(scenario.controller.metadata_apply, streams.stream(f"broker-{b}/metadata_apply"))
                     for b in layout.broker_ids},
    )


def broker_server_of(scenario: Scenario, clock: SimClock, broker_id: int, streams: RandomStreams,
                     controller_link: NodeToControllerChannelManager, observer: Observer,
                     fetchers: ReplicaFetcherFactory, load: MachineLoad | None = None) -> BrokerServer:
    """Broker ``broker_id`` with its configs and costs, its own random streams; ``load``: the machine it shares
    with the other brokers (``machine_wakeup_per_thread``)."""
    layout = scenario.broker_for(broker_id).connection_layout
    return BrokerServer(
        clock.env,
        clock.time,
        broker_id,
        broker_server_config(scenario, broker_id),
        broker_costs(scenario, broker_id, streams, load),
        log_rng=streams.stream(f"broker-{broker_id}/log"),
        fetch_session_rng=streams.stream(f"broker-{broker_id}/fetch_sessions"),
        alter_partition_manager=controller_link.alter_partition_manager,
        observer=observer,
        fetcher_factory=fetchers,
        disk=broker_disk(scenario, clock, broker_id, streams),
        load=load,
        acceptor_rng=streams.stream(f"broker-{broker_id}/acceptor") if layout != "round_robin" else None,
        acceptor_fetcher=fetchers.network.is_fetcher if layout == "groups" else None,
    )


def metadata_round_trip_ms(link: Link) -> float:
    """Simplification: a client's Metadata request costs the link's mean round trip, no broker CPU."""
    return sampler_from_spec(link.latency_for("to_broker")).mean + sampler_from_spec(link.latency_for("from_broker")).mean


def producer_of(p: ProducerConfig, index: int, cluster: Cluster, streams: RandomStreams, ids: IdSource,
                observer: Observer) -> Producer:
    """The ``index``-th producer of the scenario, routing by leadership."""
    assert p.link is not None
    connect = cluster.network.client_connector(p.name, p.link)
    return Producer(
        cluster.env,
        # Distinct producer ids (InitProducerId is not simulated), spaced so that a new id after an epoch
        # overflow never collides with another producer's.
        producer_config_of(p, producer_id=PRODUCER_ID_SPACING * (index + 1)),
        cluster.partitions_by_topic[p.topic],
        connect,
        zero_arg_sampler(p.record_size, streams.stream(f"{p.name}/record_size")),
        streams.stream(f"{p.name}/arrivals"),
        streams.stream(f"{p.name}/partitioner"),
        ids,
        observer,
        leaders=cluster.leaders,
        retry_rng=streams.stream(f"{p.name}/retry_backoff"),
        connection_rng=streams.stream(f"{p.name}/connection_states"),
        fetch_metadata=cluster.metadata_of(p.topic),
        metadata_round_trip_ms=metadata_round_trip_ms(p.link),
        costs=sender_costs(p, streams),
        sender_wakeup=sender_wakeup(p, streams),
    )


def sender_costs(p: ProducerConfig, streams: RandomStreams) -> SenderCosts | None:
    """The producer's Sender costs, each from its own ``<producer>/costs/...`` stream; None when absent or all
    zero (the Sender then sends each request as it drains it, with no draw)."""
    costs = p.costs
    if costs is None:
        return None
    per_request = zero_arg_sampler(costs.per_request, streams.stream(f"{p.name}/costs/per_request"))
    per_batch = zero_arg_sampler(costs.per_batch, streams.stream(f"{p.name}/costs/per_batch"))
    if constant_value(per_request) == 0.0 and constant_value(per_batch) == 0.0:
        return None
    return SenderCosts(per_request, per_batch)


def sender_wakeup(p: ProducerConfig, streams: RandomStreams) -> Callable[[], float] | None:
    """The producer's Sender wake-up latency from its ``<producer>/costs/wakeup`` stream; None when absent or 0
    (the Sender runs at once, with no draw)."""
    return None if p.costs is None else unless_zero(p.costs.wakeup, streams, f"{p.name}/costs/wakeup")


def unless_zero(spec: DurationDistribution, streams: RandomStreams, stream: str) -> Callable[[], float] | None:
    """A sampler of ``spec`` drawing from the named stream, or None when ``spec`` is always 0: the caller then
    does the thing at once, with no event and no draw."""
    fixed = sampler_from_spec(spec)
    if isinstance(fixed, Constant) and fixed.value == 0.0:
        return None
    return zero_arg_sampler(spec, streams.stream(stream))


def consumer_of(c: ConsumerConfig, cluster: Cluster, streams: RandomStreams, ids: IdSource,
                observer: Observer) -> Consumer:
    """A consumer of the scenario, routing by leadership."""
    assert c.link is not None
    connect = cluster.network.client_connector(c.name, c.link)
    return Consumer(cluster.env, consumer_config_of(c), cluster.partitions_by_topic[c.topic],
                    connect, ids, observer, leaders=cluster.leaders, fetch_metadata=cluster.metadata_of(c.topic),
                    validate=cluster.offset_for_leader_epoch, metadata_round_trip_ms=metadata_round_trip_ms(c.link),
                    retry_rng=streams.stream(f"{c.name}/retry_backoff"),
                    connection_rng=streams.stream(f"{c.name}/connection_states"),
                    costs=consumer_costs(c, streams))


def consumer_costs(c: ConsumerConfig, streams: RandomStreams) -> ConsumerCosts | None:
    """The consumer application's processing costs, each from its own ``<consumer>/costs/...`` stream; None
    when absent or all zero (the consumer then consumes each batch at its response, with no draw)."""
    costs = c.costs
    if costs is None:
        return None
    per_poll = zero_arg_sampler(costs.per_poll, streams.stream(f"{c.name}/costs/per_poll"))
    per_record = zero_arg_sampler(costs.per_record, streams.stream(f"{c.name}/costs/per_record"))
    if constant_value(per_poll) == 0.0 and constant_value(per_record) == 0.0:
        return None
    return ConsumerCosts(per_poll, per_record)


def build(
    scenario: Scenario, clock: SimClock, seed: int, observer: Observer, layout: ClusterLayout | None = None
) -> Cluster:
    """The run's ``Cluster``, one ``BrokerServer`` per broker of ``layout`` (default: the scenario's,
    ``cluster_layout``); ``observer`` (recording, and the invariant checks if enabled) reaches every one of
    them at construction."""
    env = clock.env
    streams = RandomStreams(seed)
    layout = layout if layout is not None else cluster_layout(scenario, seed=seed)
    controller = quorum_controller(scenario, env, streams)
    partitions = network_partitions(partition_windows(scenario))
    controller_link = controller_link_of(scenario, env, controller, layout, streams, observer, partitions)
    ids = IdSource()
    network = ClusterNetwork(env, streams, observer, controller_link.brokers, partitions,
                             broker_nics(scenario, layout, env))
    tcp = scenario.network.tcp
    network.tcp = TcpSettings(float(tcp.rto_min), tcp.tcp_retries2)
    cluster = Cluster(env, streams, controller, controller_link, network, layout,
                      {topic: list(tps) for topic, tps in layout.partitions_by_topic.items()})
    assert scenario.followers.link is not None
    fetchers = ReplicaFetcherFactory(
        env, layout, {b: replica_fetcher_config_of(scenario.broker_for(b)) for b in layout.broker_ids},
        scenario.followers.link, scenario.followers.costs, streams, ids, observer, network)
    per_thread, preempts = float(scenario.machine_wakeup_per_thread), scenario.machine_wakeup_preempts
    scale, weight = scenario.machine_wakeup_scale_per_thread, scenario.machine_fetcher_weight
    crowded = scenario.machine_preemption is not None and scenario.machine_preemption.per_running_thread > 0.0
    waits = float(scenario.machine_wakeup_waits)
    cold_start = scenario.machine_cold_start
    cold = (None if cold_start is None
            else ColdStart(float(cold_start.cost), float(cold_start.ramp), float(cold_start.grace)))
    load = (MachineLoad(per_thread, preempts, scale, weight, scenario.machine_wakeup_preempts_from, waits,
                        streams.stream("machine/wakeup_waits") if waits > 0.0 else None, cold)
            if per_thread > 0.0 or preempts or crowded or scale > 0.0 or waits > 0.0 or cold is not None else None)
    for broker_id in layout.broker_ids:
        cluster.add_broker(broker_server_of(scenario, clock, broker_id, streams, controller_link, observer, fetchers,
                                            load))
    cluster.assign_replicas({topic.name: log_config_of(topic) for topic in scenario.topics})
    # The KRaft controller knows the same cluster: every broker registered and unfenced, every partition led
    # by its preferred replica with all replicas in the ISR. Each broker heartbeats from now on and applies
    # what the controller commits.
    controller.bootstrap(
        layout.broker_ids,
        {topic: [tuple(layout.replicas[tp]) for tp in tps] for topic, tps in layout.partitions_by_topic.items()},
        frozenset(t.name for t in scenario.topics if t.unclean_leader_election_enable),
        {t.name: int(t.min_insync_replicas) for t in scenario.topics},
    )
    cluster.start_lifecycles(scenario.broker.broker_heartbeat_interval_ms,
                             scenario.cluster.racks if scenario.cluster is not None else None)
    cluster.draw_process_starts()
    cluster.producers.extend(producer_of(p, i, cluster, streams, ids, observer) for i, p in enumerate(scenario.producers))
    cluster.consumers.extend(consumer_of(c, cluster, streams, ids, observer) for c in scenario.consumers)
    return cluster
