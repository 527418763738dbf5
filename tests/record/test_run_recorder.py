"""RunRecorder: what a finished request's row keeps while it waits in the recorder's buffer."""

from __future__ import annotations

import simpy

from kafkasim.broker.fetch import PartitionData
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.network.kafka_channel import KafkaChannel
from kafkasim.network.messages import (
    API_FETCH_FOLLOWER,
    API_PRODUCE,
    FetchRequestData,
    ProduceRequestData,
    RequestEnvelope,
    Response,
)
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.network.socket_server import ProcessorCosts, SocketServer
from kafkasim.record.recorder import Recorder
from kafkasim.record.run_recorder import RunRecorder


def _fetch(partitions: int) -> RequestEnvelope:
    infos = [(TopicPartition("t", p), PartitionData(0, 0, 1024)) for p in range(partitions)]
    return RequestEnvelope(1, API_FETCH_FOLLOWER, "follower-1", FetchRequestData(1, 500, 1, 1 << 20, infos), 100, 0.0, 0.0)


def _channel() -> KafkaChannel:
    """A broker-side channel: the request has been read by a processor."""
    env = simpy.Environment()
    costs = ProcessorCosts(network_read=lambda: 0.0, network_read_per_kib=lambda: 0.0, network_send=lambda: 0.0,
                           network_send_per_kib=lambda: 0.0)
    server = SocketServer(env, RequestChannel(env, 10), costs, num_network_threads=1, observer=Observer())
    return server.connect("c", lambda _e: None)


def _done(envelope: RequestEnvelope, response: Response | None) -> RequestEnvelope:
    envelope.connection = _channel()
    if response is not None:
        envelope.set_response(response)
    envelope.response_sent = envelope.response_received = True
    for name in ("start_ms", "dequeue_ms", "local_complete_ms", "response_complete_ms", "response_dequeue_ms",
                 "end_ms", "client_receive_ms"):
        setattr(envelope, name, 1.0)
    return envelope


def test_a_finished_request_row_keeps_no_per_partition_body():
    # Issue 13: with 1,000 partitions every follower fetch carries 1,000 PartitionData; the recorder's
    # buffer (200 000 rows) kept them all until the end of the run (~1 GB for 10 simulated seconds).
    recorder = Recorder()
    run = RunRecorder(recorder, {})
    envelope = _done(_fetch(1000), Response({}, 100, 1000))
    run.request_finished(envelope)  # client done; the broker sent the response (end_ms set)
    assert run.requests_recorded == 1
    assert envelope.body is None
    assert envelope.response is None
    # The row still has every column the requests table writes.
    frame = recorder.tables().requests
    assert frame["partitions"].tolist() == [1000]
    assert frame["api"].tolist() == [API_FETCH_FOLLOWER]


def test_a_finished_request_awaiting_the_broker_keeps_its_body_until_written():
    recorder = Recorder()
    run = RunRecorder(recorder, {})
    envelope = _fetch(3)
    envelope.connection = _channel()  # the broker is reading it: it will be handled
    run.request_finished(envelope)  # the client gave up first
    assert envelope.body is not None
    _done(envelope, None)
    run.response_done(envelope)
    assert envelope.body is None


def test_an_acks_0_produce_keeps_its_body_for_the_handler():
    # acks=0: the processor ends the request when it has read it (no response), possibly before a handler
    # has taken it: the handler still needs the batches.
    recorder = Recorder()
    run = RunRecorder(recorder, {})
    tp = TopicPartition("t", 0)
    body = ProduceRequestData(0, 30_000, {tp: [RecordBatch(1, 100, 0, 1)]})
    envelope = RequestEnvelope(1, API_PRODUCE, "producer-1", body, 200, 0.0, 0.0, expects_response=False)
    envelope.connection = _channel()
    envelope.end_ms = 1.0
    envelope.response_sent = True
    run.response_done(envelope)
    run.request_finished(envelope)
    assert run.requests_recorded == 1
    assert envelope.body is body
