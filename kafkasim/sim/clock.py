"""The simulation clock: one SimPy environment per run, 1 time unit = 1 millisecond.

Virtual by default (events run as fast as Python can process them). Wall-clock pacing can be switched on
and off *during* a run with a speed factor; pacing only inserts sleeps between events, it never changes
which event runs next, so a run paced for any stretch of time produces exactly the same event trace as a
fully virtual run.
"""

from __future__ import annotations

import math
from heapq import heappop
from time import monotonic, sleep
from typing import Any, Final

import simpy
from simpy.core import EmptySchedule, Environment, Infinity, StopSimulation
from simpy.events import URGENT, Event, EventPriority

# Sleep in slices of at most this many wall seconds so that a switch to virtual mode (or a new speed)
# made from another thread, e.g. a notebook widget, takes effect promptly during a long idle gap.
_MAX_SLEEP_SLICE_S: Final = 0.05


# The speed parameters are typed `object`: they are checked here, with a clear message, and a compiled
# function would otherwise reject a non-number at its boundary with mypyc's own TypeError.
def _check_speed(speed: object) -> float:
    if not (isinstance(speed, int | float) and math.isfinite(speed) and speed > 0):
        raise ValueError(
            f"wall-clock speed must be a finite number > 0 (1.0 = real time, 0.1 = ten times slower), "
            f"got {speed!r}"
        )
    return float(speed)


class PacedEnvironment(simpy.rt.RealtimeEnvironment):
    """A `RealtimeEnvironment` whose pacing can be switched on and off while it runs.

    SimPy's `factor` is wall seconds per simulated unit; the unit is 1 ms, so at speed `s`
    `factor = 0.001 / s`. Never strict: a simulation that falls behind the wall clock just catches up.
    In virtual mode `step()` is plain `Environment.step` (no clock reads, no sleeps).

    ``now`` is a plain attribute here, not SimPy's property: the components read it several times per
    request, and a property read is a function call. The event loop keeps it equal to ``_now``.
    """

    # Shadows Environment.now (a property over _now) with a plain attribute; every step assigns both.
    now: float = 0.0

    def __init__(self, wallclock: bool = False, speed: object = 1.0) -> None:
        checked = _check_speed(speed)
        super().__init__(initial_time=0, factor=0.001 / checked, strict=False)
        self.now = self._now
        self._speed = checked
        self._wallclock = wallclock

    @property
    def is_wallclock(self) -> bool:
        return self._wallclock

    @property
    def speed(self) -> float:
        """Simulated ms per wall ms while paced (1.0 = real time)."""
        return self._speed

    def set_wallclock(self, speed: object = 1.0) -> None:
        """Pace from now on at `speed`; re-anchors so that the current simulated time is "now" in wall time."""
        checked = _check_speed(speed)
        self._speed = checked
        self._factor = 0.001 / checked
        self._reanchor()
        self._wallclock = True

    def set_virtual(self) -> None:
        self._wallclock = False

    def _reanchor(self) -> None:
        # RealtimeEnvironment.sync() only resets the wall reference; the simulated reference must move to
        # the current time too, or the time already simulated would be paced again at the new factor.
        self.env_start = self._now
        self.sync()

    def run(self, until: float | simpy.Event | None = None) -> object:
        # Anchor at the start of every run() call: time spent between construction (or a previous run()
        # call) and now must not be "caught up" by firing the next events without pacing.
        if self._wallclock:
            self._reanchor()
        # simpy.Environment.run, with the event loop below instead of one step() call per event.
        if until is not None:
            if not isinstance(until, Event):
                at = until if isinstance(until, int) else float(until)
                if at <= self._now:
                    raise ValueError(f"until ({at}) must be greater than the current simulation time")
                until = Event(self)
                until._ok = True
                until._value = None
                self.schedule(until, URGENT, at - self._now)
            elif until.callbacks is None:
                return until.value
            until.callbacks.append(StopSimulation.callback)
        try:
            self._loop()
        except StopSimulation as exc:
            return exc.args[0]
        except EmptySchedule:
            if until is not None:
                assert not until.triggered
                raise RuntimeError(
                    f'No scheduled events left but "until" event was not triggered: {until}'
                ) from None
        return None

    def _loop(self) -> None:
        """Process events until StopSimulation / EmptySchedule. In virtual mode each event is
        ``Environment.step`` inlined (same order, same exceptions): the two method calls per event it saves
        are a few percent of a run. Paced mode, switchable from another thread, goes through ``step()``."""
        queue: list[Any] = self._queue
        while True:
            if self._wallclock:
                self.step()
                continue
            try:
                self.now, _, _, event = heappop(queue)
                self._now = self.now
            except IndexError:
                raise EmptySchedule from None
            callbacks, event.callbacks = event.callbacks, None
            try:
                for callback in callbacks:
                    callback(event)
            except StopSimulation:
                # As Environment.step: the remaining callbacks run when the simulation resumes.
                event.callbacks = callbacks[callbacks.index(callback) + 1 :]
                self.schedule(event, EventPriority(-1))
                raise
            if not event._ok and not hasattr(event, "_defused"):
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc

    def step(self) -> None:
        if not self._wallclock:
            self._step_plain()
            return
        # Same computation as RealtimeEnvironment.step (strict is always off here), but sleeping in slices
        # so that a mode or speed change made from another thread is seen within one slice.
        while self._wallclock:
            evt_time = self.peek()
            if evt_time is Infinity:
                raise EmptySchedule
            delay = self.real_start + (evt_time - self.env_start) * self.factor - monotonic()
            if delay <= 0:
                break
            sleep(min(delay, _MAX_SLEEP_SLICE_S))
        self._step_plain()

    def _step_plain(self) -> None:
        # Environment.step pops the next event and runs its callbacks, which read ``now``: it must show
        # that event's time before they run. peek() is that time (the queue's head).
        at = self.peek()
        if at is not Infinity:
            self.now = at
        Environment.step(self)


class SimTime:
    """kafkasim.timer's `Time` protocol over a SimPy environment: whole milliseconds, floor of `env.now`."""

    __slots__ = ("_env",)

    def __init__(self, env: Environment) -> None:
        self._env = env

    def milliseconds(self) -> int:
        # Simulated time never goes below 0, so int() (truncation) is the floor. ``_now`` rather than the
        # ``now`` property: the broker's state machines ask on every operation (see sim/__init__.py).
        return int(self._env._now)


class SimClock:
    """The clock of one run: `env` (the SimPy environment) and `time` (for timer/purgatory/broker)."""

    def __init__(self, wallclock: bool = False, speed: object = 1.0) -> None:
        self.env = PacedEnvironment(wallclock=wallclock, speed=speed)
        self.time = SimTime(self.env)

    @property
    def now_ms(self) -> float:
        return self.env.now

    @property
    def is_wallclock(self) -> bool:
        return self.env.is_wallclock

    @property
    def speed(self) -> float:
        return self.env.speed

    def set_wallclock(self, speed: object = 1.0) -> None:
        self.env.set_wallclock(speed)

    def set_virtual(self) -> None:
        self.env.set_virtual()
