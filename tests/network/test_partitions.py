"""Network partitions: which messages a cut loses, per host pair, in each direction, and how overlapping
partitions nest (kafkasim.network.partitions, PartitionedConnection); TCP's retransmission of what a cut lost
(kafkasim.network.tcp)."""

from __future__ import annotations

import math
import random

import pytest
import simpy

from kafkasim.network.connection import Connection, PartitionedConnection, open_connection
from kafkasim.network.link import NetworkPath
from kafkasim.network.messages import Response
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import Cut, NetworkPartitions, network_partitions
from kafkasim.sim.distributions import Constant


def test_a_message_is_lost_iff_it_is_on_the_wire_while_the_cut_lasts() -> None:
    cut = Cut([(10.0, 20.0)])
    assert not cut.severs(0.0, 9.0)  # delivered before the cut
    assert cut.severs(9.0, 11.0)  # in flight when it starts, due during it
    assert cut.severs(9.0, 10.0)  # due at its very start
    assert cut.severs(12.0, 13.0)  # sent and due during it
    assert cut.severs(19.0, 21.0)  # sent during it, due after it
    assert cut.severs(5.0, 25.0)  # on the wire through all of it
    assert not cut.severs(20.0, 21.0)  # sent when it ends: the hosts are connected again
    assert not cut.severs(30.0, 31.0)


def test_until_is_the_end_of_the_cut_in_force() -> None:
    cut = Cut([(10.0, 20.0), (30.0, math.inf)])
    assert cut.until(9.9) is None and cut.until(10.0) == 20.0 and cut.until(19.9) == 20.0
    assert cut.until(20.0) is None and cut.until(25.0) is None
    assert cut.until(30.0) == math.inf and cut.until(1e9) == math.inf


def test_a_partition_cuts_both_directions_between_its_sides_and_nothing_else() -> None:
    partitions = NetworkPartitions()
    partitions.add(10.0, 20.0, ["broker-0"], ["broker-1", "p1", "controller"])
    for other in ("broker-1", "p1", "controller"):
        for a, b in (("broker-0", other), (other, "broker-0")):
            cut = partitions.between(a, b)
            assert cut is not None and cut.windows == [(10.0, 20.0)], (a, b)
    # Hosts on the same side, and hosts the partition does not name, keep their links.
    assert partitions.between("broker-1", "p1") is None
    assert partitions.between("broker-1", "controller") is None
    assert partitions.between("broker-0", "broker-2") is None
    assert partitions.between("c1", "broker-1") is None


def test_overlapping_partitions_of_the_same_hosts_nest_until_the_last_one_ends() -> None:
    partitions = NetworkPartitions()
    partitions.add(10.0, 30.0, ["broker-0"], ["broker-1", "p1"])
    partitions.add(20.0, 40.0, ["broker-1"], ["broker-0"])
    partitions.add(50.0, 60.0, ["p1"], ["broker-0"])
    cut = partitions.between("broker-1", "broker-0")
    assert cut is not None and cut.windows == [(10.0, 40.0)]
    assert cut.severs(35.0, 36.0)  # the first partition ended at 30, the second still holds
    assert not cut.severs(40.0, 41.0)
    p1 = partitions.between("p1", "broker-0")
    assert p1 is not None and p1.windows == [(10.0, 30.0), (50.0, 60.0)]
    assert not p1.severs(30.0, 31.0) and p1.severs(49.0, 51.0) and not p1.severs(45.0, 46.0)


def test_a_partition_to_the_end_of_the_run_never_heals() -> None:
    partitions = NetworkPartitions()
    partitions.add(10.0, math.inf, ["broker-2"], ["controller"])
    cut = partitions.between("controller", "broker-2")
    assert cut is not None and cut.severs(1e12, 1e12 + 1) and not cut.severs(0.0, 9.0)


def test_a_host_on_both_sides_is_refused() -> None:
    with pytest.raises(ValueError, match="both sides"):
        NetworkPartitions().add(0.0, 1.0, ["broker-0", "p1"], ["p1"])


class _Channel:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.on_reset = None


class _SocketServer:
    """What a connection needs of a broker's SocketServer; records what arrives."""

    broker_id = 0
    down = False

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.received: list[tuple[float, str]] = []
        self.respond: object = None
        self.closed = 0

    def connect(self, name, send_response):
        self.respond = send_response
        return _Channel(name)

    def receive(self, channel, envelope) -> None:
        self.received.append((self.env.now, envelope.name))

    def close_channel(self, channel) -> None:
        self.closed += 1


class _Envelope:
    def __init__(self, name: str) -> None:
        self.name = name
        self.request_bytes = 100
        self.response = Response({}, 100, 0)
        self.broker = -1
        self.client_receive_ms = math.nan
        self.on_response = None
        self.expects_response = True


def _connection(cut: Cut | None):
    """A connection opened at 0: its SYN arrives at 1, its SYN-ACK at 2."""
    env = simpy.Environment()
    path = NetworkPath.create(env, "p1", Constant(1.0), lambda _s: random.Random(0), float("inf"))
    server = _SocketServer(env)
    return env, server, path, _reconnect(env, server, path, cut)


def _reconnect(env, server, path, cut: Cut | None):
    connection = open_connection(env, "p1", path, lambda: server, Observer(), cut)  # type: ignore[arg-type,return-value]
    connection.connect(lambda: None, lambda: None)
    return connection


def _at(env: simpy.Environment, t: float, action) -> None:
    env.timeout(t).callbacks.append(lambda _e: action())


def test_network_partitions_from_plain_windows() -> None:
    assert network_partitions([]) is None  # no partition: no connection pays for them
    partitions = network_partitions([(10.0, 20.0, ["broker-0"], ["broker-1", "controller"]),
                                     (30.0, math.inf, ["p1"], ["broker-0"])])
    assert partitions is not None
    cut = partitions.between("controller", "broker-0")
    assert cut is not None and cut.windows == [(10.0, 20.0)]
    broker_cut = partitions.between("broker-0", "p1")
    assert broker_cut is not None and broker_cut.until(40.0) == math.inf
    assert partitions.between("broker-1", "controller") is None


@pytest.mark.pure_only
def test_requests_lost_to_the_cut_are_retransmitted_and_the_rest_follow_in_order() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    assert isinstance(connection, PartitionedConnection)
    for t, name in ((5.0, "before"), (9.5, "in-flight"), (15.0, "during"), (19.5, "sent-during"), (20.0, "after")):
        _at(env, t, lambda name=name: connection.send(_Envelope(name)))  # type: ignore[arg-type]
    env.run()
    # The in-flight request is lost on the wire at 10.5; TCP retransmits it one RTO (srtt 2 ms + TCP_RTO_MIN
    # 200 ms) after it was sent, at 211.5, when the cut is over; everything behind it follows, in order.
    assert server.received == [(6.0, "before")] + [
        (212.5, name) for name in ("in-flight", "during", "sent-during", "after")]
    assert path.to_broker.dropped == 1 and path.to_broker.retransmitted == 1
    assert path.from_broker.dropped == 0 and path.from_broker.retransmitted == 0


@pytest.mark.pure_only
def test_what_a_closed_connection_held_behind_a_loss_is_gone_with_it() -> None:
    # The client's request timeout closes the connection before the retransmission: nothing arrives after.
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    for t, name in ((5.0, "before"), (15.0, "during"), (25.0, "after")):
        _at(env, t, lambda name=name: connection.send(_Envelope(name)))  # type: ignore[arg-type]
    _at(env, 100.0, connection.close)
    env.run(until=250.0)
    assert server.received == [(6.0, "before")]
    again = _reconnect(env, server, path, Cut([(10.0, 20.0)]))
    _at(env, 300.0 - env.now, lambda: again.send(_Envelope("new connection")))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(6.0, "before"), (301.0, "new connection")]


@pytest.mark.pure_only
def test_a_request_sent_during_the_cut_on_an_idle_connection_is_retransmitted() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    for t, name in ((5.0, "before"), (15.0, "during"), (25.0, "after")):
        _at(env, t, lambda name=name: connection.send(_Envelope(name)))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(6.0, "before"), (218.0, "during"), (218.0, "after")]  # resent at 15 + 202
    assert path.to_broker.dropped == 1


@pytest.mark.pure_only
def test_responses_lost_to_the_cut_are_retransmitted_in_order() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    got: list[tuple[float, str]] = []

    def respond(name: str) -> None:
        envelope = _Envelope(name)
        envelope.on_response = lambda e: got.append((env.now, e.name))  # type: ignore[assignment]
        server.respond(envelope)  # type: ignore[operator]

    for t, name in ((5.0, "before"), (9.5, "in-flight"), (15.0, "during"), (20.0, "after")):
        _at(env, t, lambda name=name: respond(name))
    env.run()
    assert got == [(6.0, "before"), (212.5, "in-flight"), (212.5, "during"), (212.5, "after")]
    assert path.from_broker.dropped == 1 and path.to_broker.dropped == 0


@pytest.mark.pure_only
def test_a_long_cut_backs_the_retransmissions_off_and_the_stream_resumes_at_the_first_one_after_it() -> None:
    # RTO 202 ms doubling (Linux tcp_retransmit_timer): retransmissions at 217, 621, 1429 ms; the cut ends at 1 s.
    env, server, path, connection = _connection(Cut([(10.0, 1_000.0)]))
    _at(env, 15.0, lambda: connection.send(_Envelope("during")))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(1_430.0, "during")]
    assert path.to_broker.retransmitted == 3 and not connection.closed


@pytest.mark.pure_only
def test_an_outage_longer_than_tcp_retries2_breaks_the_connection() -> None:
    # Linux gives up at the first retransmission timer at least tcp_model_timeout(15, TCP_RTO_MIN) = 924.6 s
    # after the lost segment was sent at 15 ms: the timers fire at 15 + 202 x (2^(j+1) - 1) ms up to j = 9
    # (206,661 ms), then every TCP_RTO_MAX (120 s): 806,661 is too early, 926,661 gives up (ETIMEDOUT).
    env = simpy.Environment()
    path = NetworkPath.create(env, "p1", Constant(1.0), lambda _s: random.Random(0), float("inf"))
    server = _SocketServer(env)
    connection = open_connection(env, "p1", path, lambda: server, Observer(),  # type: ignore[arg-type,return-value]
                                 Cut([(10.0, math.inf)]))
    broken: list[float] = []
    connection.connect(lambda: None, lambda: broken.append(env.now))
    _at(env, 15.0, lambda: connection.send(_Envelope("lost")))  # type: ignore[arg-type]
    env.run()
    assert broken == [926_661.0] and connection.closed
    assert server.received == [] and path.to_broker.retransmitted == 15
    assert server.closed == 1  # the broker's side is closed too


@pytest.mark.pure_only
def test_hosts_no_partition_separates_get_a_plain_connection() -> None:
    _env, _server, _path, connection = _connection(None)
    assert type(connection) is Connection


@pytest.mark.pure_only
def test_acks_0_requests_are_retransmitted_like_any() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))

    def fire_and_forget(name: str) -> _Envelope:
        envelope = _Envelope(name)
        envelope.expects_response = False
        return envelope

    for t, name in ((5.0, "before"), (15.0, "during"), (25.0, "after")):
        _at(env, t, lambda name=name: connection.send(fire_and_forget(name)))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(6.0, "before"), (218.0, "during"), (218.0, "after")]


def test_linux_retransmission_constants() -> None:
    from kafkasim.network.tcp import TCP_RETRIES2, TCP_RTO_MIN_MS, retransmits_timeout_ms, tcp_rto_ms

    assert TCP_RTO_MIN_MS == 200.0 and TCP_RETRIES2 == 15
    assert retransmits_timeout_ms() == 924_600.0  # Linux tcp_model_timeout(sk, 15, TCP_RTO_MIN)
    assert retransmits_timeout_ms(3) == 3_000.0  # (2^4 - 1) x 200 ms, still doubling
    assert tcp_rto_ms(2.0) == 202.0 and tcp_rto_ms(1e9) == 120_000.0
