"""Network links between the broker and each client or follower."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import DurationDistribution, DurationLogNormal
from kafkasim.scenario.units import Bandwidth, Duration

Direction = Literal["to_broker", "from_broker"]


class LinkDirection(ScenarioModel):
    """Per-direction override of a link; an absent value keeps the link's own."""

    latency: DurationDistribution | None = None
    bandwidth: Bandwidth | None = None


class Link(ScenarioModel):
    """One connection to the broker: one-way propagation latency plus serialisation time at `bandwidth`.

    The delay of a message of n bytes is a draw of `latency` (ms) plus n / `bandwidth` (bytes/s). The engine asks
    `latency_for(direction)` / `bandwidth_for(direction)`, which apply the per-direction overrides.
    """

    latency: DurationDistribution = Field(default_factory=lambda: DurationLogNormal(median=0.5, p99=2.0))
    """One-way latency, drawn per message and per direction."""
    bandwidth: Bandwidth = 1.25e9
    """Serialisation rate of the bytes of a message (default 10Gbit/s)."""
    to_broker: LinkDirection = Field(default_factory=LinkDirection)
    """Overrides for requests travelling to the broker."""
    from_broker: LinkDirection = Field(default_factory=LinkDirection)
    """Overrides for responses travelling from the broker."""

    def latency_for(self, direction: Direction) -> DurationDistribution:
        own = self.to_broker if direction == "to_broker" else self.from_broker
        return own.latency if own.latency is not None else self.latency

    def bandwidth_for(self, direction: Direction) -> float:
        own = self.to_broker if direction == "to_broker" else self.from_broker
        return own.bandwidth if own.bandwidth is not None else self.bandwidth

    def merged_over(self, default: Link) -> Link:
        """This link's explicitly written keys over `default` (an endpoint's partial `link:` override).

        A value the endpoint writes (say `latency`) holds in both directions: the default's per-direction
        override of that value no longer applies, only the endpoint's own. The result remembers only the
        endpoint's keys as "set", so dumping with exclude_unset (what `with_overrides` does) shows what the
        author wrote and nothing inherited.
        """
        own = self.model_fields_set

        def direction(name: str) -> LinkDirection:
            mine: LinkDirection = getattr(self, name)
            base: LinkDirection = getattr(default, name)
            written = mine.model_fields_set if name in own else set()
            values = {
                key: getattr(mine, key) if key in written else (None if key in own else getattr(base, key))
                for key in ("latency", "bandwidth")
            }
            return LinkDirection.model_construct(_fields_set=set(written), **values)

        return Link.model_construct(
            _fields_set=set(own),
            latency=self.latency if "latency" in own else default.latency,
            bandwidth=self.bandwidth if "bandwidth" in own else default.bandwidth,
            to_broker=direction("to_broker"),
            from_broker=direction("from_broker"),
        )


class TcpConfig(ScenarioModel):
    """TCP's retransmission under every client and inter-broker connection (Linux's defaults): a message lost
    while a link is down or cut is sent again after the retransmission timeout (the round trip + `rto_min`),
    doubling per retry up to 120 s, and the connection resumes in order; after `tcp_retries2` the kernel gives
    the connection up (ETIMEDOUT)."""

    rto_min: Duration = Field(default=200.0, gt=0, le=120_000.0)
    """The floor of the retransmission timeout: Linux's TCP_RTO_MIN, 200 ms (a route's `rto_min`)."""
    tcp_retries2: int = Field(default=15, ge=0, le=100)
    """Linux's net.ipv4.tcp_retries2: how long an established connection retransmits before it is given up,
    counted as retransmissions from 200 ms doubling up to 120 s (15: 924.6 s)."""


class NetworkConfig(ScenarioModel):
    default_link: Link = Field(default_factory=Link)
    """The link of every producer, consumer and follower that does not set its own `link`."""
    tcp: TcpConfig = Field(default_factory=TcpConfig)
    """TCP's retransmission timer (Linux's defaults)."""
