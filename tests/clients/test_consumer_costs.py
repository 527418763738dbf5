"""The consumer application's processing costs (``costs: {per_poll, per_record}``): one application thread
handles what poll() returns, batch after batch; a batch counts as consumed when its last record is handled.
The node's next fetch goes when poll() takes its records (Kafka's pre-fetch: ``AbstractFetch.fetchablePartitions``
leaves out buffered partitions, ``ClassicKafkaConsumer.poll`` sends fetches before returning records).

A bare SimPy environment with a scripted connection: the test decides when each response arrives."""

from __future__ import annotations

from typing import Any

import simpy

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import LogReadResult
from kafkasim.broker.fetch_session import INVALID_SESSION_ID, FetchResponse
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.clients.consumer import Consumer, ConsumerCosts
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope, Response
from kafkasim.network.observer import Observer

from .support import ScriptedConnection

TP = TopicPartition("t", 0)


class Recorder(Observer):
    def __init__(self) -> None:
        self.consumed: list[tuple[int, float]] = []

    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.response = None

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        self.consumed.append((batch.base_offset, receive_ms))


def _batches(base_offset: int, count: int, records: int) -> list[RecordBatch]:
    return [RecordBatch(records, 1000, 0, base_offset + i * records, "p", base_offset + i * records, 0)
            for i in range(count)]


def _data(batches: list[RecordBatch]) -> FetchResponse:
    info = FetchDataInfo(LogOffsetMetadata(batches[0].base_offset), batches, sum(b.size_in_bytes for b in batches))
    end = batches[-1].next_offset
    return FetchResponse(Errors.NONE, INVALID_SESSION_ID, [(TP, LogReadResult(info, Errors.NONE, None, end, 0, end))])


def _at(env: simpy.Environment, t: float, fn: Any) -> None:
    env.timeout(t - env.now).callbacks.append(lambda _e: fn())


def _respond(env: simpy.Environment, t: float, sent: list[RequestEnvelope], index: int, response: FetchResponse) -> None:
    def deliver() -> None:
        envelope = sent[index]
        envelope.set_response(Response(response, 0, 0))
        envelope.client_receive_ms = env.now
        envelope.end_ms = env.now
        envelope.response_received = envelope.response_sent = True
        envelope.on_response(envelope)

    _at(env, t, deliver)


def _consumer(env: simpy.Environment, sent: list[RequestEnvelope], recorder: Recorder,
              costs: ConsumerCosts | None) -> Consumer:
    config = ConsumerClientConfig("c1", 1, 500, 1024 * 1024, 50 * 1024 * 1024, request_timeout_ms=30_000)
    consumer = Consumer(env, config, [TP], lambda _broker: ScriptedConnection(sent), IdSource(), recorder,
                        costs=costs)
    consumer.start()
    return consumer


def test_without_costs_a_batch_is_consumed_at_its_response_and_the_next_fetch_goes_at_once() -> None:
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    _consumer(env, sent, recorder, None)
    _respond(env, 10.0, sent, 0, _data(_batches(0, 2, 10)))
    env.run(until=11.0)
    assert recorder.consumed == [(0, 10.0), (10, 10.0)]
    assert len(sent) == 2 and sent[1].client_send_ms == 10.0


def test_per_record_cost_delays_each_batch_by_its_records_and_queues_later_ones() -> None:
    # per_poll 1 ms, per_record 0.1 ms: two batches of 10 records arrive at 10 -> consumed at 10 + 1 + 1 and
    # 10 + 1 + 2. A second response at 11 waits behind them: polled at 13, consumed at 13 + 1 + 1.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    _consumer(env, sent, recorder, ConsumerCosts(lambda: 1.0, lambda: 0.1))
    _respond(env, 10.0, sent, 0, _data(_batches(0, 2, 10)))
    _respond(env, 11.0, sent, 1, _data(_batches(20, 1, 10)))
    env.run(until=100.0)
    assert [offset for offset, _ in recorder.consumed] == [0, 10, 20]
    assert [round(t, 9) for _, t in recorder.consumed] == [12.0, 13.0, 15.0]
    # The pre-fetch: poll() took the first response at 10 and sent the next fetch then, while it handles
    # them; the second response (at 11) stays buffered until the poll at 13, which sends the third fetch.
    assert [round(e.client_send_ms, 9) for e in sent] == [0.0, 10.0, 13.0]


def test_costs_of_zero_consume_as_without_costs() -> None:
    results = []
    for costs in (None, ConsumerCosts(lambda: 0.0, lambda: 0.0)):
        env = simpy.Environment()
        sent: list[RequestEnvelope] = []
        recorder = Recorder()
        _consumer(env, sent, recorder, costs)
        _respond(env, 10.0, sent, 0, _data(_batches(0, 2, 10)))
        _respond(env, 12.0, sent, 1, _data(_batches(20, 1, 10)))
        env.run(until=100.0)
        results.append((recorder.consumed, [e.client_send_ms for e in sent]))
    assert results[0] == results[1]


def test_a_stall_holds_the_application_thread() -> None:
    # The consumer is paused 3..30 while it handles a batch due at 4: consumed when the stall ends.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    consumer = _consumer(env, sent, recorder, ConsumerCosts(lambda: 0.0, lambda: 0.2))
    _respond(env, 2.0, sent, 0, _data(_batches(0, 1, 10)))
    _at(env, 3.0, consumer.pause)
    _at(env, 30.0, consumer.resume)
    env.run(until=100.0)
    assert recorder.consumed == [(0, 30.0)]
