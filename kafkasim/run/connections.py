"""Client connections to the broker: a pair of one-way network links and the broker-side channel.

A ``NetworkLink`` carries messages one way: a message of n bytes waits for the previous one to be
serialised (``n / bandwidth``), then travels for a latency drawn per message; TCP delivers in order, so a
message never overtakes the one before it. Faults change a link for a while: ``extra`` latency
(``link_delay``) or ``dropping`` everything sent (``link_drop``; the sender notices only by its timeout).

A ``Connection`` is one TCP connection of a client: requests go to the broker's ``Channel`` (in the
request pipeline), responses come back to the envelope's ``on_response``. Closing it (a client-side
timeout disconnects, a crash) closes the broker channel too; a new connection uses the same links.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkasim.clients.messages import RequestEnvelope
from kafkasim.clients.scheduling import Call

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.run.pipeline import RequestPipeline


class NetworkLink:
    """One direction of a client's network path."""

    __slots__ = ("env", "name", "latency", "bandwidth_bytes_per_ms", "rng", "free_at", "last_arrival",
                 "extra", "dropping", "messages", "dropped")

    def __init__(
        self, env: Environment, name: str, latency: Callable[[], float], bandwidth: float, rng: random.Random
    ) -> None:
        self.env = env
        self.name = name
        self.latency = latency
        # Scenario bandwidth is bytes per second; simulated time is in ms.
        self.bandwidth_bytes_per_ms = bandwidth / 1000.0
        self.rng = rng
        self.free_at = 0.0
        self.last_arrival = 0.0
        self.extra: Callable[[], float] | None = None
        self.dropping = 0  # active link_drop faults
        self.messages = 0
        self.dropped = 0

    def send(self, nbytes: int, deliver: Callable[[Any], None]) -> None:
        """Transmit ``nbytes`` and call ``deliver(event)`` on arrival (never, while the link drops)."""
        self.messages += 1
        if self.dropping:
            self.dropped += 1
            return
        now = self.env.now
        start = self.free_at if self.free_at > now else now
        done = start + nbytes / self.bandwidth_bytes_per_ms
        self.free_at = done
        arrival = done + self.latency()
        if self.extra is not None:
            arrival += self.extra()
        if arrival < self.last_arrival:
            arrival = self.last_arrival  # in order: TCP never delivers a later message first
        self.last_arrival = arrival
        Call(self.env, arrival - now, deliver)


class ClientLinks:
    """The two directions of a client's path to the broker."""

    __slots__ = ("to_broker", "from_broker")

    def __init__(self, to_broker: NetworkLink, from_broker: NetworkLink) -> None:
        self.to_broker = to_broker
        self.from_broker = from_broker


class Connection:
    """One connection of client ``name``: ``send(envelope)`` to the broker, ``close()``."""

    __slots__ = ("env", "name", "links", "pipeline", "channel", "closed", "on_send")

    def __init__(
        self,
        env: Environment,
        name: str,
        links: ClientLinks,
        pipeline: RequestPipeline,
        on_send: Callable[[RequestEnvelope], None] | None = None,
    ) -> None:
        self.env = env
        self.name = name
        self.links = links
        self.pipeline = pipeline
        self.channel = pipeline.connect(name, self._send_response)
        self.closed = False
        self.on_send = on_send

    def send(self, envelope: RequestEnvelope) -> None:
        if self.on_send is not None:
            self.on_send(envelope)
        channel = self.channel
        pipeline = self.pipeline
        self.links.to_broker.send(envelope.request_bytes, lambda _e: pipeline.receive(channel, envelope))

    def _send_response(self, envelope: RequestEnvelope) -> None:
        self.links.from_broker.send(envelope.response_bytes, lambda _e: self._deliver(envelope))

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
            self.pipeline.close_channel(self.channel)
