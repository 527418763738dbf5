"""A client's connection to a broker: the network path (``kafkasim.network.link.NetworkPath``, a pair of
one-way links) plus the broker-side channel in the ``SocketServer``.

``connect()`` opens it with a TCP handshake across the path, as the kernel does under Kafka's
``Selector.connect``: a SYN travels ``to_broker``; the broker host's kernel answers it with a SYN-ACK
``from_broker`` and queues the connection for the broker's ``SocketServer`` (its ``KafkaChannel``), and the
SYN-ACK's arrival makes the connection established (``on_established``; the NetworkClient then marks the
node READY). What each host does with a SYN follows Linux:

* a live broker, paused or not: the kernel completes the handshake itself (a stopped process's listening
  socket still accepts into its backlog), so a client connects to a paused broker and its requests wait in
  the socket until the pause ends (or the client's request timeout);
* a crashed broker (the process is gone, the host is up): nothing listens, so the kernel answers with an RST
  and the attempt is refused one round trip after it began (``on_disconnect``); the broker that is
  listening when the SYN arrives answers (a broker restarted meanwhile accepts);
* a cut (a ``network_partition`` or ``link_drop`` fault): the SYN or SYN-ACK is lost; the client's kernel
  retransmits the SYN as Linux 6.5 and later do (``tcp_retransmit_timer``): the first
  ``tcp_syn_linear_timeouts`` = 4 retransmissions keep the initial RTO of 1 s, so SYNs go out 1, 2, 3, 4 and
  5 s after the connect, then the RTO doubles (7, 11, 19, 35, 67 s); the first timer to expire once
  ``tcp_syn_retries`` = 6 allows no more (Linux's modelled timeout, (2^7 - 1) x 1 s = 127 s after the first
  SYN) gives up: 131 s after the connect the connection fails -- unless the client closes it first, as
  Kafka's ``socket.connection.setup.timeout.ms`` does. A SYN that gets through after the cut completes the
  handshake. Measured on the project's machines (Linux 6.18): retransmissions 1.2, 2.1, 3.3, 4.2, 5.2, 7.3,
  11.4, 19.5, 35.6, 68.9 s after the connect, and connect() failed after 133 s (the kernel's timer wheel
  rounds long timers up; the model keeps the nominal times). Older kernels (before 6.5) doubled from the
  first retransmission (1, 3, 7 s ...).

Simplifications: a handshake packet is a 0-byte message on its link (like the RST); the broker's own SYN-ACK
retransmissions are not modelled (the client's SYN retransmissions, on the same schedule, stand in for them);
the accept backlog never overflows; the client's final ACK travels with its first request.

Requests travel ``to_broker`` into the socket server's ``KafkaChannel``; responses come back ``from_broker`` to
the envelope's ``on_response``. Closing it (a client-side timeout disconnects, a crash) closes the broker
channel too; a reconnect is a new ``Connection`` over the same network path (same links, same faults, same
random streams).

When the broker's process dies the connection is reset: the RST travels ``from_broker`` like any message
(after what the broker had already sent; lost if the link drops it) and then ``on_disconnect`` tells the
client (Kafka's ``Selector`` sees the channel closed: ``NetworkClient.handleDisconnections``).

A connection is one ordered byte stream each way: once a link drops a message of this connection, nothing
sent after it in that direction arrives either (TCP delivers in order; with no retransmission -- the
links' simplification -- the stream stays stalled behind the lost segment). Only a stream of requests that
expect no response (acks=0), which no request timeout would ever close, resumes once the link carries
messages again. So a lost response stalls
every later response on the connection until the client's request timeout closes it
(``NetworkClient.handleTimedOutRequests``), as a real one would: Kafka's ``InFlightRequests`` expects the
responses of one connection in the order of its requests, never one overtaking another.

A ``PartitionedConnection`` is one between two hosts that a network partition separates at some time
(``kafkasim.network.partitions``): a message that is on the wire while the cut lasts is lost, in either
direction. Connections between hosts no partition separates are plain ``Connection``s, at no extra cost.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Final, Protocol

from kafkasim.network.link import NetworkLink, NetworkPath
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import Cut
from kafkasim.sim.calls import Call

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.kafka_channel import KafkaChannel
    from kafkasim.network.socket_server import SocketServer

__all__ = ["ClientConnection", "Connection", "NetworkPath", "PartitionedConnection", "open_connection"]

# Linux (6.5 and later): the SYN's RTO starts at TCP_TIMEOUT_INIT = 1 s and stays there for the first
# tcp_syn_linear_timeouts = 4 retransmissions, then doubles (up to TCP_RTO_MAX); tcp_syn_retries = 6 is a time:
# retransmits_timed_out gives up at the first timer expiry at least tcp_model_timeout = (2^(6+1) - 1) x 1 s
# after the first SYN.
SYN_RTO_INITIAL_MS: Final = 1_000.0
SYN_LINEAR_TIMEOUTS: Final = 4
SYN_RETRIES: Final = 6
SYN_TIMEOUT_MS: Final = (2.0 ** (SYN_RETRIES + 1) - 1.0) * SYN_RTO_INITIAL_MS
TCP_RTO_MAX_MS: Final = 120_000.0


class ClientConnection(Protocol):
    """What a ``NetworkClient`` needs of a connection: a ``Connection`` (or a test's scripted one).

    ``connect`` starts the handshake; ``on_established`` runs when it completes, ``on_disconnect`` when the
    connection is refused, reset by the broker or given up by the kernel. A connection already established
    when ``connect`` returns (a scripted one) calls neither."""

    closed: bool
    connected: bool

    def connect(self, on_established: Callable[[], None], on_disconnect: Callable[[], None]) -> None: ...

    def send(self, envelope: RequestEnvelope) -> None: ...

    def close(self) -> None: ...


class _Stream:
    """One direction of a connection: its link, and whether a message of it was lost (then it is stalled)."""

    __slots__ = ("link", "lost")

    def __init__(self, link: NetworkLink) -> None:
        self.link = link
        self.lost = False


class Connection:
    """One TCP connection of client ``name`` to the broker whose ``SocketServer`` ``listener()`` returns when
    the SYN arrives (the broker's current process): ``connect(...)``, then ``send(envelope)``, ``close()``."""

    __slots__ = ("env", "name", "path", "listener", "socket_server", "channel", "closed", "observer", "_checks",
                 "connected", "on_established", "on_disconnect", "_requests", "_responses", "_syn_timer",
                 "_syn_retries", "_syn_started_ms")

    def __init__(
        self,
        env: Environment,
        name: str,
        path: NetworkPath,
        listener: Callable[[], SocketServer],
        observer: Observer,
    ) -> None:
        self.env = env
        self.name = name
        self.path = path
        self.listener = listener
        # The broker's side, once the first SYN reached a live broker.
        self.socket_server: SocketServer | None = None
        self.channel: KafkaChannel | None = None
        self.closed = False
        self.connected = False  # the handshake completed
        self.observer = observer
        self._checks = observer.checks
        self.on_established: Callable[[], None] | None = None
        self.on_disconnect: Callable[[], None] | None = None
        self._requests = _Stream(path.to_broker)
        self._responses = _Stream(path.from_broker)
        self._syn_timer: Call | None = None
        self._syn_retries = 0
        self._syn_started_ms = 0.0

    # --- the handshake -----------------------------------------------------------------------------

    def connect(self, on_established: Callable[[], None], on_disconnect: Callable[[], None]) -> None:
        """``Selector.connect``: send the SYN."""
        self.on_established = on_established
        self.on_disconnect = on_disconnect
        self._send_syn()

    def _send_syn(self) -> None:
        if self._syn_retries == 0:
            self._syn_started_ms = self.env.now
        self._packet(self.path.to_broker, self._syn_arrived)
        retries = self._syn_retries
        rto = SYN_RTO_INITIAL_MS if retries <= SYN_LINEAR_TIMEOUTS else (
            SYN_RTO_INITIAL_MS * 2.0 ** (retries - SYN_LINEAR_TIMEOUTS))
        self._syn_timer = Call(self.env, min(rto, TCP_RTO_MAX_MS), self._syn_timeout)

    def _syn_timeout(self, _event: object) -> None:
        self._syn_timer = None
        if self.closed or self.connected:
            return
        if self.env.now - self._syn_started_ms >= SYN_TIMEOUT_MS:
            self._disconnected()  # ETIMEDOUT: the kernel gave up
            return
        self._syn_retries += 1
        self._send_syn()

    def _syn_arrived(self) -> None:
        if self.closed:
            return  # the client gave up meanwhile (its kernel would reset the SYN-ACK: nothing to model)
        server = self.listener()
        if server.down:
            # Nothing listens (the process died): the kernel refuses with an RST.
            self._packet(self.path.from_broker, self._disconnected)
            return
        if self.channel is None:
            # The kernel completes the handshake even for a paused process (the accept backlog).
            self.socket_server = server
            channel = self.channel = server.connect(self.name, self._send_response)
            channel.on_reset = self._reset
        self._packet(self.path.from_broker, self._syn_acked)

    def _syn_acked(self) -> None:
        if self.closed or self.connected:
            return  # a duplicate SYN-ACK (a retransmitted SYN answered too)
        self.connected = True
        self._cancel_syn_timer()
        callback = self.on_established
        if callback is not None:
            callback()

    def _cancel_syn_timer(self) -> None:
        timer = self._syn_timer
        if timer is not None:
            timer.cancel()
            self._syn_timer = None

    # --- resets --------------------------------------------------------------------------------------

    def _reset(self) -> None:
        # The broker's kernel resets the connection: the RST follows what was already sent back.
        self._packet(self.path.from_broker, self._disconnected)

    def _disconnected(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.connected = False
        self._cancel_syn_timer()
        if self.on_disconnect is not None:
            self.on_disconnect()

    # --- data ----------------------------------------------------------------------------------------

    def send(self, envelope: RequestEnvelope) -> None:
        if self._checks:
            self.observer.request_sent(envelope)
        channel = self.channel
        socket_server = self.socket_server
        assert channel is not None and socket_server is not None, "send on a connection not established"
        envelope.broker = socket_server.broker_id  # the destination, for a request that never arrives
        requests = self._requests
        if requests.lost:
            if envelope.expects_response or not self._carries(requests.link):
                return  # waits in the socket behind a lost segment: never arrives
            # Requests that expect no response (acks=0) have no request timeout to close the connection:
            # the stream resumes once the link carries messages again (TCP's retransmission, which the
            # links do not model, would have resent the lost segment).
            requests.lost = False
        self._transmit(requests, envelope.request_bytes, partial(socket_server.receive, channel, envelope))

    def _send_response(self, envelope: RequestEnvelope) -> None:
        responses = self._responses
        if not responses.lost:
            response = envelope.response
            assert response is not None
            self._transmit(responses, response.size_in_bytes, partial(self._deliver, envelope))

    def _transmit(self, stream: _Stream, size_bytes: int, deliver: Callable[[], None]) -> None:
        """A message of ``stream``; if the link drops it, the stream stalls behind it."""
        if not stream.link.send(size_bytes, deliver):
            stream.lost = True

    def _carries(self, link: NetworkLink) -> bool:
        """Whether ``link`` carries messages now."""
        return not link.is_dropping

    def _packet(self, link: NetworkLink, deliver: Callable[[], None]) -> None:
        """A SYN, SYN-ACK or RST: a packet of its own, not behind the stream's data."""
        link.send(0, deliver)

    def _deliver(self, envelope: RequestEnvelope) -> None:
        if self.closed:
            return
        envelope.client_receive_ms = self.env.now
        envelope.response_received = True
        callback = envelope.on_response
        if callback is not None:
            callback(envelope)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._cancel_syn_timer()
            channel = self.channel
            if channel is not None and self.socket_server is not None:
                self.socket_server.close_channel(channel)


class PartitionedConnection(Connection):
    """A ``Connection`` whose two hosts a network partition separates during ``cut``'s windows: a request or
    response that is on the wire at any moment of the cut is lost (counted in its link's ``dropped``); the
    sender finds out only through its own request timeout. As on any connection, nothing sent after a lost
    message arrives in that direction (TCP order)."""

    __slots__ = ("cut",)

    def __init__(
        self,
        env: Environment,
        name: str,
        path: NetworkPath,
        listener: Callable[[], SocketServer],
        observer: Observer,
        cut: Cut,
    ) -> None:
        self.cut = cut
        super().__init__(env, name, path, listener, observer)

    def _transmit(self, stream: _Stream, size_bytes: int, deliver: Callable[[], None]) -> None:
        link = stream.link
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if stream.lost:
                return  # behind a message the cut lost (a cut's losses show on arrival, in order)
            if cut.severs(sent_ms, env.now):
                link.dropped += 1
                stream.lost = True
                return
            deliver()

        if not link.send(size_bytes, arrive):
            stream.lost = True

    def _carries(self, link: NetworkLink) -> bool:
        return super()._carries(link) and self.cut.until(self.env.now) is None

    def _packet(self, link: NetworkLink, deliver: Callable[[], None]) -> None:
        # Lost if the cut separates the hosts while it travels.
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if not cut.severs(sent_ms, env.now):
                deliver()

        link.send(0, arrive)


def open_connection(
    env: Environment, name: str, path: NetworkPath, listener: Callable[[], SocketServer], observer: Observer,
    cut: Cut | None,
) -> Connection:
    """A connection (not yet connected) of client ``name`` to the broker ``listener()`` returns: a
    ``PartitionedConnection`` if a partition ever separates the two hosts (``cut``), else a plain one."""
    if cut is None:
        return Connection(env, name, path, listener, observer)
    return PartitionedConnection(env, name, path, listener, observer, cut)
