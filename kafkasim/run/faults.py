"""The fault schedule: each scenario fault starts at ``at`` and (unless it lasts forever) ends later.

A follower target is a replica fetcher thread by its client name (``follower-<k>`` in a scenario without
a cluster, where broker k has one thread). A ``broker-<k>`` target (a ``cluster:`` scenario) is the whole
``BrokerServer`` k:

* ``pause``: a stop-the-world pause of the broker, the partitions it leads included (its processors,
  request handlers, reapers, periodic tasks and fetcher threads; see ``BrokerServer.pause``).
* ``slow_disk``: its request handlers' produce appends and its fetcher threads' appends.
* ``crash``: the whole broker process (``BrokerServer.crash``): connections reset, everything in memory
  lost, logs kept; ``restart_after`` starts a new process over the same logs, which registers and is
  unfenced after the scenario's ``broker.startup`` times (``_restart``, ``BrokerServer.restart``).
* ``link_delay`` / ``link_drop``: the network paths of its replica fetcher threads toward the brokers it
  follows (``to_broker``: its fetch requests to the leaders; ``from_broker``: the leaders' responses,
  i.e. the replicated data). Not the paths of other brokers' fetchers toward it, nor clients' paths.

A client's link faults act on its path to every broker (in a cluster it has one per broker).

* ``pause`` (follower, producer, consumer): the component does nothing for ``duration``; work that
  arrives meanwhile waits (a GC pause / SIGSTOP). Overlapping pauses nest.
* ``slow_disk`` (follower): appends cost ``factor`` times more; overlapping factors multiply.
* ``crash`` (follower): its broker's process dies, as ``broker-<k>``'s would; restart after
  ``restart_after`` (or never).
* ``shutdown`` (broker, follower): a controlled shutdown (``_ControlledShutdown``): leadership moves off
  the broker first, then its process stops; restart ``restart_after`` after ``at`` (or never).
* ``link_delay``: every message sent on the target's link(s) while it lasts takes ``extra`` longer, a
  fresh draw per message (from the fault's own random stream, so the link's own draws do not shift).
* ``link_drop``: the target's link(s) are down while it lasts: what is sent on them is lost on the wire, and
  the connections' TCP retransmits it (``kafkasim.network.tcp``), so the streams resume after the outage.
* ``connection_reset``: every open connection of the target (``ClusterNetwork.open_connections``) is reset
  at once (``Connection.reset``); the clients see a disconnect and reconnect.
* ``half_open``: every open connection of the target goes silent for good (``Connection.half_open``); the
  clients find out at their request timeout.

A ``network_partition`` has no target: it cuts the network between two sets of hosts (``broker-<id>``,
clients by name, ``controller``). It is not switched on and off here: its windows are known before the run
starts (``partition_windows``, built into ``kafkasim.network.partitions.network_partitions``), and every
connection between two hosts it separates -- whenever opened (``kafkasim.network.connection.open_connection``)
-- and the brokers' channels to the controller (``NodeToControllerChannelManager``) consult the cut for each message.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from kafkasim.network.link import LatencySampler, NetworkLink
from kafkasim.network.partitions import PartitionWindow
from kafkasim.scenario.faults import (
    ConnectionResetFault,
    CrashFault,
    HalfOpenFault,
    LinkDelayFault,
    LinkDropFault,
    NetworkPartitionFault,
    PauseFault,
    ShutdownFault,
    SlowDiskFault,
)
from kafkasim.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkasim.server.broker_server import BrokerServer
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherThread
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import sampler_from_spec, zero_arg_sampler

if TYPE_CHECKING:
    from kafkasim.run.cluster import Cluster
    from kafkasim.scenario import Scenario
    from kafkasim.sim.random_streams import RandomStreams


class FaultTarget(Protocol):
    """What a pause fault stops: a broker, a replica fetcher, a client, a broker's lifecycle manager."""

    @property
    def name(self) -> str: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


def _component(c: Cluster, target: str) -> FaultTarget:
    broker = _broker(c, target)
    if broker is not None:
        return broker
    for group in (c.followers, c.producers, c.consumers):
        for component in group:
            if component.name == target:
                return component
    raise ValueError(f"fault target {target!r} is not a follower, producer or consumer of this run")


def _broker(c: Cluster, target: str) -> BrokerServer | None:
    if not c.layout.clustered:
        return None
    for broker in c.brokers:
        if broker.name == target:
            return broker
    return None


def _links(c: Cluster, target: str, direction: str) -> list[NetworkLink]:
    broker = _broker(c, target)
    if broker is not None:
        paths = [c.links[f.name] for f in broker.fetchers]
    else:  # a client: in a cluster, its path to every broker it talks to
        paths = c.client_paths.get(target) or [c.links[target]]
    if direction == "to_broker":
        return [p.to_broker for p in paths]
    if direction == "from_broker":
        return [p.from_broker for p in paths]
    return [link for p in paths for link in (p.to_broker, p.from_broker)]


class PauseCount:
    """Nesting of overlapping pauses of one component (pause faults, stalls): it resumes when the last one ends."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def pause(self, component: FaultTarget) -> None:
        n = self.count.get(component.name, 0)
        self.count[component.name] = n + 1
        if n == 0:
            component.pause()

    def resume(self, component: FaultTarget) -> None:
        n = self.count.get(component.name, 0) - 1
        self.count[component.name] = max(0, n)
        if n == 0:
            component.resume()


def _at(c: Cluster, t: float, action: Callable[[], None]) -> None:
    Call(c.env, t, lambda _e: action())


def schedule_faults(scenario: Scenario, c: Cluster, pauses: PauseCount | None = None) -> None:
    """Schedule every fault of ``scenario``; ``pauses`` counts the pauses in force per component, shared with
    the hosts' stalls (``kafkasim.run.stalls``) so that a stall and a pause fault nest."""
    if pauses is None:
        pauses = PauseCount()
    startups = BrokerStartups(scenario, c.streams)
    drop_ends: dict[str, float] = {}  # link name -> end of the drop faults started so far
    for index, fault in enumerate(scenario.faults):
        start = float(fault.at)
        end = fault.end
        if isinstance(fault, PauseFault):
            component = _component(c, fault.target)
            _at(c, start, partial(pauses.pause, component))
            if end is not None:
                _at(c, end, partial(pauses.resume, component))
            broker_id = _broker_id(component)
            if broker_id is not None:
                # The whole broker process stops: its heartbeats to the controller too.
                lifecycle = c.controller_link.lifecycles[broker_id]
                _at(c, start, partial(pauses.pause, LifecyclePause(lifecycle, fault.target)))
                if end is not None:
                    _at(c, end, partial(pauses.resume, LifecyclePause(lifecycle, fault.target)))
        elif isinstance(fault, SlowDiskFault):
            follower = _component(c, fault.target)
            assert isinstance(follower, ReplicaFetcherThread | BrokerServer), fault.target  # validated: a broker
            _at(c, start, partial(_scale_disk, follower, float(fault.factor)))
            if end is not None:
                _at(c, end, partial(_scale_disk, follower, 1.0 / float(fault.factor)))
        elif isinstance(fault, CrashFault):
            crashed_id = _broker_id(_component(c, fault.target))
            assert crashed_id is not None
            # The whole broker process: follower-<k> of a scenario without a cluster is broker k.
            crashed = c.broker(crashed_id)
            _at(c, start, partial(_crash, c, crashed, crashed_id))
            if end is not None:
                _at(c, end, partial(_restart, c, startups, crashed, crashed_id))
        elif isinstance(fault, ShutdownFault):
            stopping_id = _broker_id(_component(c, fault.target))
            assert stopping_id is not None
            shutdown = _ControlledShutdown(c, startups, c.broker(stopping_id), stopping_id, end)
            _at(c, start, shutdown.begin)
        elif isinstance(fault, LinkDelayFault):
            links = _links(c, fault.target, fault.direction)
            extra = sampler_from_spec(fault.extra)
            rng = c.streams.stream(f"faults/{index}/link_delay")
            _at(c, start, partial(_delay_on, links, extra, rng))
            if end is not None:
                _at(c, end, partial(_delay_off, links))
        elif isinstance(fault, LinkDropFault):
            links = _links(c, fault.target, fault.direction)
            until = math.inf if end is None else end
            _at(c, start, partial(_drop, links, until, drop_ends))
        elif isinstance(fault, ConnectionResetFault):
            _at(c, start, partial(_reset_connections, c, fault.target))
        elif isinstance(fault, HalfOpenFault):
            _at(c, start, partial(_half_open_connections, c, fault.target))
        elif isinstance(fault, NetworkPartitionFault):
            pass  # built into the network: partition_windows(), consulted per message by every connection
        else:  # pragma: no cover - the scenario model admits only the kinds above
            raise ValueError(f"unknown fault type {fault.type!r}")


def partition_windows(scenario: Scenario) -> list[PartitionWindow]:
    """The scenario's ``network_partition`` faults as plain windows (``network.partitions.network_partitions``
    builds the run's ``NetworkPartitions`` from them)."""
    return [
        (float(f.at), math.inf if f.end is None else float(f.end), f.sides[0], f.sides[1])
        for f in scenario.faults
        if isinstance(f, NetworkPartitionFault)
    ]


def _broker_id(component: FaultTarget) -> int | None:
    """The broker a fault target runs on: a cluster's broker-N, or the broker of follower-N's fetcher."""
    if isinstance(component, (BrokerServer, ReplicaFetcherThread)):
        return component.broker_id
    return None


class LifecyclePause:
    """A broker's BrokerLifecycleManager as a pausable component (nested pauses counted by name)."""

    __slots__ = ("lifecycle", "name")

    def __init__(self, lifecycle: BrokerLifecycleManager, target: str) -> None:
        self.lifecycle = lifecycle
        self.name = f"{target}/lifecycle"

    def pause(self) -> None:
        self.lifecycle.pause()

    def resume(self) -> None:
        self.lifecycle.resume()


def _crash(c: Cluster, broker: BrokerServer, broker_id: int) -> None:
    broker.crash()
    # The broker process died: no more heartbeats, no metadata delivered until it is back.
    c.controller_link.broker_crashed(broker_id)


class BrokerStartups:
    """How long each restarted broker takes (the scenario's ``broker.startup``, per broker): its samplers, each
    on its own stream ``broker-<id>/startup/<phase>``, made when a broker first restarts."""

    __slots__ = ("scenario", "streams", "_samplers")

    def __init__(self, scenario: Scenario, streams: RandomStreams) -> None:
        self.scenario = scenario
        self.streams = streams
        self._samplers: dict[int, tuple[Callable[[], float], Callable[[], float]]] = {}

    def draw(self, broker_id: int) -> tuple[float, float]:
        """(process start, log load) in ms for one restart of ``broker_id``."""
        samplers = self._samplers.get(broker_id)
        if samplers is None:
            startup = self.scenario.broker_for(broker_id).startup
            samplers = self._samplers[broker_id] = (
                zero_arg_sampler(startup.process_start, self.streams.stream(f"broker-{broker_id}/startup/process_start")),
                zero_arg_sampler(startup.log_load, self.streams.stream(f"broker-{broker_id}/startup/log_load")),
            )
        return max(0.0, samplers[0]()), max(0.0, samplers[1]())


def _restart(c: Cluster, startups: BrokerStartups, broker: BrokerServer, broker_id: int) -> None:
    """A new process starts now (Kafka's ``KafkaRaftServer`` -> ``BrokerServer.startup``), in three steps:

    1. ``process_start`` later its socket server accepts connections (refused until then: the broker is still
       down) and its ``BrokerLifecycleManager`` registers (``BrokerServer.restart``,
       ``NodeToControllerChannelManager.broker_restarted``);
    2. ``log_load`` after that its first metadata publish (``LogManager.startup`` loads the logs first) makes
       its partitions leader or follower and starts its fetchers (``broker_logs_loaded``);
    3. its next heartbeat (STARTING: every 10 ms) reports it caught up, and the controller unfences it.

    Simplification: requests it reads before it is unfenced are handled at once (Kafka enables request
    processing, ``SocketServer.enableRequestProcessing``, after the unfence); a restarted broker leads nothing
    until an election, so only clients' metadata and connection attempts meet it then."""
    process_start, log_load = startups.draw(broker_id)
    link = c.controller_link
    crashes = link.incarnations[broker_id]  # a crash while it starts ends this start

    def registered(_e: object) -> None:
        if link.incarnations[broker_id] != crashes:
            return
        broker.restart()
        link.broker_restarted(broker_id)
        incarnation = link.incarnations[broker_id]

        def logs_loaded(_e: object) -> None:
            if link.incarnations[broker_id] == incarnation:
                broker.logs_loaded()
                link.broker_logs_loaded(broker_id)

        Call(c.env, log_load, logs_loaded)

    Call(c.env, process_start, registered)


CONTROLLED_SHUTDOWN_TIMEOUT_MS = 300_000.0
"""Kafka's ``BrokerServer.shutdown``: ``controlledShutdownFuture.get(5 minutes)``; past it the broker logs
"Timed out waiting for the controller to approve controlled shutdown" and shuts down anyway."""


class _ControlledShutdown:
    """One ``shutdown`` fault: Kafka's ``BrokerServer.shutdown`` with ``controlled.shutdown.enable``.

    ``begin``: ``ReplicaManager.beginControlledShutdown``, then ``BrokerLifecycleManager.beginControlledShutdown``
    (its next heartbeat, at once, carries wantShutDown). The controller (``BrokerHeartbeatManager
    .calculateNextBrokerState``) puts the broker in CONTROLLED_SHUTDOWN and
    ``ReplicationControlManager.handleBrokerInControlledShutdown`` elects other ISR members for the partitions
    it leads and removes it from every ISR; once it leads nothing and every active broker has applied those
    records (``lowestActiveOffset``), a heartbeat answer says shouldShutDown and the controller fences it
    (SHUTDOWN_NOW: ``handleBrokerFenced``, no session timeout to wait for). The lifecycle manager's
    ``ShutdownEvent`` (``on_shutdown``) then stops the process.

    The stop is modelled as ``crash()`` (connections closed, memory gone, logs kept): by then the broker
    leads no partition and is in no ISR, so it holds no produce that could still be acknowledged; Kafka's
    ``SocketServer.stopProcessingRequests`` likewise closes the connections and drops the requests not yet
    handled (``RequestChannel.clear``), whose clients retry elsewhere. A clean shutdown spares Kafka the log
    recovery on restart; here ``broker.startup.log_load`` is the same after either. The restart (``restart_at``, from
    the fault's ``restart_after``) comes no earlier than the stop."""

    __slots__ = ("c", "startups", "broker", "broker_id", "restart_at", "began", "stopped_at")

    def __init__(self, c: Cluster, startups: BrokerStartups, broker: BrokerServer, broker_id: int,
                 restart_at: float | None) -> None:
        self.c = c
        self.startups = startups
        self.broker = broker
        self.broker_id = broker_id
        self.restart_at = restart_at
        self.began = False
        self.stopped_at: float | None = None

    def begin(self) -> None:
        if self.broker.crashed:
            return  # already down (the scenario's checks keep crash and shutdown windows apart)
        self.began = True
        lifecycle = self.c.controller_link.lifecycles[self.broker_id]
        self.broker.begin_controlled_shutdown()
        lifecycle.on_shutdown = self.stop
        lifecycle.begin_controlled_shutdown()
        if self.stopped_at is None:
            Call(self.c.env, CONTROLLED_SHUTDOWN_TIMEOUT_MS, lambda _e: self.stop())

    def stop(self) -> None:
        if not self.began or self.stopped_at is not None:
            return
        env = self.c.env
        self.stopped_at = float(env.now)
        lifecycle = self.c.controller_link.lifecycles[self.broker_id]
        lifecycle.on_shutdown = None
        # Past CONTROLLED_SHUTDOWN_TIMEOUT_MS the broker still shuts down cleanly: its logs close and write the
        # clean-shutdown file the next incarnation reports (KIP-966's unclean shutdown detection).
        lifecycle.begin_shutdown()
        _crash(self.c, self.broker, self.broker_id)
        if self.restart_at is not None:
            Call(env, max(0.0, self.restart_at - self.stopped_at),
                 lambda _e: _restart(self.c, self.startups, self.broker, self.broker_id))


def _scale_disk(target: ReplicaFetcherThread | BrokerServer, factor: float) -> None:
    # Overlapping slow_disk faults multiply; each one's end divides its own factor out again.
    if isinstance(target, BrokerServer):
        target.scale_disk(factor)
    else:
        target.disk_factor *= factor


class _DelayedLatency:
    """A link's latency plus a fault's extra delay, each drawn from its own stream."""

    __slots__ = ("base", "extra", "extra_rng")

    def __init__(self, base: LatencySampler, extra: LatencySampler, extra_rng: random.Random) -> None:
        self.base = base
        self.extra = extra
        self.extra_rng = extra_rng

    def sample(self, rng: random.Random) -> float:
        return self.base.sample(rng) + self.extra.sample(self.extra_rng)


def _delay_on(links: list[NetworkLink], extra: LatencySampler, rng: random.Random) -> None:
    for link in links:
        link.latency_sampler = _DelayedLatency(link.latency_sampler, extra, rng)


def _delay_off(links: list[NetworkLink]) -> None:
    # Overlapping delays nest: each end removes the outermost wrapper, whichever fault added it.
    for link in links:
        if isinstance(link.latency_sampler, _DelayedLatency):
            link.latency_sampler = link.latency_sampler.base


def _reset_connections(c: Cluster, target: str) -> None:
    for connection in c.network.open_connections(target):
        connection.reset()


def _half_open_connections(c: Cluster, target: str) -> None:
    for connection in c.network.open_connections(target):
        connection.half_open()


def _drop(links: list[NetworkLink], until: float, drop_ends: dict[str, float]) -> None:
    # An earlier, longer drop on the same link keeps its end.
    for link in links:
        until = max(until, drop_ends.get(link.name, -math.inf))
        drop_ends[link.name] = until
        link.drop_until(until)
