"""Which brokers exist and which replicas each partition has: what ``run/build.py`` builds a run from.

A scenario without a ``cluster:`` section means what it always meant: broker 0 leads every partition and
brokers 1..RF-1 follow it, replicas ``[0, 1, ..., RF-1]`` (preferred leader first). Cluster scenarios get
their brokers from ``cluster.brokers`` and their replicas from Kafka's placer or an explicit
``replica_assignment`` (added with the ``cluster:`` section).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkasim.broker.records import TopicPartition
from kafkasim.controller.java_random import JavaRandom
from kafkasim.controller.striped_replica_placer import StripedReplicaPlacer, UsableBroker
from kafkasim.sim.random_streams import RandomStreams

if TYPE_CHECKING:
    from kafkasim.scenario import Scenario


@dataclass(frozen=True, slots=True)
class ClusterLayout:
    """The brokers (ids, racks) and every partition's replicas, preferred leader first.

    ``clustered`` is True for a scenario with a ``cluster:`` section (every broker a full node); False for
    the single-leader scenarios, whose names (``follower-<id>``) and stories are kept.
    """

    broker_ids: tuple[int, ...]
    racks: Mapping[int, str | None]
    replicas: Mapping[TopicPartition, tuple[int, ...]]
    partitions_by_topic: Mapping[str, tuple[TopicPartition, ...]]
    clustered: bool = False

    def leader_of(self, tp: TopicPartition) -> int:
        """The preferred replica, where leadership starts (Kafka: ``replicas[0]``)."""
        return self.replicas[tp][0]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp, replicas in self.replicas.items() if replicas[0] == broker_id]

    def partitions_followed_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp, replicas in self.replicas.items() if broker_id in replicas[1:]]


def single_leader_layout(scenario: Scenario) -> ClusterLayout:
    """Broker 0 leads every partition; brokers 1..RF-1 of each topic follow it."""
    broker_ids = tuple(range(scenario.max_replication_factor))
    replicas: dict[TopicPartition, tuple[int, ...]] = {}
    by_topic: dict[str, tuple[TopicPartition, ...]] = {}
    for topic in scenario.topics:
        tps = tuple(TopicPartition(topic.name, p) for p in range(topic.partitions))
        by_topic[topic.name] = tps
        for tp in tps:
            replicas[tp] = tuple(range(topic.replication_factor))
    return ClusterLayout(broker_ids, {b: None for b in broker_ids}, replicas, by_topic, clustered=False)


PLACEMENT_STREAM = "controller/placement"


def placed_layout(scenario: Scenario, seed: int | None = None) -> ClusterLayout:
    """Every broker of ``cluster:``; each topic's replicas from its ``replica_assignment`` or Kafka's placer.

    One placer with one ``java.util.Random`` serves every topic, in the scenario's order, as the controller's
    one ``StripedReplicaPlacer`` does (``ReplicationControlManager.createTopic``); the ``Random`` is seeded
    from the run's named stream ``controller/placement``, so the same seed gives the same layout. A topic
    with an explicit assignment draws nothing (Kafka does not call the placer for it). All brokers are
    registered and unfenced when the topics are created. ``seed`` is the run's (``scenario.seed`` unless a
    run overrides it).
    """
    cluster = scenario.cluster
    assert cluster is not None
    stream = RandomStreams(scenario.seed if seed is None else seed).stream(PLACEMENT_STREAM)
    placer = StripedReplicaPlacer(JavaRandom(stream.getrandbits(64)))
    brokers = [UsableBroker(b, cluster.rack_of(b), fenced=False) for b in cluster.broker_ids]
    replicas: dict[TopicPartition, tuple[int, ...]] = {}
    by_topic: dict[str, tuple[TopicPartition, ...]] = {}
    for topic in scenario.topics:
        tps = tuple(TopicPartition(topic.name, p) for p in range(topic.partitions))
        by_topic[topic.name] = tps
        # Scenario validation refused what the placer would (RF > brokers): it cannot raise here.
        assignment = topic.replica_assignment or placer.place(topic.partitions, topic.replication_factor, brokers)
        for tp, assigned in zip(tps, assignment, strict=True):
            replicas[tp] = tuple(assigned)
    racks = {b: cluster.rack_of(b) for b in cluster.broker_ids}
    return ClusterLayout(tuple(cluster.broker_ids), racks, replicas, by_topic, clustered=True)


def cluster_layout(scenario: Scenario, seed: int | None = None) -> ClusterLayout:
    """The layout a run of ``scenario`` (with the run's ``seed``, by default the scenario's) is built from:
    placed for a ``cluster:``, the single leader otherwise."""
    if scenario.cluster is None:
        return single_leader_layout(scenario)
    return placed_layout(scenario, seed)
