"""The engine's one scheduling primitive: call a function at a later simulated time.

Clients, the request pipeline and the fault schedule are written as small state machines that react to
events ("a response arrived", "the linger time is up") rather than as generator processes. A generator
process costs SimPy two events per wait (the timeout and the process resumption) and a frame switch; a
`Call` is one heap entry whose callback runs the next step directly. Ordering stays SimPy's: one event
heap, ties broken by insertion order, so runs are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simpy import Environment
from simpy.events import NORMAL, Event

if TYPE_CHECKING:
    from kafkasim.network.messages import RequestEnvelope

# A nanosecond: far below any modelled delay, far above float rounding at simulated times of days. A
# deadline check armed for `send + timeout` can run at a `now` one ulp short of it; without the tolerance
# it would re-arm with a delay that no longer moves the clock, forever.
DEADLINE_TOLERANCE_MS = 1e-6


class Call(Event):
    """An event that calls ``fn(event)`` ``delay`` ms from now (a `simpy.Timeout` with one callback).

    ``cancel()`` turns it into a no-op (SimPy cannot remove an event from its heap).
    """

    def __init__(self, env: Environment, delay: float, fn: Callable[[Any], None]) -> None:
        # Inlined Event/Timeout initialisation, as simpy.Timeout does for speed.
        self.env = env
        self.callbacks = [fn]
        self._value = None
        self._ok = True
        env.schedule(self, NORMAL, delay)

    def cancel(self) -> None:
        callbacks = self.callbacks
        if callbacks:
            callbacks.clear()


def call_later(env: Environment, delay: float, fn: Callable[[Any], None]) -> Call:
    """Run ``fn(event)`` after ``delay`` ms (0 = later at the current time, after already-queued events)."""
    return Call(env, delay, fn)


class Pausable:
    """A component that a pause fault can freeze (a GC pause, SIGSTOP): work that arrives while it is
    paused waits and runs, in arrival order, when it resumes."""

    def __init__(self) -> None:
        self.paused = False
        self._deferred: list[Callable[[], None]] = []

    def run_or_defer(self, fn: Callable[[], None]) -> None:
        if self.paused:
            self._deferred.append(fn)
        else:
            fn()

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


class RequestTimer:
    """The request timeout of a client with one request in flight (Kafka's ``NetworkClient``
    ``handleTimedOutRequests``), as one lazily re-armed timer rather than one per request.

    ``arm()`` at each send starts the timer if none is running. When it fires it looks at the request in
    flight *now*: past its deadline -> ``expire(envelope)``; otherwise it re-arms for that request's
    deadline. A request whose response has been received is no longer in flight, so it cannot time out
    while the client processes the response.

    While the client is paused the timer does nothing; the client's ``on_resume`` calls ``check()`` after
    the responses that arrived during the pause have been replayed. That is Kafka's order:
    ``NetworkClient.poll`` handles completed receives before timed-out requests, so a response that
    waited in the socket through a long GC pause wins over the timeout that passed meanwhile.
    """

    __slots__ = ("_env", "_timeout_ms", "_client", "_in_flight", "_expire", "_call")

    def __init__(
        self,
        env: Environment,
        timeout_ms: float,
        client: Pausable,
        in_flight: Callable[[], RequestEnvelope | None],
        expire: Callable[[RequestEnvelope], None],
    ) -> None:
        self._env = env
        self._timeout_ms = timeout_ms
        self._client = client
        self._in_flight = in_flight
        self._expire = expire
        self._call: Call | None = None

    def arm(self) -> None:
        """A request was sent: make sure a check runs no later than its deadline."""
        if self._call is None:
            self._call = Call(self._env, self._timeout_ms, self._fire)

    def _fire(self, _event: Any) -> None:
        self._call = None
        self.check()

    def check(self) -> None:
        """Expire the request in flight if its deadline has passed, else re-arm for that deadline."""
        if self._client.paused:
            return  # the client's on_resume checks again
        envelope = self._in_flight()
        if envelope is None:
            return
        left = envelope.client_send_ms + self._timeout_ms - self._env.now
        if left > DEADLINE_TOLERANCE_MS:
            if self._call is None:
                self._call = Call(self._env, left, self._fire)
            return
        self._expire(envelope)
