"""Network partitions: which messages a cut loses, per host pair, in each direction, and how overlapping
partitions nest (kafkasim.network.partitions, PartitionedConnection)."""

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

    def connect(self, name, send_response):
        self.respond = send_response
        return _Channel(name)

    def receive(self, channel, envelope) -> None:
        self.received.append((self.env.now, envelope.name))

    def close_channel(self, channel) -> None:
        pass


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
def test_requests_to_the_broker_are_lost_while_the_cut_lasts() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    assert isinstance(connection, PartitionedConnection)
    for t, name in ((5.0, "before"), (9.5, "in-flight"), (15.0, "during"), (19.5, "sent-during"), (20.0, "after")):
        _at(env, t, lambda name=name: connection.send(_Envelope(name)))  # type: ignore[arg-type]
    env.run(until=25.0)  # (not to the end: the cancelled SYN retransmission timer still ticks at 1 s)
    # The in-flight request is lost on the wire; the stream stays stalled behind it (TCP order, no
    # retransmission): nothing later on this connection arrives, even after the cut.
    assert server.received == [(6.0, "before")]
    assert path.to_broker.dropped == 1 and path.from_broker.dropped == 0
    # The client's request timeout closes it; a new connection after the cut gets through.
    connection.close()
    again = _reconnect(env, server, path, Cut([(10.0, 20.0)]))
    _at(env, 30.0 - env.now, lambda: again.send(_Envelope("new connection")))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(6.0, "before"), (31.0, "new connection")]


@pytest.mark.pure_only
def test_a_request_sent_during_the_cut_on_an_idle_connection_is_lost_and_stalls_the_rest() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    for t, name in ((5.0, "before"), (15.0, "during"), (25.0, "after")):
        _at(env, t, lambda name=name: connection.send(_Envelope(name)))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(6.0, "before")]
    assert path.to_broker.dropped == 1


@pytest.mark.pure_only
def test_responses_from_the_broker_are_lost_while_the_cut_lasts() -> None:
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))
    got: list[tuple[float, str]] = []

    def respond(name: str) -> None:
        envelope = _Envelope(name)
        envelope.on_response = lambda e: got.append((env.now, e.name))  # type: ignore[assignment]
        server.respond(envelope)  # type: ignore[operator]

    for t, name in ((5.0, "before"), (9.5, "in-flight"), (15.0, "during"), (20.0, "after")):
        _at(env, t, lambda name=name: respond(name))
    env.run()
    assert got == [(6.0, "before")]  # "after" waits behind the lost "in-flight" (TCP order)
    assert path.from_broker.dropped == 1 and path.to_broker.dropped == 0


@pytest.mark.pure_only
def test_hosts_no_partition_separates_get_a_plain_connection() -> None:
    _env, _server, _path, connection = _connection(None)
    assert type(connection) is Connection


@pytest.mark.pure_only
def test_acks_0_requests_resume_once_the_cut_is_over() -> None:
    # Requests that expect no response have no timeout to close a stalled connection: the stream resumes.
    env, server, path, connection = _connection(Cut([(10.0, 20.0)]))

    def fire_and_forget(name: str) -> _Envelope:
        envelope = _Envelope(name)
        envelope.expects_response = False
        return envelope

    for t, name in ((5.0, "before"), (15.0, "during"), (25.0, "after")):
        _at(env, t, lambda name=name: connection.send(fire_and_forget(name)))  # type: ignore[arg-type]
    env.run()
    assert server.received == [(6.0, "before"), (26.0, "after")]
