"""A connection's request timeout (Kafka's ``NetworkClient.handleTimedOutRequests``): the ``NetworkClient``
keeps one per node, for the oldest request in flight on it."""

from __future__ import annotations

from collections.abc import Callable

from simpy import Environment

from kafkasim.network.messages import RequestEnvelope
from kafkasim.sim.calls import DEADLINE_TOLERANCE_MS, Call, Pausable


class RequestTimer:
    """The request timeout of the requests in flight on one connection (Kafka's ``NetworkClient``
    ``handleTimedOutRequests``), as one lazily re-armed timer rather than one per request.

    ``arm()`` at each send starts the timer if none is running. When it fires it looks at the oldest request
    in flight *now* (``in_flight()``; they are in send order, so its deadline comes first): past its deadline
    -> ``expire(envelope)``; otherwise it re-arms for that request's deadline. A request whose response has been received is no longer in flight, so it cannot time out
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

    def _fire(self, _event: object) -> None:
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
