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


def cluster_layout(scenario: Scenario) -> ClusterLayout:
    """The layout a run of ``scenario`` is built from."""
    return single_leader_layout(scenario)
