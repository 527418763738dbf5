"""The layout a run is built from: the single leader without `cluster:`, Kafka's placement with it."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from kafkasim.broker.records import TopicPartition
from kafkasim.run.cluster_layout import cluster_layout
from kafkasim.scenario import Scenario, load_scenario


def cluster(brokers: int, topics: str, *, seed: int = 0, extra: str = "") -> Scenario:
    return load_scenario(
        f"name: c\ndescription: d\nseed: {seed}\nduration: 10s\ncluster: {{brokers: {brokers}{extra}}}\n"
        f"topics: {topics}\n"
    )


def test_without_a_cluster_broker_0_leads_everything() -> None:
    s = load_scenario("name: c\ndescription: d\nduration: 10s\ntopics: [{name: t, partitions: 2, replication.factor: 3}]\n")
    layout = cluster_layout(s)
    assert not layout.clustered
    assert layout.broker_ids == (0, 1, 2)
    assert dict(layout.replicas) == {TopicPartition("t", 0): (0, 1, 2), TopicPartition("t", 1): (0, 1, 2)}


def test_same_seed_same_layout_and_the_seed_matters() -> None:
    topics = "[{name: t, partitions: 12, replication.factor: 3}, {name: u, partitions: 5, replication.factor: 2}]"
    layouts = [dict(cluster_layout(cluster(5, topics, seed=seed)).replicas) for seed in (1, 1, 2, 3, 4)]
    assert layouts[0] == layouts[1]
    assert any(other != layouts[0] for other in layouts[2:])
    assert cluster_layout(cluster(5, topics, seed=1)).clustered


@pytest.mark.parametrize(("brokers", "partitions"), [(3, 6), (3, 7), (4, 3), (5, 12), (6, 600)])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_leaders_spread_over_the_brokers(brokers: int, partitions: int, seed: int) -> None:
    # StripedReplicaPlacer, one rack: the leaders of a topic take the brokers in turn, so each leads
    # floor(P/N) or ceil(P/N) partitions; every partition has RF distinct replicas.
    s = cluster(brokers, f"[{{name: t, partitions: {partitions}, replication.factor: 3}}]", seed=seed)
    layout = cluster_layout(s)
    led = Counter(layout.leader_of(tp) for tp in layout.partitions_by_topic["t"])
    counts = [led.get(b, 0) for b in range(brokers)]
    assert min(counts) >= partitions // brokers and max(counts) <= math.ceil(partitions / brokers), counts
    assert all(len(set(r)) == 3 and set(r) <= set(range(brokers)) for r in layout.replicas.values())
    assert sum(counts) == partitions


def test_rack_aware_placement_spreads_each_partition_over_the_racks() -> None:
    s = cluster(6, "[{name: t, partitions: 30, replication.factor: 3}]", extra=", racks: [a, a, b, b, c, c]")
    layout = cluster_layout(s)
    assert layout.racks == {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    for replicas in layout.replicas.values():
        assert len({layout.racks[b] for b in replicas}) == 3, replicas
    led = Counter(layout.leader_of(tp) for tp in layout.replicas)
    assert sorted(led.values()) == [5] * 6


def test_rack_aware_with_fewer_racks_than_replicas_still_uses_every_rack() -> None:
    s = cluster(4, "[{name: t, partitions: 8, replication.factor: 3}]", extra=", racks: [x, x, y, y]")
    layout = cluster_layout(s)
    for replicas in layout.replicas.values():
        assert {layout.racks[b] for b in replicas} == {"x", "y"}, replicas


def test_an_explicit_assignment_is_respected_and_draws_nothing() -> None:
    placed = "{name: p, partitions: 4, replication.factor: 2}"
    manual = "{name: m, replica_assignment: [[2, 0], [1, 2], [0, 1]]}"
    layout = cluster_layout(cluster(3, f"[{manual}, {placed}]", seed=5))
    assert [layout.replicas[TopicPartition("m", p)] for p in range(3)] == [(2, 0), (1, 2), (0, 1)]
    assert [layout.leader_of(TopicPartition("m", p)) for p in range(3)] == [2, 1, 0]
    # Kafka does not call the placer for a manual assignment: the next topic's placement is unchanged.
    alone = cluster_layout(cluster(3, f"[{placed}]", seed=5))
    assert [layout.replicas[tp] for tp in alone.partitions_by_topic["p"]] == list(alone.replicas.values())


def test_every_topic_draws_its_own_offsets_in_scenario_order() -> None:
    # One placer (one java.util.Random) for every topic, as the controller has: the second of two identical
    # topics is placed from later draws, so it is not simply a copy of the first.
    t = "{name: a, partitions: 6, replication.factor: 2}, {name: b, partitions: 6, replication.factor: 2}"
    layouts = [cluster_layout(cluster(6, f"[{t}]", seed=seed)) for seed in range(5)]
    differ = [[lay.replicas[TopicPartition("a", p)] for p in range(6)] != [lay.replicas[TopicPartition("b", p)]
              for p in range(6)] for lay in layouts]
    assert any(differ)


def test_a_crash_of_a_broker_that_leads_is_accepted() -> None:
    s = load_scenario(
        "name: c\ndescription: d\nduration: 10s\ncluster: {brokers: 3}\n"
        "topics: [{name: t, replica_assignment: [[0, 1]]}]\n"
        "faults: [{type: crash, target: broker-0, at: 1s}]\n"
    )
    assert cluster_layout(s).partitions_led_by(0) == [TopicPartition("t", 0)]


def test_a_crash_of_a_broker_that_leads_nothing_is_accepted() -> None:
    s = load_scenario(
        "name: c\ndescription: d\nduration: 10s\ncluster: {brokers: 3}\n"
        "topics: [{name: t, replica_assignment: [[0, 1]]}]\n"
        "faults: [{type: crash, target: broker-1, at: 1s, restart_after: 1s}]\n"
    )
    assert cluster_layout(s).partitions_followed_by(1) == [TopicPartition("t", 0)]


def test_a_run_seed_places_as_that_seed_does() -> None:
    # `kafkasim run --seed 7` (Engine's seed) places replicas as the scenario with seed 7 would.
    topics = "[{name: t, partitions: 8, replication.factor: 2}]"
    assert cluster_layout(cluster(4, topics, seed=1), seed=7) == cluster_layout(cluster(4, topics, seed=7))
    assert cluster_layout(cluster(4, topics, seed=1), seed=None) == cluster_layout(cluster(4, topics, seed=1))
