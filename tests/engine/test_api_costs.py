"""A produce's append and a follower's fetch cost their handler more than a consumer's fetch
(``broker.costs.append``, per partition appended: Partition.appendRecordsToLeader; ``broker.costs.follower_fetch``,
per partition a follower's fetch names: Partition.updateFollowerFetchState). A real broker here measured a
produce's LocalTimeMs p50 at 0.17-0.20 ms, a follower fetch's at 0.14-0.16 and a consumer fetch's at 0.06-0.08
(three runs of scenarios/calibration_base.yaml on Kafka 4.3.1), which one request cost cannot give. 0 (the
default) changes nothing; a constant shows up whole in its API's LocalTimeMs and nowhere else."""

from __future__ import annotations

from typing import Any

import numpy as np

from kafkasim.run import run_scenario

from .support import consumer, producer, scenario
from .test_determinism import table_hash


def _run(acks: int | str = 1, partitions: int = 2, **costs: Any) -> Any:
    broker: dict[str, Any] = {"costs": {"request": "0.05ms", **costs}}
    return run_scenario(scenario(duration="2s", consumers=[consumer("c1")], broker=broker,
                                 topic={"partitions": partitions},
                                 producers=[producer("p1", acks=acks, rate="200/s", **{"linger.ms": 5})]))


def _local(result: Any, api: str) -> Any:
    rows = result.requests[result.requests["api"] == api]
    return rows["LocalTimeMs"].to_numpy(), rows


def test_zero_costs_are_todays_timing_exactly() -> None:
    base, zero = _run(), _run(append="0ms", follower_fetch="0ms", complete_fetch="0ms")
    assert table_hash(base.requests) == table_hash(zero.requests)
    assert table_hash(base.records) == table_hash(zero.records)


def test_an_append_costs_each_partition_of_a_produce_and_nothing_else() -> None:
    base, costly = _run(), _run(append="0.2ms")
    before, _ = _local(base, "Produce")
    after, rows = _local(costly, "Produce")
    # Each produce pays 0.2 ms per partition it appends to (a batch per partition: 1 or 2 here).
    assert np.allclose(after - 0.2 * rows["partitions"].to_numpy(), np.median(before), atol=0.02)
    for api in ("FetchConsumer", "FetchFollower"):
        assert np.median(_local(costly, api)[0]) == np.median(_local(base, api)[0])


def test_a_follower_fetch_costs_each_partition_it_names_and_a_consumers_does_not() -> None:
    base, costly = _run(), _run(follower_fetch="0.1ms")
    follower, rows = _local(costly, "FetchFollower")
    assert np.median(follower) >= np.median(_local(base, "FetchFollower")[0]) + 0.1 - 1e-9
    assert np.median(_local(costly, "FetchConsumer")[0]) == np.median(_local(base, "FetchConsumer")[0])
    assert np.median(_local(costly, "Produce")[0]) == np.median(_local(base, "Produce")[0])


def test_a_follower_fetch_pays_for_the_partitions_it_names_not_its_sessions_idle_ones() -> None:
    """An incremental fetch reads every partition of its session but names only those whose fetch offset moved,
    and only for those does Partition.updateFollowerFetchState move the follower's log end offset and try the
    high watermark. A real broker here: a FetchFollower's LocalTimeMs p50 was 0.18-0.20 ms with one partition and
    0.22-0.28 ms with six (Kafka 4.3.1); charged per partition read, kafkasim's grew from 0.17 to 0.61 ms."""
    base, costly = _run(partitions=6), _run(partitions=6, follower_fetch="0.1ms")
    _, rows = _local(costly, "FetchFollower")
    assert np.median(rows["partitions"]) == 1  # a session of six partitions; the fetch names the one that moved
    grown = np.median(_local(costly, "FetchFollower")[0]) - np.median(_local(base, "FetchFollower")[0])
    assert 0.05 < grown < 0.2, grown  # 0.1 ms for the partition it names; per partition read it was 0.6


def test_drawn_costs_come_from_their_own_streams_deterministically() -> None:
    spec = {"type": "lognormal", "median": "0.1ms", "p99": "1ms"}
    a, b = _run(append=spec, follower_fetch=spec), _run(append=spec, follower_fetch=spec)
    assert table_hash(a.requests) == table_hash(b.requests)
    assert _local(a, "Produce")[1]["LocalTimeMs"].nunique() > 50


def test_completing_a_parked_fetch_holds_the_request_that_woke_it() -> None:
    """``complete_fetch``: an acks=all produce's append wakes its two followers' parked fetches, which its
    handler answers before its local phase ends (KafkaApis.handle's finally, ReplicaManager.tryCompleteActions):
    its LocalTimeMs grows by two completions. An acks=1 produce's local phase ended when its response was sent,
    and the followers' answers come later, so the end-to-end latency grows instead."""
    base, costly = _run(acks="all"), _run(acks="all", complete_fetch="0.4ms")
    grown = np.median(_local(costly, "Produce")[0]) - np.median(_local(base, "Produce")[0])
    assert 0.7 < grown < 1.0, grown  # two followers: 2 x 0.4 ms (a consumer's fetch is woken by the HW later)
    one, one_costly = _run(), _run(complete_fetch="0.4ms")
    assert np.median(_local(one_costly, "Produce")[0]) == np.median(_local(one, "Produce")[0])
    e2e = [np.median(r.records["e2e_latency_ms"].dropna()) for r in (one, one_costly)]
    assert e2e[1] > e2e[0] + 0.4, e2e
