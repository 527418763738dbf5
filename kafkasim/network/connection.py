"""A client's connection to the broker: the network path (``kafkasim.network.link.NetworkPath``, a pair
of one-way links) plus the broker-side channel in the ``SocketServer``.

Requests travel ``to_broker`` into the socket server's ``KafkaChannel``; responses come back ``from_broker`` to the
envelope's ``on_response``. Closing it (a client-side timeout disconnects, a crash) closes the broker
channel too; a reconnect is a new ``Connection`` over the same network path (same links, same
faults, same random streams).

A ``PartitionedConnection`` is one between two hosts that a network partition separates at some time
(``kafkasim.network.partitions``): a message that is on the wire while the cut lasts is lost, in either
direction. Connections between hosts no partition separates are plain ``Connection``s, at no extra cost.
"""

from __future__ import annotations

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

    __slots__ = ("env", "name", "path", "socket_server", "channel", "closed", "observer", "_checks")

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

    def send(self, envelope: RequestEnvelope) -> None:
        if self._checks:
            self.observer.request_sent(envelope)
        channel = self.channel
        socket_server = self.socket_server
        envelope.broker = socket_server.broker_id  # the destination, for a request that never arrives
        self.path.to_broker.send(envelope.request_bytes, lambda: socket_server.receive(channel, envelope))

    def _send_response(self, envelope: RequestEnvelope) -> None:
        self.path.from_broker.send(envelope.response_bytes, lambda: self._deliver(envelope))

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
    sender finds out only through its own request timeout."""

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
        link = self.path.to_broker
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if cut.severs(sent_ms, env.now):
                link.dropped += 1
                return
            socket_server.receive(channel, envelope)

        link.send(envelope.request_bytes, arrive)

    def _send_response(self, envelope: RequestEnvelope) -> None:
        link = self.path.from_broker
        env = self.env
        cut = self.cut
        sent_ms = env.now

        def arrive() -> None:
            if cut.severs(sent_ms, env.now):
                link.dropped += 1
                return
            self._deliver(envelope)

        link.send(envelope.response_bytes, arrive)


def open_connection(
    env: Environment, name: str, path: NetworkPath, socket_server: SocketServer, observer: Observer,
    cut: Cut | None,
) -> Connection:
    """A connection of client ``name`` to ``socket_server``'s broker: a ``PartitionedConnection`` if a
    partition ever separates the two hosts (``cut``), else a plain one."""
    if cut is None:
        return Connection(env, name, path, socket_server, observer)
    return PartitionedConnection(env, name, path, socket_server, observer, cut)
