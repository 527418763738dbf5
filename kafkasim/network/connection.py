"""A client's connection to the broker: the network path (``kafkasim.network.link.NetworkPath``, a pair
of one-way links) plus the broker-side channel in the ``SocketServer``.

Requests travel ``to_broker`` into the socket server's ``KafkaChannel``; responses come back ``from_broker`` to the
envelope's ``on_response``. Closing it (a client-side timeout disconnects, a crash) closes the broker
channel too; a reconnect is a new ``Connection`` over the same network path (same links, same
faults, same random streams).

When the broker's process dies the connection is reset: the RST travels ``from_broker`` like any message
(after what the broker had already sent; lost if the link drops it) and then ``on_disconnect`` tells the
client (Kafka's ``Selector`` sees the channel closed: ``NetworkClient.handleDisconnections``). A connection
opened while the broker is down is refused: ``connected`` is False, and ``on_disconnect`` comes one round
trip later (the SYN there, the RST back). Simplification: connecting to a live broker takes no time.

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
from typing import TYPE_CHECKING

from kafkasim.network.link import NetworkLink, NetworkPath
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import Cut

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.socket_server import SocketServer

__all__ = ["Connection", "NetworkPath", "PartitionedConnection", "open_connection"]


class _Stream:
    """One direction of a connection: its link, and whether a message of it was lost (then it is stalled)."""

    __slots__ = ("link", "lost")

    def __init__(self, link: NetworkLink) -> None:
        self.link = link
        self.lost = False


class Connection:
    """One TCP connection of client ``name``: ``send(envelope)`` to the broker, ``close()``."""

    __slots__ = ("env", "name", "path", "socket_server", "channel", "closed", "observer", "_checks", "connected",
                 "on_disconnect", "_requests", "_responses")

    def __init__(
        self,
        env: Environment,
        name: str,
        path: NetworkPath,
        socket_server: SocketServer,
        observer: Observer,
    ) -> None:
        self.env = env
        self.name = name
        self.path = path
        self.socket_server = socket_server
        self.channel = socket_server.connect(name, self._send_response)
        self.closed = False
        self.observer = observer
        self._checks = observer.checks
        self.on_disconnect: Callable[[], None] | None = None
        self._requests = _Stream(path.to_broker)
        self._responses = _Stream(path.from_broker)
        self.connected = not self.channel.closed
        if self.connected:
            self.channel.on_reset = self._reset
        else:  # refused: the SYN reaches the dead host, its RST comes back
            path.to_broker.send(0, self._reset)

    def _reset(self) -> None:
        # The broker's kernel resets the connection: the RST follows what was already sent back.
        self._packet(self.path.from_broker, self._disconnected)

    def _disconnected(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.connected = False
        if self.on_disconnect is not None:
            self.on_disconnect()

    def send(self, envelope: RequestEnvelope) -> None:
        if self._checks:
            self.observer.request_sent(envelope)
        channel = self.channel
        socket_server = self.socket_server
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
            self._transmit(responses, envelope.response_bytes, partial(self._deliver, envelope))

    def _transmit(self, stream: _Stream, size_bytes: int, deliver: Callable[[], None]) -> None:
        """A message of ``stream``; if the link drops it, the stream stalls behind it."""
        if not stream.link.send(size_bytes, deliver):
            stream.lost = True

    def _carries(self, link: NetworkLink) -> bool:
        """Whether ``link`` carries messages now."""
        return not link.is_dropping

    def _packet(self, link: NetworkLink, deliver: Callable[[], None]) -> None:
        """An RST: a packet of its own, not behind the stream's data."""
        link.send(0, deliver)

    def _deliver(self, envelope: RequestEnvelope) -> None:
        if self.closed:
            return
        envelope.client_receive_ms = self.env.now
        callback = envelope.on_response
        if callback is not None:
            callback(envelope)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.socket_server.close_channel(self.channel)


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
        socket_server: SocketServer,
        observer: Observer,
        cut: Cut,
    ) -> None:
        self.cut = cut
        super().__init__(env, name, path, socket_server, observer)

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
    env: Environment, name: str, path: NetworkPath, socket_server: SocketServer, observer: Observer,
    cut: Cut | None,
) -> Connection:
    """A connection of client ``name`` to ``socket_server``'s broker: a ``PartitionedConnection`` if a
    partition ever separates the two hosts (``cut``), else a plain one."""
    if cut is None:
        return Connection(env, name, path, socket_server, observer)
    return PartitionedConnection(env, name, path, socket_server, observer, cut)
