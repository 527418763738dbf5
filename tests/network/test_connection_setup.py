"""Connection set-up: the TCP handshake a ``Connection`` carries across its links (Linux semantics), and the
``NetworkClient`` over it (Kafka's ``initiateConnect`` / ``handleConnections`` / ``handleTimedOutConnections``
/ ``handleTimedOutRequests`` / ``processDisconnection``).

Links are constant (1 ms one way), so every time is exact: a handshake that gets through takes 2 ms.
"""

from __future__ import annotations

import math
import random

import simpy

from kafkasim.broker.errors import Errors
from kafkasim.network.cluster_connection_states import CONNECTING, DISCONNECTED, READY, ConnectionConfig
from kafkasim.network.connection import ClientConnection, Connection, open_connection
from kafkasim.network.link import NetworkPath
from kafkasim.network.messages import API_PRODUCE, ProduceRequestData, RequestEnvelope
from kafkasim.network.network_client import NetworkClient
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import Cut
from kafkasim.network.request_channel import RequestChannel
from kafkasim.network.socket_server import ProcessorCosts, SocketServer
from kafkasim.sim.calls import Call, Pausable
from kafkasim.sim.distributions import Constant

LATENCY = 1.0


class Host:
    """A broker host: its current SocketServer (a restart makes a new one) on a bare environment."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.stw = Pausable()
        self.server = self._server()

    def _server(self) -> SocketServer:
        costs = ProcessorCosts(lambda: 0.0, lambda: 0.0, lambda: 0.0, lambda: 0.0)
        return SocketServer(self.env, RequestChannel(self.env, 500), costs, observer=Observer(), stw=self.stw)

    def restart(self) -> None:
        self.stw = Pausable()
        self.server = self._server()


class Events:
    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.established: list[float] = []
        self.disconnected: list[float] = []

    def open(self, connection: Connection) -> Connection:
        connection.connect(lambda: self.established.append(self.env.now),
                           lambda: self.disconnected.append(self.env.now))
        return connection


def _setup(cut: Cut | None = None) -> tuple[simpy.Environment, Host, NetworkPath, Events]:
    env = simpy.Environment()
    path = NetworkPath.create(env, "c", Constant(LATENCY), lambda _s: random.Random(0), float("inf"))
    return env, Host(env), path, Events(env)


def _connection(env: simpy.Environment, host: Host, path: NetworkPath, cut: Cut | None = None) -> Connection:
    return open_connection(env, "c", path, lambda: host.server, Observer(), cut)


def _at(env: simpy.Environment, t: float, action) -> None:  # type: ignore[no-untyped-def]
    Call(env, t - env.now, lambda _e: action())


def test_a_live_broker_completes_the_handshake_in_one_round_trip() -> None:
    env, host, path, events = _setup()
    connection = events.open(_connection(env, host, path))
    assert not connection.connected
    env.run(until=1.5)
    assert len(host.server.channels) == 1  # the SYN arrived: the kernel queued the connection
    env.run()
    assert events.established == [2.0] and connection.connected and events.disconnected == []
    assert path.to_broker.sent == 1 and path.from_broker.sent == 1  # SYN, SYN-ACK


def test_a_paused_broker_s_kernel_still_completes_the_handshake_and_the_request_waits() -> None:
    # Linux: a stopped (SIGSTOP, GC-paused) process's listening socket still accepts into its backlog; what
    # the client sends waits in the socket until the process runs again.
    env, host, path, events = _setup()
    host.stw.pause()
    connection = events.open(_connection(env, host, path))
    env.run(until=10.0)
    assert events.established == [2.0]
    read: list[float] = []
    envelope = RequestEnvelope(1, API_PRODUCE, "c", ProduceRequestData(1, 30_000, {}), 100, 10.0, 10.0)
    connection.send(envelope)
    host.server.request_channel.receive_request(lambda _e: read.append(env.now))
    env.run(until=50.0)
    assert read == []
    host.stw.resume()
    env.run(until=60.0)
    assert read == [50.0]


def test_a_crashed_broker_refuses_the_connection_one_round_trip_later() -> None:
    env, host, path, events = _setup()
    host.server.crash()
    connection = events.open(_connection(env, host, path))
    env.run()
    assert events.disconnected == [2.0] and events.established == [] and connection.closed
    assert host.server.channels == []


def test_syns_lost_in_a_cut_are_retransmitted_each_second_then_with_a_doubling_rto() -> None:
    # Linux 6.5+ (tcp_syn_linear_timeouts = 4): SYNs at 0, 1, 2, 3, 4, 5, 7, 11 s; the first SYN sent after the
    # cut ends completes the handshake. The real cluster's follower reconnected up to a second sooner than
    # the simulator's when it doubled from the first retransmission (1, 3, 7 s): the differential test of
    # follower_partitioned_from_leader found it.
    env, host, path, events = _setup()
    cut = Cut([(0.0, 5_500.0)])
    events.open(_connection(env, host, path, cut))
    env.run()
    assert events.established == [7_000.0 + 2 * LATENCY]
    assert path.to_broker.sent == 7  # at 0, 1, 2, 3, 4, 5 and 7 s
    env, host, path, events = _setup()
    events.open(_connection(env, host, path, Cut([(0.0, 2_500.0)])))
    env.run()
    assert events.established == [3_000.0 + 2 * LATENCY]


def test_the_kernel_gives_up_at_the_first_timer_after_127_s() -> None:
    # tcp_syn_retries = 6 (tcp_model_timeout: 127 s): retransmissions at 1, 2, 3, 4, 5, 7, 11, 19, 35 and 67 s;
    # the timer of the last expires at 131 s, past 127 s: connect() fails (measured here: 133 s).
    env, host, path, events = _setup()
    connection = events.open(_connection(env, host, path, Cut([(0.0, math.inf)])))
    env.run()
    assert events.disconnected == [131_000.0] and events.established == [] and connection.closed
    assert path.to_broker.sent == 11


def test_a_lost_syn_ack_is_answered_again_when_the_syn_is_retransmitted() -> None:
    env, host, path, events = _setup()
    path.from_broker.drop_until(500.0)  # the SYN-ACK of the first SYN is lost
    events.open(_connection(env, host, path))
    env.run()
    assert events.established == [1_000.0 + 2 * LATENCY]
    assert len(host.server.channels) == 1  # one connection at the broker, answered twice


def test_the_broker_listening_when_the_syn_arrives_answers_it() -> None:
    # Crashed when the connection was made, restarted before its retransmitted SYN got through the cut.
    env, host, path, events = _setup()
    host.server.crash()
    events.open(_connection(env, host, path, Cut([(0.0, 2_000.0)])))
    _at(env, 1_500.0, host.restart)
    env.run()
    assert events.established == [2_000.0 + 2 * LATENCY] and events.disconnected == []  # the SYN of 2 s


def test_a_connection_closed_before_its_syn_arrives_leaves_nothing_at_the_broker() -> None:
    env, host, path, events = _setup()
    connection = events.open(_connection(env, host, path))
    connection.close()
    env.run()
    assert host.server.channels == [] and events.established == [] and events.disconnected == []


# --- the NetworkClient over it ------------------------------------------------------------------------


class Client:
    """A NetworkClient on connections to ``hosts`` (node id -> Host), and what it reports."""

    def __init__(self, env: simpy.Environment, hosts: dict[int, Host], path: NetworkPath, *,
                 cut: Cut | None = None, request_timeout_ms: float = 30_000.0) -> None:
        self.env = env
        self.owner = Pausable()
        self.ready: list[tuple[float, int]] = []
        self.disconnects: list[tuple[float, int, bool]] = []
        self.outcomes: list[tuple[float, int, bool, Errors | None]] = []

        def connect(node: int) -> ClientConnection:
            return open_connection(env, "c", path, lambda: hosts[node].server, Observer(), cut)

        self.client: NetworkClient[int] = NetworkClient(
            env, self.owner, connect, ConnectionConfig(), random.Random(7), request_timeout_ms=request_timeout_ms,
            max_in_flight=5, complete=self._complete, on_ready=lambda n: self.ready.append((env.now, n)),
            on_disconnect=lambda n, t: self.disconnects.append((env.now, n, t)),
        )

    def _complete(self, _node: int, envelope: RequestEnvelope, payload: int, disconnected: bool) -> None:
        self.outcomes.append((self.env.now, payload, disconnected, envelope.error))

    def send(self, node: int, request_id: int) -> RequestEnvelope:
        envelope = RequestEnvelope(request_id, API_PRODUCE, "c", ProduceRequestData(1, 30_000, {}), 100,
                                   self.env.now, self.env.now)
        self.client.send(node, envelope, request_id)
        return envelope


def test_ready_starts_a_connection_and_the_client_hears_when_it_is_ready() -> None:
    env, host, path, _ = _setup()
    c = Client(env, {0: host}, path)
    states = c.client.connection_states
    assert not c.client.ready(0, 0.0) and states.connection_state(0) == CONNECTING
    assert not c.client.ready(0, 0.5)  # under way: no second connection
    env.run()
    assert c.ready == [(2.0, 0)] and states.connection_state(0) == READY and c.client.is_ready(0, env.now)
    assert path.to_broker.sent == 1


def test_a_connection_that_cannot_be_set_up_times_out_and_the_node_is_backed_off() -> None:
    # handleTimedOutConnections: CONNECTING for socket.connection.setup.timeout.ms (10 s +-20%); the node is
    # DISCONNECTED (reconnect.backoff.ms 50 ms +-20%) and the next attempt's setup timeout doubles.
    env, host, path, _ = _setup()
    c = Client(env, {0: host}, path, cut=Cut([(0.0, math.inf)]))
    states = c.client.connection_states
    c.client.ready(0, 0.0)
    timeout = states.connection_setup_timeout_ms(0)
    assert 8_000 <= timeout <= 12_000
    env.run(until=timeout + 1)
    assert c.disconnects == [(timeout, 0, False)] and c.ready == []
    assert states.connection_state(0) == DISCONNECTED and c.client.connection_failed(0)
    backoff = c.client.connection_delay(0, env.now)
    assert 0 < backoff <= 60 and not c.client.ready(0, env.now)
    env.run(until=env.now + backoff)
    assert not c.client.ready(0, env.now) and states.connection_state(0) == CONNECTING
    assert 16_000 <= states.connection_setup_timeout_ms(0) <= 24_000


def test_a_refused_connection_fails_at_once_and_the_backoff_grows() -> None:
    env, host, path, _ = _setup()
    host.server.crash()
    c = Client(env, {0: host}, path)
    delays = []
    for _ in range(5):
        c.client.ready(0, env.now)
        env.run(until=env.now + 2 * LATENCY + 0.001)
        delays.append(c.client.connection_delay(0, env.now))
        env.run(until=env.now + delays[-1])
    assert [t for _, _, t in c.disconnects] == [False] * 5
    # reconnect.backoff.ms 50 x 2 ** failures, +-20 %, capped at reconnect.backoff.max.ms 1 s.
    for i, delay in enumerate(delays):
        assert 0.8 * min(50 * 2**i, 1000) - 1 <= delay <= 1.2 * min(50 * 2**i, 1000), (i, delays)


def test_a_request_timeout_fails_every_request_in_flight_as_timed_out() -> None:
    # handleTimedOutRequests -> processTimeoutDisconnection -> cancelInFlightRequests(timedOut=true): every
    # request in flight on the node fails as timed out, the oldest's deadline deciding.
    env, host, path, _ = _setup()
    c = Client(env, {0: host}, path, cut=Cut([(3.0, math.inf)]), request_timeout_ms=100.0)
    c.client.ready(0, 0.0)
    env.run(until=3.0)
    _at(env, 5.0, lambda: c.send(0, 1))
    _at(env, 50.0, lambda: c.send(0, 2))
    env.run(until=200.0)
    assert c.outcomes == [(105.0, 1, True, Errors.REQUEST_TIMED_OUT), (105.0, 2, True, Errors.REQUEST_TIMED_OUT)]
    assert c.disconnects == [(105.0, 0, True)] and c.client.in_flight == 0 and c.client.connections == {}


def test_a_reset_fails_the_requests_in_flight_with_network_exception() -> None:
    env, host, path, _ = _setup()
    c = Client(env, {0: host}, path)
    c.client.ready(0, 0.0)
    env.run(until=3.0)
    c.send(0, 1)
    _at(env, 3.5, host.server.crash)
    env.run(until=10.0)
    assert c.outcomes == [(4.5, 1, True, Errors.NETWORK_EXCEPTION)] and c.disconnects == [(4.5, 0, False)]


def test_a_handshake_completed_during_the_client_s_pause_wins_over_its_setup_timeout() -> None:
    # NetworkClient.poll handles the connections made before the timed-out ones.
    env, host, path, _ = _setup()
    c = Client(env, {0: host}, path, cut=Cut([(0.0, 18_500.0)]))
    c.client.ready(0, 0.0)
    timeout = c.client.connection_states.connection_setup_timeout_ms(0)
    c.owner.pause()
    env.run(until=20_000.0)  # the SYN of 19 s got through at 19.002 s, past the setup timeout
    assert c.ready == [] and c.disconnects == []
    c.owner.resume()
    c.client.check_timeouts()
    assert c.ready == [(20_000.0, 0)] and c.disconnects == [] and timeout < 19_000


def test_close_forgets_the_node_and_returns_what_was_in_flight() -> None:
    env, host, path, _ = _setup()
    c = Client(env, {0: host}, path)
    c.client.ready(0, 0.0)
    env.run(until=3.0)
    sent = c.send(0, 1)
    assert c.client.close(0) == [sent] and c.outcomes == []
    assert c.client.connection_delay(0, env.now) == 0 and c.client.connections == {}
