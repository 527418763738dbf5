"""The `cluster:` section: how many brokers, their racks, the configs that differ per broker, their NICs.

A scenario with `cluster:` runs brokers 0..N-1, each a full broker that leads some partitions and follows
others; Kafka's placer (StripedReplicaPlacer) or a topic's `replica_assignment` says which. Without it a
scenario means one leader (broker 0) and its followers 1..RF-1.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.broker import (
    MAX_BROKERS,
    OVERRIDABLE_KEYS,
    BrokerConfig,
    HandlerCosts,
    PerBrokerConfig,
)
from kafkasim.scenario.errors import allowed_list, fail_at
from kafkasim.scenario.units import Bandwidth

RACK_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,100}")
"""Matched whole (`fullmatch`): a `$` would also match before a final newline."""

_WHY_CLUSTER_WIDE = {
    "min.insync.replicas": "a topic default",
    "unclean.leader.election.enable": "a topic default",
    "broker.heartbeat.interval.ms": "the same for every broker here",
    "default.replication.factor": "a topic default the controller applies",
    "num.partitions": "a topic default the controller applies",
    "message.max.bytes": "a topic default (max.message.bytes)",
    "log.segment.bytes": "a topic default (segment.bytes)",
    "log.roll.ms": "a topic default (segment.ms)",
    "log.roll.jitter.ms": "a topic default (segment.jitter.ms)",
    "log.index.size.max.bytes": "a topic default (segment.index.bytes)",
    "log.index.interval.bytes": "a topic default (index.interval.bytes)",
    "log.retention.ms": "a topic default (retention.ms)",
    "log.retention.bytes": "a topic default (retention.bytes)",
    "log.retention.check.interval.ms": "the same for every broker here",
    "log.flush.interval.messages": "a topic default (flush.messages)",
    "log.flush.interval.ms": "a topic default (flush.ms)",
    "log.flush.scheduler.interval.ms": "the same for every broker here",
    "purgatory": "the same for every broker here",
}


def _defaults_come_from_the_broker(schema: dict[str, Any]) -> None:
    # A key left out takes `broker:`'s value, not the Kafka default PerBrokerConfig declares.
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)


class BrokerOverride(PerBrokerConfig):
    """Broker configs of one broker that differ from `broker:` (e.g. one broker with fewer io threads).

    Keys left out take `broker:`'s value; after validation every key holds the broker's effective value.
    """

    model_config = ConfigDict(json_schema_extra=_defaults_come_from_the_broker)

    broker: int = Field(ge=0, le=MAX_BROKERS - 1)
    """The broker's id (0..cluster.brokers-1)."""

    @model_validator(mode="before")
    @classmethod
    def _only_per_broker_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            problems = [
                ((key,), f"is {why}, set in broker: for every broker (overridable per broker: "
                         f"{allowed_list(OVERRIDABLE_KEYS)})")
                for key, why in _WHY_CLUSTER_WIDE.items() if key in data
            ]
            if problems:
                fail_at(problems)
        return data

    def inherit(self, broker: BrokerConfig) -> None:
        """Fill the keys left out with `broker:`'s values, without marking them as set (as topics do).

        A partial `costs:` keeps its own keys over the broker's costs.
        """
        own = self.model_fields_set
        for name in PerBrokerConfig.model_fields:
            if name == "costs" and name in own:
                mine = self.costs
                values = {k: getattr(mine if k in mine.model_fields_set else broker.costs, k)
                          for k in HandlerCosts.model_fields}
                object.__setattr__(self, "costs", HandlerCosts.model_construct(set(mine.model_fields_set), **values))
            elif name not in own:
                object.__setattr__(self, name, getattr(broker, name))

    def applied_to(self, broker: BrokerConfig) -> BrokerConfig:
        """`broker` with this broker's values (every per-broker key: they hold effective values)."""
        return broker.model_copy(update={name: getattr(self, name) for name in PerBrokerConfig.model_fields})


class NicConfig(ScenarioModel):
    """Simulator-only (Kafka has no such config): the network interface of every broker host.

    One NIC per host, shared by every connection of that host: producer traffic and follower fetch
    responses in, fetch responses to consumers and followers out. `in` and `out` override `bandwidth`.
    `sharing` says how concurrent messages share a direction (kafkasim.network.nic).
    """

    bandwidth: Bandwidth = 1.25e9
    """Bytes per second in each direction (default 10Gbit/s)."""
    inbound: Bandwidth | None = Field(default=None, alias="in")
    """Receive bandwidth, if it differs from `bandwidth`."""
    outbound: Bandwidth | None = Field(default=None, alias="out")
    """Send bandwidth, if it differs from `bandwidth`."""
    sharing: Literal["fair", "fifo"] = "fair"
    """How a direction shares its bandwidth among the host's connections. `fair` (default): the messages of
    all busy connections are sent at once, each connection getting an equal share (processor sharing, the
    fluid limit of a NIC's per-flow round robin of packets), in order within a connection, so a small
    response is not held behind a large one, as on a real NIC. `fifo`: one whole message at a time, first
    come first served (a small message waits for the whole of every large one before it)."""

    @property
    def bandwidth_in(self) -> float:
        return self.bandwidth if self.inbound is None else self.inbound

    @property
    def bandwidth_out(self) -> float:
        return self.bandwidth if self.outbound is None else self.outbound


class ClusterConfig(ScenarioModel):
    """N brokers (ids 0..N-1), each leading some partitions and following others.

    `broker:` configs apply to every broker; `overrides` set the ones that differ. Replicas are placed by
    Kafka's StripedReplicaPlacer (deterministic from the seed; rack-aware when `racks` is given) unless a
    topic gives its `replica_assignment`; each partition's leader starts at its first replica.
    """

    brokers: int = Field(ge=1, le=MAX_BROKERS)
    """Number of brokers; their ids are 0..brokers-1."""
    racks: list[str] | None = Field(default=None, min_length=1, max_length=MAX_BROKERS)
    """Each broker's rack (Kafka's `broker.rack`), by id: `[a, a, b]` puts brokers 0 and 1 in rack a and
    broker 2 in rack b. Absent: no broker has a rack (the placer is rack-unaware)."""
    overrides: list[BrokerOverride] = Field(default_factory=list, max_length=MAX_BROKERS)
    """Per-broker configs that differ from `broker:`: `[{broker: 2, num.io.threads: 2}]`."""
    nic: NicConfig = Field(default_factory=NicConfig)
    """Each broker host's network interface."""

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        if self.racks is not None:
            if len(self.racks) != self.brokers:
                problems.append(
                    (("racks",), f"lists {len(self.racks)} rack(s) for {self.brokers} broker(s) (allowed: one rack "
                                 f"name per broker, in id order)"))
            for i, rack in enumerate(self.racks):
                if RACK_PATTERN.fullmatch(rack) is None:
                    problems.append((("racks", i), f"{rack!r} is not a valid rack name (allowed: 1 to 100 letters, "
                                                   "digits, '.', '_', '-')"))
        seen: dict[int, int] = {}
        for i, override in enumerate(self.overrides):
            if override.broker >= self.brokers:
                problems.append((("overrides", i, "broker"), f"broker {override.broker} does not exist (allowed: 0 "
                                                             f"to {self.brokers - 1}, the cluster's brokers)"))
            elif override.broker in seen:
                problems.append((("overrides", i, "broker"), f"broker {override.broker} is already overridden by "
                                                             f"overrides[{seen[override.broker]}] (allowed: one "
                                                             "entry per broker)"))
            seen.setdefault(override.broker, i)
        if problems:
            fail_at(problems)
        return self

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.brokers))

    def rack_of(self, broker_id: int) -> str | None:
        return None if self.racks is None else self.racks[broker_id]

