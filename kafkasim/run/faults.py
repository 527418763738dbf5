"""The fault schedule: each scenario fault starts at ``at`` and (unless it lasts forever) ends later.

* ``pause`` (follower, producer, consumer): the component does nothing for ``duration``; work that
  arrives meanwhile waits (a GC pause / SIGSTOP). Overlapping pauses nest.
* ``slow_disk`` (follower): appends cost ``factor`` times more; overlapping factors multiply.
* ``crash`` (follower): stop now, restart after ``restart_after`` (or never).
* ``link_delay``: every message on the target's link(s) takes ``extra`` longer while it lasts.
* ``link_drop``: the target's link(s) deliver nothing while it lasts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkasim.clients.follower import Follower
from kafkasim.clients.scheduling import Call
from kafkasim.run.build import zero_arg_sampler
from kafkasim.run.connections import NetworkLink
from kafkasim.scenario.faults import CrashFault, LinkDelayFault, LinkDropFault, PauseFault, SlowDiskFault

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
    for index, fault in enumerate(scenario.faults):
        start = float(fault.at)
        end = fault.end
        if isinstance(fault, PauseFault):
            component = _component(c, fault.target)
            _at(c, start, partial(pauses.pause, component))
            if end is not None:
                _at(c, end, partial(pauses.resume, component))
        elif isinstance(fault, SlowDiskFault):
            follower: Follower = _component(c, fault.target)
            _at(c, start, partial(_scale_disk, follower, float(fault.factor)))
            if end is not None:
                _at(c, end, partial(_scale_disk, follower, 1.0 / float(fault.factor)))
        elif isinstance(fault, CrashFault):
            crashed: Follower = _component(c, fault.target)
            _at(c, start, crashed.crash)
            if end is not None:
                _at(c, end, crashed.restart)
        elif isinstance(fault, LinkDelayFault):
            links = _links(c, fault.target, fault.direction)
            extra = zero_arg_sampler(fault.extra, c.streams.stream(f"faults/{index}/link_delay"))
            _at(c, start, partial(_delay_on, links, extra))
            if end is not None:
                _at(c, end, partial(_delay_off, links, extra))
        elif isinstance(fault, LinkDropFault):
            links = _links(c, fault.target, fault.direction)
            _at(c, start, partial(_drop, links, 1))
            if end is not None:
                _at(c, end, partial(_drop, links, -1))
        else:  # pragma: no cover - the scenario model admits only the kinds above
            raise ValueError(f"unknown fault type {fault.type!r}")


def _scale_disk(follower: Follower, factor: float) -> None:
    # Overlapping slow_disk faults multiply; each one's end divides its own factor out again.
    follower.disk_factor *= factor


def _delay_on(links: list[NetworkLink], extra: Callable[[], float]) -> None:
    for link in links:
        link.extra = extra


def _delay_off(links: list[NetworkLink], extra: Callable[[], float]) -> None:
    for link in links:
        if link.extra is extra:
            link.extra = None


def _drop(links: list[NetworkLink], change: int) -> None:
    for link in links:
        link.dropping += change
