"""A scenario's configs as a real cluster takes them: broker, controller, topic and client properties, what a
real cluster cannot take (refused before the run, one line naming it) and the simulator-only knobs it
ignores (listed once at the start as "not applied on a real cluster").

Kafka's own keys pass through under their own names. Simulator-only knobs (handler and network costs,
link latencies and bandwidths, NICs, the controller's link latency and metadata propagation, the
followers' append costs, the hosts' drawn stalls) have no Kafka key: a real cluster has its own costs and its
own garbage collections. What no real cluster here can
do is refused: a slow disk, a link_delay whose extra is a distribution or not whole milliseconds (Toxiproxy's
latency toxic adds a constant: kafkasim.real.link_proxies), a link_delay or connection_reset (both through
proxies on 127.0.0.1) in a scenario with a network_partition or link_drop (both through network namespaces:
kafkasim.real.netns), a connection_reset of a broker's every connection, a network_partition or link_drop
without root, one that would cut some of the load driver's clients but not all, a link_drop of a broker or
follower, a half_open connection, a pause of a client, the delay-queue purgatory (Kafka 0.8's), a segment
size below Kafka 4's minimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkasim.real import netns
from kafkasim.real.link_proxies import extra_problem
from kafkasim.run.cluster_layout import ClusterLayout
from kafkasim.scenario import Scenario
from kafkasim.scenario.broker import HandlerCosts, PerBrokerConfig
from kafkasim.scenario.clients import ConsumerConfig, FollowerCosts, ProducerConfig
from kafkasim.scenario.cluster import NicConfig
from kafkasim.scenario.controller import ControllerConfig
from kafkasim.scenario.faults import (
    ConnectionResetFault,
    LinkDelayFault,
    LinkDropFault,
    NetworkPartitionFault,
)

CLIENTS_HOST = "clients"
"""The load driver's host in a run with network faults: every producer and consumer (one JVM)."""
OBSERVER_HOST = "observer"
"""The host of the final audit: never cut."""
MIN_SEGMENT_BYTES = 1024 * 1024
"""Kafka 4's smallest segment.bytes / log.segment.bytes (LogConfig, KIP-1030)."""

_PER_BROKER_KEYS = [f.alias for n, f in PerBrokerConfig.model_fields.items() if f.alias and n != "costs"]
_CLUSTER_WIDE_BROKER_KEYS = (
    "broker.heartbeat.interval.ms", "message.max.bytes", "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms",
    "log.index.size.max.bytes", "log.index.interval.bytes", "log.retention.ms", "log.retention.bytes",
    "log.retention.check.interval.ms", "min.insync.replicas", "unclean.leader.election.enable",
    "default.replication.factor", "num.partitions",
)
_TOPIC_KEYS = ("min.insync.replicas", "unclean.leader.election.enable", "segment.bytes", "segment.ms",
               "segment.jitter.ms", "segment.index.bytes", "index.interval.bytes", "max.message.bytes",
               "retention.ms", "retention.bytes")
# CommonClientConfigs' connection keys, the same for producers and consumers.
_CONNECTION_KEYS = ("reconnect.backoff.ms", "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
                    "socket.connection.setup.timeout.max.ms")
_PRODUCER_KEYS = ("acks", "linger.ms", "batch.size", "max.in.flight.requests.per.connection", "request.timeout.ms",
                  "delivery.timeout.ms", "retries", "retry.backoff.ms", "retry.backoff.max.ms", "buffer.memory",
                  "max.block.ms", "enable.idempotence", *_CONNECTION_KEYS)
_CONSUMER_KEYS = ("fetch.min.bytes", "fetch.max.wait.ms", "max.partition.fetch.bytes", "fetch.max.bytes",
                  "request.timeout.ms", *_CONNECTION_KEYS)


class RefusedOnKafka(ValueError):
    """What the scenario asks that a real cluster here cannot do; the message is one line per problem."""


@dataclass
class KafkaConfigs:
    brokers: dict[int, dict[str, str]]
    controller: dict[str, str]
    topics: list[dict[str, Any]]
    producers: list[dict[str, str]]
    consumers: list[dict[str, str]]
    not_applied: list[str] = field(default_factory=list)
    features: dict[str, int] = field(default_factory=dict)
    """Feature levels the storage is formatted with (``kafka-storage format --feature NAME=LEVEL``)."""


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _dumped(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", by_alias=True))


def refusals(scenario: Scenario) -> list[str]:
    """Every fault or config of ``scenario`` a real cluster here cannot take, one line each."""
    problems = []
    for i, fault in enumerate(scenario.faults):
        where = f"faults[{i}] ({fault.type}"
        if isinstance(fault, NetworkPartitionFault):
            problems += [f"{where} {fault.target}): {why}" for why in _partition_problems(scenario, fault)]
        elif isinstance(fault, LinkDropFault):
            problems += [f"{where} {fault.target}): {why}" for why in _link_drop_problems(scenario, fault)]
        elif isinstance(fault, LinkDelayFault):
            # Through Toxiproxy's proxies on 127.0.0.1 (kafkasim.real.link_proxies).
            if (why := extra_problem(fault)) is not None:
                problems.append(f"{where} {fault.target}): {why}")
            problems += [f"{where} {fault.target}): {why}" for why in _proxy_problems(scenario, "delay")]
        elif isinstance(fault, ConnectionResetFault):
            # Through Toxiproxy's proxies on 127.0.0.1 (kafkasim.real.link_proxies): a client's connections, or a
            # follower's replica fetcher's.
            if scenario.target_kind(fault.target) == "broker":
                problems.append(f"{where} {fault.target}): a broker's connections are every client's and every "
                                "other broker's fetcher's to it and its own fetchers'; only a producer's, a "
                                "consumer's or a follower's can be reset on a real cluster here (each through its "
                                "own proxies); reset those, or run the simulation")
            problems += [f"{where} {fault.target}): {why}" for why in _proxy_problems(scenario, "reset")]
        elif fault.type == "half_open":
            problems.append(f"{where} {fault.target}): a half-open connection needs a box that forgets one open "
                            "connection while new ones get through (a NAT's or firewall's state table); neither "
                            "Toxiproxy nor the network namespaces here do that; run the simulation")
        elif fault.type == "slow_disk":
            problems.append(f"{where} {fault.target}): a real broker's disk cannot be slowed here (no device "
                            "mapper or cgroup I/O limit is set up); remove it or run the simulation")
        elif fault.type == "pause" and scenario.target_kind(fault.target) in ("producer", "consumer"):
            problems.append(f"{where} {fault.target}): the clients share one driver JVM, so one client cannot be "
                            "paused alone; pause a broker, or run the simulation")
    for b in scenario.broker_ids:
        if scenario.broker_for(b).purgatory != "timing_wheel":
            problems.append(f"broker.purgatory: {scenario.broker_for(b).purgatory} is Kafka 0.8's purgatory; a "
                            "real Kafka 4 broker has the timing wheel only")
            break
    for t in scenario.topics:
        if t.segment_bytes < MIN_SEGMENT_BYTES:
            problems.append(f"topics[{scenario.topics.index(t)}].segment.bytes: {t.segment_bytes} is below Kafka 4's "
                            f"minimum of {MIN_SEGMENT_BYTES} (1 MiB), which a real broker refuses")
    if scenario.broker.log_segment_bytes < MIN_SEGMENT_BYTES:
        problems.append(f"broker.log.segment.bytes: {scenario.broker.log_segment_bytes} is below Kafka 4's minimum "
                        f"of {MIN_SEGMENT_BYTES} (1 MiB)")
    return problems


def _netns_fault(fault: object) -> bool:
    """A fault a real run makes with network namespaces (kafkasim.real.netns)."""
    return isinstance(fault, NetworkPartitionFault | LinkDropFault)


def _proxy_problems(scenario: Scenario, what: str) -> list[str]:
    """Why a fault through the Toxiproxy proxies cannot run alongside ``scenario``'s other faults, if it cannot."""
    if not any(_netns_fault(f) for f in scenario.faults):
        return []
    # kafkasim.real.netns joins the hosts' namespaces through a router namespace only: nothing in them reaches
    # the machine's own loopback, where the proxies listen.
    return [f"the {what}'s proxies listen on this machine's 127.0.0.1, which no host can reach once a "
            "network_partition or a link_drop puts every host in a network namespace of its own; run the faults "
            "in separate scenarios, or run the simulation"]


def _link_drop_problems(scenario: Scenario, fault: LinkDropFault) -> list[str]:
    """Why a real cluster here cannot take ``fault``'s link down (kafkasim.real.netns), if it cannot: its target's
    links are cut silently in the router for the outage, as a network_partition's are."""
    reason = netns.unavailable_reason()
    if reason is not None:
        return [f"{reason}; remove it or run the simulation"]
    kind = scenario.target_kind(fault.target)
    if kind not in ("producer", "consumer"):
        # A broker's host carries its fetchers' connections and every other connection to it: the cut of its
        # host's links would cut them all, where kafkasim's link_drop of a broker or follower is its fetchers'.
        return ["only a producer's or consumer's link can be taken down on a real cluster here (a broker's host "
                "carries every connection to it, not only its fetchers'); use a network_partition, or run the "
                "simulation"]
    clients = sorted({p.name for p in scenario.producers} | {c.name for c in scenario.consumers})
    if clients != [fault.target]:
        return [f"the load driver's clients share one host, so taking {fault.target}'s link down would take "
                f"{', '.join(c for c in clients if c != fault.target)}'s down too; a scenario with this client "
                "alone can run it, or run the simulation"]
    return []


def _partition_problems(scenario: Scenario, fault: NetworkPartitionFault) -> list[str]:
    """Why a real cluster here cannot cut ``fault``'s links (kafkasim.real.netns), if it cannot."""
    reason = netns.unavailable_reason()
    if reason is not None:
        return [f"{reason}; remove it or run the simulation"]
    clients = {p.name for p in scenario.producers} | {c.name for c in scenario.consumers}
    named = [[h for h in side if h in clients] for side in fault.sides]
    # Every client runs in the one load-driver JVM, on one host: a cut of some clients only would cut all.
    if any(named) and (all(named) or set(sum(named, [])) != clients):
        return ["the load driver's clients share one host: a side may name clients only if it names all of "
                f"them ({', '.join(sorted(clients))}) and the other side names none; name brokers and the "
                "controller, or run the simulation"]
    return []


def network_hosts(scenario: Scenario, layout: ClusterLayout) -> list[str] | None:
    """The hosts a real run with ``network_partition`` or ``link_drop`` faults puts each in a network namespace
    (the controller, the brokers, the load driver's ``clients``, the ``observer`` that polls JMX and audits the
    logs), or None without such faults: everything then runs on 127.0.0.1."""
    if not any(_netns_fault(f) for f in scenario.faults):
        return None
    return ["controller", *(f"broker-{b}" for b in layout.broker_ids), CLIENTS_HOST, OBSERVER_HOST]


def partition_host(name: str) -> str:
    """The host of a side's entry: a broker, the controller, or the clients' host for a client's name."""
    if name == "controller" or name.startswith("broker-"):
        return name
    return CLIENTS_HOST


def not_applied(scenario: Scenario) -> list[str]:
    """The simulator-only knobs ``scenario`` sets (or takes by default) that a real cluster ignores."""
    notes = ["broker.costs (handler and network service times: the real broker has its own)"]
    if scenario.hardware is not None:
        notes.append(f"hardware (preset {scenario.hardware.preset}: the real brokers run on this machine's hardware)")
    if any(_dumped(o.costs) != _dumped(HandlerCosts()) for o in (scenario.cluster.overrides if scenario.cluster else [])):
        notes.append("cluster.overrides[].costs")
    if _dumped(scenario.followers.costs) != _dumped(FollowerCosts()):
        notes.append("followers.costs")
    links = "network.default_link (latency, bandwidth: clients and brokers talk over 127.0.0.1 here)"
    if any("link" in c.model_fields_set for c in [*scenario.producers, *scenario.consumers]) or \
            "link" in scenario.followers.model_fields_set:
        links += ", and the producers', consumers' or followers' own link"
    notes.append(links)
    if "tcp" in scenario.network.model_fields_set:
        notes.append("network.tcp (the machine's own kernel settings apply)")
    if scenario.cluster is not None and _dumped(scenario.cluster.nic) != _dumped(NicConfig()):
        notes.append("cluster.nic (the brokers share this machine's loopback)")
    controller = _dumped(scenario.controller)
    default = _dumped(ControllerConfig())
    for key in ("link_latency", "metadata_propagation", "metadata_apply"):
        if controller.get(key) != default.get(key) or key == "link_latency":
            notes.append(f"controller.{key}")
    if any(getattr(f, "restart_after", None) is not None for f in scenario.faults):
        notes.append("broker.startup (a restarted real broker takes its own time to register and be unfenced)")
    stalling = [f"{where}stalls" for where, stalls in (
        ("machine_", scenario.machine_stalls),
        ("clients_", scenario.clients_stalls),
        ("broker.", scenario.broker.stalls),
        *((f"cluster.overrides[{o.broker}].", o.stalls) for o in (scenario.cluster.overrides if scenario.cluster else [])
          if "stalls" in o.model_fields_set),
        *((f"producers[{p.name}].", p.stalls) for p in scenario.producers),
        *((f"consumers[{c.name}].", c.stalls) for c in scenario.consumers),
    ) if stalls is not None and stalls.enabled]
    if stalling:
        notes.append(f"{', '.join(stalling)} (drawn stalls: the real JVMs collect garbage on their own)")
    costing = [*(f"producers[{p.name}].costs" for p in scenario.producers if p.costs is not None),
               *(f"consumers[{c.name}].costs" for c in scenario.consumers if c.costs is not None)]
    if costing:
        notes.append(f"{', '.join(costing)} (the real clients' processing takes its own time)")
    cores = [where for where, value in (
        ("broker.cores", scenario.broker.cores),
        *((f"cluster.overrides[{o.broker}].cores", o.cores) for o in (scenario.cluster.overrides if scenario.cluster else [])
          if "cores" in o.model_fields_set),
    ) if value is not None]
    if cores:
        notes.append(f"{', '.join(cores)} (the real brokers share this machine's cores)")
    layouts = [where for where, value in (
        ("broker.connection_layout", scenario.broker.connection_layout),
        *((f"cluster.overrides[{o.broker}].connection_layout", o.connection_layout)
          for o in (scenario.cluster.overrides if scenario.cluster else []) if "connection_layout" in o.model_fields_set),
    ) if value != "round_robin"]
    if layouts:
        notes.append(f"{', '.join(layouts)} (a real broker's Acceptor assigns every connection it accepts round robin)")
    notes.append("clock (a real cluster runs in real time)")
    return notes


def kafka_configs(scenario: Scenario, layout: ClusterLayout) -> KafkaConfigs:
    """The properties of every broker, the controller, every topic and client of ``scenario``."""
    brokers: dict[int, dict[str, str]] = {}
    replication = max(t.replication_factor for t in scenario.topics)
    internal_rf = str(min(3, len(layout.broker_ids)))
    for b in layout.broker_ids:
        config = _dumped(scenario.broker_for(b))
        props = {key: _value(config[key]) for key in _PER_BROKER_KEYS if key in config}
        props.update({key: _value(config[key]) for key in _CLUSTER_WIDE_BROKER_KEYS if key in config})
        props.update({
            # Internal topics sized to the cluster (a 1-broker cluster cannot have 3 replicas).
            "offsets.topic.replication.factor": internal_rf,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": internal_rf,
            "transaction.state.log.min.isr": str(min(2, len(layout.broker_ids))),
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "log.message.timestamp.type": "CreateTime",
            "controlled.shutdown.enable": "true",
        })
        if scenario.cluster is not None and scenario.cluster.racks is not None:
            props["broker.rack"] = scenario.cluster.racks[b]
        brokers[b] = props
    c = scenario.controller
    controller = {
        "broker.session.timeout.ms": _value(c.broker_session_timeout_ms),
        "controller.quorum.append.linger.ms": _value(c.controller_quorum_append_linger_ms),
        "unclean.leader.election.interval.ms": _value(c.unclean_leader_election_interval_ms),
        "auto.leader.rebalance.enable": _value(c.auto_leader_rebalance_enable),
        "leader.imbalance.check.interval.seconds": _value(c.leader_imbalance_check_interval_seconds),
        "broker.heartbeat.interval.ms": _value(scenario.broker.broker_heartbeat_interval_ms),
    }
    for props in brokers.values():
        props["broker.session.timeout.ms"] = controller["broker.session.timeout.ms"]
        props["auto.leader.rebalance.enable"] = controller["auto.leader.rebalance.enable"]
        props["leader.imbalance.check.interval.seconds"] = controller["leader.imbalance.check.interval.seconds"]
    topics = []
    for t in scenario.topics:
        config = _dumped(t)
        topics.append({
            "name": t.name,
            "replicas": [list(layout.replicas[tp]) for tp in layout.partitions_by_topic[t.name]],
            "config": {key: _value(config[key]) for key in _TOPIC_KEYS if key in config},
        })
    del replication
    features = {"eligible.leader.replicas.version": c.eligible_leader_replicas_version}
    return KafkaConfigs(brokers, controller, topics,
                        [producer_properties(p) for p in scenario.producers],
                        [consumer_properties(c) for c in scenario.consumers],
                        not_applied(scenario), features)


def producer_properties(p: ProducerConfig) -> dict[str, str]:
    config = _dumped(p)
    props = {"client.id": p.name}
    for key in _PRODUCER_KEYS:
        if key == "delivery.timeout.ms" and "delivery_timeout_ms" not in p.model_fields_set:
            # Kafka raises a default one to linger.ms + request.timeout.ms itself, as the scenario did.
            props[key] = _value(p.delivery_timeout_ms)
        elif key in config:
            props[key] = "all" if key == "acks" and config[key] in (-1, "all") else _value(config[key])
    # kafkasim's partitioner names: sticky is Kafka's built-in partitioner for records without a key; a
    # round-robin or random producer's partitions come with each record (kafkasim.real.schedule).
    return props


def consumer_properties(c: ConsumerConfig) -> dict[str, str]:
    config = _dumped(c)
    props = {"client.id": c.name, "enable.auto.commit": "false", "auto.offset.reset": "earliest"}
    props.update({key: _value(config[key]) for key in _CONSUMER_KEYS if key in config})
    return props
