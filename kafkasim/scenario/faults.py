"""Faults injected at a simulated time into one follower, producer or consumer, or into the network.

Every fault has a `type` (the discriminator), `at` (when it starts, from the beginning of the run) and a
`target`: "broker-<id>" for a broker of a `cluster:` (0..brokers-1), "follower-<id>" for follower broker <id>
(1..RF-1) of a scenario without `cluster:`, or the name of a producer or consumer. A `network_partition`
names no target but two `sides`, each a list of hosts.
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
    (Kafka 4.x: it truncates only what a diverging epoch in the leader's answer says the leader lacks).
    A broker is crashed while it is up: not while a crash or shutdown has it down, nor at the instant of its
    restart."""

    type: Literal["crash"] = "crash"
    restart_after: Duration | None = Field(default=None, gt=0)
    """Down time; absent = it stays down until the end of the run."""
    targets: ClassVar[tuple[TargetKind, ...]] = ("broker", "follower")

    @property
    def end(self) -> float | None:
        return None if self.restart_after is None else self.at + self.restart_after


class ShutdownFault(FaultBase):
    """A controlled shutdown of the broker (SIGTERM; a follower-<k> target: broker k), Kafka's
    BrokerServer.shutdown with controlled.shutdown.enable: its BrokerLifecycleManager asks the controller to
    shut down (wantShutDown in its heartbeats); the controller moves the leadership of every partition it
    leads to another ISR member and removes it from the ISRs at once
    (ReplicationControlManager.handleBrokerInControlledShutdown), so clients get NOT_LEADER_OR_FOLLOWER from
    it, refresh their metadata and move to the new leaders within a few tens of ms. Once it leads nothing
    and the other brokers have applied that metadata (BrokerHeartbeatManager's controlled-shutdown state),
    the controller answers shouldShutDown, fences it, and the process stops: its connections close and it
    fetches nothing more. If the controller never agrees, it stops anyway after 5 minutes (Kafka's
    controlledShutdownFuture timeout). It restarts like a crashed broker: registers again, loads the
    metadata, rejoins the ISRs. A broker is shut down while it is up: not while a crash or shutdown has it
    down, nor at the instant of its restart."""

    type: Literal["shutdown"] = "shutdown"
    restart_after: Duration | None = Field(default=None, gt=0)
    """Time from `at` to the start of the new process (no earlier than the old one stopped); absent = it stays
    down until the end of the run."""
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
    """The target's link is down (a cable pulled, a switch port dead; the target's links as for
    `link_delay`): every packet sent on it during the window is lost on the wire. The connections over it stay
    open: TCP retransmits what was lost (after the retransmission timeout, at least 200 ms, doubling per retry)
    and the stream resumes, in order, at the first retransmission after the link is back. So a short outage
    delays requests and responses; one that outlasts a client's request.timeout.ms (a replica fetcher's
    replica.socket.timeout.ms) ends with the client closing the connection and retrying; one that outlasts
    Linux's tcp_retries2 (924.6 s) breaks the connection."""

    type: Literal["link_drop"] = "link_drop"
    duration: Duration = Field(gt=0)
    direction: Literal["both", "to_broker", "from_broker"] = "both"


class ConnectionResetFault(FaultBase):
    """Every open connection of the target is reset at `at` (an RST from the peer's kernel or a middlebox):
    both ends see it closed at once. Every request in flight on it fails with a network error
    (NetworkClient's disconnect: a producer's Sender retries the batch, a consumer or replica fetcher fetches
    again), and a response the broker still writes for it is dropped (SocketServer's Processor), even for a
    request it has already processed: the realistic way to lose a response. The client reconnects after
    reconnect.backoff.ms. A producer's or consumer's connections are those to every broker; a broker-<id>'s
    are every connection to it (clients' and other brokers' replica fetchers') and its own replica fetchers'
    connections to their leaders; a follower-<id>'s are its fetcher's."""

    type: Literal["connection_reset"] = "connection_reset"

    @property
    def end(self) -> float | None:
        return float(self.at)  # an instant


class HalfOpenFault(FaultBase):
    """Every open connection of the target becomes half-open at `at`: a box on its path has lost the
    connection's state (a NAT's or a stateful firewall's table entry expired or was flushed, a load balancer
    failed over) while both ends still hold it open, and neither is told. Everything either end sends on it
    from then on is dropped without a word (what was already on the wire arrives); TCP retransmits it in vain,
    the RTO doubling as for `link_drop`, until the client gives up on a request it is waiting for and closes
    the connection (NetworkClient's request.timeout.ms for producers and consumers, replica.socket.timeout.ms
    for replica fetchers), or Linux's tcp_retries2 (924.6 s) breaks it. A response the broker writes for a
    request it had read is lost with it: the slow way to lose a response (a `connection_reset` loses it at
    once). Connections opened afterwards work. Targets as for `connection_reset`."""

    type: Literal["half_open"] = "half_open"

    @property
    def end(self) -> float | None:
        return float(self.at)  # an instant


PARTITION_HOSTS_MAX = 300
"""Hosts on one side of a network partition, at most (brokers, 100 producers, 100 consumers, the controller)."""


class NetworkPartitionFault(ScenarioModel):
    """The network between two sets of hosts is cut: every host of one side loses its connections to every
    host of the other side, both ways (a pulled cable, not a refused connection: no RST). Hosts are
    "broker-<id>" (with `cluster:` its brokers; without, broker-0 is the leader and broker-<k> the broker of
    follower-<k>), producers and consumers by name (a replica fetcher thread is on its broker's host), and
    "controller", the KRaft controller's host; hosts not named keep all their links. A message on the wire
    at any moment of the cut is lost, including one already in flight when it starts, and retransmitted by
    TCP (as for `link_drop`): the connections survive a cut shorter than the clients' timeouts and resume at
    the first retransmission after it; a longer one ends with the client closing the connection at its
    request timeout (NetworkClient's request.timeout.ms for clients, replica.socket.timeout.ms for replica
    fetchers). A broker cut off from the controller gets no heartbeat
    through (each fails after broker.heartbeat.interval.ms, the request timeout of its heartbeat channel,
    and BrokerLifecycleManager tries again an interval later) and is fenced broker.session.timeout.ms after its
    last heartbeat arrived, while it keeps serving the clients on its side (a leader then is a zombie: its
    followers follow the new leader, so its acks=all produces time out); its AlterPartition requests are
    sent again every controller.socket.timeout.ms (30 s); the metadata the controller commits reaches it
    when the cut ends. Overlapping partitions of the same two
    hosts nest: the hosts are reconnected when the last one ends."""

    type: Literal["network_partition"] = "network_partition"
    at: Duration
    """Start time, from the beginning of the run (warm-up included)."""
    duration: Duration | None = Field(default=None, gt=0)
    """How long the cut lasts; absent = to the end of the run."""
    sides: list[Annotated[list[str], Field(max_length=PARTITION_HOSTS_MAX)]] = Field(min_length=2, max_length=2)
    """The two sides, e.g. [[broker-0], [broker-1, broker-2, producer-1, controller]]: hosts named
    broker-<id>, a producer's or consumer's name, or controller; a host is on one side at most."""

    @property
    def end(self) -> float | None:
        """When the cut is over (ms), or None if it lasts to the end of the run."""
        return None if self.duration is None else self.at + self.duration

    @property
    def target(self) -> str:
        """A label for reports and timelines: the two sides, "broker-0 | broker-1, controller"."""
        return " | ".join(", ".join(side) for side in self.sides)


Fault = Annotated[
    PauseFault | SlowDiskFault | CrashFault | ShutdownFault | LinkDelayFault | LinkDropFault | ConnectionResetFault
    | HalfOpenFault | NetworkPartitionFault,
    Field(discriminator="type"),
]
