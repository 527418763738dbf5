"""The run's top component (desmod's shape: a component owns its children): the ``Cluster`` owns the brokers,
the KRaft controller and the brokers' channels to it (``NodeToControllerChannelManager``), the clients and the network between
them (``ClusterNetwork``: every path and connection). It starts them in a fixed order, routes the requests a
client sends outside the request plane to the broker that answers them, and reports its children's counters
and open work.

``run/build.py`` makes the children from the scenario and hands them over; only the followers' and clients'
``Link`` models are read here, to make their network paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING

from kafkasim.broker.config import LogConfig
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.accumulator import ProducerBatch
from kafkasim.clients.consumer import Consumer
from kafkasim.clients.producer import Producer
from kafkasim.controller.quorum_controller import QuorumController
from kafkasim.network.connection import Connection, NetworkPath, open_connection
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.nic import Nic
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import NetworkPartitions, broker_host
from kafkasim.network.tcp import LINUX_TCP, TcpSettings
from kafkasim.run.cluster_layout import ClusterLayout
from kafkasim.server.broker_server import BrokerServer
from kafkasim.server.node_to_controller_channel_manager import NodeToControllerChannelManager
from kafkasim.server.replica_fetcher_manager import fetcher_thread_name
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig, ReplicaFetcherThread
from kafkasim.sim.distributions import sampler_from_spec, zero_arg_sampler
from kafkasim.sim.random_streams import RandomStreams

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.scenario.clients import FollowerCosts
    from kafkasim.scenario.network import Link

LEADER_ID = 0


def network_path(
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


def client_path_name(client: str, broker_id: int) -> str:
    """A cluster client's network path to one broker (its links' and random streams' name)."""
    return f"{client}/broker-{broker_id}"


def fetcher_name(layout: ClusterLayout, num_fetchers: int, broker_id: int, fetcher_id: int, source: int) -> str:
    """A fetcher thread's client name: ``follower-<k>`` in a scenario without a cluster (one thread per
    follower broker, the names its faults and results have always used), else Kafka's thread name
    ``ReplicaFetcherThread-<fetcherId>-<sourceBrokerId>`` on ``broker-<k>``."""
    if not layout.clustered and num_fetchers == 1:
        return f"follower-{broker_id}"
    return fetcher_thread_name(broker_id, fetcher_id, source)


class ClusterNetwork:
    """The network between the run's hosts: every network path (``links``, by name) and every connection.

    Any connection, opened whenever, between two hosts that a network partition separates obeys its cut. A
    client's paths: without a cluster its one path; in a cluster one per broker (leadership moves, so a
    client may talk to any of them), through that broker's NIC (a NIC belongs to the destination host, so
    one shared path cannot carry it), each with its own named streams (``link/<client>/broker-<id>/...``, so
    a path never used draws nothing)."""

    def __init__(self, env: Environment, streams: RandomStreams, observer: Observer,
                 brokers: Mapping[int, BrokerServer], partitions: NetworkPartitions | None,
                 nics: dict[int, Nic]) -> None:
        self.env = env
        self.streams = streams
        self.observer = observer
        self.brokers = brokers
        self.partitions = partitions
        self.nics = nics
        """Each broker host's NIC (cluster runs only)."""
        self.links: dict[str, NetworkPath] = {}
        self.client_paths: dict[str, list[NetworkPath]] = {}
        """A cluster client's paths, one per broker it talks to (a client's link faults act on all of them)."""
        self._hosts: dict[str, str] = {}  # a fetcher thread's name -> its broker's host (a client is its own host)
        self._connections: list[tuple[int, Connection]] = []  # (broker id, connection), closed ones pruned
        self.tcp: TcpSettings = LINUX_TCP
        """The run's TCP parameters (``kafkasim.network.tcp``)."""

    def connect(self, broker_id: int, name: str, path: NetworkPath) -> Connection:
        """A connection of ``name`` to broker ``broker_id`` over ``path``: its SYN reaches whichever process of
        the broker listens when it arrives (a restart makes a new one)."""
        partitions = self.partitions
        cut = None if partitions is None else partitions.between(self._hosts.get(name, name), broker_host(broker_id))
        broker = self.brokers[broker_id]
        connection = open_connection(self.env, name, path, lambda: broker.socket_server, self.observer, cut, self.tcp)
        connections = self._connections
        if len(connections) >= 64 and len(connections) & 63 == 0:
            connections[:] = [entry for entry in connections if not entry[1].closed]
        connections.append((broker_id, connection))
        return connection

    def open_connections(self, target: str) -> list[Connection]:
        """The open connections of ``target``: a client's (or fetcher thread's) by its name; a broker host's
        (``broker-<id>``) every connection to it and its own fetcher threads' connections."""
        return [connection for broker_id, connection in self._connections if not connection.closed and (
            connection.name == target or broker_host(broker_id) == target
            or self._hosts.get(connection.name) == target)]

    def is_fetcher(self, name: str) -> bool:
        """Whether the connection of client ``name`` is a follower's replica fetcher thread's (its path made by
        ``fetcher_path``, before it connects)."""
        return name in self._hosts

    def fetcher_path(self, name: str, broker_id: int, source: int, link: Link) -> NetworkPath:
        """A fetcher thread's path: replication leaves the leader's host (its NIC's outbound) and enters the
        follower's (inbound)."""
        self._hosts[name] = broker_host(broker_id)
        path = self.links[name] = network_path(self.env, name, link, self.streams,
                                               client_nic=self.nics.get(broker_id), broker_nic=self.nics.get(source))
        return path

    def client_connector(self, name: str, link: Link) -> Callable[[int], Connection]:
        """A client's paths, and how it connects to a broker over them."""
        if not self.nics:
            path = self.links[name] = network_path(self.env, name, link, self.streams)
            return lambda broker_id: self.connect(broker_id, name, path)
        paths: dict[int, NetworkPath] = {}
        for b, nic in self.nics.items():
            path_name = client_path_name(name, b)
            paths[b] = self.links[path_name] = network_path(self.env, path_name, link, self.streams, broker_nic=nic)
        self.client_paths[name] = list(paths.values())
        return lambda broker_id: self.connect(broker_id, name, paths[broker_id])


class ReplicaFetcherFactory:
    """Every broker's ``fetcher_factory`` (``ReplicaFetcherManager.createFetcherThread``): a fetcher thread
    talks to its source broker's ``SocketServer`` over a network path of its own (the followers' link
    config, its own random streams)."""

    def __init__(self, env: Environment, layout: ClusterLayout, configs: Mapping[int, ReplicaFetcherConfig],
                 link: Link, costs: FollowerCosts, streams: RandomStreams, ids: IdSource, observer: Observer,
                 network: ClusterNetwork) -> None:
        self.env = env
        self.layout = layout
        self.configs = configs  # per fetching broker
        self.link = link
        self.costs = costs
        self.streams = streams
        self.ids = ids
        self.observer = observer
        self.network = network

    def __call__(self, broker: BrokerServer, fetcher_id: int, source: int) -> ReplicaFetcherThread:
        streams = self.streams
        name = fetcher_name(self.layout, broker.config.num_replica_fetchers, broker.broker_id, fetcher_id, source)
        path = self.network.fetcher_path(name, broker.broker_id, source, self.link)
        connect = self.network.connect
        return ReplicaFetcherThread(
            self.env,
            name,
            broker.broker_id,
            source,
            self.configs[broker.broker_id],
            broker.replica_manager,
            lambda broker_id: connect(broker_id, name, path),
            zero_arg_sampler(self.costs.append, streams.stream(f"{name}/append")),
            zero_arg_sampler(self.costs.append_per_kib, streams.stream(f"{name}/append_per_kib")),
            self.ids,
            self.observer,
            connection_rng=streams.stream(f"{name}/connection_states"),
        )


class Cluster:
    """Everything a run is made of, built from one scenario (``run/build.py``)."""

    def __init__(self, env: Environment, streams: RandomStreams, controller: QuorumController,
                 controller_link: NodeToControllerChannelManager,
                 network: ClusterNetwork, layout: ClusterLayout,
                 partitions_by_topic: dict[str, list[TopicPartition]]) -> None:
        self.env = env
        self.streams = streams
        self.controller = controller
        self.controller_link = controller_link
        self.network = network
        self.layout = layout
        self.partitions_by_topic = partitions_by_topic
        self.brokers: list[BrokerServer] = []
        self.brokers_by_id: dict[int, BrokerServer] = controller_link.brokers
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        self.log_configs: dict[str, LogConfig] = {}
        # Clients route by leadership, starting from the layout's.
        self.leaders: Mapping[TopicPartition, int] = MappingProxyType({tp: r[0] for tp, r in layout.replicas.items()})

    # --- children ----------------------------------------------------------------------------------

    @property
    def links(self) -> dict[str, NetworkPath]:
        return self.network.links

    @property
    def nics(self) -> dict[int, Nic]:
        return self.network.nics

    @property
    def client_paths(self) -> dict[str, list[NetworkPath]]:
        return self.network.client_paths

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

    def add_broker(self, broker: BrokerServer) -> None:
        self.brokers_by_id[broker.broker_id] = broker
        self.brokers.append(broker)

    # --- wiring at build time ----------------------------------------------------------------------

    def assign_replicas(self, log_configs: dict[str, LogConfig]) -> None:
        """Each partition's preferred replica leads it with every replica in the ISR; every other replica's
        broker makes it a follower. Leaders first (every broker), then followers: a follower's fetcher
        thread, and so its connection, is created in partition order, broker by broker."""
        self.log_configs = log_configs
        layout = self.layout
        for tp, replicas in layout.replicas.items():
            self.brokers_by_id[replicas[0]].make_leader(tp, replicas, log_configs[tp.topic])
        for broker in self.brokers:
            for tp in layout.partitions_followed_by(broker.broker_id):
                replicas = layout.replicas[tp]
                broker.make_follower(tp, replicas[0], replicas, log_configs[tp.topic])

    def log_config_for(self, tp: TopicPartition) -> LogConfig:
        return self.log_configs[tp.topic]

    def start_lifecycles(self, heartbeat_interval_ms: int, racks: list[str] | None) -> None:
        """Each broker applies what the controller commits and heartbeats from now on, its heartbeats with a
        phase of their own (each broker started on its own: ``BrokerLifecycleManager``)."""
        link = self.controller_link
        for broker in self.brokers:
            b = broker.broker_id
            link.metadata_loader.subscribe(b, self.log_config_for, catch_up=False)
            lifecycle = link.lifecycle(b, heartbeat_interval_ms=heartbeat_interval_ms,
                                       rack=racks[b] if racks else None)
            registration = self.controller.image.brokers[b]
            phase = self.streams.stream(f"broker-{b}/heartbeat_phase").uniform(0.0, float(heartbeat_interval_ms))
            lifecycle.start_running(registration.epoch, first_heartbeat_ms=phase)

    def start(self) -> None:
        """Every child's first events. The order of first events is the order of ties at a simulated
        instant; the golden runs pin it."""
        for broker in self.brokers:
            broker.start_fetchers()
        for consumer in self.consumers:
            consumer.start()
        for producer in self.producers:
            producer.start()
        for broker in self.brokers:
            broker.start_purgatory_tasks()
        for broker in self.brokers:
            broker.start_log_retention()

    def draw_process_starts(self) -> None:
        """Each broker's process started before the run, at a moment of its own: its periodic isr-expiration
        runs fall at a phase a real cluster does not align (drawn from the seed, uniform over one period)."""
        for broker in self.brokers:
            period = float(broker.config.broker.isr_expiration_interval_ms)
            if period > 0:
                phase = self.streams.stream(f"broker-{broker.broker_id}/isr_expiration_phase").uniform(0.0, period)
                broker.set_started_ms(phase - period)

    # --- requests a client sends outside the request plane -----------------------------------------

    def metadata_of(self, topic: str) -> Callable[[], dict[TopicPartition, tuple[int, int]]]:
        """A client's Metadata request for ``topic``'s partitions."""
        return partial(self.metadata_for, self.partitions_by_topic[topic])

    def metadata_for(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """A client's Metadata request, answered by a broker's ``MetadataCache`` (``KRaftMetadataCache``);
        empty when no broker answers. Simplification: the lowest-id broker that is up and not paused answers
        (Kafka's client asks its ``leastLoadedNode``; a stopped JVM answers nothing, and the client's request
        to it would time out before it tried another), and the answer is read when the request arrives."""
        for broker_id in sorted(self.brokers_by_id):
            if self.brokers_by_id[broker_id].responsive:
                return self.controller_link.metadata_loader.metadata_cache[broker_id].topic_metadata(partitions)
        return {}

    def offset_for_leader_epoch(self, broker_id: int, tp: TopicPartition, epoch: int) -> int | None:
        """A consumer's OffsetsForLeaderEpoch request at ``broker_id`` (``BrokerServer.
        handle_offset_for_leader_epoch``); None when it cannot answer."""
        return self.brokers_by_id[broker_id].handle_offset_for_leader_epoch(tp, epoch)

    # --- what the children report ------------------------------------------------------------------

    def counters(self) -> dict[str, int | float]:
        """The children's counters, summed over the brokers (in a scenario without a cluster only broker 0
        leads, so the sums are its own counts)."""
        brokers: dict[str, int] = {}
        for broker in self.brokers:
            for name, value in broker.counters().items():
                brokers[name] = brokers.get(name, 0) + value
        replication = self.controller.core.replication_control
        counters: dict[str, int | float] = {
            # Who changed the ISR: the leaders (Kafka's IsrShrinksPerSec / IsrExpandsPerSec, through
            # AlterPartition) and the controller itself (fencing, controlled shutdown, elections).
            "isr_shrinks": brokers["isr_shrinks"],
            "isr_expands": brokers["isr_expands"],
            "controller_isr_shrinks": replication.isr_shrinks,
            "controller_isr_expands": replication.isr_expands,
            # The leaders it elected, by how (Kafka's "Setting new leader ... using ELR / an unclean election").
            "controller_clean_elections": replication.elections["clean"],
            "controller_elr_elections": replication.elections["ELR"],
            "controller_unclean_elections": replication.elections["unclean"],
            "controller_last_known_leader_elections": replication.elections["last known leader"],
            "failed_isr_updates": brokers["failed_isr_updates"],
            "produce_expires": brokers["produce_expires"],
            "fetch_expires_follower": brokers["fetch_expires_follower"],
            "fetch_expires_consumer": brokers["fetch_expires_consumer"],
            "alter_partition_requests": self.controller_link.alter_partition_manager.submitted,
            "requests_handled": brokers["requests_handled"],
            "messages_dropped": sum(path.dropped for path in self.links.values()),
            "reaper_passes": brokers["reaper_passes"],
        }
        disks = [broker.disk for broker in self.brokers if broker.disk is not None]
        if disks:  # runs that model the disk (a topic flushes): Kafka's LogFlushRateAndTimeMs, summed
            counters["log_flushes"] = sum(disk.flushes for disk in disks)
            counters["log_flush_time_ms"] = round(sum(disk.flush_time_ms for disk in disks), 6)
            counters["log_flush_max_ms"] = round(max(disk.max_flush_ms for disk in disks), 6)
            counters["disk_busy_ms"] = round(sum(disk.busy_ms for disk in disks), 6)
            if any(disk.page_cache_bytes >= 0 for disk in disks):  # page-cache misses: reads from the disk
                counters["disk_reads"] = sum(disk.reads for disk in disks)
                counters["disk_read_bytes"] = sum(disk.read_bytes for disk in disks)
        retransmitted = sum(path.retransmitted for path in self.links.values())
        if retransmitted:  # TCP retransmissions (kafkasim.network.tcp): only in runs whose network lost a message
            counters["messages_retransmitted"] = retransmitted
        return counters

    def unfinished_requests(self) -> list[RequestEnvelope]:
        """The clients' requests still in flight, in request order."""
        unfinished: list[RequestEnvelope] = []
        for producer in self.producers:
            unfinished.extend(envelope for envelope, _ in producer.unfinished())
        for consumer in self.consumers:
            unfinished.extend(consumer.unfinished())
        for follower in self.followers:
            unfinished.extend(follower.unfinished())
        unfinished.sort(key=lambda e: e.request_id)
        return unfinished

    def unacknowledged_batches(self) -> Iterator[tuple[Producer, ProducerBatch]]:
        """Each producer's batches never acknowledged: in a request in flight or in its accumulator."""
        for producer in self.producers:
            producer.catch_up()
            for _, batches in producer.unfinished():
                for b in batches:
                    # A request in flight still holds the batches that expired in it (Kafka's Sender keeps
                    # them in its in-flight list until the answer comes): those already have their row.
                    if not b.done:
                        yield producer, b
            yield from ((producer, b) for b in producer.building())
            yield from ((producer, b) for b in producer.accumulator.all_batches())
