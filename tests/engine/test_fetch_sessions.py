"""Fetch sessions (KIP-227) in whole runs: replica fetcher threads and consumers send a full request, then
incremental ones; the broker reads (and parks) over the whole session and answers only what changed.

The single-leader runs: broker 0 leads 4 partitions, follower-1 copies them, one acks=all producer writes
one record a second round robin (partition 0 at 1000 ms, partition 1 at 2000 ms), fixed 0.5 ms links and
costs, so every time below is exact arithmetic. ``replica.fetch.wait.max.ms`` is 300: the follower's
fetches expire at ~300, ~601 and ~901 ms while nothing is produced, and the one parked at ~901 is still
waiting when the produce of 1000 ms lands.
"""

from __future__ import annotations

from typing import Any

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch_session import INITIAL_METADATA, FetchMetadata
from kafkasim.broker.records import TopicPartition
from kafkasim.network.messages import (
    API_FETCH_CONSUMER,
    API_FETCH_FOLLOWER,
    RequestEnvelope,
    fetch_request_bytes,
    fetch_request_data_bytes,
    fetch_response_bytes,
)
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario
from kafkasim.sim.calls import Call

from .support import consumer, producer, scenario
from .test_cluster import BROKERS, _layout
from .test_cluster import _scenario as cluster_scenario

TPS = tuple(TopicPartition("t", p) for p in range(4))


class Finished:
    """A finished request: its envelope, with the request body as it was when it finished (the recorder
    drops the body afterwards)."""

    def __init__(self, envelope: RequestEnvelope) -> None:
        self.envelope = envelope
        self.body = envelope.body

    def __getattr__(self, name: str) -> Any:
        return getattr(self.envelope, name)


class Seen:
    """Every finished request with its body and response as they were when it finished (the recorder drops
    them)."""

    def __init__(self) -> None:
        self.requests: list[tuple[Any, Any]] = []

    def __call__(self, envelope: RequestEnvelope) -> None:
        self.requests.append((Finished(envelope), envelope.response.body if envelope.response is not None else None))

    def of(self, client: str) -> list[tuple[Any, Any]]:
        return sorted(((e, r) for e, r in self.requests if e.client == client), key=lambda er: er[0].client_send_ms)


def _single_leader(**sections: Any) -> Scenario:
    base: dict[str, Any] = {
        "duration": "1200ms",
        "warmup": "0ms",
        "topic": {"partitions": 4, "replication.factor": 2, "min.insync.replicas": 1},
        "broker": {"replica.fetch.wait.max.ms": 300},
        "producers": [producer("p1", rate="1/s", partitioner="round_robin")],
    }
    return scenario(**{**base, **sections})


def _sent(envelope: Any) -> list[int]:
    return [tp.partition for tp, _ in envelope.body.fetch_infos]


def _answered(response: Any) -> list[int]:
    return [tp.partition for tp, _ in response.responses]


def test_an_idle_follower_sends_no_partition_and_waits_on_all_of_them_until_a_produce_answers_one() -> None:
    seen = Seen()
    engine = Engine(_single_leader(), on_request=seen, check_invariants=True)
    leader = engine.components.broker(0).replica_manager
    follower = engine.components.followers[0]
    parked: list[tuple[Any, list[Any]]] = []

    def look() -> None:
        # The follower's fetch in flight, and the leader's pending DelayedFetch operations of replica 1 watching
        # each partition (completed ones linger in the watch lists until the next purge).
        watching = [
            [op for op in leader.fetch_purgatory.watchers(leader.operation_key(tp))
             if not op.is_completed and op.params.replica_id == 1]
            for tp in TPS
        ]
        parked.append((follower._in_flight, watching))

    Call(engine.env, 950.0, lambda _e: look())
    engine.run()

    requests = seen.of("follower-1")
    # The first request is full: every partition, asking for a session; the broker creates one.
    first, first_response = requests[0]
    assert first.body.metadata == INITIAL_METADATA  # type: ignore[union-attr]
    assert _sent(first) == [0, 1, 2, 3] and first.partitions == 4
    assert first_response.session_id != 0 and _answered(first_response) == [0, 1, 2, 3]
    session_id = first_response.session_id
    # Then incremental requests of that session, epochs 1, 2, 3, ...; nothing changed, so none names a
    # partition until the produce of 1000 ms: the bare request overhead.
    epochs = [e.body.metadata for e, _ in requests[1:]]  # type: ignore[union-attr]
    assert epochs == [FetchMetadata(session_id, epoch) for epoch in range(1, len(requests))]
    idle = [(e, r) for e, r in requests[1:] if e.client_send_ms < 1000.0]
    assert len(idle) == 3
    for envelope, _ in idle:
        assert _sent(envelope) == [] and envelope.partitions == 0
        assert envelope.request_bytes == fetch_request_bytes(0) < first.request_bytes

    # At 950 ms the third idle request (sent at ~901) is parked: one DelayedFetch of replica 1 watches all
    # four partitions of the session although the request named none (IncrementalFetchContext.foreachPartition).
    (in_flight, watchers), = parked
    assert in_flight is idle[2][0].envelope
    (op,) = watchers[0]
    assert all(ws == [op] for ws in watchers)

    # The produce to partition 0 at 1000 ms completes it long before its expiry (~1201 ms): the response
    # carries partition 0 alone, with its record.
    envelope, response = idle[2]
    assert 1000.0 < envelope.client_receive_ms < 1005.0
    assert _answered(response) == [0] and envelope.response_partitions == 1
    (_tp, result), = response.responses
    assert len(result.info.records) == 1
    # The next request names partition 0 only: its fetch offset moved.
    after = [e for e, _ in requests if e.client_send_ms > envelope.client_receive_ms]
    assert after and _sent(after[0]) == [0]


def test_request_and_response_sizes_follow_what_is_sent() -> None:
    seen = Seen()
    Engine(_single_leader(consumers=[consumer("c1")]), on_request=seen).run()
    fetches = [(e, r) for e, r in seen.requests if e.api in (API_FETCH_FOLLOWER, API_FETCH_CONSUMER)]
    kinds: set[tuple[str, bool, int]] = set()
    for envelope, response in fetches:
        assert envelope.partitions == len(envelope.body.fetch_infos)  # type: ignore[union-attr]
        assert envelope.request_bytes == fetch_request_data_bytes(envelope.body)  # type: ignore[arg-type]
        if response is None:
            continue  # in flight at the end of the run
        records = sum(result.info.size_in_bytes for _, result in response.responses)
        assert envelope.response_partitions == len(response.responses)
        assert envelope.response_bytes == fetch_response_bytes(len(response.responses), records)
        kinds.add((envelope.api, envelope.body.metadata.is_full, len(response.responses)))  # type: ignore[union-attr]
    # Both fetchers sent full requests answered with every partition, and incremental ones answered with
    # none (an expired idle fetch) and with one (the partition produced to).
    for api in (API_FETCH_FOLLOWER, API_FETCH_CONSUMER):
        assert {(api, True, 4), (api, False, 0), (api, False, 1)} <= kinds


def test_without_cache_slots_every_fetch_is_full_as_before_sessions() -> None:
    # max.incremental.fetch.session.cache.slots below 8 gives every shard 0 slots: no session is created, the
    # broker answers session id 0 and the fetchers keep sending full requests (FetchSessionHandler).
    seen = Seen()
    s = _single_leader(broker={"replica.fetch.wait.max.ms": 300, "max.incremental.fetch.session.cache.slots": 7},
                       consumers=[consumer("c1")])
    engine = Engine(s, on_request=seen)
    result = engine.run()
    fetches = [(e, r) for e, r in seen.requests if e.api != "Produce"]
    assert fetches
    for envelope, response in fetches:
        assert envelope.body.metadata == INITIAL_METADATA  # type: ignore[union-attr]
        assert _sent(envelope) == [0, 1, 2, 3]
        if response is not None:
            assert response.session_id == 0 and _answered(response) == [0, 1, 2, 3]
    assert engine.components.broker(0).fetch_manager.cache.size == 0
    rows = result.requests[result.requests["api"] != "Produce"]
    assert set(rows["partitions"]) == {4} and set(rows["request_bytes"]) == {fetch_request_bytes(4)}


def test_a_lost_session_costs_one_full_round_trip() -> None:
    # At 950 ms the leader loses the follower's session (as an eviction or a restart would). The parked
    # request still completes (its context holds the session); the next incremental request finds no session:
    # FETCH_SESSION_ID_NOT_FOUND at once, no partition read or sent. The follower then sends one full request
    # (0, 0) and the new session goes on incrementally.
    seen = Seen()
    engine = Engine(_single_leader(duration="1500ms"), on_request=seen, check_invariants=True)
    cache = engine.components.broker(0).fetch_manager.cache
    lost: list[int] = []

    def evict() -> None:
        (shard,) = [shard for shard in cache.cache_shards if shard.size]
        (session_id,) = list(shard.sessions)
        shard.remove_id(session_id)
        lost.append(session_id)

    Call(engine.env, 950.0, lambda _e: evict())
    engine.run()
    requests = seen.of("follower-1")
    errors = [i for i, (e, _) in enumerate(requests) if e.error == Errors.FETCH_SESSION_ID_NOT_FOUND]
    assert len(errors) == 1
    i = errors[0]
    envelope, response = requests[i]
    assert envelope.body.metadata.session_id == lost[0] and envelope.body.metadata.epoch >= 1  # type: ignore[union-attr]
    assert response.error == Errors.FETCH_SESSION_ID_NOT_FOUND and response.responses == []
    assert envelope.response_partitions == 0 and envelope.response_bytes == fetch_response_bytes(0, 0)
    assert envelope.client_receive_ms - envelope.client_send_ms < 5.0  # answered at once, not parked
    full, full_response = requests[i + 1]
    assert full.client_send_ms == envelope.client_receive_ms  # sent at once
    assert full.body.metadata == INITIAL_METADATA and _sent(full) == [0, 1, 2, 3]  # type: ignore[union-attr]
    assert full_response.session_id not in (0, lost[0])
    # Only that one request is full after the loss; the rest are incremental in the new session.
    later = requests[i + 2:]
    assert later and all(
        e.body.metadata.session_id == full_response.session_id and not e.body.metadata.is_full  # type: ignore[union-attr]
        for e, _ in later
    )
    assert [e.body.metadata.is_full for e, _ in requests].count(True) == 2  # type: ignore[union-attr]


def test_a_consumer_holds_one_session_per_broker_in_a_cluster() -> None:
    # 3 brokers, 6 partitions, leaders 0, 1, 2, 0, 1, 2 (test_cluster's layout): the consumer fetches from
    # each broker through its own session (AbstractFetch.sessionHandlers), which the broker caches as an
    # unprivileged session holding the two partitions it leads.
    seen = Seen()
    engine = Engine(cluster_scenario(duration="800ms", warmup="0ms"), layout=_layout(), on_request=seen,
                    check_invariants=True)
    engine.run()
    by_broker: dict[int, list[tuple[RequestEnvelope, Any]]] = {b: [] for b in BROKERS}
    for envelope, response in seen.of("c1"):
        by_broker[envelope.broker].append((envelope, response))
    for broker_id, requests in by_broker.items():
        first, first_response = requests[0]
        assert first.body.metadata == INITIAL_METADATA  # type: ignore[union-attr]
        assert sorted(_sent(first)) == [broker_id, broker_id + 3]
        session_id = first_response.session_id
        assert session_id != 0
        # Every later request to that broker is incremental in that session, its epochs counting up, and
        # names only partitions of that broker.
        assert [e.body.metadata for e, _ in requests[1:]] == [  # type: ignore[union-attr]
            FetchMetadata(session_id, epoch) for epoch in range(1, len(requests))
        ]
        assert all(set(_sent(e)) <= {broker_id, broker_id + 3} for e, _ in requests)
        assert any(len(_sent(e)) < 2 for e, _ in requests[1:])  # incremental: not every partition every time
        cache = engine.components.broker(broker_id).fetch_manager.cache
        session = cache.get_cache_shard(session_id).get(session_id)
        assert session is not None and not session.privileged
        assert sorted(tp.partition for tp in session.partition_map) == [broker_id, broker_id + 3]


def test_a_restarted_fetcher_starts_a_new_session_and_the_old_one_stays_cached() -> None:
    # A restarted broker runs a new fetcher thread with a new FetchSessionHandler: its first request is full
    # and asks for a new session; the leader keeps the old one until it is evicted.
    seen = Seen()
    engine = Engine(_single_leader(), on_request=seen, check_invariants=True)
    follower = engine.components.followers[0]
    Call(engine.env, 450.0, lambda _e: follower.crash())
    Call(engine.env, 700.0, lambda _e: follower.restart())
    engine.run()
    requests = seen.of("follower-1")
    before = [(e, r) for e, r in requests if e.client_send_ms < 450.0]
    after = [(e, r) for e, r in requests if e.client_send_ms >= 700.0]
    old_session = before[0][1].session_id
    assert [e.body.metadata for e, _ in before] == [INITIAL_METADATA, FetchMetadata(old_session, 1)]  # type: ignore[union-attr]
    first, first_response = after[0]
    # (after its new connection's TCP handshake: one round trip of the follower link)
    assert 700.0 < first.client_send_ms <= 702.0
    assert first.body.metadata == INITIAL_METADATA and _sent(first) == [0, 1, 2, 3]  # type: ignore[union-attr]
    assert first_response.session_id not in (0, old_session)
    assert all(not e.body.metadata.is_full for e, _ in after[1:])  # type: ignore[union-attr]
    cache = engine.components.broker(0).fetch_manager.cache
    assert cache.size == 2 and cache.get_cache_shard(old_session).get(old_session) is not None


def test_a_full_cache_a_follower_evicts_a_consumer_session_never_the_reverse() -> None:
    # 8 slots = one session per shard. Nine fetchers of broker 0 (follower-1, follower-2, c1..c7) ask for a
    # session; the followers' are created first, and the ninth asker, c7, finds its shard held by a
    # follower: a consumer cannot evict a follower's session (FetchSessionCacheShard.tryEvict), so c7 stays
    # sessionless -- full requests, session id 0. Then follower-1 restarts: its new (privileged) session
    # evicts a consumer's, whose next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND and is followed at
    # once by a full one.
    s = scenario(duration="1000ms", warmup="0ms", topic={"partitions": 2},
                 broker={"max.incremental.fetch.session.cache.slots": 8},
                 producers=[producer("p1")], consumers=[consumer(f"c{i}") for i in range(1, 8)])
    seen = Seen()
    engine = Engine(s, on_request=seen, check_invariants=True)
    follower = engine.components.followers[0]
    Call(engine.env, 400.0, lambda _e: follower.crash())
    Call(engine.env, 500.0, lambda _e: follower.restart())
    engine.run()
    cache = engine.components.broker(0).fetch_manager.cache
    assert cache.size == 8 and cache.evictions == 1

    c7 = seen.of("c7")
    assert len(c7) > 10 and all(e.body.metadata == INITIAL_METADATA for e, _ in c7)  # type: ignore[union-attr]
    assert all(r.session_id == 0 and _answered(r) == [0, 1] for _, r in c7 if r is not None)

    lost = [(e, r) for e, r in seen.requests if e.error == Errors.FETCH_SESSION_ID_NOT_FOUND]
    assert len(lost) == 1
    envelope, response = lost[0]
    assert envelope.api == API_FETCH_CONSUMER and envelope.client_send_ms > 500.0
    assert response.responses == [] and envelope.response_partitions == 0
    nxt = [e for e, _ in seen.of(envelope.client) if e.client_send_ms >= envelope.client_receive_ms][0]
    assert nxt.client_send_ms == envelope.client_receive_ms and nxt.body.metadata == INITIAL_METADATA  # type: ignore[union-attr]
    # follower-2 kept its session all along: one full request, then incremental ones.
    assert [e.body.metadata.is_full for e, _ in seen.of("follower-2")].count(True) == 1  # type: ignore[union-attr]
