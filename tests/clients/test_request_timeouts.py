"""A fetcher's request timeout against responses, pauses and append work (follower and consumer).

Kafka's ``NetworkClient.poll`` reads the responses waiting in the socket (``handleCompletedReceives``)
before it looks for timed-out requests (``handleTimedOutRequests``), and a request whose response was
received is no longer in flight. So:

* a response that arrived while the client was paused (a GC pause, SIGSTOP) is processed when it
  resumes, even when the pause outlasted the request timeout;
* once the replica fetcher has its response, appending it takes the thread's time, but the request
  can no longer time out.

The clients run here on a bare SimPy environment with a scripted connection: the test decides when each
response arrives.
"""

from __future__ import annotations

from typing import Any

import simpy

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import LogReadResult
from kafkasim.broker.fetch_session import INVALID_SESSION_ID, FetchResponse
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.clients.consumer import Consumer
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope, Response
from kafkasim.network.observer import Observer
from kafkasim.server.replica_fetcher_manager import InitialFetchState
from kafkasim.server.replica_fetcher_thread import (
    FOLLOWER_REQUEST_TIMEOUT_MS,
    ReplicaFetcherConfig,
    ReplicaFetcherThread,
)
from kafkasim.sim.clock import SimTime

from .support import ScriptedConnection, connection_of

TP = TopicPartition("t", 0)


class Recorder(Observer):
    """What the run's observer does with a finished request: keep its row, drop the response."""

    def __init__(self) -> None:
        self.finished: list[RequestEnvelope] = []
        self.consumed: list[int] = []

    def request_finished(self, envelope: RequestEnvelope) -> None:
        self.finished.append(envelope)
        envelope.response = None  # RunRecorder._write frees it once both sides are done

    def batch_finished(self, *args: Any) -> None:
        raise AssertionError("no producer here")

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        self.consumed.append(batch.base_offset)


def _batch(base_offset: int, records: int = 10) -> RecordBatch:
    return RecordBatch(records, 1000, 0, base_offset, "p", base_offset, 0)


def _data(base_offset: int, hw: int) -> FetchResponse:
    """A sessionless answer (session id 0) carrying one batch of TP."""
    batch = _batch(base_offset)
    info = FetchDataInfo(LogOffsetMetadata(base_offset), [batch], batch.size_in_bytes)
    return FetchResponse(Errors.NONE, INVALID_SESSION_ID, [(TP, LogReadResult(info, Errors.NONE, None, hw, 0, batch.next_offset))])


def _at(env: simpy.Environment, t: float, fn: Any) -> None:
    env.timeout(t - env.now).callbacks.append(lambda _e: fn())


def _respond(env: simpy.Environment, t: float, envelope_of: Any, response: Any) -> None:
    def deliver() -> None:
        envelope = envelope_of()
        envelope.set_response(Response(response, 0, 0))
        envelope.client_receive_ms = env.now
        envelope.end_ms = env.now  # the broker is done with it
        envelope.response_received = envelope.response_sent = True
        envelope.on_response(envelope)

    _at(env, t, deliver)


def _follower(env: simpy.Environment, sent: list[RequestEnvelope], recorder: Recorder, append_ms: float) -> ReplicaFetcherThread:
    # Broker 1 follows TP (led by broker 0) in its ReplicaManager; the thread fetches it.
    rm = ReplicaManager(1, KafkaConfig(), SimTime(env), alter_partition_manager=ControllerAlterPartitionManager())
    rm.create_partition(TP, log_config=LogConfig())
    rm.make_follower(TP, leader=0, replicas=[0, 1], leader_epoch=0, partition_epoch=0)
    follower = ReplicaFetcherThread(
        env,
        "follower-1",
        1,
        0,
        ReplicaFetcherConfig(),
        rm,
        lambda _broker: ScriptedConnection(sent),
        lambda: append_ms,
        lambda: 0.0,
        IdSource(),
        recorder,
    )
    follower.add_partitions({TP: InitialFetchState(0, 0)})
    follower.start()
    return follower


def _consumer(env: simpy.Environment, sent: list[RequestEnvelope], recorder: Recorder, timeout_ms: int) -> Consumer:
    # Kafka's consumer defaults but for request.timeout.ms.
    config = ConsumerClientConfig("c1", 1, 500, 1024 * 1024, 50 * 1024 * 1024, request_timeout_ms=timeout_ms)
    consumer = Consumer(env, config, [TP], lambda _broker: ScriptedConnection(sent), IdSource(), recorder)
    consumer.start()
    return consumer


def test_follower_paused_past_its_request_timeout_processes_the_response_that_waited() -> None:
    # The response arrives during the pause, the request timeout passes during the pause too, and the
    # append of the response takes time after the resume: the response wins, the timeout never fires.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    follower = _follower(env, sent, recorder, append_ms=5.0)
    _at(env, 10.0, follower.pause)
    _respond(env, 20.0, lambda: sent[0], _data(0, hw=0))
    _at(env, 40_000.0, follower.resume)
    env.run(until=40_100.0)
    first = sent[0]
    assert recorder.finished[0] is first and not first.client_timeout and first.error is None
    assert follower.partitions[TP].log.log_end_offset == 10
    assert len(sent) == 2 and sent[1].client_send_ms == 40_005.0  # next fetch after the 5 ms append


def test_follower_response_that_arrived_after_the_deadline_during_a_pause_is_not_a_timeout() -> None:
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    follower = _follower(env, sent, recorder, append_ms=5.0)
    _at(env, 10.0, follower.pause)
    _respond(env, 35_000.0, lambda: sent[0], _data(0, hw=0))  # after the 30 s deadline, still paused
    _at(env, 40_000.0, follower.resume)
    env.run(until=40_100.0)
    assert [e.client_timeout for e in recorder.finished] == [False]
    assert follower.partitions[TP].log.log_end_offset == 10


def test_follower_request_cannot_time_out_while_its_response_is_being_appended() -> None:
    # No pause: the response comes 10 ms before the deadline and its append (a slow disk) takes 100 ms.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    follower = _follower(env, sent, recorder, append_ms=100.0)
    _respond(env, FOLLOWER_REQUEST_TIMEOUT_MS - 10.0, lambda: sent[0], _data(0, hw=0))
    env.run(until=FOLLOWER_REQUEST_TIMEOUT_MS + 200.0)
    assert [e.client_timeout for e in recorder.finished] == [False]
    assert follower.partitions[TP].log.log_end_offset == 10
    assert follower.unfinished() == [sent[1]]


def test_follower_still_times_out_a_request_without_response_after_a_pause() -> None:
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    follower = _follower(env, sent, recorder, append_ms=5.0)
    _at(env, 10.0, follower.pause)
    _at(env, 40_000.0, follower.resume)
    env.run(until=40_100.0)
    assert [e.client_timeout for e in recorder.finished] == [True]
    assert recorder.finished[0].error == Errors.REQUEST_TIMED_OUT
    assert follower.partitions[TP].delayed_until == 41_000.0  # every partition backs off


def test_crashed_follower_drops_the_response_it_was_appending() -> None:
    # The request was answered when its response arrived; the crash loses the append, not the answer.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    follower = _follower(env, sent, recorder, append_ms=100.0)
    _respond(env, 20.0, lambda: sent[0], _data(0, hw=0))
    _at(env, 50.0, follower.crash)
    env.run(until=1_000.0)
    assert recorder.finished == [sent[0]] and sent[0].error is None
    assert follower.partitions[TP].log.log_end_offset == 0
    assert follower.unfinished() == []


def test_follower_request_is_finished_on_receipt_while_the_append_takes_longer() -> None:
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    follower = _follower(env, sent, recorder, append_ms=60_000.0)
    _respond(env, 20.0, lambda: sent[0], _data(0, hw=0))
    env.run(until=21.0)
    assert recorder.finished == [sent[0]]  # answered at once, response dropped by the recorder...
    env.run(until=60_100.0)
    assert follower.partitions[TP].log.log_end_offset == 10  # ... and still appended a minute later
    assert len(sent) == 2 and sent[1].client_send_ms == 60_020.0


def test_consumer_paused_past_its_request_timeout_consumes_the_response_that_waited() -> None:
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    consumer = _consumer(env, sent, recorder, timeout_ms=1_000)
    _at(env, 10.0, consumer.pause)
    _respond(env, 1_500.0, lambda: sent[0], _data(0, hw=10))  # after the 1 s deadline, still paused
    _at(env, 3_000.0, consumer.resume)
    env.run(until=3_001.0)
    assert [e.client_timeout for e in recorder.finished] == [False]
    assert recorder.consumed == [0] and consumer.positions[TP] == 10
    assert len(sent) == 2 and sent[1].client_send_ms == 3_000.0


def test_consumer_pause_leaves_one_request_timer() -> None:
    # The response came before the deadline, the deadline passed during the pause: after the resume the
    # next fetch has exactly one timer (not one more per pause), which times it out at its own deadline.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    consumer = _consumer(env, sent, recorder, timeout_ms=1_000)
    _at(env, 10.0, consumer.pause)
    _respond(env, 20.0, lambda: sent[0], _data(0, hw=10))
    _at(env, 3_000.0, consumer.resume)
    env.run(until=3_001.0)
    assert len(sent) == 2
    # Only timers are pending (the scripted connection schedules nothing; run(until) left its stop event).
    assert sum(1 for entry in env._queue if entry[0] > env.now) == 1
    env.run(until=4_001.0)
    assert [e.client_timeout for e in recorder.finished] == [False, True]
    assert recorder.finished[1] is sent[1] and sent[1].error == Errors.REQUEST_TIMED_OUT


def test_consumer_fetches_each_leader_independently() -> None:
    # AbstractFetch.prepareFetchRequests: one fetch per broker leading a fetchable partition, none to a
    # broker with a request pending; a timeout disconnects from that broker only.
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    opened: dict[int, list[ScriptedConnection]] = {0: [], 1: []}

    def connect(broker_id: int) -> ScriptedConnection:
        connection = ScriptedConnection(sent)
        opened[broker_id].append(connection)
        return connection

    config = ConsumerClientConfig("c1", 1, 500, 1024 * 1024, 50 * 1024 * 1024, request_timeout_ms=1000)
    consumer = Consumer(env, config, [a, b], connect, IdSource(), recorder, leaders={a: 0, b: 1})
    consumer.start()
    env.run(until=1.0)
    assert [[tp for tp, _ in e.body.fetch_infos] for e in sent] == [[a], [b]]
    assert [connection_of(e) for e in sent] == [opened[0][0], opened[1][0]]
    batch = _batch(0)
    info = FetchDataInfo(LogOffsetMetadata(0), [batch], batch.size_in_bytes)
    _respond(env, 5.0, lambda: sent[0],
             FetchResponse(Errors.NONE, INVALID_SESSION_ID, [(a, LogReadResult(info, Errors.NONE, None, 10, 0, 10))]))
    env.run(until=6.0)
    # Broker 0 answered: the next fetch goes to it alone, from the new position.
    assert len(sent) == 3 and [tp for tp, _ in sent[2].body.fetch_infos] == [a]
    assert sent[2].body.fetch_infos[0][1].fetch_offset == 10
    env.run(until=1003.0)
    # Broker 1's fetch (sent at 0) timed out at 1000: that connection only (broker 0's is due at 1005).
    assert sent[1].error == Errors.REQUEST_TIMED_OUT and sent[2].error is None
    assert opened[1][0].closed and len(opened[1]) == 1 and len(opened[0]) == 1 and not opened[0][0].closed
    env.run(until=1101.0)
    # A new fetch to broker 1 after the backoff (retry.backoff.ms; the reconnect backoff is shorter), on a
    # new connection.
    last_b = [e for e in sent if [tp for tp, _ in e.body.fetch_infos] == [b]][-1]
    assert last_b.client_send_ms == 1100.0 and connection_of(last_b) is opened[1][1]
    assert consumer.batches_consumed == 1


def test_consumer_moves_a_partition_that_had_no_leader_for_a_while() -> None:
    """Found by fuzzing leader crashes: after a metadata answer with no leader for a partition (every replica
    down), the next answer naming a leader raised KeyError: -1 (the consumer looked up the node of "no
    leader" to take the partition off it). Now the partition waits on no node, then goes to its new leader."""
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    recorder = Recorder()
    a = TopicPartition("t", 0)
    opened: dict[int, list[ScriptedConnection]] = {0: [], 1: []}

    def connect(broker_id: int) -> ScriptedConnection:
        connection = ScriptedConnection(sent)
        opened[broker_id].append(connection)
        return connection

    answers = [{a: (-1, 1)}, {a: (-1, 1)}, {a: (1, 2)}]  # the last answer repeats

    def fetch_metadata() -> dict[TopicPartition, tuple[int, int]]:
        return answers.pop(0) if len(answers) > 1 else answers[0]

    config = ConsumerClientConfig("c1", 1, 500, 1024 * 1024, 50 * 1024 * 1024, request_timeout_ms=1000)
    consumer = Consumer(env, config, [a], connect, IdSource(), recorder, leaders={a: 0},
                        fetch_metadata=fetch_metadata, metadata_round_trip_ms=1.0)
    consumer.start()
    env.run(until=1.0)
    assert len(sent) == 1
    opened[0][0].reset()  # broker 0's process dies
    env.run(until=5_000.0)
    # The partition went to broker 1 once the metadata named it; no position yet, so no validation.
    assert opened[1] and [tp for tp, _ in sent[-1].body.fetch_infos] == [a]
    assert connection_of(sent[-1]) in opened[1]  # (a fetch unanswered for 1 s times out and reconnects)
