"""The network between a client (or follower) and the broker: one-way links paired into connections.

A `NetworkLink` is one direction of a TCP connection. A message of n bytes waits until the link has
finished transmitting the messages before it (one at a time, FIFO), takes `n / bandwidth` to serialise,
then travels for a latency drawn per message. Like TCP it never overtakes an earlier message on the same
link: its delivery time is max(its own, the previous delivery). Faults: `add_delay` (a latency spike for
messages sent before a time) and `drop_until` (the link is down until a time: a message sent meanwhile is lost
on the wire; the connection above retransmits it, `kafkasim.network.tcp`).

Every message draws its latency, dropped or not, so a fault never shifts the draws of later messages.

Delivery is one scheduled event per message whose callback calls `deliver()` -- no process per message,
which is several times cheaper (figures: benchmarks/README.md, "Link delivery: one event per message").

A link can cross host NICs (`kafkasim.network.nic`): `egress`, the sending host's outbound direction, and
`ingress`, the receiving host's inbound direction, each shared with the host's other connections. Without
them a link behaves exactly as described above. Through a `fair` egress the link's own transmission is
worked out when the NIC has sent the message (its completion depends on what the host sends meanwhile):
the link starts on it when the NIC does and is done no sooner than the NIC; its latency is drawn, and a
fault applied, when it is sent, as without a NIC.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Protocol

from simpy import Environment
from simpy.events import Event

from kafkasim.network.nic import Nic, NicDirection, NicFlow, NicJob
from kafkasim.sim.calls import Delivery


class LatencySampler(Protocol):
    """A distribution of one-way latencies in ms (e.g. `kafkasim.sim.distributions.LogNormal`)."""

    def sample(self, rng: random.Random) -> float: ...


class NetworkLink:
    """One direction of a connection. `send(size, deliver)` or `yield link.transfer(size)`."""

    __slots__ = ("env", "name", "latency_sampler", "rng", "bandwidth_bytes_per_ms", "tx_free_at_ms",
                 "last_delivery_ms", "_extra_ms", "_delay_until_ms", "_drop_until_ms", "sent", "dropped",
                 "bytes_sent", "egress", "ingress", "_first_byte_ms", "retransmitted", "last_latency_ms",
                 "_fair_egress", "_fair_ingress", "_egress_flow", "_ingress_flow")

    def __init__(
        self,
        env: Environment,
        name: str,
        latency_sampler: LatencySampler,
        rng: random.Random,
        bandwidth_bytes_per_ms: float,
        *,
        egress: NicDirection | None = None,
        ingress: NicDirection | None = None,
    ) -> None:
        if not bandwidth_bytes_per_ms > 0:  # also rejects NaN; inf means no serialisation time
            raise ValueError(f"link {name!r}: bandwidth must be > 0 bytes/ms, got {bandwidth_bytes_per_ms!r}")
        self.env = env
        self.name = name
        self.latency_sampler = latency_sampler
        self.rng = rng
        self.bandwidth_bytes_per_ms = float(bandwidth_bytes_per_ms)
        self.tx_free_at_ms = 0.0
        """When the link finishes transmitting the last message handed to it."""
        self.last_delivery_ms = 0.0
        self._extra_ms = 0.0
        self._delay_until_ms = -math.inf
        self._drop_until_ms = -math.inf
        self.sent = 0
        """Messages handed to the link, including dropped ones."""
        self.dropped = 0
        """Messages lost on the wire (sent while the link was down, or cut by a network partition)."""
        self.retransmitted = 0
        """TCP retransmissions of this link's connections (``kafkasim.network.tcp``), whether they got through
        or not."""
        self.last_latency_ms = 0.0
        """The latest latency drawn (a connection's RTT estimate for its retransmission timeout)."""
        self.bytes_sent = 0
        self.egress = egress
        """The sending host's NIC, outbound direction (None: not modelled)."""
        self.ingress = ingress
        """The receiving host's NIC, inbound direction (None: not modelled)."""
        self._first_byte_ms = 0.0  # the last message's first byte at the far end (for `ingress`)
        self._fair_egress = egress is not None and egress.fair
        self._fair_ingress = ingress is not None and ingress.fair
        self._egress_flow = NicFlow()  # this connection's messages at a fair egress / ingress
        self._ingress_flow = NicFlow()

    # --- faults -----------------------------------------------------------------------------------

    def add_delay(self, extra_ms: float, until_ms: float) -> None:
        """Messages sent from now until `until_ms` take `extra_ms` longer (replaces an earlier spike)."""
        if extra_ms < 0:
            raise ValueError(f"link {self.name!r}: extra delay must be >= 0 ms, got {extra_ms!r}")
        self._extra_ms = float(extra_ms)
        self._delay_until_ms = float(until_ms)

    def drop_until(self, until_ms: float) -> None:
        """The link is down until `until_ms`: messages sent meanwhile are lost, their `deliver` is never called
        (`send` returns False; a connection retransmits them)."""
        self._drop_until_ms = float(until_ms)

    def clear_faults(self) -> None:
        self._delay_until_ms = -math.inf
        self._drop_until_ms = -math.inf

    @property
    def is_dropping(self) -> bool:
        return self.env.now < self._drop_until_ms

    # --- sending ----------------------------------------------------------------------------------

    def _delivery_delay(self, size_bytes: int) -> float:
        """Delay from now until delivery of a message sent now; -1 if it is dropped."""
        now = self.env.now
        self.sent += 1
        self.bytes_sent += size_bytes
        egress = self.egress
        if egress is None:
            start = self.tx_free_at_ms if self.tx_free_at_ms > now else now
            tx_end = start + size_bytes / self.bandwidth_bytes_per_ms
        else:
            # Pipelined with the host's NIC: the link starts once the NIC starts on the message and is done
            # no sooner than the NIC is.
            nic_start, nic_end = egress.reserve(now, size_bytes)
            start = self.tx_free_at_ms if self.tx_free_at_ms > nic_start else nic_start
            tx_end = start + size_bytes / self.bandwidth_bytes_per_ms
            if nic_end > tx_end:
                tx_end = nic_end
        self.tx_free_at_ms = tx_end
        latency = self.latency_sampler.sample(self.rng)
        self.last_latency_ms = latency
        if now < self._drop_until_ms:
            # A dropped message still used the sender's link (it was transmitted and then lost).
            self.dropped += 1
            return -1.0
        if now < self._delay_until_ms:
            latency += self._extra_ms
        at = tx_end + latency
        if at < self.last_delivery_ms:
            at = self.last_delivery_ms  # TCP: in order on one connection
        self.last_delivery_ms = at
        if self.ingress is not None:
            # The first byte reached the far end as long before the last as the message took to transmit.
            self._first_byte_ms = at - (tx_end - start)
        return at - now

    def send(self, size_bytes: int, deliver: Callable[[], None]) -> bool:
        """Send a message; `deliver()` runs when it arrives. Returns False if the link dropped it."""
        if self._fair_egress:
            return self._send_through_fair_egress(size_bytes, deliver)
        delay = self._delivery_delay(size_bytes)
        if delay < 0:
            return False
        ingress = self.ingress
        if ingress is None:
            Delivery(self.env, delay, deliver)
        elif self._fair_ingress:
            job = NicJob(self._ingress_flow, size_bytes, deliver)
            ingress.register(job, self._first_byte_ms)
            Delivery(self.env, delay, lambda: ingress.arrive(job))
        else:
            first_byte_ms = self._first_byte_ms
            Delivery(self.env, delay, lambda: ingress.receive(first_byte_ms, size_bytes, deliver))
        return True

    def _send_through_fair_egress(self, size_bytes: int, deliver: Callable[[], None]) -> bool:
        """The message goes to the sending host's fair NIC now; the link's stage follows from when the NIC
        starts and ends it (`_egress_started`, `_egress_done`)."""
        egress = self.egress
        assert egress is not None
        now = self.env.now
        self.sent += 1
        self.bytes_sent += size_bytes
        job = NicJob(self._egress_flow, size_bytes, deliver)
        latency = self.latency_sampler.sample(self.rng)
        self.last_latency_ms = latency
        if now < self._drop_until_ms:
            # A dropped message still used the sender's NIC and link (it was transmitted and then lost).
            self.dropped += 1
            job.dropped = True
        else:
            if now < self._delay_until_ms:
                latency += self._extra_ms
            if self._fair_ingress:
                job.peer = NicJob(self._ingress_flow, size_bytes, deliver)
        job.latency_ms = latency
        job.on_start = self._egress_started
        job.on_done = self._egress_done
        egress.submit(job)
        return not job.dropped

    def _egress_started(self, job: NicJob, at_ms: float) -> None:
        """The NIC started sending the message: so does the link (once done with the one before), and its
        first byte reaches the receiving host a latency later."""
        start = self.tx_free_at_ms if self.tx_free_at_ms > at_ms else at_ms
        job.link_start_ms = start
        peer = job.peer
        if peer is not None:
            ingress = self.ingress
            assert ingress is not None
            ingress.register(peer, start + job.latency_ms)

    def _egress_done(self, job: NicJob, at_ms: float) -> None:
        """The NIC has sent the message's last byte: the link is done no sooner, nor sooner than its own
        transmit time; the message arrives a latency later, in order."""
        start = job.link_start_ms
        tx_end = start + job.size_bytes / self.bandwidth_bytes_per_ms
        if at_ms > tx_end:
            tx_end = at_ms
        self.tx_free_at_ms = tx_end
        if job.dropped:
            return
        at = tx_end + job.latency_ms
        if at < self.last_delivery_ms:
            at = self.last_delivery_ms  # TCP: in order on one connection
        self.last_delivery_ms = at
        now = self.env.now
        delay = at - now if at > now else 0.0
        ingress = self.ingress
        peer = job.peer
        if peer is not None:
            assert ingress is not None
            Delivery(self.env, delay, lambda: ingress.arrive(peer))
        elif ingress is not None:  # a fifo NIC at the far end
            first_byte_ms = at - (tx_end - start)
            size_bytes = job.size_bytes
            deliver = job.deliver
            Delivery(self.env, delay, lambda: ingress.receive(first_byte_ms, size_bytes, deliver))
        else:
            Delivery(self.env, delay, job.deliver)

    def transfer(self, size_bytes: int) -> Event:
        """Send a message; the returned event triggers on arrival (never, if the link dropped it), for
        processes that `yield` it."""
        if self.ingress is not None or self._fair_egress:
            arrived = Event(self.env)

            def arrive() -> None:
                arrived.succeed()

            self.send(size_bytes, arrive)
            return arrived
        delay = self._delivery_delay(size_bytes)
        if delay < 0:
            return Event(self.env)
        return self.env.timeout(delay)

    def __repr__(self) -> str:
        return (f"NetworkLink({self.name!r}, sent={self.sent}, dropped={self.dropped}, "
                f"retransmitted={self.retransmitted})")


class NetworkPath:
    """The network between a client and a broker: `to_broker` and `from_broker` links. Every connection
    the client opens to that broker (a reconnect is a new one) travels over the same path."""

    __slots__ = ("name", "to_broker", "from_broker")

    def __init__(self, name: str, to_broker: NetworkLink, from_broker: NetworkLink) -> None:
        self.name = name
        self.to_broker = to_broker
        self.from_broker = from_broker

    @classmethod
    def create(
        cls,
        env: Environment,
        name: str,
        latency_sampler: LatencySampler,
        rng_for: Callable[[str], random.Random],
        bandwidth_bytes_per_ms: float,
        *,
        from_broker_latency: LatencySampler | None = None,
        from_broker_bandwidth_bytes_per_ms: float | None = None,
        client_nic: Nic | None = None,
        broker_nic: Nic | None = None,
    ) -> NetworkPath:
        """Both links of client `name`, each with its own random stream `rng_for("<name>/to_broker")` /
        `rng_for("<name>/from_broker")` (pass `RandomStreams.stream`). With NICs, requests leave through
        `client_nic.outbound` and enter through `broker_nic.inbound`, responses the other way round (a
        follower's fetcher is a client whose NIC is its own broker's)."""
        to_broker = NetworkLink(
            env,
            f"{name}/to_broker",
            latency_sampler,
            rng_for(f"{name}/to_broker"),
            bandwidth_bytes_per_ms,
            egress=client_nic.outbound if client_nic is not None else None,
            ingress=broker_nic.inbound if broker_nic is not None else None,
        )
        from_broker = NetworkLink(
            env,
            f"{name}/from_broker",
            from_broker_latency if from_broker_latency is not None else latency_sampler,
            rng_for(f"{name}/from_broker"),
            from_broker_bandwidth_bytes_per_ms if from_broker_bandwidth_bytes_per_ms is not None
            else bandwidth_bytes_per_ms,
            egress=broker_nic.outbound if broker_nic is not None else None,
            ingress=client_nic.inbound if client_nic is not None else None,
        )
        return cls(name, to_broker, from_broker)

    def add_delay(self, extra_ms: float, until_ms: float) -> None:
        self.to_broker.add_delay(extra_ms, until_ms)
        self.from_broker.add_delay(extra_ms, until_ms)

    def drop_until(self, until_ms: float) -> None:
        self.to_broker.drop_until(until_ms)
        self.from_broker.drop_until(until_ms)

    def clear_faults(self) -> None:
        self.to_broker.clear_faults()
        self.from_broker.clear_faults()

    @property
    def dropped(self) -> int:
        return self.to_broker.dropped + self.from_broker.dropped

    @property
    def retransmitted(self) -> int:
        return self.to_broker.retransmitted + self.from_broker.retransmitted

    @property
    def srtt_ms(self) -> float:
        """The connection's RTT estimate: the latest latency drawn each way."""
        return self.to_broker.last_latency_ms + self.from_broker.last_latency_ms

    def __repr__(self) -> str:
        return f"NetworkPath({self.name!r})"
