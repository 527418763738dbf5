"""SocketServer and RequestChannel on a bare SimPy environment (no scenario, no engine).

Re-expresses the cases of Kafka's ``SocketServerTest`` and ``RequestChannel`` behaviour that apply to the
simulator: muting, responses before reads, ``queued.max.requests`` back-pressure, round-robin connection
assignment, closed connections, ``NoOpResponse``. The handler side is the test itself: it takes requests
with ``RequestChannel.receive_request`` and answers with ``RequestChannel.send_response`` when it likes.
Costs are constants, so every timestamp is exact.
"""

from __future__ import annotations

import random

import simpy

from kafkasim.network.connection import Connection
from kafkasim.network.kafka_channel import KafkaChannel
from kafkasim.network.link import NetworkPath
from kafkasim.network.messages import API_PRODUCE, ProduceRequestData, RequestEnvelope, Response
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.network.socket_server import ProcessorCosts, SocketServer
from kafkasim.sim.calls import Call
from kafkasim.sim.machine_load import MachineLoad

READ_MS = 1.0  # network_read; no per-KiB part unless a test says so
SEND_MS = 2.0  # network_send


def established(env: simpy.Environment, path: NetworkPath, server: SocketServer, observer: Observer) -> Connection:
    """A connection of client "c" whose TCP handshake has completed (the SYN there, the SYN-ACK back: one
    round trip of ``path``, run now)."""
    connection = Connection(env, "c", path, lambda: server, observer)
    connection.connect(lambda: None, lambda: None)
    while not connection.connected:
        env.step()
    return connection


class Done(Observer):
    def __init__(self) -> None:
        self.done: list[RequestEnvelope] = []

    def response_done(self, envelope: RequestEnvelope) -> None:
        self.done.append(envelope)


class Broker:
    """A SocketServer, its RequestChannel, and the test as the handler side."""

    def __init__(self, *, threads: int = 1, queue_size: int = 500, read_per_kib: float = 0.0,
                 complete: float | None = None, load: MachineLoad | None = None,
                 acceptor_rng: random.Random | None = None) -> None:
        self.env = simpy.Environment()
        self.channel = RequestChannel(self.env, queue_size)
        self.observer = Done()
        costs = ProcessorCosts(
            network_read=lambda: READ_MS,
            network_read_per_kib=lambda: read_per_kib,
            network_send=lambda: SEND_MS,
            network_send_per_kib=lambda: 0.0,
            network_complete=None if complete is None else (lambda: complete),
        )
        self.server = SocketServer(self.env, self.channel, costs, num_network_threads=threads, observer=self.observer,
                                   load=load, acceptor_rng=acceptor_rng)
        self.taken: list[RequestEnvelope] = []  # requests a waiting handler received
        self.delivered: list[tuple[str, int, float]] = []  # (connection, request id, time) handed to links
        self._ids = 0

    def answer_at_once(self) -> None:
        """A request handler that answers every request the moment it takes it, then waits for the next one."""

        def answer(envelope: RequestEnvelope) -> None:
            envelope.set_response(Response({}, 0, 0))
            self.channel.send_response(envelope)
            serve()

        def serve() -> None:
            envelope = self.channel.receive_request(answer)
            if envelope is not None:
                answer(envelope)

        serve()

    def connect(self, name: str) -> KafkaChannel:
        return self.server.connect(name, lambda e: self.delivered.append((name, e.request_id, self.env.now)))

    def request(self, channel: KafkaChannel, at: float, *, acks: int = 1, size: int = 100) -> RequestEnvelope:
        self._ids += 1
        envelope = RequestEnvelope(
            self._ids, API_PRODUCE, channel.name, ProduceRequestData(acks, 30_000, {}), size, at, at,
            expects_response=acks != 0,
        )
        Call(self.env, at, lambda _e: self.server.receive(channel, envelope))
        return envelope

    def wait_for_request(self) -> None:
        """A handler starts waiting in receiveRequest."""
        assert self.channel.receive_request(self.taken.append) is None

    def take(self) -> RequestEnvelope | None:
        """A handler takes the oldest queued request (None: it now waits and gets the next one)."""
        return self.channel.receive_request(self.taken.append)

    def respond(self, envelope: RequestEnvelope, at: float) -> None:
        envelope.set_response(Response({}, 0, 0))
        Call(self.env, at - self.env.now, lambda _e: self.channel.send_response(envelope))


def test_a_muted_connection_is_not_read_until_the_response_is_sent() -> None:
    b = Broker()
    conn = b.connect("producer")
    first = b.request(conn, 0.0)
    second = b.request(conn, 0.0)
    b.wait_for_request()
    b.wait_for_request()
    b.respond(first, 10.0)
    b.env.run(until=9.0)
    assert b.taken == [first]  # a handler is free, yet the second request stays in the socket
    assert first.start_ms == READ_MS and second.start_ms != second.start_ms
    b.respond(second, 50.0)
    b.env.run()
    # The response is written (10 -> 12), the connection unmuted, then the second request read.
    assert (first.response_dequeue_ms, first.end_ms) == (10.0, 10.0 + SEND_MS)
    assert second.start_ms == 10.0 + SEND_MS + READ_MS
    assert b.taken == [first, second]
    assert b.delivered == [("producer", 1, 12.0), ("producer", 2, 52.0)]


COMPLETE_MS = 0.5  # network_complete


def test_the_next_request_of_a_connection_is_read_once_the_thread_has_done_with_the_response() -> None:
    """Processor.processCompletedSends: updateRequestMetrics (the request log's line), then tryUnmuteChannel. The
    response's end and its delivery come before that work; the connection's next request is read after it."""
    b = Broker(complete=COMPLETE_MS)
    conn = b.connect("producer")
    first, second = b.request(conn, 0.0), b.request(conn, 0.0)
    b.wait_for_request()
    b.wait_for_request()
    b.respond(first, 10.0)
    b.respond(second, 50.0)
    b.env.run()
    assert first.end_ms == 10.0 + SEND_MS
    assert b.delivered[0] == ("producer", 1, 10.0 + SEND_MS)
    assert second.start_ms == 10.0 + SEND_MS + COMPLETE_MS + READ_MS
    assert [e.request_id for e in b.observer.done] == [1, 2]


def test_a_handler_that_yielded_to_the_thread_goes_on_once_the_response_is_written() -> None:
    """MachineLoad.waker_yields: the handler whose response woke the idle thread waits for it to be written, not for
    the thread's work after it (network_complete)."""
    b = Broker(complete=COMPLETE_MS, load=MachineLoad(0.0, waker_yields=True))
    conn = b.connect("producer")
    first = b.request(conn, 0.0)
    b.wait_for_request()
    went_on: list[float] = []

    def answer(_event: object) -> None:
        first.set_response(Response({}, 0, 0))
        b.channel.send_response(first)  # the thread is idle: woken for this response
        processor = b.server.processors[0]
        assert processor.after_sent(first, lambda: went_on.append(b.env.now))

    Call(b.env, 3.0, answer)
    b.env.run()
    assert first.end_ms == 3.0 + SEND_MS
    assert went_on == [3.0 + SEND_MS]


def test_a_noop_response_is_completed_as_a_written_one_before_the_next_read() -> None:
    """Processor.processNewResponses runs updateRequestMetrics for a NoOpResponse (acks=0) too, then unmutes."""
    b = Broker(complete=COMPLETE_MS)
    conn = b.connect("producer")
    first, second = b.request(conn, 0.0, acks=0), b.request(conn, 0.0, acks=0)
    b.wait_for_request()
    b.wait_for_request()
    b.respond(first, 3.0)
    b.respond(second, 20.0)
    b.env.run()
    assert first.end_ms == 3.0 and b.delivered == []
    assert second.start_ms == 3.0 + COMPLETE_MS + READ_MS


def test_a_response_queued_while_the_thread_completes_a_send_waits_for_it() -> None:
    b = Broker(complete=COMPLETE_MS)
    a, c = b.connect("a"), b.connect("c")
    ra, rc = b.request(a, 0.0), b.request(c, 0.0)  # read 0 -> 1, 1 -> 2
    b.wait_for_request()
    b.wait_for_request()
    b.respond(ra, 3.0)  # written 3 -> 5, completed 5 -> 5.5
    b.respond(rc, 5.2)  # queued while the thread completes ra's send
    b.env.run()
    assert ra.end_ms == 5.0
    assert rc.response_dequeue_ms == 5.0 + COMPLETE_MS
    assert rc.end_ms == 5.0 + COMPLETE_MS + SEND_MS


def test_queued_responses_go_before_new_reads() -> None:
    b = Broker(threads=1)
    a, c, d = b.connect("a"), b.connect("c"), b.connect("d")
    ra = b.request(a, 0.0)  # read 0 -> 1
    rc = b.request(c, 0.5)  # read 1 -> 2
    rd = b.request(d, 1.5)  # readable while the processor reads c
    b.wait_for_request()
    b.wait_for_request()
    b.respond(ra, 1.7)  # queued while the processor reads c's request
    b.env.run()
    assert rc.start_ms == 2.0
    assert ra.response_dequeue_ms == 2.0  # the response first (Processor: processNewResponses, then poll)
    assert rd.start_ms == 2.0 + SEND_MS + READ_MS
    # The poll that wrote the response read d's request too: processCompletedReceives comes before
    # processCompletedSends, which takes the response's endTimeNanos.
    assert b.delivered == [("a", 1, 2.0 + SEND_MS)]
    assert ra.end_ms == 2.0 + SEND_MS + READ_MS


def test_responses_queued_together_are_written_in_one_iteration_and_completed_in_turn() -> None:
    """Processor.run: processNewResponses takes every queued response (responseDequeueTimeNanos), poll writes them
    all, then processCompletedSends completes each in turn (updateRequestMetrics: endTimeNanos, then the request
    log's line). The second response's ResponseSendTimeMs runs through both writes and the first's completion, as
    a follower's did on the real brokers when its connection shared a network thread with the producer's."""
    b = Broker(complete=COMPLETE_MS)
    a, c, d = b.connect("a"), b.connect("c"), b.connect("d")
    ra, rc = b.request(a, 0.0), b.request(c, 0.0)  # read 0 -> 1, 1 -> 2
    b.request(d, 2.5)  # read 2.5 -> 3.5
    for _ in range(3):
        b.wait_for_request()

    def answer_both(_event: object) -> None:  # one handler's work: a produce's response, then a fetch it completed
        for envelope in (ra, rc):
            envelope.set_response(Response({}, 0, 0))
            b.channel.send_response(envelope)

    Call(b.env, 3.0, answer_both)  # while the thread reads d's request
    b.env.run()
    assert (ra.response_dequeue_ms, rc.response_dequeue_ms) == (3.5, 3.5)
    assert b.delivered == [("a", 1, 3.5 + SEND_MS), ("c", 2, 3.5 + 2 * SEND_MS)]
    assert ra.end_ms == 3.5 + 2 * SEND_MS
    assert rc.end_ms == 3.5 + 2 * SEND_MS + COMPLETE_MS
    assert [e.request_id for e in b.observer.done] == [1, 2]


def test_a_request_arriving_during_a_poll_is_read_in_the_next_iteration() -> None:
    """Selector.poll reads the connections ready when it selects: one whose request arrives while the thread writes
    waits for the next iteration, which takes the responses queued meanwhile first."""
    b = Broker(threads=1)
    a, c = b.connect("a"), b.connect("c")
    ra = b.request(a, 0.0)  # read 0 -> 1
    b.wait_for_request()
    b.wait_for_request()
    b.respond(ra, 2.0)  # written 2 -> 4
    rc = b.request(c, 3.0)  # arrives during the write
    b.env.run()
    assert ra.end_ms == 2.0 + SEND_MS
    assert rc.start_ms == 2.0 + SEND_MS + READ_MS


def test_a_full_request_queue_blocks_the_processor_until_a_handler_takes_a_request() -> None:
    b = Broker(threads=1, queue_size=1)
    conns = [b.connect(f"c{i}") for i in range(4)]
    reqs = [b.request(conn, 0.0) for conn in conns]
    b.env.run(until=10.0)
    # Read at 1 (queued), read at 2 (queue full: the processor blocks in put()); the rest are not read.
    assert [r.start_ms for r in reqs[:2]] == [1.0, 2.0]
    assert all(r.start_ms != r.start_ms for r in reqs[2:])
    assert b.channel.request_queue_size == 2  # the queued request and the blocked processor's
    assert list(b.channel.request_queue) == [reqs[0]]

    def take(_event: object) -> None:
        request = b.take()
        assert request is not None
        b.taken.append(request)

    Call(b.env, 0.0, take)
    b.env.run(until=20.0)
    # Taking reqs[0] completes the blocked put(); the processor resumes and reads the next request,
    # which finds the queue full again.
    assert b.taken == [reqs[0]]
    assert list(b.channel.request_queue) == [reqs[1]]
    assert reqs[2].start_ms == 11.0 and reqs[3].start_ms != reqs[3].start_ms
    assert b.channel.request_queue_size == 2


def test_connections_are_assigned_to_processors_round_robin() -> None:
    b = Broker(threads=3)
    channels = [b.connect(f"c{i}") for i in range(7)]
    assert [ch.processor for ch in channels] == [0, 1, 2, 0, 1, 2, 0]
    assert b.channel.processors == b.server.processors


def test_with_an_acceptor_stream_each_connection_gets_a_thread_drawn_from_it() -> None:
    # A real broker's Acceptor goes round robin over every connection it accepts, admin clients' and bootstrap
    # connections among them, in whatever order they came: a scenario's own connections land as if at random.
    b = Broker(threads=3, acceptor_rng=random.Random(5))
    picks = [b.connect(f"c{i}").processor for i in range(30)]
    same = random.Random(5)
    assert picks == [same.randrange(3) for _ in range(30)]
    assert sorted(set(picks)) == [0, 1, 2]
    assert picks[:4] != [0, 1, 2, 0]


def test_a_closed_channel_drops_unread_requests_and_its_responses_but_queued_requests_are_handled() -> None:
    b = Broker()
    conn = b.connect("producer")
    first = b.request(conn, 0.0)
    second = b.request(conn, 0.0)  # waits in the socket: the connection is muted
    Call(b.env, 1.5, lambda _e: b.server.close_channel(conn))
    late = b.request(conn, 2.0)  # arrives on the closed channel
    b.env.run(until=5.0)
    assert list(b.channel.request_queue) == [first]  # still there: handlers do not see the close
    assert b.take() is first
    b.respond(first, 6.0)
    b.env.run()
    assert first.end_ms == 6.0 + SEND_MS  # written, not handed to the link
    assert b.delivered == []
    assert b.observer.done == [first]
    assert second.start_ms != second.start_ms and late.start_ms != late.start_ms
    assert b.taken == []


def test_requests_sent_before_the_client_closed_are_read_until_the_first_response_is_written() -> None:
    """The client closes its connection (a request timeout) while the broker is paused (SIGSTOP) with its
    requests unread in the socket: they came before the FIN, so once the broker resumes it still reads the
    first and handles it (Kafka's Selector keeps a channel closed by its peer in closingChannels while it has
    completed receives); writing that request's response fails (Selector.send to a closing channel), which
    closes the channel and drops the rest. A paused broker appends a timed-out produce after all: the
    duplicate a producer without idempotence writes when it sends the batch again."""
    b = Broker()
    conn = b.connect("producer")
    b.server.stw.pause()
    first = b.request(conn, 0.0)
    second = b.request(conn, 0.5)
    Call(b.env, 3.0, lambda _e: b.server.close_channel(conn))
    Call(b.env, 5.0, lambda _e: b.server.stw.resume())
    b.wait_for_request()
    b.wait_for_request()
    b.respond(first, 10.0)
    b.env.run()
    assert b.taken == [first]  # read after the pause, handled
    assert first.start_ms == 5.0 + READ_MS
    assert first.end_ms == 10.0 + SEND_MS  # the response is written ...
    assert b.delivered == []  # ... and goes nowhere
    assert second.start_ms != second.start_ms  # never read: the failed write closed the channel
    assert conn.closed and not conn.pending


def test_requests_without_a_response_are_all_read_after_the_close() -> None:
    """acks=0: a NoOpResponse writes nothing, so nothing fails and every request sent before the close is
    read and handled (Selector.close's comment: a producer with acks=0 that sends records and closes)."""
    b = Broker()
    conn = b.connect("producer")
    b.server.stw.pause()
    first = b.request(conn, 0.0, acks=0)
    second = b.request(conn, 0.5, acks=0)
    Call(b.env, 3.0, lambda _e: b.server.close_channel(conn))
    Call(b.env, 5.0, lambda _e: b.server.stw.resume())
    b.wait_for_request()
    b.wait_for_request()
    b.respond(first, 10.0)
    b.respond(second, 20.0)
    b.env.run()
    assert b.taken == [first, second]


def test_connections_their_clients_closed_are_let_go_once_nothing_is_left_to_read() -> None:
    """The server's list of open connections (what a crash resets) drops the ones their clients closed with
    nothing left unread or in process, as it drops closed ones: a run whose clients reconnect again and again
    does not keep every connection it ever had."""
    b = Broker()
    channels = [b.connect(f"c{i}") for i in range(70)]
    for channel in channels[:60]:
        b.server.close_channel(channel)
    b.connect("late")
    assert len(b.server.channels) == 11


def test_a_noop_response_unmutes_without_a_send() -> None:
    b = Broker()
    conn = b.connect("producer")
    first = b.request(conn, 0.0, acks=0)
    second = b.request(conn, 0.0, acks=0)
    b.wait_for_request()
    b.wait_for_request()
    b.respond(first, 4.0)
    b.env.run()
    # NoOpResponse: dequeued at 4, done at 4 (no send cost, nothing travels back); the next read starts.
    assert (first.response_complete_ms, first.response_dequeue_ms, first.end_ms) == (4.0, 4.0, 4.0)
    assert second.start_ms == 4.0 + READ_MS
    assert b.delivered == []
    assert b.observer.done == [first]


def test_send_response_stamps_response_complete_and_local_complete_if_unset() -> None:
    b = Broker()
    conn = b.connect("producer")
    sync = b.request(conn, 0.0)
    b.wait_for_request()
    b.env.run(until=3.0)
    sync.dequeue_ms = 1.0
    sync.set_response(Response({}, 0, 0))
    b.channel.send_response(sync)  # sent from inside handle(): local completion too (RequestMetrics)
    assert (sync.local_complete_ms, sync.response_complete_ms, sync.response_dequeue_ms) == (3.0, 3.0, 3.0)
    assert b.channel.response_queue_sizes() == [0]  # the idle processor took it at once


def test_read_cost_grows_with_the_request_size() -> None:
    b = Broker(read_per_kib=0.5)
    conn = b.connect("producer")
    big = b.request(conn, 0.0, size=4096)
    b.wait_for_request()
    b.env.run()
    assert big.start_ms == READ_MS + 0.5 * 4 and b.server.processors[0].busy_ms == big.start_ms


def test_check_events_reach_only_an_observer_that_wants_them() -> None:
    """Connection.send reports request_sent only to an observer whose ``checks`` is True: the run's
    recording observer (checks off) costs no call there."""
    import random

    from kafkasim.sim.distributions import Constant

    class Sent(Observer):
        def __init__(self, checks: bool) -> None:
            self.checks = checks
            self.sent: list[int] = []

        def request_sent(self, envelope: RequestEnvelope) -> None:
            self.sent.append(envelope.request_id)

    for checks in (True, False):
        b = Broker()
        observer = Sent(checks)
        path = NetworkPath.create(b.env, "c", Constant(0.5), lambda _name: random.Random(0), float("inf"))
        connection = established(b.env, path, b.server, observer)
        envelope = RequestEnvelope(1, API_PRODUCE, "c", ProduceRequestData(1, 30_000, {}), 100, 0.0, 0.0)
        connection.send(envelope)
        assert observer.sent == ([1] if checks else [])


def test_the_broker_that_reads_a_request_names_itself_on_it() -> None:
    """The requests table's `broker`: set by the broker's network thread when it reads the request."""
    b = Broker()
    env = b.env
    channel = RequestChannel(env, 500)
    costs = ProcessorCosts(lambda: READ_MS, lambda: 0.0, lambda: SEND_MS, lambda: 0.0)
    server = SocketServer(env, channel, costs, num_network_threads=2, observer=b.observer, broker_id=4)
    conn = server.connect("producer", lambda e: None)
    envelope = RequestEnvelope(1, API_PRODUCE, "producer", ProduceRequestData(1, 30_000, {}), 100, 0.0, 0.0)
    assert envelope.broker == -1  # not sent yet
    server.receive(conn, envelope)
    env.run()
    assert envelope.broker == 4 and envelope.start_ms == READ_MS


def test_a_request_lost_on_the_way_names_the_broker_it_was_sent_to_and_is_retransmitted() -> None:
    import random

    from kafkasim.sim.distributions import Constant

    b = Broker()
    env = b.env
    costs = ProcessorCosts(lambda: READ_MS, lambda: 0.0, lambda: SEND_MS, lambda: 0.0)
    server = SocketServer(env, RequestChannel(env, 500), costs, observer=b.observer, broker_id=7)
    path = NetworkPath.create(env, "c", Constant(0.5), lambda _name: random.Random(0), 1e6)
    connection = established(env, path, server, b.observer)
    path.drop_until(1_000.0)
    envelope = RequestEnvelope(1, API_PRODUCE, "c", ProduceRequestData(1, 30_000, {}), 100, 0.0, 0.0)
    connection.send(envelope)  # at 1.0, lost: the link is down
    env.run(until=999.0)
    assert envelope.broker == 7 and envelope.start_ms != envelope.start_ms  # not read yet: start_ms is NaN
    env.run()
    # TCP retransmits it after RTO = srtt 1 ms + 200 ms, doubling: at 202, 604 (both into the dead link) and
    # 1,408 ms; it arrives 0.5 ms later and is read for 1 ms.
    assert path.to_broker.retransmitted == 3 and path.to_broker.dropped == 1
    assert round(envelope.start_ms, 3) == 1_409.5


def test_after_a_lost_response_no_later_response_of_the_connection_overtakes_it() -> None:
    """Found by the leader-crash work: a producer whose one response was dropped by a link_drop still
    received the responses of its later requests, so seven batches were acknowledged after the lost one and
    its idempotent retry hit OUT_OF_ORDER_SEQUENCE_NUMBER forever (the broker remembers only 5 batches).
    TCP delivers in order: a lost segment holds everything behind it until its retransmission, and Kafka's
    InFlightRequests expects the responses of a connection in request order. If the client closes the
    connection first (its request timeout), what was held is gone; a new connection is not held."""
    import random

    from kafkasim.sim.distributions import Constant

    b = Broker()
    env = b.env
    server = b.server  # one network thread, broker 0
    path = NetworkPath.create(env, "c", Constant(0.5), lambda _name: random.Random(0), 1e9)
    received: list[int] = []

    def send(connection: Connection, request_id: int, at: float) -> None:
        def go(_e: object) -> None:
            envelope = RequestEnvelope(request_id, API_PRODUCE, "c", ProduceRequestData(1, 30_000, {}), 100, at, at,
                                       on_response=lambda e: received.append(e.request_id))
            connection.send(envelope)
        Call(env, at - env.now, go)

    b.answer_at_once()
    first = established(env, path, server, b.observer)  # at 1.0
    send(first, 1, 1.0)
    Call(env, 10.0, lambda _e: path.from_broker.drop_until(20.0))  # the response to request 2 is lost
    send(first, 2, 10.0)
    send(first, 3, 30.0)  # the link is fine again, but this response is behind the lost one
    send(first, 4, 40.0)
    env.run(until=100.0)
    assert received == [1]  # 3 and 4 are answered, held behind 2 until its retransmission
    assert path.from_broker.dropped == 1
    first.close()  # the client's request timeout closes it and connects again
    second = established(env, path, server, b.observer)  # at 101.0
    send(second, 5, 101.0)
    env.run(until=400.0)
    assert received == [1, 5]


def test_a_lost_response_is_retransmitted_and_the_later_ones_follow_it_in_order() -> None:
    import random

    from kafkasim.sim.distributions import Constant

    b = Broker()
    env = b.env
    server = b.server  # one network thread, broker 0
    path = NetworkPath.create(env, "c", Constant(0.5), lambda _name: random.Random(0), 1e9)
    received: list[tuple[int, float]] = []

    b.answer_at_once()
    connection = established(env, path, server, b.observer)  # at 1.0
    for request_id, at in ((1, 1.0), (2, 10.0), (3, 30.0), (4, 40.0)):
        def go(_e: object, request_id: int = request_id, at: float = at) -> None:
            connection.send(RequestEnvelope(request_id, API_PRODUCE, "c", ProduceRequestData(1, 30_000, {}), 100,
                                            at, at, on_response=lambda e: received.append((e.request_id, env.now))))
        Call(env, at - env.now, go)
    Call(env, 10.0 - env.now, lambda _e: path.from_broker.drop_until(20.0))
    env.run(until=400.0)
    # Response 2 leaves the broker at 13.5 (arrived at 10.5, read 1 ms, sent 2 ms) into the dead link; TCP resends it at
    # 13.5 + RTO 201 ms = 214.5 with 3 and 4 behind it, in order.
    assert [(request_id, round(at, 3)) for request_id, at in received] == [(1, 5.0), (2, 215.0), (3, 215.0),
                                                                          (4, 215.0)]


def test_a_stream_of_requests_that_expect_no_response_resumes_after_the_drop() -> None:
    """Found reviewing the ordered-stream rule: an acks=0 producer has no request timeout to close a stalled
    connection, so after one request was lost everything it sent later was lost too, for ever. TCP
    retransmits what the outage lost, and the stream goes on, in order."""
    import random

    from kafkasim.sim.distributions import Constant

    b = Broker()
    env = b.env
    server = b.server  # one network thread, broker 0
    path = NetworkPath.create(env, "c", Constant(0.5), lambda _name: random.Random(0), 1e9)
    read: list[int] = []

    def serve() -> None:
        def take(envelope: RequestEnvelope) -> None:
            read.append(envelope.request_id)
            b.channel.send_response(envelope)  # a NoOpResponse for acks=0: unmutes the channel
            serve()

        envelope = b.channel.receive_request(take)
        if envelope is not None:
            take(envelope)

    serve()
    connection = established(env, path, server, b.observer)  # at 1.0

    def send(request_id: int, at: float) -> None:
        def go(_e: object) -> None:
            connection.send(RequestEnvelope(request_id, API_PRODUCE, "c", ProduceRequestData(0, 30_000, {}), 100,
                                            at, at, expects_response=False))
        Call(env, at - env.now, go)

    Call(env, 10.0, lambda _e: path.to_broker.drop_until(20.0))
    for request_id, at in ((1, 1.0), (2, 15.0), (3, 18.0), (4, 30.0), (5, 40.0)):
        send(request_id, at)
    env.run(until=300.0)
    assert read == [1, 2, 3, 4, 5]  # 2 and 3 (sent during the drop) retransmitted at 15 + 201 ms
