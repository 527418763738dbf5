"""The fault schedule: each scenario fault starts at ``at`` and (unless it lasts forever) ends later.

* ``pause`` (follower, producer, consumer): the component does nothing for ``duration``; work that
  arrives meanwhile waits (a GC pause / SIGSTOP). Overlapping pauses nest.
* ``slow_disk`` (follower): appends cost ``factor`` times more; overlapping factors multiply.
* ``crash`` (follower): stop now, restart after ``restart_after`` (or never).
* ``link_delay``: every message on the target's link(s) takes ``extra`` longer while it lasts.
* ``link_drop``: the target's link(s) deliver nothing while it lasts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkasim.clients.scheduling import Call
from kafkasim.run.build import zero_arg_sampler
from kafkasim.run.connections import NetworkLink

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


def schedule_faults(scenario: Scenario, c: Components) -> None:
    env = c.env
    pauses = _PauseCount()
    for index, fault in enumerate(scenario.faults):
        kind = fault.type
        start = float(fault.at)
        end = fault.end
        if kind == "pause":
            component = _component(c, fault.target)
            Call(env, start, lambda _e, comp=component: pauses.pause(comp))
            if end is not None:
                Call(env, end, lambda _e, comp=component: pauses.resume(comp))
        elif kind == "slow_disk":
            follower = _component(c, fault.target)
            factor = float(fault.factor)

            def slow(_e: Any, f: Any = follower, x: float = factor) -> None:
                f.disk_factor *= x

            def fast(_e: Any, f: Any = follower, x: float = factor) -> None:
                f.disk_factor /= x

            Call(env, start, slow)
            if end is not None:
                Call(env, end, fast)
        elif kind == "crash":
            follower = _component(c, fault.target)
            Call(env, start, lambda _e, f=follower: f.crash())
            if end is not None:
                Call(env, end, lambda _e, f=follower: f.restart())
        elif kind == "link_delay":
            links = _links(c, fault.target, fault.direction)
            rng = c.streams.stream(f"faults/{index}/link_delay")
            extra = zero_arg_sampler(fault.extra, rng)

            def delay_on(_e: Any, ls: list[NetworkLink] = links, x: Any = extra) -> None:
                for link in ls:
                    link.extra = x

            def delay_off(_e: Any, ls: list[NetworkLink] = links, x: Any = extra) -> None:
                for link in ls:
                    if link.extra is x:
                        link.extra = None

            Call(env, start, delay_on)
            if end is not None:
                Call(env, end, delay_off)
        elif kind == "link_drop":
            links = _links(c, fault.target, fault.direction)

            def drop_on(_e: Any, ls: list[NetworkLink] = links) -> None:
                for link in ls:
                    link.dropping += 1

            def drop_off(_e: Any, ls: list[NetworkLink] = links) -> None:
                for link in ls:
                    link.dropping -= 1

            Call(env, start, drop_on)
            if end is not None:
                Call(env, end, drop_off)
        else:  # pragma: no cover - the scenario model admits only the kinds above
            raise ValueError(f"unknown fault type {kind!r}")
