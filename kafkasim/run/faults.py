"""The fault schedule: each scenario fault starts at ``at`` and (unless it lasts forever) ends later.

A follower target is a replica fetcher thread by its client name (``follower-<k>`` in a scenario without
a cluster, where broker k has one thread).

* ``pause`` (follower, producer, consumer): the component does nothing for ``duration``; work that
  arrives meanwhile waits (a GC pause / SIGSTOP). Overlapping pauses nest.
* ``slow_disk`` (follower): appends cost ``factor`` times more; overlapping factors multiply.
* ``crash`` (follower): stop now, restart after ``restart_after`` (or never).
* ``link_delay``: every message sent on the target's link(s) while it lasts takes ``extra`` longer, a
  fresh draw per message (from the fault's own random stream, so the link's own draws do not shift).
* ``link_drop``: messages sent on the target's link(s) while it lasts are lost.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkasim.network.link import NetworkLink
from kafkasim.scenario.faults import CrashFault, LinkDelayFault, LinkDropFault, PauseFault, SlowDiskFault
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherThread
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import sampler_from_spec

if TYPE_CHECKING:
    from kafkasim.run.build import Components
    from kafkasim.scenario import Scenario


def _component(c: Components, target: str) -> Any:
    for group in (c.followers, c.producers, c.consumers):
        for component in group:
            if component.name == target:
                return component
    raise ValueError(f"fault target {target!r} is not a follower, producer or consumer of this run")


def _links(c: Components, target: str, direction: str) -> list[NetworkLink]:
    links = c.links[target]
    if direction == "to_broker":
        return [links.to_broker]
    if direction == "from_broker":
        return [links.from_broker]
    return [links.to_broker, links.from_broker]


class _PauseCount:
    """Nesting of overlapping pauses of one component: it resumes when the last one ends."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def pause(self, component: Any) -> None:
        n = self.count.get(component.name, 0)
        self.count[component.name] = n + 1
        if n == 0:
            component.pause()

    def resume(self, component: Any) -> None:
        n = self.count.get(component.name, 0) - 1
        self.count[component.name] = max(0, n)
        if n == 0:
            component.resume()


def _at(c: Components, t: float, action: Callable[[], None]) -> None:
    Call(c.env, t, lambda _e: action())


def schedule_faults(scenario: Scenario, c: Components) -> None:
    pauses = _PauseCount()
    drop_ends: dict[str, float] = {}  # link name -> end of the drop faults started so far
    for index, fault in enumerate(scenario.faults):
        start = float(fault.at)
        end = fault.end
        if isinstance(fault, PauseFault):
            component = _component(c, fault.target)
            _at(c, start, partial(pauses.pause, component))
            if end is not None:
                _at(c, end, partial(pauses.resume, component))
        elif isinstance(fault, SlowDiskFault):
            follower: ReplicaFetcherThread = _component(c, fault.target)
            _at(c, start, partial(_scale_disk, follower, float(fault.factor)))
            if end is not None:
                _at(c, end, partial(_scale_disk, follower, 1.0 / float(fault.factor)))
        elif isinstance(fault, CrashFault):
            crashed: ReplicaFetcherThread = _component(c, fault.target)
            _at(c, start, crashed.crash)
            if end is not None:
                _at(c, end, crashed.restart)
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
        else:  # pragma: no cover - the scenario model admits only the kinds above
            raise ValueError(f"unknown fault type {fault.type!r}")


def _scale_disk(follower: ReplicaFetcherThread, factor: float) -> None:
    # Overlapping slow_disk faults multiply; each one's end divides its own factor out again.
    follower.disk_factor *= factor


class _DelayedLatency:
    """A link's latency plus a fault's extra delay, each drawn from its own stream."""

    __slots__ = ("base", "extra", "extra_rng")

    def __init__(self, base: Any, extra: Any, extra_rng: random.Random) -> None:
        self.base = base
        self.extra = extra
        self.extra_rng = extra_rng

    def sample(self, rng: random.Random) -> float:
        return self.base.sample(rng) + self.extra.sample(self.extra_rng)


def _delay_on(links: list[NetworkLink], extra: Any, rng: random.Random) -> None:
    for link in links:
        link.latency_sampler = _DelayedLatency(link.latency_sampler, extra, rng)


def _delay_off(links: list[NetworkLink]) -> None:
    # Overlapping delays nest: each end removes the outermost wrapper, whichever fault added it.
    for link in links:
        if isinstance(link.latency_sampler, _DelayedLatency):
            link.latency_sampler = link.latency_sampler.base


def _drop(links: list[NetworkLink], until: float, drop_ends: dict[str, float]) -> None:
    # An earlier, longer drop on the same link keeps its end.
    for link in links:
        until = max(until, drop_ends.get(link.name, -math.inf))
        drop_ends[link.name] = until
        link.drop_until(until)
