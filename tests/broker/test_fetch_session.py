"""Kafka's ``FetchSessionTest`` (core/src/test/scala/unit/kafka/server/FetchSessionTest.scala), ported.

Each test is named after Kafka's. Cases about topic ids (``testFetchSessionWithUnknownId*``,
``testIncrementalFetchSessionWith*Ids*``, ``testFetchSessionUpdateTopicIdsBrokerSide``,
``testResolveUnknownPartitions``, ``testToForgetPartitions``, ``testCachedPartitionEqualsAndHashCode``,
``testMaybeResolveUnknownName``) have no equivalent: kafkasim has no topic ids. Kafka's ``FetchResponseData``
partitions are ``LogReadResult``s here (``resp`` below).
"""

from __future__ import annotations

import random

import pytest

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import EpochEndOffset, LogReadResult, PartitionData
from kafkasim.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_METADATA,
    INT_MAX,
    INVALID_SESSION_ID,
    LEGACY_METADATA,
    MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS,
    MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
    NUM_FETCH_SESSION_CACHE_SHARDS,
    CachedPartition,
    FetchContext,
    FetchManager,
    FetchMetadata,
    FetchSessionCache,
    FetchSessionCacheShard,
    FullFetchContext,
    IncrementalFetchContext,
    SessionErrorContext,
    SessionlessFetchContext,
    next_epoch,
)
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.timer import ManualTime

FOO0 = TopicPartition("foo", 0)
FOO1 = TopicPartition("foo", 1)
BAR0 = TopicPartition("bar", 0)
BAR1 = TopicPartition("bar", 1)
BAR2 = TopicPartition("bar", 2)
ZAR3 = TopicPartition("zar", 3)


def shard(max_entries: int, eviction_ms: int, session_id_range: int = INT_MAX, shard_num: int = 0, seed: int = 0):
    return FetchSessionCacheShard(max_entries, eviction_ms, session_id_range, shard_num, rng=random.Random(seed))


def manager(cache_shard: FetchSessionCacheShard, time: ManualTime | None = None) -> FetchManager:
    """``new FetchManager(time, cacheShard)``: a cache of that one shard."""
    return FetchManager(time or ManualTime(), FetchSessionCache([cache_shard]))


def pd(fetch_offset: int, log_start_offset: int = 0, max_bytes: int = 100, leader_epoch: int = -1,
       last_fetched_epoch: int = -1) -> PartitionData:
    return PartitionData(fetch_offset, log_start_offset, max_bytes, leader_epoch, last_fetched_epoch)


def resp(hw: int = -1, log_start: int = -1, *, error: Errors = Errors.NONE, record_bytes: int = 0,
         diverging: EpochEndOffset | None = None) -> LogReadResult:
    """A partition of a response (Kafka's ``FetchResponseData.PartitionData``)."""
    records = (RecordBatch(1, record_bytes, 0, 1, "p", base_offset=0),) if record_bytes else ()
    info = FetchDataInfo(LogOffsetMetadata(0), records, record_bytes)
    return LogReadResult(info, error, diverging, high_watermark=hw, log_start_offset=log_start)


def dummy_create(size: int):
    return lambda: {TopicPartition("test", i): CachedPartition(TopicPartition("test", i), pd(0)) for i in range(size)}


def assert_cache_contains(cache_shard: FetchSessionCacheShard, *session_ids: int) -> None:
    for i, session_id in enumerate(session_ids, 1):
        assert cache_shard.get(session_id) is not None, f"Missing session {i} out of {len(session_ids)} ({session_id})"
    assert cache_shard.size == len(session_ids)


def partitions_order(context: FetchContext) -> list[TopicPartition]:
    return [tp for tp, _ in context.fetch_infos()]


def response_keys(response) -> list[TopicPartition]:
    return [tp for tp, _ in response.responses]


def test_new_session_id():
    """testNewSessionId"""
    cache_shard = shard(3, 100)
    for _ in range(10_001):
        assert cache_shard.new_session_id() > 0


def test_session_cache():
    """testSessionCache"""
    cache_shard = shard(3, 100)
    assert cache_shard.size == 0
    id1 = cache_shard.maybe_create_session(0, False, 10, dummy_create(10))
    id2 = cache_shard.maybe_create_session(10, False, 20, dummy_create(20))
    id3 = cache_shard.maybe_create_session(20, False, 30, dummy_create(30))
    assert cache_shard.maybe_create_session(30, False, 40, dummy_create(40)) == INVALID_SESSION_ID
    assert cache_shard.maybe_create_session(40, False, 5, dummy_create(5)) == INVALID_SESSION_ID
    assert_cache_contains(cache_shard, id1, id2, id3)
    cache_shard.touch(cache_shard.get(id1), 200)
    id4 = cache_shard.maybe_create_session(210, False, 11, dummy_create(11))
    assert_cache_contains(cache_shard, id1, id3, id4)
    cache_shard.touch(cache_shard.get(id1), 400)
    cache_shard.touch(cache_shard.get(id3), 390)
    cache_shard.touch(cache_shard.get(id4), 400)
    id5 = cache_shard.maybe_create_session(410, False, 50, dummy_create(50))
    assert_cache_contains(cache_shard, id3, id4, id5)
    assert cache_shard.maybe_create_session(410, False, 5, dummy_create(5)) == INVALID_SESSION_ID
    id6 = cache_shard.maybe_create_session(410, True, 5, dummy_create(5))
    assert_cache_contains(cache_shard, id3, id5, id6)


def test_resize_cached_sessions():
    """testResizeCachedSessions"""
    cache_shard = shard(2, 100)
    assert cache_shard.total_partitions == 0
    assert cache_shard.size == 0
    assert cache_shard.evictions == 0
    id1 = cache_shard.maybe_create_session(0, False, 2, dummy_create(2))
    assert id1 > 0
    assert_cache_contains(cache_shard, id1)
    session1 = cache_shard.get(id1)
    assert session1.size == 2
    assert cache_shard.total_partitions == 2
    assert cache_shard.size == 1
    assert cache_shard.evictions == 0
    id2 = cache_shard.maybe_create_session(0, False, 4, dummy_create(4))
    session2 = cache_shard.get(id2)
    assert id2 > 0
    assert_cache_contains(cache_shard, id1, id2)
    assert cache_shard.total_partitions == 6
    assert cache_shard.size == 2
    assert cache_shard.evictions == 0
    cache_shard.touch(session1, 200)
    cache_shard.touch(session2, 200)
    id3 = cache_shard.maybe_create_session(200, False, 5, dummy_create(5))
    assert id3 > 0
    assert_cache_contains(cache_shard, id2, id3)
    assert cache_shard.total_partitions == 9
    assert cache_shard.size == 2
    assert cache_shard.evictions == 1
    cache_shard.remove_id(id3)
    assert_cache_contains(cache_shard, id2)
    assert cache_shard.size == 1
    assert cache_shard.evictions == 1
    assert cache_shard.total_partitions == 4
    del session2.partition_map[next(iter(session2.partition_map))]
    assert session2.size == 3
    assert session2.cached_size == 4
    cache_shard.touch(session2, session2.last_used_ms)
    assert cache_shard.total_partitions == 3


def _leader_epochs(context: FetchContext) -> dict[TopicPartition, int]:
    return {tp: data.current_leader_epoch for tp, data in context.fetch_infos()}


def _last_fetched_epochs(context: FetchContext) -> dict[TopicPartition, int]:
    return {tp: data.last_fetched_epoch for tp, data in context.fetch_infos()}


def test_cached_leader_epoch():
    """testCachedLeaderEpoch (Optional.empty() is -1 here, as on the wire)."""
    fetch_manager = manager(shard(10, 1000))
    tp0, tp1, tp2 = FOO0, FOO1, BAR1
    request1 = [(tp0, pd(0, 0, 100)), (tp1, pd(10, 0, 100, 1)), (tp2, pd(10, 0, 100, 2))]
    context1 = fetch_manager.new_context(INITIAL_METADATA, False, request1)
    assert _leader_epochs(context1) == {tp0: -1, tp1: 1, tp2: 2}
    response = [(tp0, resp(100, 100)), (tp1, resp(10, 10)), (tp2, resp(5, 5))]
    session_id = context1.update_and_generate_response_data(response).session_id

    # With no changes, the cached epochs stay the same.
    context2 = fetch_manager.new_context(FetchMetadata(session_id, 1), False, [])
    assert _leader_epochs(context2) == {tp0: -1, tp1: 1, tp2: 2}
    context2.update_and_generate_response_data(response)

    # Changing the leader epoch updates the context.
    request3 = [(tp0, pd(0, 0, 100, 6)), (tp1, pd(10, 0, 100)), (tp2, pd(10, 0, 100, 3))]
    context3 = fetch_manager.new_context(FetchMetadata(session_id, 2), False, request3)
    assert _leader_epochs(context3) == {tp0: 6, tp1: -1, tp2: 3}


def test_last_fetched_epoch():
    """testLastFetchedEpoch"""
    fetch_manager = manager(shard(10, 1000))
    tp0, tp1, tp2 = FOO0, FOO1, BAR1
    request1 = [(tp0, pd(0, 0, 100)), (tp1, pd(10, 0, 100, 1)), (tp2, pd(10, 0, 100, 2, 1))]
    context1 = fetch_manager.new_context(INITIAL_METADATA, False, request1)
    assert _leader_epochs(context1) == {tp0: -1, tp1: 1, tp2: 2}
    assert _last_fetched_epochs(context1) == {tp0: -1, tp1: -1, tp2: 1}
    response = [(tp0, resp(100, 100)), (tp1, resp(10, 10)), (tp2, resp(5, 5))]
    session_id = context1.update_and_generate_response_data(response).session_id

    context2 = fetch_manager.new_context(FetchMetadata(session_id, 1), False, [])
    assert _leader_epochs(context2) == {tp0: -1, tp1: 1, tp2: 2}
    assert _last_fetched_epochs(context2) == {tp0: -1, tp1: -1, tp2: 1}
    context2.update_and_generate_response_data(response)

    request3 = [(tp0, pd(0, 0, 100, 6, 5)), (tp1, pd(10, 0, 100)), (tp2, pd(10, 0, 100, 3, 3))]
    context3 = fetch_manager.new_context(FetchMetadata(session_id, 2), False, request3)
    assert _leader_epochs(context3) == {tp0: 6, tp1: -1, tp2: 3}
    assert _last_fetched_epochs(context3) == {tp0: 5, tp1: -1, tp2: 3}


def test_fetch_requests():
    """testFetchRequests"""
    cache_shard = shard(10, 1000)
    fetch_manager = manager(cache_shard)
    tp0, tp1, tp2, tp3 = FOO0, FOO1, BAR0, BAR1

    # A sessionless (legacy) request gets a SessionlessFetchContext.
    context = fetch_manager.new_context(LEGACY_METADATA, True, [])
    assert type(context) is SessionlessFetchContext

    # A full request creates a new session.
    req_data2 = [(tp0, pd(0, 0, 100)), (tp1, pd(10, 0, 100))]
    context2 = fetch_manager.new_context(INITIAL_METADATA, False, req_data2)
    assert type(context2) is FullFetchContext
    assert context2.fetch_infos() == req_data2
    assert context2.get_fetch_offset(tp0) == 0
    assert context2.get_fetch_offset(tp1) == 10
    resp_data2 = [(tp0, resp(100, 100)), (tp1, resp(10, 10))]
    resp2 = context2.update_and_generate_response_data(resp_data2)
    assert resp2.error == Errors.NONE
    assert resp2.session_id != INVALID_SESSION_ID
    assert resp2.responses == resp_data2

    # An invalid epoch.
    context3 = fetch_manager.new_context(FetchMetadata(resp2.session_id, 5), False, req_data2)
    assert type(context3) is SessionErrorContext
    assert context3.update_and_generate_response_data(resp_data2).error == Errors.INVALID_FETCH_SESSION_EPOCH

    # A session id that does not exist.
    context4 = fetch_manager.new_context(FetchMetadata(resp2.session_id + 1, 1), False, req_data2)
    assert context4.update_and_generate_response_data(resp_data2).error == Errors.FETCH_SESSION_ID_NOT_FOUND

    # Continue the session: nothing changed, so nothing is answered.
    context5 = fetch_manager.new_context(FetchMetadata(resp2.session_id, 1), False, [])
    assert type(context5) is IncrementalFetchContext
    assert context5.fetch_infos() == req_data2
    assert context5.get_fetch_offset(tp1) == 10
    resp5 = context5.update_and_generate_response_data(resp_data2)
    assert resp5.error == Errors.NONE
    assert resp5.session_id == resp2.session_id
    assert resp5.responses == []

    # An invalid epoch again.
    context6 = fetch_manager.new_context(FetchMetadata(resp2.session_id, 5), False, req_data2)
    assert type(context6) is SessionErrorContext
    assert context6.update_and_generate_response_data(resp_data2).error == Errors.INVALID_FETCH_SESSION_EPOCH

    # (Kafka's throttled-response step is left out: quotas are not simulated.) Close the session: a
    # sessionless request naming it removes it.
    prev_session_id = resp5.session_id
    req_data8 = [(tp2, pd(0, 0, 100)), (tp3, pd(10, 0, 100))]
    context8 = fetch_manager.new_context(FetchMetadata(prev_session_id, FINAL_EPOCH), False, req_data8)
    assert type(context8) is SessionlessFetchContext
    assert cache_shard.size == 0
    resp8 = context8.update_and_generate_response_data([(tp2, resp(100, 100)), (tp3, resp(100, 100))])
    assert resp8.error == Errors.NONE
    assert resp8.session_id == INVALID_SESSION_ID


def test_incremental_fetch_session():
    """testIncrementalFetchSession (the topic-name variant)."""
    fetch_manager = manager(shard(10, 1000))
    tp0, tp1, tp2 = FOO0, FOO1, BAR0
    context1 = fetch_manager.new_context(INITIAL_METADATA, False, [(tp0, pd(0, 0, 100)), (tp1, pd(10, 0, 100))])
    assert type(context1) is FullFetchContext
    resp1 = context1.update_and_generate_response_data([(tp0, resp(100, 100)), (tp1, resp(10, 10))])
    assert resp1.error == Errors.NONE
    assert resp1.session_id != INVALID_SESSION_ID
    assert len(resp1.responses) == 2

    # An incremental request that removes foo-0 and adds bar-0.
    context2 = fetch_manager.new_context(FetchMetadata(resp1.session_id, 1), False, [(tp2, pd(15, 0, 0))], [tp0])
    assert type(context2) is IncrementalFetchContext
    assert partitions_order(context2) == [tp1, tp2]
    assert context2.get_fetch_offset(tp0) is None
    assert context2.get_fetch_offset(tp1) == 10
    assert context2.get_fetch_offset(tp2) == 15
    assert context2.get_fetch_offset(BAR2) is None
    resp2 = context2.update_and_generate_response_data([(tp1, resp(10, 10)), (tp2, resp(10, 10))])
    assert resp2.error == Errors.NONE
    assert response_keys(resp2) == [tp2]  # foo-1 unchanged; bar-0 is new (cached HW -1)
    assert resp2.session_id > 0


def test_update_and_generate_response_data():
    """testUpdateAndGenerateResponseData: partitions with errors stay in every response, sessionless, full
    and incremental alike; a session error answers nothing."""
    fetch_manager = manager(shard(10, 1000))

    def new_context(metadata: FetchMetadata, partitions) -> FetchContext:
        return fetch_manager.new_context(metadata, False, [(tp, pd(0, 0, 100)) for tp in partitions])

    def update_and_generate_response_data(context: FetchContext):
        data = [(tp, resp(error=Errors.UNKNOWN_TOPIC_OR_PARTITION)) for tp, _ in context.fetch_infos()]
        return context.update_and_generate_response_data(data)

    foo, bar = TopicPartition("foo", 0), TopicPartition("bar", 0)

    def check_response_data(response) -> None:
        assert {tp: r.error for tp, r in response.responses} == {
            foo: Errors.UNKNOWN_TOPIC_OR_PARTITION,
            bar: Errors.UNKNOWN_TOPIC_OR_PARTITION,
        }

    context1 = new_context(LEGACY_METADATA, [foo, bar])
    assert type(context1) is SessionlessFetchContext
    check_response_data(update_and_generate_response_data(context1))

    context2 = new_context(INITIAL_METADATA, [foo, bar])
    assert type(context2) is FullFetchContext
    response2 = update_and_generate_response_data(context2)
    session_id = response2.session_id
    check_response_data(response2)

    context3 = new_context(FetchMetadata(session_id, 1), [])
    assert type(context3) is IncrementalFetchContext
    check_response_data(update_and_generate_response_data(context3))

    # The same epoch again: a session error, and an empty response.
    context4 = new_context(FetchMetadata(session_id, 1), [])
    assert type(context4) is SessionErrorContext
    assert update_and_generate_response_data(context4).responses == []


def _full_session(fetch_manager: FetchManager, follower: bool, req=None):
    req = req or [(FOO0, pd(0, 0, 100)), (FOO1, pd(10, 0, 100))]
    context = fetch_manager.new_context(INITIAL_METADATA, follower, req)
    assert type(context) is FullFetchContext
    response = context.update_and_generate_response_data([(FOO0, resp(100, 100)), (FOO1, resp(10, 10))])
    assert response.error == Errors.NONE
    assert response.session_id != INVALID_SESSION_ID
    assert len(response.responses) == 2
    return context, response


def test_fetch_session_expiration():
    """testFetchSessionExpiration: the least recently used session is the one evicted."""
    time = ManualTime()
    cache_shard = shard(2, 1000)  # two entries, so a third session must evict
    fetch_manager = manager(cache_shard, time)

    _, session1resp = _full_session(fetch_manager, False)
    assert cache_shard.get(session1resp.session_id) is not None
    time.sleep(500)

    _, session2resp = _full_session(fetch_manager, False)
    assert cache_shard.get(session1resp.session_id) is not None
    assert cache_shard.get(session2resp.session_id) is not None
    time.sleep(500)

    # An incremental request touches session 1.
    context1v2 = fetch_manager.new_context(FetchMetadata(session1resp.session_id, 1), False, [], [])
    assert type(context1v2) is IncrementalFetchContext

    # Long enough for session 1 to be evicted had it not been touched.
    time.sleep(501)
    _, session3resp = _full_session(fetch_manager, False, [(FOO0, pd(0, 0, 100)), (FOO1, pd(0, 0, 100))])

    assert cache_shard.get(session1resp.session_id) is not None
    assert cache_shard.get(session2resp.session_id) is None, (
        "session 2 should have been evicted by latest session, as session 1 was used more recently"
    )
    assert cache_shard.get(session3resp.session_id) is not None


def test_privileged_session_handling():
    """testPrivilegedSessionHandling: a follower's session evicts a young consumer session; a follower
    session is evictable once older than the eviction time."""
    time = ManualTime()
    cache_shard = shard(2, 1000)
    fetch_manager = manager(cache_shard, time)

    _, session1resp = _full_session(fetch_manager, True)
    assert cache_shard.size == 1
    time.sleep(500)

    _, session2resp = _full_session(fetch_manager, False)
    assert cache_shard.get(session1resp.session_id) is not None
    assert cache_shard.get(session2resp.session_id) is not None
    assert cache_shard.size == 2
    time.sleep(500)

    session3context, session3resp = _full_session(fetch_manager, True)
    assert cache_shard.get(session1resp.session_id) is not None
    # Session 2 is more recent than session 1 and not stale, but less privileged: session 3 evicts it.
    assert cache_shard.get(session2resp.session_id) is None, "session 2 should have been evicted by session 3"
    assert cache_shard.get(session3resp.session_id) is not None
    assert cache_shard.size == 2

    time.sleep(501)
    # Kafka's test generates session 4's response from session 3's (full, follower) context: the same thing.
    session4resp = session3context.update_and_generate_response_data([(FOO0, resp(100, 100)), (FOO1, resp(10, 10))])
    assert session4resp.error == Errors.NONE
    assert session4resp.session_id != INVALID_SESSION_ID
    assert cache_shard.get(session1resp.session_id) is None, (
        "session 1 should have been evicted by session 4 even though it is privileged as it has hit eviction time"
    )
    assert cache_shard.get(session3resp.session_id) is not None
    assert cache_shard.get(session4resp.session_id) is not None
    assert cache_shard.size == 2


def test_zero_size_fetch_session():
    """testZeroSizeFetchSession: an incremental request that forgets every partition closes the session."""
    cache_shard = shard(10, 1000)
    fetch_manager = manager(cache_shard)
    _, resp1 = _full_session(fetch_manager, False)
    context2 = fetch_manager.new_context(FetchMetadata(resp1.session_id, 1), False, [], [FOO0, FOO1])
    assert type(context2) is SessionlessFetchContext
    resp2 = context2.update_and_generate_response_data([])
    assert resp2.session_id == INVALID_SESSION_ID
    assert resp2.responses == []
    assert cache_shard.size == 0


def test_diverging_epoch():
    """testDivergingEpoch: a diverging epoch is always answered."""
    fetch_manager = manager(shard(10, 1000))
    tp1, tp2 = FOO1, BAR2
    req_data = [(tp1, pd(100, 0, 1000, 5, 4)), (tp2, pd(100, 0, 1000, 5, 4))]
    context1 = fetch_manager.new_context(INITIAL_METADATA, False, req_data)
    assert type(context1) is FullFetchContext
    diverging = EpochEndOffset(Errors.NONE, 3, 90)
    resp_data = {tp1: resp(105, 0), tp2: resp(105, 0, diverging=diverging)}
    resp1 = context1.update_and_generate_response_data(list(resp_data.items()))
    assert resp1.error == Errors.NONE
    assert resp1.session_id != INVALID_SESSION_ID
    assert set(response_keys(resp1)) == {tp1, tp2}

    # Incremental: the partition with a diverging epoch is answered though nothing else changed.
    context2 = fetch_manager.new_context(FetchMetadata(resp1.session_id, 1), False, req_data)
    assert type(context2) is IncrementalFetchContext
    resp2 = context2.update_and_generate_response_data(list(resp_data.items()))
    assert resp2.error == Errors.NONE
    assert resp2.session_id == resp1.session_id
    assert response_keys(resp2) == [tp2]

    # Every partition with a diverging epoch is answered.
    resp_data[tp1] = resp(105, 0, diverging=diverging)
    resp3 = context2.update_and_generate_response_data(list(resp_data.items()))
    assert resp3.error == Errors.NONE
    assert set(response_keys(resp3)) == {tp1, tp2}

    # Partitions that meet another condition are answered with or without a diverging epoch.
    resp_data[tp1] = resp(110, 0)
    resp4 = context2.update_and_generate_response_data(list(resp_data.items()))
    assert resp4.error == Errors.NONE
    assert set(response_keys(resp4)) == {tp1, tp2}


def test_deprioritizes_partitions_with_records_only():
    """testDeprioritizesPartitionsWithRecordsOnly"""
    fetch_manager = manager(shard(10, 1000))
    tp1, tp2, tp3 = FOO1, BAR2, ZAR3
    req_data = [(tp, pd(100, 0, 1000, 5, 4)) for tp in (tp1, tp2, tp3)]
    context1 = fetch_manager.new_context(INITIAL_METADATA, False, req_data)
    assert type(context1) is FullFetchContext
    resp1 = context1.update_and_generate_response_data([(tp, resp(50, 0)) for tp in (tp1, tp2, tp3)])
    assert resp1.error == Errors.NONE
    assert resp1.session_id != INVALID_SESSION_ID
    assert response_keys(resp1) == [tp1, tp2, tp3]

    context2 = fetch_manager.new_context(FetchMetadata(resp1.session_id, 1), False, req_data)
    assert type(context2) is IncrementalFetchContext
    # The session's order is the last response's.
    assert partitions_order(context2) == [tp1, tp2, tp3]

    # An empty read: an empty response.
    resp2 = context2.update_and_generate_response_data([])
    assert resp2.error == Errors.NONE
    assert resp2.session_id == resp1.session_id
    assert resp2.responses == []

    # tp1's HW moved, tp2 has records, tp3 is unchanged.
    resp3 = context2.update_and_generate_response_data(
        [(tp1, resp(60, 0)), (tp2, resp(60, 0, record_bytes=100)), (tp3, resp(50, 0))]
    )
    assert resp3.error == Errors.NONE
    assert resp3.session_id == resp1.session_id
    assert response_keys(resp3) == [tp1, tp2]
    # Only the partition that returned records moved to the end.
    assert partitions_order(context2) == [tp1, tp3, tp2]


def _sharded_cache(counter: int = 0):
    session_id_range = INT_MAX // 8
    shards = [shard(10, 1000, session_id_range, n) for n in range(8)]
    return session_id_range, shards, FetchSessionCache(shards, counter)


def test_fetch_session_cache_get_sharded_cache_retrieves_cache_from_correct_segment():
    """testFetchSessionCache_getShardedCache_retrievesCacheFromCorrectSegment"""
    session_id_range, shards, cache = _sharded_cache()
    assert cache.get_cache_shard(session_id_range - 1) is shards[0]
    assert cache.get_cache_shard(session_id_range) is shards[1]
    assert cache.get_cache_shard(session_id_range * 2) is shards[2]
    with pytest.raises(IndexError):
        cache.get_cache_shard(session_id_range * 8)


def test_fetch_session_cache_round_robins_into_shards():
    """testFetchSessionCache_RoundRobinsIntoShards"""
    _, shards, cache = _sharded_cache()
    for n in range(16):
        assert cache.get_next_cache_shard() is shards[n % 8]


def test_fetch_session_cache_round_robins_into_shards_when_integer_overflows():
    """testFetchSessionCache_RoundRobinsIntoShards_WhenIntegerOverflows: the counter set to
    Int.MaxValue + 1 (Integer.MIN_VALUE in Java) still starts at shard 0."""
    _, shards, cache = _sharded_cache(counter=INT_MAX + 1)
    for n in range(16):
        assert cache.get_next_cache_shard() is shards[n % 8]


# --- beyond Kafka's cases --------------------------------------------------------------------------------


def test_session_ids_fall_in_their_shards_range_and_name_their_shard():
    cache = FetchSessionCache.create(random.Random(1))
    assert len(cache.cache_shards) == NUM_FETCH_SESSION_CACHE_SHARDS
    assert all(s.max_entries == MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS // 8 for s in cache.cache_shards)
    assert all(s.eviction_ms == MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS for s in cache.cache_shards)
    fetch_manager = FetchManager(ManualTime(), cache)
    ids = []
    for _ in range(16):
        context = fetch_manager.new_context(INITIAL_METADATA, True, [(FOO0, pd(0))])
        ids.append(context.update_and_generate_response_data([(FOO0, resp(0, 0))]).session_id)
    # Round robin over the 8 shards, twice; each id lives in (and names) its shard.
    for n, session_id in enumerate(ids):
        owner = cache.get_cache_shard(session_id)
        assert owner is cache.cache_shards[n % 8]
        assert owner.get(session_id) is not None
    assert cache.size == 16 and cache.total_partitions == 16


def test_a_full_cache_answers_session_id_zero_and_the_client_stays_sessionless():
    """1000 slots in 8 shards of 125: the 1001st consumer gets no session (no session is stale or evictable
    by a consumer)."""
    cache = FetchSessionCache.create(random.Random(2))
    fetch_manager = FetchManager(ManualTime(), cache)
    for _ in range(1000):
        context = fetch_manager.new_context(INITIAL_METADATA, False, [(FOO0, pd(0))])
        assert context.update_and_generate_response_data([(FOO0, resp(0, 0))]).session_id != INVALID_SESSION_ID
    context = fetch_manager.new_context(INITIAL_METADATA, False, [(FOO0, pd(0))])
    response = context.update_and_generate_response_data([(FOO0, resp(0, 0))])
    assert response.session_id == INVALID_SESSION_ID
    assert response.responses  # still answered in full
    assert cache.size == 1000 and cache.evictions == 0


def test_a_consumer_never_evicts_a_follower_session_but_a_follower_evicts_a_consumer():
    time = ManualTime()
    cache_shard = shard(1, MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS)
    fetch_manager = manager(cache_shard, time)
    _, follower = _full_session(fetch_manager, True)
    time.sleep(MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS + 1)
    # Old, but touched just now by an incremental request: neither stale nor evictable by a consumer...
    fetch_manager.new_context(FetchMetadata(follower.session_id, 1), True, [])
    consumer_ctx = fetch_manager.new_context(INITIAL_METADATA, False, [(FOO0, pd(0)), (FOO1, pd(0)), (BAR0, pd(0))])
    assert consumer_ctx.update_and_generate_response_data([(FOO0, resp(0, 0))]).session_id == INVALID_SESSION_ID
    assert cache_shard.get(follower.session_id) is not None
    # ... whereas a follower session evicts any consumer session, however young.
    cache_shard2 = shard(1, MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS)
    fetch_manager2 = manager(cache_shard2, time)
    _, consumer = _full_session(fetch_manager2, False)
    _, follower2 = _full_session(fetch_manager2, True)
    assert cache_shard2.get(consumer.session_id) is None
    assert cache_shard2.get(follower2.session_id) is not None
    assert cache_shard2.evictions == 1


def test_session_epochs_advance_and_wrap_to_one():
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(INT_MAX) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH
    fetch_manager = manager(shard(10, 1000))
    _, response = _full_session(fetch_manager, True)
    session = fetch_manager.cache.get_cache_shard(response.session_id).get(response.session_id)
    assert session.epoch == 1
    session.epoch = INT_MAX
    context = fetch_manager.new_context(FetchMetadata(response.session_id, INT_MAX), True, [])
    assert type(context) is IncrementalFetchContext
    assert session.epoch == 1
    assert context.update_and_generate_response_data([]).error == Errors.NONE
    assert type(fetch_manager.new_context(FetchMetadata(response.session_id, 1), True, [])) is IncrementalFetchContext


def test_a_response_generated_after_the_epoch_moved_on_is_an_epoch_error():
    """A duplicate request (the same epoch, sent again while the first was parked) gets a session error; the
    first one's response, generated later, finds the epoch moved on (``IncrementalFetchContext``)."""
    fetch_manager = manager(shard(10, 1000))
    _, response = _full_session(fetch_manager, True)
    first = fetch_manager.new_context(FetchMetadata(response.session_id, 1), True, [])
    # The client gave up on `first` and sent epoch 2 (it had seen no answer... a real client would reset;
    # here the point is the broker's check).
    second = fetch_manager.new_context(FetchMetadata(response.session_id, 2), True, [])
    assert type(second) is IncrementalFetchContext
    late = first.update_and_generate_response_data([(FOO0, resp(100, 100, record_bytes=10))])
    assert late.error == Errors.INVALID_FETCH_SESSION_EPOCH
    assert late.responses == []


@pytest.mark.parametrize(
    ("cached", "result", "included", "cached_hw_after"),
    [
        ((50, 0), resp(50, 0), False, 50),  # nothing changed
        ((50, 0), resp(50, 0, record_bytes=1), True, 50),  # records
        ((50, 0), resp(51, 0), True, 51),  # HW moved
        ((50, 0), resp(50, 7), True, 50),  # log start offset moved
        ((50, 0), resp(error=Errors.NOT_LEADER_OR_FOLLOWER), True, -1),  # error: cached HW -1
        ((50, 0), resp(50, 0, diverging=EpochEndOffset(Errors.NONE, 1, 10)), True, 50),  # diverging epoch
    ],
)
def test_maybe_update_response_data_includes_a_partition_iff_something_a_fetcher_needs_changed(
    cached, result, included, cached_hw_after
):
    """``CachedPartition.maybeUpdateResponseData``; the log end offset alone never counts."""
    partition = CachedPartition(FOO0, pd(0), *cached)
    result.log_end_offset = 999
    assert partition.maybe_update_response_data(result, False) is included
    assert (partition.high_watermark, partition.local_log_start_offset) == cached  # not updated
    assert partition.maybe_update_response_data(result, True) is included
    assert partition.high_watermark == cached_hw_after
    if result.error == Errors.NONE and not result.info.size_in_bytes and result.diverging_epoch is None:
        assert partition.maybe_update_response_data(result, True) is False  # answered once, then quiet


def test_a_partition_whose_error_clears_is_sent_again_though_its_hw_did_not_move():
    """The cached HW becomes -1 on an error (``maybeUpdateResponseData``), so the first good response after
    it is sent even if its HW equals the one sent before the error."""
    fetch_manager = manager(shard(10, 1000))
    _, response = _full_session(fetch_manager, True)  # FOO0 sent with HW 100
    session_id = response.session_id
    context = fetch_manager.new_context(FetchMetadata(session_id, 1), True, [])
    errored = context.update_and_generate_response_data(
        [(FOO0, resp(100, 100, error=Errors.NOT_LEADER_OR_FOLLOWER)), (FOO1, resp(10, 10))]
    )
    assert response_keys(errored) == [FOO0]
    context = fetch_manager.new_context(FetchMetadata(session_id, 2), True, [])
    cleared = context.update_and_generate_response_data([(FOO0, resp(100, 100)), (FOO1, resp(10, 10))])
    assert response_keys(cleared) == [FOO0]
    context = fetch_manager.new_context(FetchMetadata(session_id, 3), True, [])
    assert context.update_and_generate_response_data([(FOO0, resp(100, 100)), (FOO1, resp(10, 10))]).responses == []
