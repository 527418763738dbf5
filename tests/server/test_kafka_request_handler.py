"""KafkaRequestHandlerPool and KafkaApis on a bare SimPy environment (no scenario, no engine).

A whole request plane (SocketServer, RequestChannel, handlers, KafkaApis) around a scripted
ReplicaManager: a produce with acks=-1 parks until the test (or a follower fetch, as when the follower's
fetch advances the high watermark) completes it; a fetch answers at once with the bytes the test says.
The last test checks the follower-fetch case against a real ReplicaManager.
Costs are constants, so every RequestMetrics timestamp is exact.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import simpy

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import PartitionData
from kafkasim.broker.fetch_session import FetchManager, FetchSessionCache
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.network.kafka_channel import KafkaChannel
from kafkasim.network.messages import (
    API_FETCH_CONSUMER,
    API_FETCH_FOLLOWER,
    API_PRODUCE,
    REQUEST_TIMESTAMPS,
    FetchRequestData,
    ProduceRequestData,
    RequestEnvelope,
    fetch_response_bytes,
    produce_response_bytes,
)
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.network.socket_server import ProcessorCosts, SocketServer
from kafkasim.server.kafka_apis import KafkaApis
from kafkasim.server.kafka_request_handler import KafkaRequestHandlerPool, RequestHandlerCosts
from kafkasim.sim.calls import Call
from kafkasim.sim.clock import SimTime

# Drives KafkaRequestHandler with stand-in planes and results (duck-typed fakes), which compiled code rejects by type.
pytestmark = pytest.mark.pure_only
READ = 1.0  # network_read
SEND = 2.0  # network_send (+ 0.5 per KiB)
SEND_PER_KIB = 0.5
REQUEST = 3.0  # handler request cost
APPEND_PER_KIB = 0.25
READ_PER_KIB = 0.5


class Status:
    def __init__(self, error: Errors = Errors.NONE) -> None:
        self.error = error


class Info:
    def __init__(self, size: int) -> None:
        self.size_in_bytes = size


class Result:
    def __init__(self, size: int) -> None:
        self.info = Info(size)
        self.error = Errors.NONE


class ScriptedReplicaManager:
    """acks=-1 produces park; a follower fetch completes every parked produce (its HW advance) before it
    answers; a fetch answers at once with ``fetch_bytes``."""

    def __init__(self) -> None:
        self.parked: list[Callable[[Any], None]] = []
        self.fetch_bytes = 0
        self.actions = 0

    def append_records(self, timeout_ms: int, acks: int, entries: Any, callback: Callable[[Any], None]) -> None:
        if acks == -1:
            self.parked.append(callback)
        else:
            callback({"t-0": Status()})

    def fetch_messages(self, params: Any, fetch_infos: Any, callback: Callable[[Any], None]) -> None:
        if params.replica_id >= 0:
            self.complete_parked()
        callback([("t-0", Result(self.fetch_bytes))])

    def complete_parked(self) -> None:
        parked, self.parked = self.parked, []
        for callback in parked:
            callback({"t-0": Status()})

    def try_complete_actions(self) -> int:
        self.actions += 1
        return 0


class Events(Observer):
    checks = True  # wants the check events too (request_handled, response_built)

    def __init__(self) -> None:
        self.events: list[tuple[str, int, float]] = []
        self.env: simpy.Environment | None = None

    def _log(self, what: str, envelope: RequestEnvelope) -> None:
        assert self.env is not None
        self.events.append((what, envelope.request_id, self.env.now))

    def response_built(self, envelope: RequestEnvelope) -> None:
        self._log("built", envelope)

    def request_handled(self, envelope: RequestEnvelope) -> None:
        self._log("handled", envelope)

    def response_done(self, envelope: RequestEnvelope) -> None:
        self._log("done", envelope)


class Plane:
    def __init__(self, *, io_threads: int = 8, network_threads: int = 3, queue_size: int = 500,
                 request_cost: float = REQUEST, real_replica_manager: bool = False,
                 complete_fetch: float = 0.0) -> None:
        self.env = simpy.Environment()
        self.observer = Events()
        self.observer.env = self.env
        self.rm = ScriptedReplicaManager()
        self.replica_manager = ReplicaManager(
            0, KafkaConfig(), SimTime(self.env), alter_partition_manager=ControllerAlterPartitionManager()
        )
        self.channel = RequestChannel(self.env, queue_size)
        self.server = SocketServer(
            self.env,
            self.channel,
            ProcessorCosts(lambda: READ, lambda: 0.0, lambda: SEND, lambda: SEND_PER_KIB),
            num_network_threads=network_threads,
            observer=self.observer,
        )
        rm = self.replica_manager if real_replica_manager else self.rm
        fetch_manager = FetchManager(SimTime(self.env), FetchSessionCache.create(random.Random(0)))
        self.apis = KafkaApis(rm, KafkaConfig(), self.channel, fetch_manager=fetch_manager, observer=self.observer)
        self.after = 0
        self.handlers = KafkaRequestHandlerPool(
            self.env,
            self.channel,
            self.apis,
            RequestHandlerCosts(lambda: request_cost, lambda: APPEND_PER_KIB, lambda: READ_PER_KIB,
                                complete_fetch=lambda: complete_fetch),
            num_io_threads=io_threads,
            observer=self.observer,
            reapers=[self],  # type: ignore[list-item]  # counts the pokes, as a reaper would get them
        )
        self.delivered: list[tuple[int, float]] = []
        self._ids = 0

    def poke(self) -> None:
        """An expiration reaper's poke after each handled request."""
        self.after += 1

    def connect(self, name: str) -> KafkaChannel:
        return self.server.connect(name, lambda e: self.delivered.append((e.request_id, self.env.now)))

    def _send(self, channel: KafkaChannel, envelope: RequestEnvelope, at: float) -> RequestEnvelope:
        Call(self.env, at - self.env.now, lambda _e: self.server.receive(channel, envelope))
        return envelope

    def produce(self, channel: KafkaChannel, at: float = 0.0, *, acks: int = 1, size: int = 2048) -> RequestEnvelope:
        self._ids += 1
        body = ProduceRequestData(acks, 30_000, {})
        envelope = RequestEnvelope(self._ids, API_PRODUCE, channel.name, body, size, at, at, expects_response=acks != 0)
        return self._send(channel, envelope, at)

    def fetch(self, channel: KafkaChannel, at: float = 0.0, *, replica_id: int = -1) -> RequestEnvelope:
        self._ids += 1
        # A sessionless fetch of one partition (the scripted ReplicaManager answers "t-0" whatever it names).
        body = FetchRequestData(replica_id, 500, 1, 1 << 20, [(TopicPartition("t", 0), PartitionData(0, 0, 1 << 20))])
        api = API_FETCH_FOLLOWER if replica_id >= 0 else API_FETCH_CONSUMER
        envelope = RequestEnvelope(self._ids, api, channel.name, body, 100, at, at)
        return self._send(channel, envelope, at)


def metrics(envelope: RequestEnvelope) -> tuple[float, ...]:
    """start, dequeue, local_complete, response_complete, response_dequeue, end."""
    return tuple(getattr(envelope, name) for name in REQUEST_TIMESTAMPS[2:8])


def send_cost(response_bytes: int) -> float:
    return SEND + SEND_PER_KIB * response_bytes / 1024.0


def test_produce_request_metrics_in_order_with_the_exact_service_times() -> None:
    p = Plane()
    request = p.produce(p.connect("producer"), size=2048)
    p.env.run()
    handled = READ + REQUEST + APPEND_PER_KIB * 2  # the append happens after the service time
    end = handled + send_cost(produce_response_bytes(1))
    assert metrics(request) == (READ, READ, handled, handled, handled, end)
    assert request.error == Errors.NONE and request.response is not None
    assert request.response.size_in_bytes == produce_response_bytes(1)
    assert p.observer.events == [("built", 1, handled), ("handled", 1, handled), ("done", 1, end)]
    assert p.delivered == [(1, end)]
    assert (p.rm.actions, p.after, p.handlers.requests_handled) == (1, 1, 1)
    assert p.handlers.handler_busy_ms == REQUEST + APPEND_PER_KIB * 2


def test_fetch_reads_at_dequeue_and_responds_after_the_read_service_time() -> None:
    p = Plane()
    p.rm.fetch_bytes = 4096
    request = p.fetch(p.connect("consumer"))
    p.env.run()
    handled = READ + REQUEST + READ_PER_KIB * 4
    end = handled + send_cost(fetch_response_bytes(1, 4096))
    assert metrics(request) == (READ, READ, handled, handled, handled, end)
    assert request.read_bytes == 4096
    # The response was built when the handler read the log, and sent after the read's service time.
    assert p.observer.events == [("built", 1, READ), ("handled", 1, handled), ("done", 1, end)]


def test_a_follower_fetch_that_completes_a_parked_produce_answers_it_before_its_own_response() -> None:
    """Partition.fetchRecords reads, then updateFollowerFetchState's tryCompleteDelayedRequests completes the
    DelayedProduce on the follower's handler thread, before ReplicaManager.fetchMessages calls back with the
    follower's own response: the produce's answer goes when the read is done, the fetch's after its request
    cost (processResponseCallback building it)."""
    p = Plane()
    produce = p.produce(p.connect("producer"), acks=-1, size=0)
    fetch = p.fetch(p.connect("follower-1"), at=10.0, replica_id=1)
    p.env.run()
    parked_at = READ + REQUEST
    read_done = 10.0 + READ  # no bytes read: the read costs nothing
    fetch_done = read_done + REQUEST
    assert produce.local_complete_ms == parked_at
    assert ("built", produce.request_id, 10.0 + READ) in p.observer.events
    assert produce.response_complete_ms == read_done and fetch.response_complete_ms == fetch_done
    assert fetch.local_complete_ms == fetch_done
    assert [request_id for request_id, _ in p.delivered] == [produce.request_id, fetch.request_id]
    assert p.handlers.handler_busy_ms == 2 * REQUEST  # the split costs what the whole did
    for request in (produce, fetch):
        stamps = metrics(request)
        assert list(stamps) == sorted(stamps)


def test_a_follower_fetch_that_completes_a_parked_produce_pays_for_its_completion() -> None:
    """DelayedProduce.onComplete runs the produce's response callback (KafkaApis.handleProduceRequest's
    sendResponseCallback building the ProduceResponse, RequestChannel.sendResponse) on the thread that completed
    it, as DelayedFetch.onComplete does a fetch's: the follower's handler pays `complete_fetch` for it before the
    produce's answer goes. It used to cost nothing, and at acks=all the real cluster's follower fetches were
    longer than kafkasim's (LocalTimeMs p50 0.27 ms against 0.16: docs/calibration.md)."""
    complete = 0.6
    p = Plane(complete_fetch=complete)
    produce = p.produce(p.connect("producer"), acks=-1, size=0)
    fetch = p.fetch(p.connect("follower-1"), at=10.0, replica_id=1)
    p.env.run()
    read_done = 10.0 + READ  # no bytes read: the read costs nothing
    assert produce.local_complete_ms == READ + REQUEST
    assert produce.response_complete_ms == read_done + complete
    assert fetch.response_complete_ms == fetch.local_complete_ms == read_done + complete + REQUEST
    assert [request_id for request_id, _ in p.delivered] == [produce.request_id, fetch.request_id]
    assert p.handlers.handler_busy_ms == 2 * REQUEST + complete


def test_an_asynchronous_completion_is_sent_at_once() -> None:
    p = Plane()
    produce = p.produce(p.connect("producer"), acks=-1, size=0)
    Call(p.env, 20.0, lambda _e: p.rm.complete_parked())  # an expiration, an AlterPartition answer
    p.env.run()
    assert produce.local_complete_ms == READ + REQUEST
    assert (produce.response_complete_ms, produce.response_dequeue_ms) == (20.0, 20.0)
    assert produce.end_ms == 20.0 + send_cost(produce_response_bytes(1))


def test_the_number_of_io_threads_caps_concurrency() -> None:
    p = Plane(io_threads=2, network_threads=3)
    requests = [p.produce(p.connect(f"producer-{i}"), size=0) for i in range(3)]
    p.env.run(until=READ + 1.0)
    assert p.handlers.idle_handlers == 0 and list(p.channel.request_queue) == [requests[2]]
    p.env.run()
    assert [r.start_ms for r in requests] == [READ, READ, READ]
    assert [r.dequeue_ms for r in requests] == [READ, READ, READ + REQUEST]  # the third waits for a handler
    assert p.handlers.idle_handlers == 2
    assert p.handlers.handler_busy_ms == 3 * REQUEST


def test_a_handler_taking_a_request_unblocks_the_processor_which_goes_on_with_its_poll() -> None:
    p = Plane(io_threads=1, network_threads=1, queue_size=1, request_cost=10.0)
    reqs = [p.produce(p.connect(f"producer-{i}"), size=0) for i in range(4)]
    p.env.run(until=7.0)
    # 1: handled at once; 2: queued; 3: the queue is full, the processor blocks in put(); 4: not read yet.
    assert [r.start_ms for r in reqs[:3]] == [1.0, 2.0, 3.0]
    assert reqs[3].start_ms != reqs[3].start_ms
    assert p.channel.request_queue_size == 2
    p.env.run()
    first_done = READ + 10.0
    # At 11 the handler answers request 1 and takes request 2; request 3 enters the queue. The processor goes on
    # where it blocked, in processCompletedReceives: request 4 was ready when its poll began (read with requests
    # 2 and 3), its put() blocks the thread again, and request 1's response waits for the next iteration of
    # Processor.run, taken at 21 with request 2's (processNewResponses takes every queued response).
    assert reqs[1].dequeue_ms == first_done
    assert reqs[3].start_ms == first_done + READ
    second_done = first_done + 10.0
    assert reqs[0].response_dequeue_ms == reqs[1].response_dequeue_ms == second_done
    both_written = second_done + 2 * send_cost(produce_response_bytes(1))
    assert reqs[0].end_ms == reqs[1].end_ms == both_written
    assert [r.dequeue_ms for r in reqs] == [READ, first_done, first_done + 10.0, first_done + 20.0]


def test_acks_zero_gets_a_noop_response() -> None:
    p = Plane()
    conn = p.connect("producer")
    first = p.produce(conn, acks=0, size=0)
    second = p.produce(conn, acks=0, size=0)
    p.env.run()
    handled = READ + REQUEST
    assert metrics(first) == (READ, READ, handled, handled, handled, handled)
    assert second.start_ms == handled + READ  # unmuted by the NoOp response, no send cost
    assert p.delivered == []


def test_a_closed_connection_request_is_still_handled_and_its_response_dropped() -> None:
    p = Plane(io_threads=1, network_threads=1)
    a, b = p.connect("a"), p.connect("b")
    busy = p.produce(a, size=0)
    queued = p.produce(b, size=0)  # read at 2, queued behind busy
    Call(p.env, 2.5, lambda _e: p.server.close_channel(b))
    p.env.run()
    assert queued.dequeue_ms == READ + REQUEST and queued.end_ms == queued.end_ms  # handled, written
    assert [request_id for request_id, _ in p.delivered] == [busy.request_id]
    assert ("done", queued.request_id, queued.end_ms) in p.observer.events


def test_a_real_follower_fetch_advancing_the_hw_answers_the_produce_before_its_request_cost() -> None:
    p = Plane(real_replica_manager=True)
    rm = p.replica_manager
    tp = TopicPartition("t", 0)
    rm.make_leader(tp, replicas=[0, 1])
    batch = RecordBatch(10, 1024, 0, 1, "producer")

    produce = RequestEnvelope(
        1, API_PRODUCE, "producer", ProduceRequestData(-1, 30_000, {tp: [batch]}), 0, 0.0, 0.0
    )
    # The follower has copied the 10 records: its fetch at offset 10 moves the HW to 10 (completing the
    # DelayedProduce inside fetch_messages) and, with nothing new to read, parks itself.
    body = FetchRequestData(1, 500, 1, 1 << 20, [(tp, PartitionData(10, 0, 1 << 20))], replica_epoch=0)
    fetch = RequestEnvelope(2, API_FETCH_FOLLOWER, "follower-1", body, 0, 10.0, 10.0)
    p._send(p.connect("producer"), produce, 0.0)
    p._send(p.connect("follower-1"), fetch, 10.0)
    p.env.run()
    assert produce.local_complete_ms == READ + REQUEST  # parked in the produce purgatory
    assert rm.get_partition_or_exception(tp).high_watermark == 10
    assert ("built", 1, 10.0 + READ) in p.observer.events  # completed when the follower's fetch was read
    assert produce.response_complete_ms == 10.0 + READ  # ... and sent then (nothing read: no read cost)
    assert produce.error == Errors.NONE
    # The parked fetch's handling ends after its request cost.
    assert fetch.local_complete_ms == 10.0 + READ + REQUEST
    assert fetch.response_complete_ms != fetch.response_complete_ms


COMPLETE_FETCH = 0.75


def test_an_acks_all_produce_answers_the_fetches_its_append_woke_before_its_local_phase_ends() -> None:
    """KafkaApis.handle's finally runs ReplicaManager.tryCompleteActions on the producer's handler thread: the
    followers' parked DelayedFetch read the new batch and are answered there, one after another, and only then
    is apiLocalCompleteTimeNanos set (an acks=all produce sent nothing before). A real broker's acks=all
    produce LocalTimeMs was 1.3-1.6 ms against an acks=1 produce's 0.19 ms for this reason."""
    p = Plane(real_replica_manager=True, complete_fetch=COMPLETE_FETCH)
    rm = p.replica_manager
    tp = TopicPartition("t", 0)
    rm.make_leader(tp, replicas=[0, 1, 2])
    fetches = []
    for replica in (1, 2):
        # Both followers are caught up at offset 0 of an empty log: their fetches park (fetch.min.bytes 1).
        body = FetchRequestData(replica, 500, 1, 1 << 20, [(tp, PartitionData(0, 0, 1 << 20))], replica_epoch=0)
        fetch = RequestEnvelope(replica, API_FETCH_FOLLOWER, f"follower-{replica}", body, 0, 0.0, 0.0)
        fetches.append(p._send(p.connect(f"follower-{replica}"), fetch, 0.0))
    batch = RecordBatch(10, 2048, 0, 1, "producer")
    body = ProduceRequestData(-1, 30_000, {tp: [batch]})
    produce = p._send(p.connect("producer"), RequestEnvelope(3, API_PRODUCE, "producer", body, 2048, 10.0, 10.0),
                      10.0)
    p.env.run(until=100.0)
    appended = 10.0 + READ + REQUEST + APPEND_PER_KIB * 2
    first, second = fetches
    assert first.read_bytes == second.read_bytes > 0
    each = COMPLETE_FETCH + READ_PER_KIB * first.read_bytes / 1024.0
    # Both read the batch when the action queue ran; each response goes when its completion is done.
    assert ("built", first.request_id, appended) in p.observer.events
    assert first.response_complete_ms == appended + each
    assert second.response_complete_ms == appended + 2 * each
    assert produce.local_complete_ms == appended + 2 * each
    assert p.handlers.handler_busy_ms >= 3 * REQUEST + APPEND_PER_KIB * 2 + 2 * each


def test_an_acks_one_produce_ends_its_local_phase_at_its_response_before_the_fetches_it_woke() -> None:
    p = Plane(real_replica_manager=True, complete_fetch=COMPLETE_FETCH)
    rm = p.replica_manager
    tp = TopicPartition("t", 0)
    rm.make_leader(tp, replicas=[0, 1])
    body = FetchRequestData(1, 500, 1, 1 << 20, [(tp, PartitionData(0, 0, 1 << 20))], replica_epoch=0)
    fetch = p._send(p.connect("follower-1"), RequestEnvelope(1, API_FETCH_FOLLOWER, "follower-1", body, 0, 0.0, 0.0),
                    0.0)
    body = ProduceRequestData(1, 30_000, {tp: [RecordBatch(10, 2048, 0, 1, "producer")]})
    produce = p._send(p.connect("producer"), RequestEnvelope(2, API_PRODUCE, "producer", body, 2048, 10.0, 10.0),
                      10.0)
    p.env.run(until=100.0)
    appended = 10.0 + READ + REQUEST + APPEND_PER_KIB * 2
    assert produce.local_complete_ms == appended  # RequestChannel.sendResponse set it
    assert fetch.response_complete_ms == appended + COMPLETE_FETCH + READ_PER_KIB * fetch.read_bytes / 1024.0


def test_a_follower_fetch_answers_the_consumer_its_hw_advance_completed_before_its_own_response() -> None:
    """The consumer's parked DelayedFetch, completed by the follower's HW advance inside Partition.fetchRecords
    (updateFollowerFetchState -> tryCompleteDelayedRequests), reads its batch and is answered on the follower's
    handler thread before the follower's own response is built: a real broker here sent the consumer's answer
    0.07-0.08 ms before the follower's (docs/calibration.md); both used to go at the end of the handling."""
    p = Plane(real_replica_manager=True, complete_fetch=COMPLETE_FETCH)
    rm = p.replica_manager
    tp = TopicPartition("t", 0)
    rm.make_leader(tp, replicas=[0, 1])
    # The consumer waits at offset 0 for the high watermark to move (fetch.min.bytes 1).
    body = FetchRequestData(-1, 500, 1, 1 << 20, [(tp, PartitionData(0, 0, 1 << 20))])
    consumer = p._send(p.connect("consumer"), RequestEnvelope(1, API_FETCH_CONSUMER, "consumer", body, 0, 0.0, 0.0),
                       0.0)
    body = ProduceRequestData(1, 30_000, {tp: [RecordBatch(10, 2048, 0, 1, "producer")]})
    p._send(p.connect("producer"), RequestEnvelope(2, API_PRODUCE, "producer", body, 2048, 10.0, 10.0), 10.0)
    # The follower has copied the batch: its fetch at offset 10 moves the HW and, with nothing new, parks.
    body = FetchRequestData(1, 500, 1, 1 << 20, [(tp, PartitionData(10, 0, 1 << 20))], replica_epoch=0)
    fetch = p._send(p.connect("follower-1"), RequestEnvelope(3, API_FETCH_FOLLOWER, "follower-1", body, 0, 20.0, 20.0),
                    20.0)
    p.env.run(until=100.0)
    assert rm.get_partition_or_exception(tp).high_watermark == 10
    assert consumer.read_bytes > 0
    answered = 20.0 + READ + COMPLETE_FETCH + READ_PER_KIB * consumer.read_bytes / 1024.0
    assert consumer.response_complete_ms == answered
    assert fetch.local_complete_ms == answered + REQUEST
