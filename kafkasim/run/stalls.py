"""The hosts' stalls (the scenario's `broker.stalls` and each client's `stalls`): a renewal process per host that
stops the whole host for a drawn time, by the same pause as a `pause` fault. The machine's (`machine_stalls`): one
more such process, host ``machine``, whose every stall stops every broker at once. The clients' process's
(`clients_stalls`): host ``clients``, whose every stall stops every producer and consumer at once. A broker's
stalls with `every_requests` come by count instead of time: each time that many more requests have reached its
request channel (``BrokerServer.count_requests``), a stall starts at once, or when the one in force ends. With
`every_fetches`, each time that many more fetch responses have reached its replica fetchers
(``BrokerServer.count_fetches``); with both, when the requests' and the responses' shares of the young
generation (1/every_requests and 1/every_fetches each) have filled it.

Per host: the first stall starts one `interval` draw after the run's start; each stall lasts a `pause` draw;
the next one starts an `interval` draw after this one started, or when it ends if that is later (a JVM runs one
collection at a time). A broker's stall is ``BrokerServer.pause`` (its processors, request handlers, reapers,
periodic tasks and replica fetchers) and its ``BrokerLifecycleManager`` (no heartbeat goes out): everything a
`pause` fault on ``broker-<id>`` stops, also in a scenario without `cluster:`, where a `pause` fault on
``follower-<k>`` stops only the fetcher. A client's stall pauses the client (a producer's records intended
meanwhile are sent when it resumes, their latency counted from their intended time).

Nesting: stalls and pause faults share the fault schedule's ``PauseCount``, so a host resumes when the last of
them ends. A broker that is down (crashed or shut down) when a stall is due does not stall (no row); one that
crashes during a stall keeps the stall's count until its end, as it keeps a pause fault's (a restart before
then comes up paused until it ends, ``BrokerServer.restart``).

A machine stall pauses each broker that is up when it starts (a crashed one is left alone, as its own stall
would leave it) and writes one row, host ``machine``; none when every broker is down.

Draws: each host's distributions have streams of their own, ``<host>/stalls/interval``, ``<host>/stalls/pause``,
(a broker's `fetch_pause`) ``<host>/stalls/fetch_pause`` and (counted stalls) ``<host>/stalls/fill``, the young
generation's fill at the run's start (``broker-<id>``, the client's name, ``machine`` or ``clients``), so stalls
change no other stream's draws, and a scenario without stalls schedules nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from kafkasim.run.faults import FaultTarget, LifecyclePause, PauseCount
from kafkasim.scenario.scenario import CLIENTS_HOST, MACHINE_HOST
from kafkasim.server.broker_server import BrokerServer
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import zero_arg_sampler

if TYPE_CHECKING:
    from kafkasim.clients.consumer import Consumer
    from kafkasim.clients.producer import Producer
    from kafkasim.network.messages import RequestEnvelope
    from kafkasim.network.request_channel import RequestChannel
    from kafkasim.run.cluster import Cluster
    from kafkasim.scenario import Scenario
    from kafkasim.scenario.stalls import Stalls

StallRow = tuple[str, float, float]
"""(host, start_ms, duration_ms): one stall."""


Member = tuple[BrokerServer | None, Sequence[FaultTarget]]
"""What one stall stops: a broker (None for a client, which never crashes) and the components it pauses."""


class HostStalls:
    """One host's stall process (or the machine's): for every stall it pauses the components of each member
    that is up (through the shared ``PauseCount``) and appends a row to ``rows``."""

    __slots__ = ("c", "host", "members", "pauses", "rows", "_paused", "_interval", "_pause", "_fetch_pause",
                 "_per_request", "_per_fetch", "_full", "_count", "_stalled_until", "_channel")

    def __init__(self, c: Cluster, host: str, stalls: Stalls, members: Sequence[Member], pauses: PauseCount,
                 rows: list[StallRow]) -> None:
        assert stalls.enabled and stalls.pause is not None  # only enabled stalls are scheduled
        self.c = c
        self.host = host
        self.members = members
        self.pauses = pauses
        self.rows = rows
        # The components the stall in force paused (stalls of one process never overlap).
        self._paused: list[FaultTarget] = []
        # A stall every `interval` of time, or (a broker's) when its requests read and the fetch responses its
        # fetchers received have filled the young generation: in whole units, R = every_requests and
        # F = every_fetches, it holds R * F, a request fills F of them and a response R (a count not set fills
        # none, and the generation is the other count).
        every_requests, every_fetches = stalls.every_requests, stalls.every_fetches
        self._full: int = (every_requests or 1) * (every_fetches or 1)
        self._per_request: int = self._full // every_requests if every_requests is not None else 0
        self._per_fetch: int = self._full // every_fetches if every_fetches is not None else 0
        self._interval: Callable[[], float] | None = None
        if stalls.interval is not None:
            self._interval = zero_arg_sampler(stalls.interval, c.streams.stream(f"{host}/stalls/interval"))
        self._pause: Callable[[], float] = zero_arg_sampler(stalls.pause, c.streams.stream(f"{host}/stalls/pause"))
        # A collection a fetch response started (a follower's): its own pause when the scenario gives one.
        self._fetch_pause: Callable[[], float] = self._pause
        if stalls.fetch_pause is not None:
            self._fetch_pause = zero_arg_sampler(stalls.fetch_pause, c.streams.stream(f"{host}/stalls/fetch_pause"))
        # How full the young generation is when the run starts: the JVM has run before it (a broker's start, the
        # scenario's earlier traffic), at a point of its cycle nobody knows, so it is drawn (uniform; its own
        # stream). Counted from 0, brokers that read or fetch in step (two followers of one leader) would collect
        # in step for the whole run, where Kafka's JVMs collect each on its own cycle.
        self._count = c.streams.stream(f"{host}/stalls/fill").randrange(self._full) if self._full > 1 else 0
        self._stalled_until = 0.0
        # The request channel of the broker process counted (a restart's new process counts from 0).
        self._channel: RequestChannel | None = None

    def start(self) -> None:
        if self._interval is not None:
            Call(self.c.env, max(0.0, self._interval()), self._begin)
            return
        (broker, _components), = self.members  # the scenario allows counted stalls on a broker's stalls only
        assert broker is not None
        if self._per_request:
            broker.count_requests(partial(self._counted, broker, self._per_request, self._pause))
        if self._per_fetch:
            broker.count_fetches(partial(self._counted, broker, self._per_fetch, self._fetch_pause))

    def _begin(self, _event: object) -> None:
        assert self._interval is not None
        duration = max(0.0, self._pause())
        gap = max(0.0, self._interval())
        # The next stall: an interval after this one's start, never before this one ends.
        Call(self.c.env, max(gap, duration), self._begin)
        self._stall(duration)

    def _counted(self, broker: BrokerServer, units: int, pause: Callable[[], float]) -> None:
        """One more request reached the broker's request channel, or one more fetch response its fetchers: the
        one that fills the young generation since the last stall starts one, as the allocation that fills it
        starts a collection, whose length is `pause`'s (the request's, or the fetch response's). A restarted
        process starts with an empty heap, so its count starts again."""
        if broker.request_channel is not self._channel:
            if self._channel is not None:  # a restarted process: an empty heap
                self._count = 0
            self._channel = broker.request_channel
        self._count += units
        if self._count >= self._full:
            self._count = 0
            Call(self.c.env, 0.0, partial(self._begin_counted, pause))

    def _begin_counted(self, pause: Callable[[], float], _event: object) -> None:
        now = float(self.c.env.now)
        if now < self._stalled_until:  # one collection at a time: the next starts when this one ends
            Call(self.c.env, self._stalled_until - now, partial(self._begin_counted, pause))
            return
        self._stall(max(0.0, pause()))

    def _stall(self, duration: float) -> None:
        # A crashed broker has no process to stall (the draws are made all the same: the next stalls do not shift).
        paused = [c for broker, components in self.members if broker is None or not broker.crashed for c in components]
        if not paused:
            return
        now = float(self.c.env.now)
        self._paused = paused
        self._stalled_until = now + duration
        self.rows.append((self.host, now, duration))
        for component in paused:
            self.pauses.pause(component)
        Call(self.c.env, duration, self._end)

    def _end(self, _event: object) -> None:
        for component in self._paused:
            self.pauses.resume(component)


def schedule_stalls(scenario: Scenario, c: Cluster, pauses: PauseCount) -> list[StallRow] | None:
    """Start the stall process of every host whose stalls are on; the list their rows go to, or None when no
    host stalls (the result then has no stalls table)."""
    rows: list[StallRow] = []
    processes: list[HostStalls] = []
    brokers: list[Member] = []
    for broker in c.brokers:
        lifecycle = c.controller_link.lifecycles[broker.broker_id]
        member: Member = (broker, (broker, LifecyclePause(lifecycle, broker.name)))
        brokers.append(member)
        stalls = scenario.broker_for(broker.broker_id).stalls
        if stalls is not None and stalls.enabled:
            processes.append(HostStalls(c, broker.name, stalls, [member], pauses, rows))
    machine = scenario.machine_stalls
    if machine is not None and machine.enabled:
        processes.append(HostStalls(c, MACHINE_HOST, machine, brokers, pauses, rows))
    configs = {p.name: p.stalls for p in scenario.producers} | {k.name: k.stalls for k in scenario.consumers}
    clients: list[Producer | Consumer] = [*c.producers, *c.consumers]
    for client in clients:
        stalls = configs.get(client.name)
        if stalls is not None and stalls.enabled:
            processes.append(HostStalls(c, client.name, stalls, [(None, (client,))], pauses, rows))
    shared = scenario.clients_stalls
    if shared is not None and shared.enabled and clients:
        processes.append(HostStalls(c, CLIENTS_HOST, shared, [(None, (client,)) for client in clients], pauses, rows))
    for process in processes:
        process.start()
    return rows if processes else None


def stalled_since_sent(rows: Sequence[StallRow], c: Cluster, requests: Sequence[RequestEnvelope],
                       end: float) -> dict[int, float]:
    """For each of ``requests`` (still waiting for an outcome at ``end``), how long its client stood in stalls
    since it sent it, when at all: a stalled client notices neither a response nor a timeout until its stall
    ends (``NetworkClient.poll`` runs on the stopped thread), so its deadline moves by that time, as
    ``client_deadlines`` (kafkasim.run.build) moves it by a pause fault's duration. A producer or consumer
    stands in its own stalls and the clients' process's; a replica fetcher in its broker's and the machine's."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for host, start, duration in rows:
        spans.setdefault(host, []).append((start, start + duration))
    clients: list[Producer | Consumer] = [*c.producers, *c.consumers]
    hosts: dict[str, tuple[str, ...]] = {client.name: (client.name, CLIENTS_HOST) for client in clients}
    for broker in c.brokers:
        for fetcher in broker.fetchers:
            hosts[fetcher.name] = (broker.name, MACHINE_HOST)
    stalled: dict[int, float] = {}
    for envelope in requests:
        sent = envelope.client_send_ms
        total = 0.0
        reached = sent  # the union of the spans after `sent`: a host's own stall and its shared one's may overlap
        for start, stop in sorted(s for host in hosts.get(envelope.client, ()) for s in spans.get(host, ())):
            start, stop = max(start, reached), min(stop, end)
            if stop > start:
                total += stop - start
                reached = stop
        if total > 0.0:
            stalled[envelope.request_id] = total
    return stalled
