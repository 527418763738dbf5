"""A host's network interface: one bandwidth per direction, shared by every connection of the host.

Each broker host has one NIC. Everything the host receives -- producer requests, followers' fetch requests
to its leaders, its own fetchers' responses -- crosses its ``inbound`` direction; everything it sends --
produce responses, replication data to followers, consumer fetch responses, its fetchers' requests -- its
``outbound`` direction. A direction transmits one message at a time, FIFO, for ``size / bandwidth`` ms
(like a ``NetworkLink``'s own bandwidth), so all the host's connections together never exceed it.

The NIC composes with the links (``NetworkLink(egress=..., ingress=...)``): a message leaves its sender
through the sender host's outbound direction and its connection's link, travels the link's latency, and
enters the receiver through the receiver host's inbound direction. The stages are pipelined, as packets
are: a message is done with a stage no sooner than its own transmit time there and no sooner than its last
byte reached that stage, so a lone message on an idle path pays its serialisation once, at the slowest
stage. With NICs at least as fast as the link, zero-load latency is exactly the link's.

Each direction reserves a slot ``[start, start + size / bandwidth]`` per message, slots never overlap (the
bandwidth bound), and a message's slot starts no earlier than its first byte can reach the NIC. The
inbound direction is served when a message's last byte arrives (the link's delivery), in that order;
the outbound direction when the message is sent.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simpy import Environment

from kafkasim.sim.calls import Delivery


class NicDirection:
    """One direction of a NIC: ``reserve(ready_ms, size)`` books the next transmit slot."""

    __slots__ = ("env", "name", "bandwidth_bytes_per_ms", "free_at_ms", "messages", "bytes", "_pending")

    def __init__(self, env: Environment, name: str, bandwidth_bytes_per_ms: float) -> None:
        if not bandwidth_bytes_per_ms > 0:  # also rejects NaN; inf means no transmit time
            raise ValueError(f"NIC {name!r}: bandwidth must be > 0 bytes/ms, got {bandwidth_bytes_per_ms!r}")
        self.env = env
        self.name = name
        self.bandwidth_bytes_per_ms = float(bandwidth_bytes_per_ms)
        self.free_at_ms = -math.inf
        """When the last reserved slot ends."""
        self.messages = 0
        self.bytes = 0
        self._pending = 0  # inbound deliveries scheduled and not yet made

    def reserve(self, ready_ms: float, size_bytes: int) -> tuple[float, float]:
        """Book the slot of a message whose first byte can be transmitted from ``ready_ms``: (start, end)."""
        start = self.free_at_ms if self.free_at_ms > ready_ms else ready_ms
        end = start + size_bytes / self.bandwidth_bytes_per_ms
        self.free_at_ms = end
        self.messages += 1
        self.bytes += size_bytes
        return start, end

    def receive(self, first_byte_ms: float, size_bytes: int, deliver: Callable[[], None]) -> None:
        """Inbound: the message's last byte has just arrived (now) and its first at ``first_byte_ms``;
        ``deliver()`` runs once its slot is over -- at once if that is now and nothing is queued before it,
        so an idle NIC adds no event."""
        now = self.env.now
        _start, end = self.reserve(first_byte_ms, size_bytes)
        if end <= now and self._pending == 0:
            deliver()
            return
        self._pending += 1

        def done() -> None:
            self._pending -= 1
            deliver()

        Delivery(self.env, end - now if end > now else 0.0, done)

    def __repr__(self) -> str:
        return f"NicDirection({self.name!r}, messages={self.messages}, bytes={self.bytes})"


class Nic:
    """A host's NIC: ``inbound`` and ``outbound`` directions, each with its own bandwidth (bytes per ms)."""

    __slots__ = ("name", "inbound", "outbound")

    def __init__(
        self,
        env: Environment,
        name: str,
        inbound_bandwidth_bytes_per_ms: float,
        outbound_bandwidth_bytes_per_ms: float | None = None,
    ) -> None:
        self.name = name
        self.inbound = NicDirection(env, f"{name}/in", inbound_bandwidth_bytes_per_ms)
        self.outbound = NicDirection(
            env,
            f"{name}/out",
            outbound_bandwidth_bytes_per_ms if outbound_bandwidth_bytes_per_ms is not None
            else inbound_bandwidth_bytes_per_ms,
        )

    def __repr__(self) -> str:
        return f"Nic({self.name!r})"
