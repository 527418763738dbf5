"""Faults injected at a simulated time into one follower, producer or consumer.

Every fault has a `type` (the discriminator), `at` (when it starts, from the beginning of the run) and a
`target`: "broker-<id>" for a broker of a `cluster:` (0..brokers-1), "follower-<id>" for follower broker <id>
(1..RF-1) of a scenario without `cluster:`, or the name of a producer or consumer.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import DurationDistribution
from kafkasim.scenario.units import Duration

TargetKind = Literal["broker", "follower", "producer", "consumer"]


class FaultBase(ScenarioModel):
    type: str
    """The kind of fault; each subclass narrows it to its own tag."""
    target: str
    """"broker-<id>" (with `cluster:`), "follower-<id>" (without), or a producer's or consumer's name."""
    at: Duration
    """Start time, from the beginning of the run (warm-up included)."""

    # Which kinds of component the fault makes sense for.
    targets: ClassVar[tuple[TargetKind, ...]] = ("broker", "follower", "producer", "consumer")

    @property
    def end(self) -> float | None:
        """When the fault is over (ms), or None if it lasts to the end of the run."""
        duration = getattr(self, "duration", None)
        return None if duration is None else self.at + duration


class PauseFault(FaultBase):
    """The target stops doing anything (a long GC pause, SIGSTOP) and resumes where it was; a paused broker
    stops all of it, the partitions it leads included."""

    type: Literal["pause"] = "pause"
    duration: Duration = Field(gt=0)


class SlowDiskFault(FaultBase):
    """A follower's (or a cluster broker's) appends take `factor` times their normal cost."""

    type: Literal["slow_disk"] = "slow_disk"
    duration: Duration = Field(gt=0)
    factor: float = Field(gt=0, le=1e6)
    targets: ClassVar[tuple[TargetKind, ...]] = ("broker", "follower")


class CrashFault(FaultBase):
    """The broker's process dies (a follower-<k> target: broker k). Its connections are reset, what it held in
    memory is lost (parked requests are never answered), its logs stay; the controller fences it once its
    heartbeats stop (broker.session.timeout.ms) and elects new leaders for the partitions it led. On restart
    it registers again, loads the metadata and fetches from the end of its log with its latest leader epoch
    (Kafka 4.x: it truncates only what a diverging epoch in the leader's answer says the leader lacks)."""

    type: Literal["crash"] = "crash"
    restart_after: Duration | None = Field(default=None, gt=0)
    """Down time; absent = it stays down until the end of the run."""
    targets: ClassVar[tuple[TargetKind, ...]] = ("broker", "follower")

    @property
    def end(self) -> float | None:
        return None if self.restart_after is None else self.at + self.restart_after


class LinkDelayFault(FaultBase):
    """Every message on the target's link takes `extra` longer (on top of the link latency). A client's link
    is its path to every broker it talks to; a `broker-<id>`'s links are the paths of its replica fetcher
    threads to the leaders it follows (`to_broker`: its fetch requests; `from_broker`: the replicated data
    coming back), not other brokers' fetches from it nor clients' paths to it."""

    type: Literal["link_delay"] = "link_delay"
    duration: Duration = Field(gt=0)
    extra: DurationDistribution
    direction: Literal["both", "to_broker", "from_broker"] = "both"


class LinkDropFault(FaultBase):
    """The target's link delivers nothing: messages sent during the window are lost (the target's links as
    for `link_delay`)."""

    type: Literal["link_drop"] = "link_drop"
    duration: Duration = Field(gt=0)
    direction: Literal["both", "to_broker", "from_broker"] = "both"


Fault = Annotated[
    PauseFault | SlowDiskFault | CrashFault | LinkDelayFault | LinkDropFault,
    Field(discriminator="type"),
]
