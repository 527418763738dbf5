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
from typing import TYPE_CHECKING

from kafkasim.network.link import NetworkPath
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import Cut

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.socket_server import SocketServer

__all__ = ["Connection", "NetworkPath", "PartitionedConnection", "open_connection"]


class Connection:
    """One TCP connection of client ``name``: ``send(envelope)`` to the broker, ``close()``."""

    __slots__ = ("env", "name", "path", "socket_server", "channel", "closed", "observer", "_checks", "connected",
                 "on_disconnect", "_lost_to_broker", "_lost_from_broker")

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
        # A message of this connection was dropped that way: the stream is stalled behind it.
        self._lost_to_broker = False
        self._lost_from_broker = False
        self.connected = not self.channel.closed
        if self.connected:
            self.channel.on_reset = self._reset
        else:  # refused: the SYN reaches the dead host, its RST comes back
            path.to_broker.send(0, self._reset)

    def _reset(self) -> None:
        # The broker's kernel resets the connection: the RST follows what was already sent back.
        self.path.from_broker.send(0, self._disconnected)

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
        if self._lost_to_broker:
            if envelope.expects_response or self.path.to_broker.is_dropping:
                return  # waits in the socket behind a lost segment: never arrives
            # Requests that expect no response (acks=0) have no request timeout to close the connection:
            # the stream resumes once the link carries messages again (TCP's retransmission, which the
            # links do not model, would have resent the lost segment).
            self._lost_to_broker = False
        if not self.path.to_broker.send(envelope.request_bytes, lambda: socket_server.receive(channel, envelope)):
            self._lost_to_broker = True

    def _send_response(self, envelope: RequestEnvelope) -> None:
        if self._lost_from_broker:
            return
        if not self.path.from_broker.send(envelope.response_bytes, lambda: self._deliver(envelope)):
            self._lost_from_broker = True

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

    def send(self, envelope: RequestEnvelope) -> None:
        if self._checks:
            self.observer.request_sent(envelope)
        channel = self.channel
        socket_server = self.socket_server
        envelope.broker = socket_server.broker_id
        if self._lost_to_broker:
            if envelope.expects_response or self.cut.until(self.env.now) is not None:
                return  # behind a lost segment: never arrives
            self._lost_to_broker = False  # acks=0: the stream resumes once the cut is over (as Connection.send)
        link = self.path.to_broker
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if self._lost_to_broker:
                return
            if cut.severs(sent_ms, env.now):
                link.dropped += 1
                self._lost_to_broker = True
                return
            socket_server.receive(channel, envelope)

        if not link.send(envelope.request_bytes, arrive):
            self._lost_to_broker = True

    def _send_response(self, envelope: RequestEnvelope) -> None:
        if self._lost_from_broker:
            return
        link = self.path.from_broker
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if self._lost_from_broker:
                return
            if cut.severs(sent_ms, env.now):
                link.dropped += 1
                self._lost_from_broker = True
                return
            self._deliver(envelope)

        if not link.send(envelope.response_bytes, arrive):
            self._lost_from_broker = True

    def _reset(self) -> None:
        # The RST is a packet like any other: lost if the cut separates the hosts while it travels.
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if not cut.severs(sent_ms, env.now):
                self._disconnected()

        self.path.from_broker.send(0, arrive)


def open_connection(
    env: Environment, name: str, path: NetworkPath, socket_server: SocketServer, observer: Observer,
    cut: Cut | None,
) -> Connection:
    """A connection of client ``name`` to ``socket_server``'s broker: a ``PartitionedConnection`` if a
    partition ever separates the two hosts (``cut``), else a plain one."""
    if cut is None:
        return Connection(env, name, path, socket_server, observer)
    return PartitionedConnection(env, name, path, socket_server, observer, cut)
