"""The simulator's one scheduling primitive: call a function at a later simulated time.

Clients, the request pipeline and the fault schedule are written as small state machines that react to
events ("a response arrived", "the linger time is up") rather than as generator processes. A generator
process costs SimPy two events per wait (the timeout and the process resumption) and a frame switch; a
`Call` is one heap entry whose callback runs the next step directly. Ordering stays SimPy's: one event
heap, ties broken by insertion order, so runs are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any, Final

from simpy import Environment
from simpy.events import NORMAL, Event

# A nanosecond: far below any modelled delay, far above float rounding at simulated times of days. A
# deadline check armed for `send + timeout` can run at a `now` one ulp short of it; without the tolerance
# it would re-arm with a delay that no longer moves the clock, forever.
DEADLINE_TOLERANCE_MS: Final = 1e-6


class Call(Event):
    """An event that calls ``fn(event)`` ``delay`` ms from now (a `simpy.Timeout` with one callback).

    ``cancel()`` turns it into a no-op (SimPy cannot remove an event from its heap).
    """

    def __init__(self, env: Environment, delay: float, fn: Callable[[Event], None]) -> None:
        # Inlined Event/Timeout initialisation, as simpy.Timeout does for speed.
        self.env = env
        self.callbacks = [fn]
        self._value = None
        self._ok = True
        # Environment.schedule inlined: one call fewer per event (the push is schedule's whole body).
        heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), self))

    def cancel(self) -> None:
        # An event that already ran has no callback list any more (SimPy sets it to None): nothing to cancel.
        # Asked through SimPy's ``processed`` rather than by reading ``callbacks``, which the compiled build
        # types as a list and would refuse as None.
        if not self.processed:
            self.callbacks.clear()


class Delivery(Event):
    """An event that calls ``deliver()`` (no argument) ``delay`` ms from now: a link's message arriving,
    without the per-message lambda a ``Call`` would need."""

    def __init__(self, env: Environment, delay: float, deliver: Callable[[], None]) -> None:
        # Inlined Event/Timeout initialisation, as simpy.Timeout does for speed.
        self.env = env
        self.callbacks = [_call_deliver]
        self._value = None
        self._ok = True
        self.deliver = deliver
        # Environment.schedule inlined: one call fewer per event (the push is schedule's whole body).
        heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), self))


def _call_deliver(event: Any) -> None:
    event.deliver()


class Pausable:
    """A component that a pause fault can freeze (a GC pause, SIGSTOP): work that arrives while it is
    paused waits and runs, in arrival order, when it resumes."""

    def __init__(self) -> None:
        self.paused = False
        self._dead = False
        self._deferred: list[Callable[[], None]] = []

    def run_or_defer(self, fn: Callable[[], None]) -> None:
        if self.paused:
            if not self._dead:
                self._deferred.append(fn)
        else:
            fn()

    def defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` when the pause ends (the caller has checked ``paused``: the hot path's way, no closure
        unless paused)."""
        if not self._dead:
            self._deferred.append(fn)

    def kill(self) -> None:
        """The process died (a crash): paused for ever, the work waiting and any work deferred later dropped."""
        self.paused = True
        self._dead = True
        self._deferred.clear()

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        deferred, self._deferred = self._deferred, []
        for fn in deferred:
            if self.paused:  # paused again by something the replay did
                self._deferred.append(fn)
            else:
                fn()
        self.on_resume()

    def on_resume(self) -> None:
        """Hook run after the deferred work (e.g. check client timeouts that passed during the pause)."""
