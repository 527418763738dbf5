"""``Producer`` (its Sender and NetworkClient side) on a bare SimPy environment, re-expressing the cases of
Kafka's ``SenderTest`` that apply to kafkasim's producer with ``retries = 0`` and no idempotence (the
retry and idempotence cases are in ``test_delivery.py``).

No engine and no scenario: the producer gets its frozen config, a scripted connection (the test decides
when each response arrives, and sees every connection the producer opens) and an ``Observer`` that keeps
what the producer reports. Records arrive at a constant rate, one every ``GAP_MS``, from ``GAP_MS`` on.
"""

from __future__ import annotations

import math
import random
from typing import Any

import simpy

from kafkasim.broker.errors import Errors
from kafkasim.broker.produce import PartitionResponse
from kafkasim.broker.records import TopicPartition
from kafkasim.clients.accumulator import RECORD_BATCH_OVERHEAD_BYTES
from kafkasim.clients.config import ArrivalConfig, ProducerClientConfig
from kafkasim.clients.producer import Producer
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope, Response
from kafkasim.network.observer import Observer

from .support import ScriptedConnection, connection_of

TP = TopicPartition("t", 0)
RECORD = 100  # bytes per record
GAP_MS = 1.0  # constant arrivals at 1000/s: records intended at 1, 2, 3, ... ms


class Reports(Observer):
    """What the producer reports: each batch's outcome and each finished request."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, int, int, Errors, int]] = []  # (ack ms, batch id, records, error, base)
        self.finished: list[RequestEnvelope] = []

    def batch_finished(self, producer: str, acks: int, batch: Any, ack_ms: float, error: Errors,
                       base_offset: int) -> None:
        self.batches.append((ack_ms, batch.batch_id, batch.record_count, error, base_offset))

    def request_finished(self, envelope: RequestEnvelope) -> None:
        self.finished.append(envelope)


class Harness:
    def __init__(self, *, acks: int = -1, linger_ms: float = 0.0, batch_size: int = 16_384, max_in_flight: int = 5,
                 request_timeout_ms: int = 30_000, stop_ms: float = math.inf, retries: int = 0,
                 enable_idempotence: bool = False, delivery_timeout_ms: float = 120_000.0, gap_ms: float = GAP_MS,
                 fetch_metadata: Any = None, metadata_round_trip_ms: float = 0.0, buffer_memory: int = 33_554_432,
                 max_block_ms: float = 60_000.0) -> None:
        self.env = simpy.Environment()
        self.sent: list[RequestEnvelope] = []
        self.connections: list[ScriptedConnection] = []
        self.reports = Reports()
        config = ProducerClientConfig(
            name="p1",
            acks=acks,
            linger_ms=linger_ms,
            batch_size=batch_size,
            max_in_flight_requests_per_connection=max_in_flight,
            request_timeout_ms=request_timeout_ms,
            partitioner="sticky",
            rate_per_s=1000.0 / gap_ms,
            arrival=ArrivalConfig("constant"),
            retries=retries,
            enable_idempotence=enable_idempotence,
            delivery_timeout_ms=delivery_timeout_ms,
            buffer_memory=buffer_memory,
            max_block_ms=max_block_ms,
        )
        self.producer = Producer(
            self.env, config, [TP], self._connect, lambda: float(RECORD), random.Random(1), random.Random(2),
            IdSource(), self.reports, stop_ms=stop_ms, retry_rng=random.Random(3), fetch_metadata=fetch_metadata,
            metadata_round_trip_ms=metadata_round_trip_ms,
        )
        self.producer.start()

    def _connect(self, _broker_id: int) -> ScriptedConnection:
        connection = ScriptedConnection(self.sent)
        self.connections.append(connection)
        return connection

    def run(self, until: float) -> None:
        self.env.run(until=until)

    def respond(self, envelope: RequestEnvelope, base_offset: int) -> None:
        """The broker's response to ``envelope`` arrives now."""
        statuses = {tp: PartitionResponse(Errors.NONE, base_offset) for tp in envelope.body.entries}
        envelope.set_response(Response(statuses, 0, len(statuses)))
        envelope.response_received = True
        envelope.client_receive_ms = self.env.now
        envelope.on_response(envelope)

    def respond_with(self, envelope: RequestEnvelope, error: Errors, base_offset: int = -1,
                     log_start_offset: int = -1) -> None:
        """The broker's response to ``envelope`` arrives now, with ``error`` for every partition."""
        statuses = {
            tp: PartitionResponse(error, base_offset, log_start_offset=log_start_offset) for tp in envelope.body.entries
        }
        envelope.set_response(Response(statuses, 0, len(statuses)))
        envelope.response_received = True
        envelope.client_receive_ms = self.env.now
        envelope.on_response(envelope)

    def respond_at(self, t: float, envelope_of: Any, base_offset: int) -> None:
        self.env.timeout(t - self.env.now).callbacks.append(lambda _e: self.respond(envelope_of(), base_offset))


def _records(envelope: RequestEnvelope) -> list[int]:
    return [b.record_count for batches in envelope.body.entries.values() for b in batches]


def test_max_in_flight_caps_the_requests_on_the_connection() -> None:
    # NetworkClient.canSendRequest / InFlightRequests.canSendMore: with max.in.flight = 2 and no response,
    # the third sendable batch waits, however long.
    h = Harness(max_in_flight=2)
    h.run(until=50.0)
    assert [e.client_send_ms for e in h.sent] == [1.0, 2.0]
    assert h.producer.in_flight == 2
    # Meanwhile records 3..49 fill one batch: with linger.ms = 0 a batch still takes records while it waits. The
    # record intended at 50 ms has not arrived: run(until=50) stops ahead of every event at 50 ms.
    h.producer.catch_up()
    assert [b.record_count for b in h.producer.accumulator.all_batches()] == [47]


def test_a_response_frees_a_slot_and_the_sender_sends_the_next_ready_batch() -> None:
    # SenderTest's in-flight accounting: the response completes the oldest request (its batch gets its
    # base offset), and the Sender, woken by it, sends the next ready batch at once.
    h = Harness(max_in_flight=2, stop_ms=4.5)  # records at 1, 2, 3, 4 ms
    h.respond_at(10.0, lambda: h.sent[0], base_offset=0)
    h.run(until=20.0)
    assert [e.client_send_ms for e in h.sent] == [1.0, 2.0, 10.0]
    # The records of 3 and 4 ms waited in one batch (linger.ms = 0 sends at once only when a slot is free).
    assert _records(h.sent[2]) == [2]
    assert h.reports.batches == [(10.0, 0, 1, Errors.NONE, 0)]
    assert h.reports.finished == [h.sent[0]]
    assert h.producer.in_flight == 2


def test_request_timeout_disconnects_and_fails_every_request_in_flight() -> None:
    # NetworkClient.handleTimedOutRequests: the oldest request is past request.timeout.ms, so the client
    # disconnects from the node ("Disconnecting from node due to request timeout"): every request in flight
    # on the connection fails as timed out (cancelInFlightRequests with timedOut: Sender.handleProduceResponse
    # answers REQUEST_TIMED_OUT for each), and no new connection is made until the Sender has a batch for
    # the node again.
    h = Harness(max_in_flight=3, request_timeout_ms=100, stop_ms=3.5)  # records at 1, 2, 3 ms
    h.run(until=50.0)
    assert len(h.sent) == 3 and len(h.connections) == 1
    h.run(until=102.0)
    assert [(ack, error) for ack, _id, _n, error, _base in h.reports.batches] == [
        (101.0, Errors.REQUEST_TIMED_OUT),
        (101.0, Errors.REQUEST_TIMED_OUT),
        (101.0, Errors.REQUEST_TIMED_OUT),
    ]
    assert [e.client_timeout for e in h.reports.finished] == [True, True, True]
    assert [e.error for e in h.sent] == [Errors.REQUEST_TIMED_OUT] * 3
    assert h.connections[0].closed and len(h.connections) == 1
    assert h.producer.connections == {} and h.producer.in_flight == 0
    # A late response on the old connection is never delivered to the application.
    h.respond(h.sent[1], base_offset=1)
    assert len(h.reports.batches) == 3


def test_after_a_request_timeout_the_next_request_goes_on_a_new_connection_after_the_reconnect_backoff() -> None:
    # ClusterConnectionStates.disconnected: the node may connect again reconnect.backoff.ms (50 ms +-20%)
    # after the disconnect; the waiting batch goes on the new connection then.
    h = Harness(max_in_flight=1, request_timeout_ms=100, stop_ms=2.5)  # records at 1 and 2 ms
    h.run(until=200.0)
    assert [e.client_send_ms for e in h.sent][0] == 1.0 and len(h.sent) == 2
    assert 101.0 + 40 <= h.sent[1].client_send_ms <= 101.0 + 60
    assert [connection_of(e) for e in h.sent] == h.connections  # one request on each connection
    assert h.sent[0].error == Errors.REQUEST_TIMED_OUT and h.sent[1].error is None


def test_acks_zero_completes_at_send_with_unknown_offsets() -> None:
    # An acks=0 request expects no response: NetworkClient completes it when it is written to the socket,
    # and the producer's future gets offset -1 (ProduceResponse.INVALID_OFFSET). Nothing stays in flight,
    # so max.in.flight never holds the Sender back.
    h = Harness(acks=0, max_in_flight=1, stop_ms=3.5)
    h.run(until=10.0)
    assert [e.client_send_ms for e in h.sent] == [1.0, 2.0, 3.0]
    assert not any(e.expects_response for e in h.sent)
    assert h.reports.batches == [(t, i, 1, Errors.NONE, -1) for i, t in enumerate([1.0, 2.0, 3.0])]
    assert h.reports.finished == h.sent
    assert h.producer.in_flight == 0


def test_linger_holds_a_batch_that_is_not_full_until_linger_ms() -> None:
    # RecordAccumulator.ready: a batch that is not full is sendable once it has waited linger.ms.
    h = Harness(linger_ms=5.0, stop_ms=1.5)  # one record, at 1 ms
    h.run(until=5.9)
    assert h.sent == []
    h.run(until=20.0)
    assert [e.client_send_ms for e in h.sent] == [6.0]
    assert _records(h.sent[0]) == [1]


def test_a_full_batch_goes_at_once_without_waiting_for_linger() -> None:
    # KafkaProducer.doSend wakes the Sender when a batch is full; ready() sends a full batch at once.
    h = Harness(linger_ms=1_000.0, batch_size=RECORD_BATCH_OVERHEAD_BYTES + 2 * RECORD, stop_ms=2.5)
    h.run(until=10.0)
    assert [e.client_send_ms for e in h.sent] == [2.0]
    assert _records(h.sent[0]) == [2]


def test_one_connection_per_leader_with_its_own_in_flight_limit_and_timeout() -> None:
    # Sender.sendProducerData routes by leadership: partition a is led by broker 0, b by broker 1. Each
    # broker gets its own connection, its own max.in.flight.requests.per.connection (1 here) and its own
    # request timeout (NetworkClient disconnects from one node only).
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    opened: dict[int, list[ScriptedConnection]] = {0: [], 1: []}
    reports = Reports()
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)

    def connect(broker_id: int) -> ScriptedConnection:
        connection = ScriptedConnection(sent)
        opened[broker_id].append(connection)
        return connection

    config = ProducerClientConfig(
        name="p1", acks=-1, linger_ms=0.0, batch_size=RECORD, max_in_flight_requests_per_connection=1,
        request_timeout_ms=100, partitioner="round_robin", rate_per_s=1000.0 / GAP_MS,
        arrival=ArrivalConfig("constant"), retries=0, enable_idempotence=False,
    )
    producer = Producer(env, config, [a, b], connect, lambda: float(RECORD), random.Random(1), random.Random(2),
                        IdSource(), reports, leaders={a: 0, b: 1}, stop_ms=4.5)
    producer.start()
    env.run(until=10.0)
    # Records at 1 (a), 2 (b), 3 (a), 4 (b): one request per broker, then each connection is full.
    assert [(e.client_send_ms, list(e.body.entries)) for e in sent] == [(1.0, [a]), (2.0, [b])]
    assert [connection_of(e) for e in sent] == [opened[0][0], opened[1][0]]
    # Broker 0 answers: its next batch goes at once; broker 1's connection is still full.
    sent[0].set_response(Response({a: PartitionResponse(Errors.NONE, 0)}, 0, 1))
    sent[0].response_received = True
    sent[0].client_receive_ms = env.now
    sent[0].on_response(sent[0])
    assert [(e.client_send_ms, list(e.body.entries)) for e in sent[2:]] == [(10.0, [a])]
    env.run(until=103.0)
    # Broker 1's request timed out at 102 (sent at 2): only its connection was closed.
    assert sent[1].error == Errors.REQUEST_TIMED_OUT and sent[2].error is None
    assert opened[1][0].closed and len(opened[1]) == 1 and len(opened[0]) == 1 and not opened[0][0].closed
    assert producer.connections == {0: opened[0][0]}
    # Its waiting batch goes on a new connection once the reconnect backoff (50 ms +-20%) has passed.
    env.run(until=102.0 + 61)
    to_b = [e for e in sent[3:] if list(e.body.entries) == [b]]
    assert len(to_b) == 1 and 102.0 + 40 <= to_b[0].client_send_ms <= 102.0 + 60 and connection_of(to_b[0]) is opened[1][1]
