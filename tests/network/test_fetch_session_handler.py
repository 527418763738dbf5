"""Kafka's ``FetchSessionHandlerTest`` (clients/src/test/java/org/apache/kafka/clients/FetchSessionHandlerTest.java),
ported, then the handler against the broker's ``FetchManager`` and a real ``ReplicaManager``.

Each ported test is named after Kafka's and runs the topic-name variant (kafkasim has no topic ids, so
``testTopicIdUsageGrantedOnIdUpgrade``, ``testIdUsageRevokedOnIdDowngrade``, ``testTopicIdReplaced``,
``testSessionEpochWhenMixedUsageOfTopicIDs``, ``testOkToAddNewIdAfterTopicRemovedFromSession`` and
``testVerifyFullFetchResponsePartitionsWithTopicIds`` have no equivalent).
"""

from __future__ import annotations

import random

import pytest

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, LogReadResult, PartitionData
from kafkasim.broker.fetch_session import (
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchManager,
    FetchResponse,
    FetchSessionCache,
    IncrementalFetchContext,
    next_epoch,
)
from kafkasim.broker.log import FetchIsolation
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import TopicPartition
from kafkasim.network.fetch_session_handler import FetchSessionHandler, FetchSessionRequestData, find_missing
from kafkasim.network.messages import (
    FETCH_REQUEST_OVERHEAD_BYTES,
    FETCH_RESPONSE_OVERHEAD_BYTES,
    FetchRequestData,
    fetch_request_bytes,
    fetch_request_data_bytes,
    fetch_response_bytes,
    fetch_response_data_bytes,
)
from kafkasim.timer import ManualTime
from tests.broker.support import Broker, batch

FOO0 = TopicPartition("foo", 0)
FOO1 = TopicPartition("foo", 1)
BAR0 = TopicPartition("bar", 0)
BAR1 = TopicPartition("bar", 1)
BAZ0 = TopicPartition("baz", 0)
BAZ1 = TopicPartition("baz", 1)


def pd(fetch_offset: int, log_start_offset: int, max_bytes: int) -> PartitionData:
    """``new FetchRequest.PartitionData(topicId, fetchOffset, logStartOffset, maxBytes, Optional.empty())``."""
    return PartitionData(fetch_offset, log_start_offset, max_bytes)


def resp_entry(hw: int, error: Errors = Errors.NONE) -> LogReadResult:
    """Kafka's ``RespEntry``: a partition with a HW (log start 0), or an error (HW -1)."""
    info = FetchDataInfo(LogOffsetMetadata(0))
    if error != Errors.NONE:
        return LogReadResult(info, error)
    return LogReadResult(info, high_watermark=hw, log_start_offset=0)


def response(error: Errors, session_id: int, *parts: TopicPartition) -> FetchResponse:
    """``FetchResponse.of(error, 0, sessionId, respMap(...))``."""
    return FetchResponse(error, session_id, [(tp, resp_entry(10)) for tp in parts])


def items(data: dict) -> list:
    return list(data.items())


def test_find_missing():
    """testFindMissing"""
    assert find_missing([FOO0], {FOO0}) == []
    assert find_missing([FOO0], {FOO1}) == [FOO0]
    assert find_missing([FOO0, FOO1], {BAZ0}) == [FOO0, FOO1]
    assert set(find_missing([FOO0, FOO1, BAR0, BAR1], {BAR0, BAZ0, BAZ1})) == {BAR1, FOO0, FOO1}
    assert find_missing([FOO0, FOO1, BAR0, BAR1, BAZ1], {FOO0, FOO1, BAR0, BAR1, BAZ0, BAZ1}) == []


def test_sessionless():
    """testSessionless: a broker answering session id 0 keeps the client on full requests."""
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    builder.add(FOO1, pd(10, 110, 210))
    data = builder.build()
    expected = [(FOO0, pd(0, 100, 200)), (FOO1, pd(10, 110, 210))]
    assert items(data.to_send) == expected and items(data.session_partitions) == expected
    assert data.metadata.session_id == INVALID_SESSION_ID
    assert data.metadata.epoch == INITIAL_EPOCH

    handler.handle_response(response(Errors.NONE, INVALID_SESSION_ID, FOO0, FOO1))

    builder2 = handler.new_builder()
    builder2.add(FOO0, pd(0, 100, 200))
    data2 = builder2.build()
    assert data2.metadata.session_id == INVALID_SESSION_ID
    assert data2.metadata.epoch == INITIAL_EPOCH
    assert items(data2.to_send) == [(FOO0, pd(0, 100, 200))] == items(data2.session_partitions)


def test_incrementals():
    """testIncrementals: added partitions first, then altered ones; an INVALID_FETCH_SESSION_EPOCH answer
    makes the next request a full one that closes the session and asks for a new one."""
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    builder.add(FOO1, pd(10, 110, 210))
    data = builder.build()
    expected = [(FOO0, pd(0, 100, 200)), (FOO1, pd(10, 110, 210))]
    assert items(data.to_send) == expected and items(data.session_partitions) == expected
    assert data.metadata.session_id == INVALID_SESSION_ID
    assert data.metadata.epoch == INITIAL_EPOCH

    handler.handle_response(response(Errors.NONE, 123, FOO0, FOO1))

    # An incremental request that adds one partition and alters another.
    builder2 = handler.new_builder()
    builder2.add(FOO0, pd(0, 100, 200))
    builder2.add(FOO1, pd(10, 120, 210))
    builder2.add(BAR0, pd(20, 200, 200))
    data2 = builder2.build()
    assert not data2.metadata.is_full
    assert items(data2.session_partitions) == [
        (FOO0, pd(0, 100, 200)),
        (FOO1, pd(10, 120, 210)),
        (BAR0, pd(20, 200, 200)),
    ]
    assert items(data2.to_send) == [(BAR0, pd(20, 200, 200)), (FOO1, pd(10, 120, 210))]

    handler.handle_response(response(Errors.NONE, 123, FOO1))

    # No new request built: an INVALID_FETCH_SESSION_EPOCH answer closes the session on the next request.
    handler.handle_response(response(Errors.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID))

    builder4 = handler.new_builder()
    builder4.add(FOO0, pd(0, 100, 200))
    builder4.add(FOO1, pd(10, 120, 210))
    builder4.add(BAR0, pd(20, 200, 200))
    data4 = builder4.build()
    assert data4.metadata.is_full
    assert data4.metadata.session_id == data2.metadata.session_id
    assert data4.metadata.epoch == INITIAL_EPOCH
    expected4 = [(FOO0, pd(0, 100, 200)), (FOO1, pd(10, 120, 210)), (BAR0, pd(20, 200, 200))]
    assert items(data4.session_partitions) == expected4 == items(data4.to_send)


def test_double_build():
    """testDoubleBuild"""
    builder = FetchSessionHandler(1).new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    builder.build()
    with pytest.raises(RuntimeError):
        builder.build()


def test_incremental_partition_removal():
    """testIncrementalPartitionRemoval: removed partitions go to the forget list; a
    FETCH_SESSION_ID_NOT_FOUND answer makes the next request a full (0, 0) one."""
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    builder.add(FOO1, pd(10, 110, 210))
    builder.add(BAR0, pd(20, 120, 220))
    data = builder.build()
    expected = [(FOO0, pd(0, 100, 200)), (FOO1, pd(10, 110, 210)), (BAR0, pd(20, 120, 220))]
    assert items(data.to_send) == expected == items(data.session_partitions)
    assert data.metadata.is_full

    handler.handle_response(response(Errors.NONE, 123, FOO0, FOO1, BAR0))

    # An incremental request that removes two partitions.
    builder2 = handler.new_builder()
    builder2.add(FOO1, pd(10, 110, 210))
    data2 = builder2.build()
    assert not data2.metadata.is_full
    assert data2.metadata.session_id == 123
    assert data2.metadata.epoch == 1
    assert items(data2.session_partitions) == [(FOO1, pd(10, 110, 210))]
    assert data2.to_send == {}
    assert set(data2.to_forget) == {FOO0, BAR0}

    # FETCH_SESSION_ID_NOT_FOUND: the next request is a session-establishing full request.
    handler.handle_response(response(Errors.FETCH_SESSION_ID_NOT_FOUND, INVALID_SESSION_ID))

    builder3 = handler.new_builder()
    builder3.add(FOO0, pd(0, 100, 200))
    data3 = builder3.build()
    assert data3.metadata.is_full
    assert data3.metadata.session_id == INVALID_SESSION_ID
    assert data3.metadata.epoch == INITIAL_EPOCH
    assert items(data3.session_partitions) == [(FOO0, pd(0, 100, 200))] == items(data3.to_send)


def test_id_usage_with_all_forgotten_partitions():
    """testIdUsageWithAllForgottenPartitions (topic names): removing every partition is still an
    incremental request of the same session, forgetting them."""
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    data = builder.build()
    assert items(data.to_send) == [(FOO0, pd(0, 100, 200))] == items(data.session_partitions)
    assert data.metadata.is_full

    handler.handle_response(response(Errors.NONE, 123, FOO0))

    data2 = handler.new_builder().build()
    assert data2.to_forget == [FOO0]
    assert data2.metadata.session_id == 123
    assert data2.metadata.epoch == 1


def test_verify_full_fetch_response_partitions():
    """testVerifyFullFetchResponsePartitions"""
    handler = FetchSessionHandler(1)
    issue = handler.verify_full_fetch_response_partitions([FOO0, FOO1, BAR0])
    assert "extraPartitions=" in issue
    assert "omittedPartitions=" not in issue
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    builder.add(FOO1, pd(10, 110, 210))
    builder.add(BAR0, pd(20, 120, 220))
    builder.build()
    assert handler.verify_full_fetch_response_partitions([FOO0, FOO1, BAR0]) is None
    issue3 = handler.verify_full_fetch_response_partitions([FOO0, FOO1])
    assert "extraPartitions=" not in issue3
    assert "omittedPartitions=" in issue3


def test_top_level_error_resets_metadata():
    """testTopLevelErrorResetsMetadata: any other top-level error closes the session on the next request
    and asks for a new one (id, 0)."""
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 100, 200))
    builder.add(FOO1, pd(10, 110, 210))
    data = builder.build()
    assert data.metadata.session_id == INVALID_SESSION_ID
    assert data.metadata.epoch == INITIAL_EPOCH

    handler.handle_response(response(Errors.NONE, 123, FOO0, FOO1))

    unknown = TopicPartition("unknown", 0)
    builder2 = handler.new_builder()
    builder2.add(unknown, pd(0, 100, 200))
    data2 = builder2.build()
    assert not data2.metadata.is_full
    assert data2.metadata.session_id == 123
    assert data2.metadata.epoch == next_epoch(INITIAL_EPOCH)

    error_response = FetchResponse(Errors.UNKNOWN_TOPIC_ID, 123, [(unknown, resp_entry(-1, Errors.UNKNOWN_TOPIC_ID))])
    assert handler.handle_response(error_response) is False

    data3 = handler.new_builder().build()
    assert data3.metadata.session_id == 123
    assert data3.metadata.epoch == INITIAL_EPOCH


# --- beyond Kafka's cases: the client against the broker ------------------------------------------------


def test_an_incremental_response_naming_a_partition_outside_the_session_is_refused():
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 0, 100))
    builder.build()
    assert handler.handle_response(response(Errors.NONE, 7, FOO0))
    builder2 = handler.new_builder()
    builder2.add(FOO0, pd(0, 0, 100))
    assert not builder2.build().metadata.is_full
    assert handler.handle_response(response(Errors.NONE, 7, BAR0)) is False
    assert handler.next_metadata == (7, INITIAL_EPOCH)  # nextCloseExistingAttemptNew


def test_handle_error_closes_the_session_and_asks_for_a_new_one():
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    builder.add(FOO0, pd(0, 0, 100))
    builder.build()
    handler.handle_response(response(Errors.NONE, 7, FOO0))
    handler.handle_error()
    assert handler.next_metadata == (7, INITIAL_EPOCH)
    handler.notify_close()
    assert handler.next_metadata == (7, -1)


class Follower:
    """A follower's fetcher toward one leader: a FetchSessionHandler and the broker's FetchManager, the
    request and response going straight across (what KafkaApis and the fetcher thread will do)."""

    def __init__(self, fetch_manager: FetchManager, partitions: dict[TopicPartition, int], replica_id: int = 1):
        self.fetch_manager = fetch_manager
        self.handler = FetchSessionHandler(0)
        self.offsets = dict(partitions)
        self.replica_id = replica_id
        self.requests: list[FetchRequestData] = []

    def build(self) -> FetchSessionRequestData:
        builder = self.handler.new_builder(copy_session_partitions=False)
        for tp, offset in self.offsets.items():
            builder.add(tp, pd(offset, 0, 1024 * 1024))
        return builder.build()

    def request(self) -> FetchRequestData:
        data = self.build()
        body = FetchRequestData(self.replica_id, 500, 1, 10 << 20, data.fetch_infos, metadata=data.metadata,
                                to_forget=data.to_forget)
        self.requests.append(body)
        return body

    def context(self, body: FetchRequestData):
        return self.fetch_manager.new_context(body.metadata, body.replica_id >= 0, body.fetch_infos, body.to_forget)

    def receive(self, fetch_response: FetchResponse) -> bool:
        ok = self.handler.handle_response(fetch_response)
        if ok:
            for tp, result in fetch_response.responses:
                self.offsets[tp] += sum(b.record_count for b in result.records)
        return ok


def _manager(time=None, seed: int = 0) -> FetchManager:
    return FetchManager(time or ManualTime(), FetchSessionCache.create(random.Random(seed)))


def test_an_idle_follower_sends_zero_partition_incremental_requests_and_gets_empty_responses():
    """The zero-partition incremental request of a caught-up, idle follower (KIP-227): the request carries
    no partition, the broker still fetches all of the session's, and the response carries none."""
    partitions = {TopicPartition("t", p): 50 for p in range(3)}
    follower = Follower(_manager(), partitions)
    full = follower.request()
    assert full.metadata == (INVALID_SESSION_ID, INITIAL_EPOCH)
    assert len(full.fetch_infos) == 3
    context = follower.context(full)
    reads = [(tp, resp_entry(50)) for tp, _ in context.fetch_infos()]
    assert follower.receive(context.update_and_generate_response_data(reads))
    session_id = follower.handler.session_id
    assert session_id != INVALID_SESSION_ID

    for epoch in (1, 2, 3):
        body = follower.request()
        assert body.metadata == (session_id, epoch)
        assert body.fetch_infos == [] and list(body.to_forget) == []
        assert fetch_request_data_bytes(body) == FETCH_REQUEST_OVERHEAD_BYTES
        context = follower.context(body)
        assert type(context) is IncrementalFetchContext
        assert [tp for tp, _ in context.fetch_infos()] == list(partitions)  # the fetch covers the session
        answer = context.update_and_generate_response_data([(tp, resp_entry(50)) for tp, _ in context.fetch_infos()])
        assert answer.responses == []
        assert fetch_response_data_bytes(answer) == FETCH_RESPONSE_OVERHEAD_BYTES
        assert follower.receive(answer)


def test_an_incremental_request_sends_only_the_partitions_that_received_records():
    partitions = {TopicPartition("t", p): 0 for p in range(100)}
    follower = Follower(_manager(), partitions)
    context = follower.context(follower.request())
    follower.receive(context.update_and_generate_response_data([(tp, resp_entry(0)) for tp, _ in context.fetch_infos()]))
    assert fetch_request_data_bytes(follower.requests[0]) == fetch_request_bytes(100)
    # Records arrived for two partitions: the next request sends just those two (their offsets moved).
    follower.offsets[TopicPartition("t", 7)] = 10
    follower.offsets[TopicPartition("t", 42)] = 3
    body = follower.request()
    assert [tp for tp, _ in body.fetch_infos] == [TopicPartition("t", 7), TopicPartition("t", 42)]
    assert fetch_request_data_bytes(body) == fetch_request_bytes(2)
    # Dropping a partition (e.g. leadership moved) forgets it.
    del follower.offsets[TopicPartition("t", 99)]
    follower.receive(follower.context(body).update_and_generate_response_data([]))
    body = follower.request()
    assert body.fetch_infos == [] and body.to_forget == [TopicPartition("t", 99)]
    assert fetch_request_data_bytes(body) == fetch_request_bytes(0, 1)


def test_a_lost_session_costs_one_full_round_trip():
    """The leader forgot the session (a restart: a new FetchManager): FETCH_SESSION_ID_NOT_FOUND with no
    partitions, then one full request that creates a new session, then incremental again."""
    partitions = {TopicPartition("t", p): 5 for p in range(4)}
    follower = Follower(_manager(seed=1), partitions)
    context = follower.context(follower.request())
    follower.receive(context.update_and_generate_response_data([(tp, resp_entry(5)) for tp, _ in context.fetch_infos()]))
    old_session = follower.handler.session_id

    follower.fetch_manager = _manager(seed=2)  # the leader restarted
    body = follower.request()
    assert not body.metadata.is_full
    context = follower.context(body)
    assert context.error == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert context.fetch_infos() == []
    answer = context.update_and_generate_response_data([])
    assert answer.error == Errors.FETCH_SESSION_ID_NOT_FOUND and answer.responses == []
    assert follower.receive(answer) is False

    body = follower.request()
    assert body.metadata == (INVALID_SESSION_ID, INITIAL_EPOCH)
    assert len(body.fetch_infos) == 4  # full again
    context = follower.context(body)
    follower.receive(context.update_and_generate_response_data([(tp, resp_entry(5)) for tp, _ in context.fetch_infos()]))
    assert follower.handler.session_id not in (INVALID_SESSION_ID, old_session)
    assert follower.request().fetch_infos == []


def test_after_a_timeout_the_next_full_request_closes_the_old_session_on_the_broker():
    fetch_manager = _manager()
    follower = Follower(fetch_manager, {FOO0: 0, FOO1: 0})
    context = follower.context(follower.request())
    follower.receive(context.update_and_generate_response_data([(tp, resp_entry(0)) for tp, _ in context.fetch_infos()]))
    old_session = follower.handler.session_id
    follower.request()  # sent, then timed out
    follower.handler.handle_error()
    body = follower.request()
    assert body.metadata == (old_session, INITIAL_EPOCH)
    context = follower.context(body)
    assert fetch_manager.cache.size == 0  # the old session is closed as the full request arrives
    follower.receive(context.update_and_generate_response_data([(tp, resp_entry(0)) for tp, _ in context.fetch_infos()]))
    assert fetch_manager.cache.size == 1
    assert follower.handler.session_id != old_session


def test_an_idle_followers_empty_incremental_request_is_parked_on_every_partition_and_completed_by_a_produce():
    """On a real ReplicaManager: the empty incremental request becomes a DelayedFetch over all the session's
    partitions (min bytes summed over them), completed by a produce to any one of them; the response then
    carries just that partition."""
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    broker = Broker(partitions=(tp0, tp1))
    fetch_manager = FetchManager(broker.time, FetchSessionCache.create(random.Random(0)))
    follower = Follower(fetch_manager, {tp0: 0, tp1: 0})
    params = FetchParams(1, 500, 1, 10 << 20, FetchIsolation.LOG_END)
    answers: list[FetchResponse] = []

    def fetch() -> None:
        context = follower.context(follower.request())
        broker.rm.fetch_messages(
            params, context.fetch_infos(), lambda results: answers.append(context.update_and_generate_response_data(results))
        )
        broker.rm.try_complete_actions()

    fetch()  # full: nothing to read, parked until it expires
    assert not answers
    broker.advance(500)
    assert len(answers) == 1 and len(answers[0].responses) == 2
    assert follower.receive(answers.pop())

    fetch()  # incremental, zero partitions: parked on both partitions
    assert follower.requests[-1].fetch_infos == []
    assert not answers
    assert broker.rm.fetch_purgatory.num_delayed == 1
    broker.produce(batch(size=300, records=3), tp=tp1, acks=1)
    assert len(answers) == 1
    answer = answers.pop()
    assert [tp for tp, _ in answer.responses] == [tp1]
    assert answer.responses[0][1].info.size_in_bytes == 300
    # One partition and its records on the wire, where a sessionless response would carry both partitions.
    assert fetch_response_data_bytes(answer) == fetch_response_bytes(1, 300) < fetch_response_bytes(2, 300)
    assert follower.receive(answer)
    assert follower.offsets == {tp0: 0, tp1: 3}
