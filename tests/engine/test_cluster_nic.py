"""The broker hosts' NICs (``cluster.nic``, fair by default) in cluster runs: every connection of a host shares its NIC.

A producer writes 10 KiB records at 1,000/s (about 10 MB/s) to one partition led by broker 0, and a
consumer reads it from broker 0. Broker 0's outbound NIC then carries the consumer's fetch responses plus
one copy of the data per follower: with RF 3 and 35 MB/s out it is some 90 % busy, and the consumer's
records arrive later than with RF 1 or with a NIC that is not the bottleneck.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkasim.record.result import RunResult
from kafkasim.run.engine import Engine

from .support import consumer, producer, scenario

WARMUP_MS = 500.0


def _run(assignment: list[list[int]], out: str = "35MB/s", **topic: Any) -> tuple[Engine, RunResult]:
    s = scenario(
        duration="3s",
        cluster={"brokers": 3, "nic": {"bandwidth": "1GB/s", "out": out}},
        topics=[{"name": "t", "replica_assignment": assignment, "min.insync.replicas": 1, **topic}],
        producers=[producer("p1", rate="1000/s", record_size="10KiB", acks=1, arrival="poisson")],
        consumers=[consumer("c1")],
    )
    engine = Engine(s, check_invariants=True)
    return engine, engine.run()


def _e2e_median(result: RunResult) -> float:
    records = result.records
    return float(records[records["created_ms"] >= WARMUP_MS]["e2e_latency_ms"].median())


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[Engine, RunResult]]:
    return {
        "rf1": _run([[0]]),
        "rf3": _run([[0, 1, 2]]),
        "rf3_fast_nic": _run([[0, 1, 2]], out="1GB/s"),
    }


def test_replication_out_of_the_leader_competes_with_consumer_fetches(
    runs: dict[str, tuple[Engine, RunResult]],
) -> None:
    rf1, rf3, fast = (_e2e_median(runs[k][1]) for k in ("rf1", "rf3", "rf3_fast_nic"))
    # Measured: 2.8 ms (RF 1), 104 ms (RF 3), 3.1 ms (RF 3, NIC not the bottleneck). Under fifo RF 3 was
    # 10.9 ms: on a fair NIC at ~86 % the three fetch loops (two followers, the consumer) overlap, each
    # response is sent at a third of the bandwidth, the next fetch finds more data (responses ~250 KB, not
    # ~30), and the loops settle at ~20 ms a round trip instead of ~2.
    assert rf3 > 3 * rf1
    assert rf3 > 3 * fast
    assert fast < 1.5 * rf1


def test_each_host_nic_carries_its_own_traffic(runs: dict[str, tuple[Engine, RunResult]]) -> None:
    engine, result = runs["rf3"]
    nics = engine.components.nics
    produced = int(result.records["size_bytes"].sum())
    # Broker 0 receives the produce traffic and sends it three times (two followers, one consumer); the
    # followers receive one copy each and send only small fetch requests.
    assert nics[0].inbound.bytes == pytest.approx(produced, rel=0.05)
    assert nics[0].outbound.bytes == pytest.approx(3 * produced, rel=0.05)
    for follower in (1, 2):
        assert nics[follower].inbound.bytes == pytest.approx(produced, rel=0.05)
        assert nics[follower].outbound.bytes < 0.02 * produced
    # The gauges show it: broker 0's NIC sends about 3 x 10 MB/s, just under its 35 MB/s.
    ts = result.timeseries
    out = ts[(ts["metric"] == "NicBytesOutPerSec") & (ts["entity"] == "broker-0") & (ts["time_ms"] > WARMUP_MS)]
    assert 25e6 < out["value"].mean() < 35e6
    # ... and its utilisation is those bytes over the 35 MB/s it can send: the same ratio.
    busy = ts[(ts["metric"] == "NicOutUtilisation") & (ts["entity"] == "broker-0") & (ts["time_ms"] > WARMUP_MS)]
    assert list(busy["time_ms"]) == list(out["time_ms"])
    assert list(busy["value"]) == pytest.approx(list(out["value"] / 35e6))
    idle = ts[(ts["metric"] == "NicOutUtilisation") & (ts["entity"] == "broker-1") & (ts["time_ms"] > WARMUP_MS)]
    assert 0.0 < idle["value"].mean() < 0.01


def test_a_client_has_one_path_per_broker_through_that_brokers_nic() -> None:
    # Partitions led by brokers 0 and 1: the producer and the consumer talk to both, each over its own path;
    # they have one to broker 2 as well (leadership can move there), which carries nothing.
    engine, result = _run([[0], [1]], out="1GB/s")
    c = engine.components
    for client in ("p1", "c1"):
        paths = c.client_paths[client]
        assert [p.name for p in paths] == [f"{client}/broker-0", f"{client}/broker-1", f"{client}/broker-2"]
        for broker_id, path in enumerate(paths):
            assert path.to_broker.ingress is c.nics[broker_id].inbound
            assert path.from_broker.egress is c.nics[broker_id].outbound
            assert path.to_broker.egress is None and path.from_broker.ingress is None  # clients have no NIC
    records = result.records
    for broker_id in (0, 1):
        produced = int(records[records["partition"] == broker_id]["size_bytes"].sum())
        assert c.nics[broker_id].inbound.bytes == pytest.approx(produced, rel=0.05)
    assert c.nics[2].inbound.bytes == 0 and c.nics[2].outbound.bytes == 0


def test_a_fetcher_crosses_its_own_host_and_its_leaders() -> None:
    engine, _ = _run([[0, 1]], out="1GB/s")
    c = engine.components
    (fetcher,) = c.broker(1).fetchers
    path = c.links[fetcher.name]
    assert path.to_broker.egress is c.nics[1].outbound and path.to_broker.ingress is c.nics[0].inbound
    assert path.from_broker.egress is c.nics[0].outbound and path.from_broker.ingress is c.nics[1].inbound


def test_a_scenario_without_a_cluster_has_no_nic() -> None:
    engine = Engine(scenario(duration="1s", consumers=[consumer("c1")]))
    engine.run()
    c = engine.components
    assert c.nics == {} and c.client_paths == {}
    assert all(link.egress is None and link.ingress is None
               for path in c.links.values() for link in (path.to_broker, path.from_broker))
    assert sorted(c.links) == ["c1", "follower-1", "follower-2", "p1"]


def test_a_fair_nic_run_is_deterministic() -> None:
    """Same scenario, same seed, same tables, with the NICs busy enough that their sharing matters."""
    def tables() -> tuple[Any, ...]:
        s = scenario(
            duration="1s",
            cluster={"brokers": 3, "nic": {"bandwidth": "1GB/s", "out": "35MB/s", "sharing": "fair"}},
            topics=[{"name": "t", "replica_assignment": [[0, 1, 2]], "min.insync.replicas": 1}],
            producers=[producer("p1", rate="1000/s", record_size="10KiB", acks=1, arrival="poisson")],
            consumers=[consumer("c1")],
        )
        result = Engine(s).run()
        return result.records, result.requests, result.timeseries

    first, second = tables(), tables()
    for a, b in zip(first, second, strict=True):
        assert a.equals(b)
