"""A cluster run: every broker leads some partitions and follows others (an explicit ``ClusterLayout``).

3 brokers, 6 partitions, RF 3, leaders 0, 1, 2, 0, 1, 2: each broker leads 2 partitions and follows 4,
fetching them with its ReplicaFetcherManager's threads (one per source broker and fetcher id), and the
clients route every partition to its leader.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kafkasim.broker.records import TopicPartition
from kafkasim.network.messages import API_FETCH_CONSUMER, API_FETCH_FOLLOWER, API_PRODUCE, RequestEnvelope
from kafkasim.record.result import RunResult
from kafkasim.run.cluster import Cluster
from kafkasim.run.cluster_layout import ClusterLayout
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario
from kafkasim.server.replica_fetcher_manager import get_fetcher_id
from kafkasim.sim.calls import Call

from .support import consumer, producer, scenario

BROKERS = (0, 1, 2)
TPS = tuple(TopicPartition("t", p) for p in range(6))


def _layout() -> ClusterLayout:
    # Leaders 0, 1, 2, 0, 1, 2; the followers in ring order after the leader.
    replicas = {tp: tuple((tp.partition + k) % 3 for k in range(3)) for tp in TPS}
    return ClusterLayout(BROKERS, {b: None for b in BROKERS}, replicas, {"t": TPS}, clustered=True)


def _scenario(**sections: object) -> Scenario:
    base: dict[str, object] = {
        "duration": "2s",
        "topic": {"partitions": 6},
        "producers": [producer("p1", rate="600/s", partitioner="round_robin")],
        "consumers": [consumer("c1")],
    }
    return scenario(**{**base, **sections})


def _broker_of(c: Cluster, channel: Any) -> int:
    """The broker whose SocketServer accepted ``channel``."""
    for broker in c.brokers:
        if any(channel is open_channel for open_channel in broker.socket_server.channels):
            return broker.broker_id
    raise AssertionError(f"channel {channel.name} is on no broker")


class Seen:
    """Every finished request, with the broker-side channel, the request body and the response as they
    were when it finished (the recorder drops them afterwards)."""

    def __init__(self) -> None:
        self.requests: list[RequestEnvelope] = []
        self.channels: list[Any] = []
        self.bodies: list[Any] = []
        self.responses: list[Any] = []

    def __call__(self, envelope: RequestEnvelope) -> None:
        self.requests.append(envelope)
        self.channels.append(envelope.connection)
        self.bodies.append(envelope.body)
        self.responses.append(envelope.response.body if envelope.response is not None else None)


Run = tuple[Engine, Seen, RunResult]


def _run(s: Scenario) -> Run:
    seen = Seen()
    engine = Engine(s, layout=_layout(), check_invariants=True, on_request=seen)
    result = engine.run()  # the invariant checks raise on the first broken rule
    return engine, seen, result


@pytest.fixture(scope="module")
def cluster_run() -> Run:
    return _run(_scenario())


def test_every_broker_leads_two_partitions_and_follows_four(cluster_run: Run) -> None:
    engine, _, result = cluster_run
    c = engine.components
    assert [b.broker_id for b in c.brokers] == [0, 1, 2]
    for broker in c.brokers:
        partitions = broker.replica_manager.partitions
        led = sorted(tp.partition for tp, p in partitions.items() if p.is_leader)
        followed = sorted(tp.partition for tp, p in partitions.items() if not p.is_leader)
        assert led == [broker.broker_id, broker.broker_id + 3]
        assert len(followed) == 4 and not set(led) & set(followed)
        for tp in (TopicPartition("t", p) for p in followed):
            partition = partitions[tp]
            assert partition.leader_replica_id == tp.partition % 3
            assert partition.assignment == _layout().replicas[tp]
        # One fetcher thread per source broker (num.replica.fetchers = 1), named as Kafka names it.
        assert sorted(f.name for f in broker.fetchers) == sorted(
            f"broker-{broker.broker_id}/ReplicaFetcherThread-0-{src}" for src in BROKERS if src != broker.broker_id
        )
        # Reapers and isr-expiration run on every broker, since each leads something.
        assert broker.reaper_passes > 0


def test_hw_advances_on_every_partition_and_every_replica_catches_up(cluster_run: Run) -> None:
    engine, _, result = cluster_run
    c = engine.components
    for tp in TPS:
        replicas = _layout().replicas[tp]
        leader = c.broker(replicas[0]).replica_manager.partitions[tp]
        assert leader.is_leader and leader.isr == frozenset(replicas)
        assert leader.high_watermark > 50  # 600 records/s round robin over 6 partitions, 2 s
        for follower_id in replicas[1:]:
            follower = c.broker(follower_id).replica_manager.partitions[tp]
            # The follower's log is the one its fetcher appends to; it is within a fetch of the leader.
            assert follower.log_end_offset >= leader.high_watermark - 30
            assert 0 < follower.high_watermark <= follower.log_end_offset


def test_requests_go_to_the_leaders_and_fetch_follower_flows_between_every_pair(
    cluster_run: Run,
) -> None:
    engine, seen, _ = cluster_run
    c = engine.components
    leaders = {tp: replicas[0] for tp, replicas in _layout().replicas.items()}
    produce_brokers: Counter[int] = Counter()
    consumer_brokers: Counter[int] = Counter()
    pairs: set[tuple[int, int]] = set()
    for envelope, channel, body, response in zip(seen.requests, seen.channels, seen.bodies, seen.responses,
                                                 strict=True):
        if channel is None:
            continue  # never reached a broker
        broker = _broker_of(c, channel)
        if envelope.api == API_PRODUCE:
            entries = body.entries
            assert {leaders[tp] for tp in entries} == {broker}, "a produce request goes to one leader"
            produce_brokers[broker] += 1
            if envelope.error is None and response is not None:
                assert all(status.error == 0 for status in response.values())
        elif envelope.api == API_FETCH_CONSUMER:
            # A full request names both partitions the broker leads; an incremental one those that moved.
            tps = [tp for tp, _ in body.fetch_infos]
            assert {leaders[tp] for tp in tps} <= {broker}
            assert set(tp.partition for tp in tps) <= {broker, broker + 3}
            if body.metadata.is_full:
                assert sorted(tp.partition for tp in tps) == [broker, broker + 3]
            consumer_brokers[broker] += 1
        elif envelope.api == API_FETCH_FOLLOWER:
            # broker-<k>/ReplicaFetcherThread-<fid>-<src> fetches from <src>: the client name says who.
            follower = int(envelope.client.split("/")[0].removeprefix("broker-"))
            source = int(envelope.client.rsplit("-", 1)[1])
            assert source == broker and follower != broker
            assert {leaders[tp] for tp, _ in body.fetch_infos} <= {broker}
            pairs.add((follower, broker))
    assert set(produce_brokers) == set(BROKERS) and min(produce_brokers.values()) > 50
    assert set(consumer_brokers) == set(BROKERS)
    assert pairs == {(a, b) for a in BROKERS for b in BROKERS if a != b}


def test_acks_all_produce_completes_on_each_leader_and_the_consumer_gets_every_partition(
    cluster_run: Run,
) -> None:
    engine, _, result = cluster_run
    records = result.records
    acked = records[records["ack_ms"].notna()]
    assert len(acked) > 0.9 * len(records)
    consumed = acked[acked["first_consumed_ms"].notna()]
    assert set(consumed["partition"]) == {0, 1, 2, 3, 4, 5}
    assert len(consumed) > 0.9 * len(records)


def test_two_replica_fetchers_split_partitions_as_get_fetcher_id_says() -> None:
    s = _scenario(duration="600ms", warmup="100ms", broker={"num.replica.fetchers": 2})
    engine, seen, _ = _run(s)
    c = engine.components
    for broker in c.brokers:
        manager = broker.replica_fetcher_manager
        for tp in _layout().replicas:
            replicas = _layout().replicas[tp]
            if broker.broker_id not in replicas[1:]:
                continue
            fid = get_fetcher_id("t", tp.partition, 2)
            thread = manager.fetcher_for(tp, replicas[0])
            assert thread is not None and tp in thread.partitions
            assert thread.name == f"broker-{broker.broker_id}/ReplicaFetcherThread-{fid}-{replicas[0]}"
    # Every thread's full fetches carry exactly its partitions, its incremental ones some of them.
    threads = {f.name: set(f.partitions) for b in c.brokers for f in b.fetchers}
    for envelope, body in zip(seen.requests, seen.bodies, strict=True):
        if envelope.api == API_FETCH_FOLLOWER:
            sent = {tp for tp, _ in body.fetch_infos}
            if body.metadata.is_full:
                assert sent == threads[envelope.client]
            else:
                assert sent <= threads[envelope.client]
    assert {e.client for e in seen.requests if e.api == API_FETCH_FOLLOWER} == set(threads)


def test_a_crashed_fetcher_thread_restarts_at_its_leo_and_catches_up_in_a_cluster() -> None:
    # Broker 2's thread toward broker 0 crashes for 700 ms (replica.lag.time.max.ms 300: it leaves the ISR
    # of partitions 0 and 3), then restarts: fetches again from its LEO, rejoins. The other threads
    # of broker 2 and every other broker carry on.
    s = _scenario(broker={"replica.lag.time.max.ms": 300, "replica.fetch.wait.max.ms": 100})
    seen = Seen()
    engine = Engine(s, layout=_layout(), check_invariants=True, on_request=seen)
    thread = next(f for f in engine.components.broker(2).fetchers if f.source_broker == 0)
    Call(engine.env, 500.0, lambda _e: thread.crash())
    Call(engine.env, 1200.0, lambda _e: thread.restart())
    result = engine.run()
    assert result.summary["counters"]["isr_shrinks"] >= 2 and result.summary["counters"]["isr_expands"] >= 2
    c = engine.components
    for tp in (TPS[0], TPS[3]):
        leader = c.broker(0).replica_manager.partitions[tp]
        assert leader.isr == frozenset({0, 1, 2})  # back in the ISR
        assert c.broker(2).replica_manager.partitions[tp].log_end_offset >= leader.high_watermark - 30
    during = [e for e in seen.requests if e.client == thread.name and 500.0 < e.client_send_ms < 1200.0]
    assert during == []  # nothing sent while crashed
    others = [e for e in seen.requests if e.api == API_FETCH_FOLLOWER and e.client != thread.name
              and 500.0 < e.client_send_ms < 1200.0]
    assert {e.client for e in others} == {f.name for b in c.brokers for f in b.fetchers} - {thread.name}
