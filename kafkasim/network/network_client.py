"""What every client owns, and the one way the consumer and the replica fetcher send a fetch.

``NetworkClient`` is the part of Kafka's ``NetworkClient`` a simulated client needs: its name, the
connection to the broker and the way to open a new one, the run's id source and the one observer. The
producer, the consumer and the follower's replica fetcher are each one.

``FetchClient`` is a client with one fetch in flight at a time (Kafka's consumer ``Fetcher`` toward one
broker, and ``ReplicaFetcherThread`` through ``ReplicaFetcherBlockingSend``): it sends the Fetch request its
fetch session built (``FetchSessionHandler``, KIP-227: full, then incremental), arms the request timeout
(``NetworkClient.handleTimedOutRequests``) and, when that fires, fails the request with REQUEST_TIMED_OUT
and reconnects.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkasim.broker.errors import Errors
from kafkasim.network.messages import Api, FetchRequestData, RequestEnvelope, fetch_request_data_bytes
from kafkasim.network.request_timer import RequestTimer
from kafkasim.sim.calls import Pausable

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.fetch_session_handler import FetchSessionRequestData
    from kafkasim.network.ids import IdSource
    from kafkasim.network.observer import Observer


class NetworkClient(Pausable):
    """A client on one connection to a broker (``connect()`` opens it, and a new one after a disconnect);
    a client with a connection per broker (the producer) passes None and keeps its own."""

    def __init__(
        self,
        env: Environment,
        name: str,
        connect: Callable[[], Any] | None,
        ids: IdSource,
        observer: Observer,
        stop_ms: float = math.inf,
    ) -> None:
        super().__init__()
        self.env = env
        self.name = name
        self._connect = connect
        self.connection: Any = self._open() if connect is not None else None
        self._ids = ids
        self._observer = observer
        self._checks = observer.checks
        self._stop_ms = stop_ms  # nothing new is sent from then on

    def _open(self) -> Any:
        """A new connection; its reset (the broker died) or refusal reaches ``_on_disconnect``."""
        assert self._connect is not None
        connection = self._connect()
        connection.on_disconnect = self._on_disconnect
        return connection

    def _reconnect(self) -> None:
        """``NetworkClient.disconnect`` then a new connection over the same network path."""
        self.connection.close()
        self.connection = self._open()

    def _on_disconnect(self) -> None:
        """The connection was reset or refused (``NetworkClient.handleDisconnections``); clients with one
        connection override it."""


class FetchClient(NetworkClient):
    """A client with at most one Fetch request in flight, timed out after ``request_timeout_ms``.

    Subclasses implement ``_on_response(envelope)`` and ``_on_request_timeout(envelope)`` (which calls
    ``_fail_timed_out`` and then backs off its own way)."""

    def __init__(
        self,
        env: Environment,
        name: str,
        connect: Callable[[], Any],
        ids: IdSource,
        observer: Observer,
        request_timeout_ms: float,
        stop_ms: float = math.inf,
    ) -> None:
        super().__init__(env, name, connect, ids, observer, stop_ms)
        self._in_flight: RequestEnvelope | None = None
        self._request_timer = RequestTimer(
            env, request_timeout_ms, self, lambda: self._in_flight, self._on_request_timeout
        )

    def _send_fetch(
        self,
        api: Api,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        fetch_data: FetchSessionRequestData,
        now: float,
    ) -> None:
        """Send one Fetch request (``FetchRequest.Builder``) as the fetch session decided it
        (``FetchSessionHandler.Builder.build``) and arm its request timeout."""
        envelope = fetch_request(
            self._ids, api, self.name, replica_id, max_wait_ms, min_bytes, max_bytes, fetch_data, now,
            self._on_response,
        )
        self._in_flight = envelope
        self.connection.send(envelope)
        self._request_timer.arm()

    def _fail_timed_out(self, envelope: RequestEnvelope) -> None:
        """``NetworkClient.handleTimedOutRequests``: the request fails with REQUEST_TIMED_OUT and the client
        disconnects ("Disconnecting from node due to request timeout"), then opens a new connection."""
        self._in_flight = None
        fail_timed_out(envelope, self._observer)
        self._reconnect()

    def _on_response(self, envelope: RequestEnvelope) -> None:
        raise NotImplementedError

    def _on_request_timeout(self, envelope: RequestEnvelope) -> None:
        raise NotImplementedError

    def unfinished(self) -> list[RequestEnvelope]:
        return [self._in_flight] if self._in_flight is not None else []


def fetch_request(
    ids: IdSource,
    api: Api,
    client: str,
    replica_id: int,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    fetch_data: FetchSessionRequestData,
    now: float,
    on_response: Callable[[RequestEnvelope], None],
) -> RequestEnvelope:
    """One Fetch request (``FetchRequest.Builder``) of ``client``, sent now: the partitions, forgotten
    partitions and session metadata ``fetch_data`` holds (``FetchSessionHandler.Builder.build``), sized as
    sent."""
    body = FetchRequestData(
        replica_id, max_wait_ms, min_bytes, max_bytes, fetch_data.fetch_infos,
        metadata=fetch_data.metadata, to_forget=fetch_data.to_forget,
    )
    return RequestEnvelope(
        ids.request_id(), api, client, body, fetch_request_data_bytes(body), now, now, on_response=on_response
    )


def fail_timed_out(envelope: RequestEnvelope, observer: Observer) -> None:
    """``NetworkClient.handleTimedOutRequests``: the request's outcome is REQUEST_TIMED_OUT (the caller
    then disconnects and opens a new connection)."""
    envelope.client_timeout = True
    envelope.error = Errors.REQUEST_TIMED_OUT
    observer.request_finished(envelope)


def fail_disconnected(envelope: RequestEnvelope, observer: Observer) -> None:
    """``NetworkClient.processDisconnection``: a request in flight on a connection that was reset or closed
    under it fails with NETWORK_EXCEPTION (the caller backs off and connects again)."""
    envelope.error = Errors.NETWORK_EXCEPTION
    observer.request_finished(envelope)
