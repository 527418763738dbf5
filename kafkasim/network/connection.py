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

A connection is one ordered byte stream each way, under TCP's retransmission (``kafkasim.network.tcp``): a
request or response lost on the wire (its link down: a ``link_drop`` fault; or cut by a ``network_partition``)
is retransmitted after the RTO, doubling per retry, and everything sent after it in that direction waits
behind it, so the stream resumes, in order, at the first retransmission after the link is back. Nothing is
lost while the connection stays open. An outage that outlasts the client's own request timeout
(``request.timeout.ms``, ``replica.socket.timeout.ms``) ends with the client closing the connection
(``NetworkClient.handleTimedOutRequests``): what was still queued on it is gone with it. One that outlasts
``tcp_retries2`` (924.6 s) breaks the connection (ETIMEDOUT: ``on_disconnect``). ``reset()`` is a
``connection_reset`` fault: the peer's RST, both ends closed at once. ``half_open()`` is a ``half_open`` fault:
the connection's state is gone from a box on its path, so everything either end sends on it from then on is
dropped, retransmitted in vain, until the client's request timeout closes it or ``tcp_retries2`` breaks it;
neither end is told (what was already on the wire arrives: a simplification).

A ``PartitionedConnection`` is one between two hosts that a network partition separates at some time
(``kafkasim.network.partitions``): a message that is on the wire while the cut lasts is lost, in either
direction, and retransmitted. Connections between hosts no partition separates are plain ``Connection``s, at
no extra cost.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Final, Protocol

from kafkasim.network.link import NetworkLink, NetworkPath
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import Cut
from kafkasim.network.tcp import (
    LINUX_TCP,
    TCP_GAVE_UP,
    TCP_LOST_AGAIN,
    TCP_RTO_MAX_MS,
    TCP_THROUGH,
    Segment,
    TcpSettings,
    hold,
    tcp_rto_ms,
)
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
    """One direction of a connection: its link and, while a segment of it is lost, the segments held behind
    the loss (``held``, the lost one first), its retransmission timer and backoff."""

    __slots__ = ("link", "held", "seq", "rto_ms", "loss_ms", "timer")

    def __init__(self, link: NetworkLink) -> None:
        self.link = link
        self.held: list[Segment] | None = None
        self.seq = 0  # the next segment's sequence number (a partitioned connection's arrivals need them)
        self.rto_ms = 0.0
        self.loss_ms = 0.0  # when the lost head was transmitted (Linux's retrans_stamp)
        self.timer: Call | None = None

    def cancel(self) -> None:
        timer = self.timer
        if timer is not None:
            timer.cancel()
            self.timer = None


class Connection:
    """One TCP connection of client ``name`` to the broker whose ``SocketServer`` ``listener()`` returns when
    the SYN arrives (the broker's current process): ``connect(...)``, then ``send(envelope)``, ``close()``."""

    __slots__ = ("env", "name", "path", "listener", "socket_server", "channel", "closed", "observer", "_checks",
                 "connected", "on_established", "on_disconnect", "_requests", "_responses", "_syn_timer",
                 "_syn_retries", "_syn_started_ms", "tcp", "_half_open")

    def __init__(
        self,
        env: Environment,
        name: str,
        path: NetworkPath,
        listener: Callable[[], SocketServer],
        observer: Observer,
        tcp: TcpSettings = LINUX_TCP,
    ) -> None:
        self.env = env
        self.tcp = tcp
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
        self._half_open = False  # a half_open fault: nothing sent on it arrives any more

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
        self._cancel_timers()
        if self.on_disconnect is not None:
            self.on_disconnect()

    def reset(self) -> None:
        """A ``connection_reset`` fault: the peer's RST (a middlebox, a peer's kernel): both ends see the
        connection closed at once. The broker's channel is closed for good (what it had unread is dropped, a
        response it still writes is discarded: ``SocketServer.Processor``), and the client hears of it now
        (``on_disconnect``: ``NetworkClient.handleDisconnections`` fails every request in flight)."""
        if self.closed:
            return
        channel = self.channel
        if channel is not None and self.socket_server is not None:
            self.socket_server.reset_channel(channel)
        self._disconnected()

    def half_open(self) -> None:
        """A ``half_open`` fault: a box on the path (a NAT's or a stateful firewall's table, a load balancer that
        failed over) has lost the connection's state; both ends still hold it open and are not told. From now
        on every segment, SYN-ACK or RST sent on it is dropped: TCP retransmits in vain (``_carries``), until
        the client's request timeout closes it (``NetworkClient.handleTimedOutRequests``) or tcp_retries2's
        time breaks it (``_broken``). Messages already on the wire arrive (simplification)."""
        self._half_open = True

    def _cancel_timers(self) -> None:
        self._cancel_syn_timer()
        self._requests.cancel()
        self._responses.cancel()

    # --- data ----------------------------------------------------------------------------------------

    def send(self, envelope: RequestEnvelope) -> None:
        if self._checks:
            self.observer.request_sent(envelope)
        channel = self.channel
        socket_server = self.socket_server
        assert channel is not None and socket_server is not None, "send on a connection not established"
        envelope.broker = socket_server.broker_id  # the destination, for a request that never arrives
        self._transmit(self._requests, envelope.request_bytes, partial(socket_server.receive, channel, envelope))

    def _send_response(self, envelope: RequestEnvelope) -> None:
        response = envelope.response
        assert response is not None
        self._transmit(self._responses, response.size_in_bytes, partial(self._deliver, envelope))

    def _transmit(self, stream: _Stream, size_bytes: int, deliver: Callable[[], None]) -> None:
        """A message of ``stream``: behind a loss it waits for the retransmission; lost now, it starts one."""
        held = stream.held
        if held is not None:
            held.append(Segment(stream.seq, size_bytes, deliver, self.env.now))
            stream.seq += 1
        elif self._half_open or not stream.link.send(size_bytes, deliver):
            if self._half_open:
                stream.link.dropped += 1
            self._lost(stream, Segment(stream.seq, size_bytes, deliver, self.env.now))
            stream.seq += 1

    def _send_segment(self, stream: _Stream, segment: Segment) -> None:
        """(Re)transmit a segment on a link that carries messages now."""
        segment.sent_ms = self.env.now
        if self._half_open or not stream.link.send(segment.size_bytes, segment.deliver):
            if self._half_open:
                stream.link.dropped += 1
            self._lost(stream, segment)

    # --- TCP retransmission (kafkasim.network.tcp) ----------------------------------------------------

    def _lost(self, stream: _Stream, segment: Segment) -> None:
        """``segment`` was lost on the wire: the stream holds it and what follows until a retransmission
        gets through. The first loss arms the retransmission timer: the RTO after the segment was sent."""
        held = stream.held
        if held is not None:
            hold(held, segment)
            return
        if self.closed:
            return
        stream.held = [segment]
        stream.loss_ms = segment.sent_ms
        rto = stream.rto_ms = tcp_rto_ms(self.path.srtt_ms, self.tcp.rto_min_ms)
        due = segment.sent_ms + rto - self.env.now
        stream.timer = Call(self.env, due if due > 0.0 else 0.0, partial(self._retransmit, stream))

    def _retransmit(self, stream: _Stream, _event: object) -> None:
        """Linux ``tcp_retransmit_timer``: give up once ``tcp_retries2`` allows no more (ETIMEDOUT), else
        retransmit; if the link carries it, the stream resumes (everything held is sent, in order), else the
        RTO doubles (``inet_csk_rto_backoff``, at most TCP_RTO_MAX) and the timer is armed again."""
        stream.timer = None
        held = stream.held
        if self.closed or held is None:
            return
        if self.env.now - stream.loss_ms >= self.tcp.give_up_ms:
            self._tell(stream, TCP_GAVE_UP)
            self._broken()
            return
        link = stream.link
        link.retransmitted += 1
        if self._carries(link):
            self._tell(stream, TCP_THROUGH)
            stream.held = None
            self._resend(stream, held)
            return
        self._tell(stream, TCP_LOST_AGAIN)
        rto = stream.rto_ms * 2.0
        stream.rto_ms = rto if rto < TCP_RTO_MAX_MS else TCP_RTO_MAX_MS
        stream.timer = Call(self.env, stream.rto_ms, partial(self._retransmit, stream))

    def _tell(self, stream: _Stream, outcome: str) -> None:
        server = self.socket_server
        self.observer.tcp_retransmission(self.name, server.broker_id if server is not None else -1,
                                         "to_broker" if stream is self._requests else "from_broker", self.env.now,
                                         stream.loss_ms, outcome)

    def _resend(self, stream: _Stream, segments: list[Segment]) -> None:
        """The stream resumes: its held segments go out again, in order (behind a new loss if one is lost)."""
        for i, segment in enumerate(segments):
            again = stream.held
            if again is not None:  # lost again at once: the rest wait behind it
                for rest in segments[i:]:
                    hold(again, rest)
                return
            self._send_segment(stream, segment)

    def _broken(self) -> None:
        """The kernel gave up retransmitting (ETIMEDOUT): the connection is broken at the client, and the
        broker's channel is closed as if the client had closed it."""
        channel = self.channel
        if channel is not None and self.socket_server is not None:
            self.socket_server.close_channel(channel)
        self._disconnected()

    def _carries(self, link: NetworkLink) -> bool:
        """Whether ``link`` carries this connection's messages now."""
        return not self._half_open and not link.is_dropping

    def _packet(self, link: NetworkLink, deliver: Callable[[], None]) -> None:
        """A SYN, SYN-ACK or RST: a packet of its own, not behind the stream's data."""
        if not self._half_open:
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
            self._cancel_timers()
            channel = self.channel
            if channel is not None and self.socket_server is not None:
                self.socket_server.close_channel(channel)


class PartitionedConnection(Connection):
    """A ``Connection`` whose two hosts a network partition separates during ``cut``'s windows: a request or
    response that is on the wire at any moment of the cut is lost (counted in its link's ``dropped``) and
    retransmitted by TCP; what arrives behind it waits for it (TCP order)."""

    __slots__ = ("cut",)

    def __init__(
        self,
        env: Environment,
        name: str,
        path: NetworkPath,
        listener: Callable[[], SocketServer],
        observer: Observer,
        cut: Cut,
        tcp: TcpSettings = LINUX_TCP,
    ) -> None:
        self.cut = cut
        super().__init__(env, name, path, listener, observer, tcp)

    def _transmit(self, stream: _Stream, size_bytes: int, deliver: Callable[[], None]) -> None:
        segment = Segment(stream.seq, size_bytes, deliver, self.env.now)
        stream.seq += 1
        held = stream.held
        if held is not None:
            held.append(segment)
        else:
            self._send_segment(stream, segment)

    def _send_segment(self, stream: _Stream, segment: Segment) -> None:
        link = stream.link
        env = self.env
        cut = self.cut
        segment.sent_ms = env.now
        if self._half_open:
            link.dropped += 1
            self._lost(stream, segment)
            return

        def arrive() -> None:
            held = stream.held
            if held is not None and segment.seq > held[0].seq:
                hold(held, segment)  # behind a lost segment: delivered after its retransmission
                return
            if cut.severs(segment.sent_ms, env.now):
                link.dropped += 1
                self._lost(stream, segment)
                return
            segment.deliver()

        if not link.send(segment.size_bytes, arrive):
            self._lost(stream, segment)

    def _carries(self, link: NetworkLink) -> bool:
        return super()._carries(link) and self.cut.until(self.env.now) is None

    def _packet(self, link: NetworkLink, deliver: Callable[[], None]) -> None:
        # Lost if the cut separates the hosts while it travels.
        if self._half_open:
            return
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if not cut.severs(sent_ms, env.now):
                deliver()

        link.send(0, arrive)


def open_connection(
    env: Environment, name: str, path: NetworkPath, listener: Callable[[], SocketServer], observer: Observer,
    cut: Cut | None, tcp: TcpSettings = LINUX_TCP,
) -> Connection:
    """A connection (not yet connected) of client ``name`` to the broker ``listener()`` returns: a
    ``PartitionedConnection`` if a partition ever separates the two hosts (``cut``), else a plain one."""
    if cut is None:
        return Connection(env, name, path, listener, observer, tcp)
    return PartitionedConnection(env, name, path, listener, observer, cut, tcp)
