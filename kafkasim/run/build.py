"""Scenario -> components: the brokers (the leader and its followers), producers, consumers, links.

Every component gets, at construction, its configuration from the validated ``Scenario`` (canonical
units), its own named random stream (``RandomStreams``, so adding a producer never changes a follower's
draws) and the run's one observer. Nothing is wired afterwards, so the order in which components are
built does not matter; the order in which they *start* does (``Engine._start``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkasim.broker.config import BrokerConfig as BrokerStateConfig
from kafkasim.broker.config import LogConfig
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.config import ArrivalConfig, ConsumerClientConfig, ProducerClientConfig
from kafkasim.clients.consumer import Consumer
from kafkasim.clients.producer import Producer
from kafkasim.network.connection import Connection, NetworkPath
from kafkasim.network.ids import IdSource
from kafkasim.network.observer import Observer
from kafkasim.network.socket_server import ProcessorCosts
from kafkasim.server.alter_partition_manager import DelayedAlterPartitionManager
from kafkasim.server.broker_server import BrokerServer, BrokerServerConfig, BrokerServerCosts
from kafkasim.server.kafka_request_handler import RequestHandlerCosts
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig, ReplicaFetcherThread
from kafkasim.sim.distributions import sampler_from_spec, zero_arg_sampler
from kafkasim.sim.random_streams import RandomStreams

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.scenario import Scenario
    from kafkasim.scenario.broker import BrokerConfig as ScenarioBrokerConfig
    from kafkasim.scenario.clients import ConsumerConfig, ProducerConfig
    from kafkasim.scenario.network import Link
    from kafkasim.sim.clock import SimClock

LEADER_ID = 0


def client_deadlines(scenario: Scenario) -> dict[str, float]:
    """How long each client may take to give a request an outcome: its request timeout, plus the time it
    spends paused (a paused client notices its timeouts only when it resumes)."""
    from kafkasim.server.replica_fetcher_thread import FOLLOWER_REQUEST_TIMEOUT_MS

    deadlines: dict[str, float] = {f"follower-{k}": FOLLOWER_REQUEST_TIMEOUT_MS for k in scenario.follower_ids}
    for p in scenario.producers:
        deadlines[p.name] = float(p.request_timeout_ms)
    for c in scenario.consumers:
        deadlines[c.name] = float(c.request_timeout_ms)
    for fault in scenario.faults:
        if fault.type == "pause" and fault.target in deadlines:
            deadlines[fault.target] += float(fault.duration)
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


def broker_state_config(scenario: Scenario) -> BrokerStateConfig:
    b = scenario.broker
    return BrokerStateConfig(
        replica_lag_time_max_ms=int(b.replica_lag_time_max_ms),
        fetch_max_bytes=b.fetch_max_bytes,
        producer_purgatory_purge_interval_requests=b.producer_purgatory_purge_interval_requests,
        fetch_purgatory_purge_interval_requests=b.fetch_purgatory_purge_interval_requests,
        purgatory_timer=b.purgatory,
    )


def producer_config_of(p: ProducerConfig) -> ProducerClientConfig:
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
    )


def consumer_config_of(c: ConsumerConfig) -> ConsumerClientConfig:
    return ConsumerClientConfig(
        name=c.name,
        fetch_min_bytes=c.fetch_min_bytes,
        fetch_max_wait_ms=c.fetch_max_wait_ms,
        max_partition_fetch_bytes=c.max_partition_fetch_bytes,
        fetch_max_bytes=c.fetch_max_bytes,
        request_timeout_ms=c.request_timeout_ms,
    )


def replica_fetcher_config_of(b: ScenarioBrokerConfig) -> ReplicaFetcherConfig:
    """The fetching broker's replica.fetch.* configs (broker configs in Kafka, ReplicationConfigs)."""
    return ReplicaFetcherConfig(
        wait_max_ms=b.replica_fetch_wait_max_ms,
        min_bytes=b.replica_fetch_min_bytes,
        max_bytes=b.replica_fetch_max_bytes,
        response_max_bytes=b.replica_fetch_response_max_bytes,
        backoff_ms=b.replica_fetch_backoff_ms,
    )


@dataclass
class Components:
    """Everything a run is made of, built from one scenario."""

    env: Environment
    clock: SimClock
    streams: RandomStreams
    config: BrokerStateConfig
    alter_partition: DelayedAlterPartitionManager
    ids: IdSource
    partitions_by_topic: dict[str, list[TopicPartition]]
    observer: Observer
    brokers: list[BrokerServer] = field(default_factory=list)
    producers: list[Producer] = field(default_factory=list)
    consumers: list[Consumer] = field(default_factory=list)
    links: dict[str, NetworkPath] = field(default_factory=dict)

    @property
    def leader(self) -> BrokerServer:
        """The broker that leads every partition (broker 0) in a scenario without a cluster."""
        return self.brokers[LEADER_ID]

    @property
    def replica_manager(self) -> ReplicaManager:
        return self.leader.replica_manager

    @property
    def followers(self) -> list[ReplicaFetcherThread]:
        """Every broker's replica fetcher threads, by broker id."""
        return [f for broker in self.brokers for f in broker.fetchers]


def _network_path(env: Environment, name: str, link: Link, streams: RandomStreams) -> NetworkPath:
    """The client's two links, each with its own latency distribution, bandwidth and random stream."""
    return NetworkPath.create(
        env,
        name,
        sampler_from_spec(link.latency_for("to_broker")),
        lambda stream: streams.stream(f"link/{stream}"),
        link.bandwidth_for("to_broker") / 1000.0,  # bytes per second -> bytes per ms
        from_broker_latency=sampler_from_spec(link.latency_for("from_broker")),
        from_broker_bandwidth_bytes_per_ms=link.bandwidth_for("from_broker") / 1000.0,
    )


def broker_costs(scenario: Scenario, broker_id: int, streams: RandomStreams) -> BrokerServerCosts:
    """The broker's service-time samplers, each on its own stream ``broker-<id>/costs/<name>``."""
    costs_cfg = scenario.broker.costs

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
        ),
    )


def broker_server_config(scenario: Scenario) -> BrokerServerConfig:
    b = scenario.broker
    return BrokerServerConfig(
        broker=broker_state_config(scenario),
        num_network_threads=b.num_network_threads,
        num_io_threads=b.num_io_threads,
        queued_max_requests=b.queued_max_requests,
        log_retention_check_interval_ms=float(b.log_retention_check_interval_ms),
    )


def build(scenario: Scenario, clock: SimClock, seed: int, observer: Observer) -> Components:
    """The run's components; ``observer`` (recording, and the invariant checks if enabled) reaches every
    one of them at construction."""
    env = clock.env
    streams = RandomStreams(seed)
    server_config = broker_server_config(scenario)
    config = server_config.broker
    alter_partition = DelayedAlterPartitionManager(
        env,
        zero_arg_sampler(scenario.broker.alter_partition_latency, streams.stream("controller/alter_partition")),
        observer,
    )
    leader = BrokerServer(
        env,
        clock.time,
        LEADER_ID,
        server_config,
        broker_costs(scenario, LEADER_ID, streams),
        log_rng=streams.stream(f"broker-{LEADER_ID}/log"),
        alter_partition_manager=alter_partition,
        observer=observer,
    )
    replica_manager = leader.replica_manager
    partitions_by_topic: dict[str, list[TopicPartition]] = {}
    follower_partitions: dict[int, list[tuple[TopicPartition, LogConfig, int]]] = {k: [] for k in scenario.follower_ids}
    for topic in scenario.topics:
        log_config = log_config_of(topic)
        tps = [TopicPartition(topic.name, p) for p in range(topic.partitions)]
        partitions_by_topic[topic.name] = tps
        replicas = list(range(topic.replication_factor))
        for tp in tps:
            replica_manager.create_partition(tp, log_config=log_config)
            replica_manager.make_leader(tp, replicas=replicas, leader_epoch=0, partition_epoch=0)
            for k in replicas[1:]:
                follower_partitions[k].append((tp, log_config, 0))

    ids = IdSource()
    c = Components(env, clock, streams, config, alter_partition, ids, partitions_by_topic, observer)
    c.brokers.append(leader)
    socket_server = leader.socket_server

    def connector(name: str, path: NetworkPath) -> Callable[[], Connection]:
        return lambda: Connection(env, name, path, socket_server, observer)

    f_cfg = scenario.followers
    assert f_cfg.link is not None
    for k in scenario.follower_ids:
        fetcher_config = replica_fetcher_config_of(scenario.broker_for(k))
        name = f"follower-{k}"
        links = c.links[name] = _network_path(env, name, f_cfg.link, streams)
        fetcher = ReplicaFetcherThread(
            env,
            k,
            fetcher_config,
            follower_partitions[k],
            clock.time,
            connector(name, links),
            zero_arg_sampler(f_cfg.costs.append, streams.stream(f"{name}/append")),
            zero_arg_sampler(f_cfg.costs.append_per_kib, streams.stream(f"{name}/append_per_kib")),
            ids,
            observer,
        )
        # Follower broker k: it leads nothing here; its replica fetcher copies the leader's partitions.
        c.brokers.append(
            BrokerServer(
                env,
                clock.time,
                k,
                server_config,
                broker_costs(scenario, k, streams),
                log_rng=streams.stream(f"broker-{k}/log"),
                alter_partition_manager=alter_partition,
                observer=observer,
                fetchers=[fetcher],
            )
        )
    for p_cfg in scenario.producers:
        assert p_cfg.link is not None
        links = c.links[p_cfg.name] = _network_path(env, p_cfg.name, p_cfg.link, streams)
        c.producers.append(
            Producer(
                env,
                producer_config_of(p_cfg),
                partitions_by_topic[p_cfg.topic],
                connector(p_cfg.name, links),
                zero_arg_sampler(p_cfg.record_size, streams.stream(f"{p_cfg.name}/record_size")),
                streams.stream(f"{p_cfg.name}/arrivals"),
                streams.stream(f"{p_cfg.name}/partitioner"),
                ids,
                observer,
            )
        )
    for c_cfg in scenario.consumers:
        assert c_cfg.link is not None
        links = c.links[c_cfg.name] = _network_path(env, c_cfg.name, c_cfg.link, streams)
        c.consumers.append(
            Consumer(env, consumer_config_of(c_cfg), partitions_by_topic[c_cfg.topic], connector(c_cfg.name, links), ids, observer)
        )
    return c
