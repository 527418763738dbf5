"""Kafka's ``NetworkClient``: the one connection layer of every simulated client. The producer's ``Sender``,
the consumer's fetcher and each replica fetcher thread own one, as in Kafka (``KafkaProducer``,
``ConsumerNetworkClient``, ``BrokerBlockingSender``).

Per node it keeps what Kafka's keeps: the connection (``Selector``), its state and backoffs
(``ClusterConnectionStates``), the requests in flight in send order (``InFlightRequests``) and their request
timeout. The client drives it with Kafka's calls:

* ``ready(node, now)``: READY with room for another request; otherwise, if the reconnect backoff allows
  (``canConnect``), start a connection (``initiateConnect``: CONNECTING, a TCP handshake over the path, armed
  with ``socket.connection.setup.timeout.ms``) and answer False. The client's ``on_ready(node)`` runs when the
  handshake completes (``handleConnections``); ``connection_delay`` says how long a DISCONNECTED node is
  still backed off.
* ``send(node, envelope, payload)``: the request goes out; ``complete(node, envelope, payload, disconnected)``
  runs with its response (``handleCompletedReceives``; responses come in request order), or when it fails
  with its connection: ``disconnected`` True and ``envelope.error`` REQUEST_TIMED_OUT when the connection
  was closed for a request timeout (``handleTimedOutRequests``: every request in flight on it, as Kafka's
  ``cancelInFlightRequests(timedOut=true)`` does), NETWORK_EXCEPTION when it was reset or refused
  (``handleDisconnections``). A request that expects no response (acks=0) is done once sent.
* A disconnect of any kind -- reset or refused, setup timeout, request timeout -- marks the node
  DISCONNECTED (``processDisconnection``: the reconnect backoff grows), fails what was in flight, then calls
  the client's ``on_disconnect(node, request_timed_out)`` (where Kafka's ``handleServerDisconnect`` asks for
  a metadata update, and the client decides when to try again). No connection is opened by itself: the next
  one comes from the client's next ``ready``.
* ``close(node)`` (``NetworkClient.close``): the connection closes, its requests are dropped without an
  outcome (returned to the caller) and the node is forgotten (no backoff).

While the client is paused (a GC pause), what the network delivers -- responses, handshakes, resets -- waits
and is handled in arrival order when it resumes, and no timeout fires; the client's ``on_resume`` then calls
``check_timeouts()``: Kafka's ``poll`` order (completed receives, disconnections, connections, then timed-out
connections and timed-out requests).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Generic, TypeVar

from kafkasim.broker.errors import Errors
from kafkasim.network.cluster_connection_states import ClusterConnectionStates, ConnectionConfig
from kafkasim.network.connection import ClientConnection
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.request_timer import RequestTimer
from kafkasim.sim.calls import DEADLINE_TOLERANCE_MS, Call, Pausable

if TYPE_CHECKING:
    from simpy import Environment

T = TypeVar("T")


class InFlightRequest(Generic[T]):
    """``NetworkClient.InFlightRequest``: a request sent and not answered yet, and what the client keeps with
    it (the producer's batches; nothing for a fetch)."""

    __slots__ = ("envelope", "payload")

    def __init__(self, envelope: RequestEnvelope, payload: T) -> None:
        self.envelope = envelope
        self.payload = payload


class NodeConnection(Generic[T]):
    """What the client keeps per node: its connection (None until the first connect and after a disconnect),
    the requests in flight on it in send order, their request timeout and the connection setup timer."""

    __slots__ = ("node_id", "connection", "ready", "in_flight", "request_timer", "setup_timer", "on_response")

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.connection: ClientConnection | None = None
        self.ready = False  # ClusterConnectionStates says READY (kept here too: asked before every send)
        self.in_flight: deque[InFlightRequest[T]] = deque()
        self.request_timer: RequestTimer | None = None
        self.setup_timer: Call | None = None
        self.on_response: Callable[[RequestEnvelope], None] | None = None

    def oldest(self) -> RequestEnvelope | None:
        """The request whose timeout comes first (``InFlightRequests`` is in send order)."""
        return self.in_flight[0].envelope if self.in_flight else None


class NetworkClient(Generic[T]):
    """A client's connections to its nodes: ``connect(node)`` makes a connection (not yet open) to a node;
    ``owner`` is the client process (its pause holds everything back)."""

    def __init__(
        self,
        env: Environment,
        owner: Pausable,
        connect: Callable[[int], ClientConnection],
        config: ConnectionConfig,
        rng: random.Random,
        *,
        request_timeout_ms: float,
        max_in_flight: int,
        complete: Callable[[int, RequestEnvelope, T, bool], None],
        on_ready: Callable[[int], None],
        on_disconnect: Callable[[int, bool], None],
    ) -> None:
        self.env = env
        self._owner = owner
        self._connect = connect
        self.connection_states = ClusterConnectionStates(config, rng)
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self._complete = complete
        self._on_ready = on_ready
        self._on_disconnect = on_disconnect
        self._nodes: dict[int, NodeConnection[T]] = {}

    def _node(self, node_id: int) -> NodeConnection[T]:
        node = self._nodes.get(node_id)
        if node is None:
            node = self._nodes[node_id] = NodeConnection(node_id)
            node.request_timer = RequestTimer(
                self.env, self.request_timeout_ms, self._owner, node.oldest, partial(self._request_timed_out, node))
            node.on_response = partial(self._receive, node)
        return node

    # --- Kafka's NetworkClient calls -----------------------------------------------------------------

    def ready(self, node_id: int, now: float) -> bool:
        """``NetworkClient.ready``: True if a request can go to the node now; else start connecting if the
        reconnect backoff allows (the answer is then False until ``on_ready``)."""
        if self.is_ready(node_id, now):
            return True
        if self.connection_states.can_connect(node_id, now):
            self._initiate_connect(node_id, now)
            return self.is_ready(node_id, now)  # True only for a connection established at once (scripted)
        return False

    def is_ready(self, node_id: int, now: float) -> bool:
        """``canSendRequest``: READY, and fewer than ``max_in_flight`` requests in flight."""
        node = self._nodes.get(node_id)
        return node is not None and node.ready and len(node.in_flight) < self.max_in_flight

    def connection_delay(self, node_id: int, now: float) -> float:
        """``connectionDelay``: how long a DISCONNECTED node is still backed off (see ClusterConnectionStates)."""
        return self.connection_states.connection_delay(node_id, now)

    def connection_failed(self, node_id: int) -> bool:
        """``connectionFailed``: the node is DISCONNECTED."""
        return self.connection_states.is_disconnected(node_id)

    def in_flight_count(self, node_id: int) -> int:
        node = self._nodes.get(node_id)
        return len(node.in_flight) if node is not None else 0

    def send(self, node_id: int, envelope: RequestEnvelope, payload: T) -> None:
        """``NetworkClient.send`` to a ready node (the caller asked ``ready``)."""
        node = self._nodes[node_id]
        connection = node.connection
        assert connection is not None, f"node {node_id} is not ready"
        envelope.on_response = node.on_response
        connection.send(envelope)
        if envelope.expects_response:
            node.in_flight.append(InFlightRequest(envelope, payload))
            request_timer = node.request_timer
            assert request_timer is not None
            request_timer.arm()

    def close(self, node_id: int) -> list[RequestEnvelope]:
        """``NetworkClient.close(node)``: close the connection and forget the node (no backoff); the requests
        in flight get no outcome here: they are returned."""
        node = self._nodes.get(node_id)
        if node is None:
            return []
        connection = node.connection
        node.connection = None
        node.ready = False
        if connection is not None:
            connection.close()
        self._cancel_setup_timer(node)
        cancelled = [request.envelope for request in node.in_flight]
        node.in_flight.clear()
        self.connection_states.remove(node_id)
        return cancelled

    def check_timeouts(self) -> None:
        """After a pause: ``handleTimedOutConnections`` then ``handleTimedOutRequests``."""
        nodes = list(self._nodes.values())
        for node in nodes:
            self._check_setup_timeout(node)
        for node in nodes:
            request_timer = node.request_timer
            if request_timer is not None:
                request_timer.check()

    # --- what the client reads -------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return sum(len(node.in_flight) for node in self._nodes.values())

    def in_flight_requests(self) -> list[InFlightRequest[T]]:
        return [request for node in self._nodes.values() for request in node.in_flight]

    @property
    def connections(self) -> dict[int, ClientConnection]:
        """Each node's current connection (open or being opened), by node id."""
        return {node.node_id: node.connection for node in self._nodes.values() if node.connection is not None}

    # --- connecting ------------------------------------------------------------------------------------

    def _initiate_connect(self, node_id: int, now: float) -> None:
        """``initiateConnect``: CONNECTING, and the handshake starts; the setup timeout is armed."""
        node = self._node(node_id)
        states = self.connection_states
        states.connecting(node_id, now)
        connection = node.connection = self._connect(node_id)
        connection.connect(partial(self._established, node, connection), partial(self._closed, node, connection))
        if connection.connected:
            states.ready(node_id)
            node.ready = True
            return
        node.setup_timer = Call(self.env, states.connection_setup_timeout_ms(node_id),
                                partial(self._setup_timer_fired, node))

    def _established(self, node: NodeConnection[T], connection: ClientConnection) -> None:
        """``handleConnections``: the handshake completed; READY."""
        owner = self._owner
        if owner.paused:
            owner.defer(partial(self._established, node, connection))
            return
        if node.connection is not connection or connection.closed:
            return
        self._cancel_setup_timer(node)
        self.connection_states.ready(node.node_id)
        node.ready = True
        self._on_ready(node.node_id)

    def _setup_timer_fired(self, node: NodeConnection[T], _event: object) -> None:
        node.setup_timer = None
        if not self._owner.paused:  # else check_timeouts, when it resumes
            self._check_setup_timeout(node)

    def _check_setup_timeout(self, node: NodeConnection[T]) -> None:
        """``handleTimedOutConnections``: a connection CONNECTING longer than its setup timeout is closed
        ("Disconnecting from node due to socket connection setup timeout")."""
        node_id = node.node_id
        states = self.connection_states
        connection = node.connection
        if connection is None or not states.is_connecting(node_id):
            return
        now = self.env.now
        # Detected at the deadline (Kafka's poll wakes at connectionDelay; the check is strict).
        if states.is_connection_setup_timeout(node_id, now + DEADLINE_TOLERANCE_MS):
            connection.close()
            self._process_disconnection(node, now, False)
        elif node.setup_timer is None:
            left = states.last_connect_attempt_ms(node_id) + states.connection_setup_timeout_ms(node_id) - now
            node.setup_timer = Call(self.env, max(0.0, left), partial(self._setup_timer_fired, node))

    def _cancel_setup_timer(self, node: NodeConnection[T]) -> None:
        timer = node.setup_timer
        if timer is not None:
            timer.cancel()
            node.setup_timer = None

    # --- responses and disconnects ---------------------------------------------------------------------

    def _receive(self, node: NodeConnection[T], envelope: RequestEnvelope) -> None:
        """``handleCompletedReceives``: the response to the oldest request in flight on the connection."""
        owner = self._owner
        if owner.paused:
            owner.defer(partial(self._receive, node, envelope))
            return
        in_flight = node.in_flight
        if in_flight and in_flight[0].envelope is envelope:
            request = in_flight.popleft()
        else:
            index = next((i for i, r in enumerate(in_flight) if r.envelope is envelope), -1)
            if index < 0:
                return  # the request already failed (timeout, disconnect): a late response is ignored
            request = in_flight[index]
            del in_flight[index]
        self._complete(node.node_id, envelope, request.payload, False)

    def _closed(self, node: NodeConnection[T], connection: ClientConnection) -> None:
        """``handleDisconnections``: the connection was reset or refused by the broker, or the kernel gave up."""
        owner = self._owner
        if owner.paused:
            owner.defer(partial(self._closed, node, connection))
            return
        if node.connection is connection:
            self._process_disconnection(node, self.env.now, False)

    def _request_timed_out(self, node: NodeConnection[T], _envelope: RequestEnvelope) -> None:
        """``handleTimedOutRequests``: "Disconnecting from node due to request timeout"."""
        connection = node.connection
        if connection is not None:
            connection.close()
        self._process_disconnection(node, self.env.now, True)

    def _process_disconnection(self, node: NodeConnection[T], now: float, request_timed_out: bool) -> None:
        """``processDisconnection``: DISCONNECTED (the reconnect backoff grows), every request in flight fails
        (``cancelInFlightRequests``: as timed out after a request timeout, else as disconnected), then the
        client hears of it (``handleServerDisconnect``)."""
        node_id = node.node_id
        node.connection = None
        node.ready = False
        self._cancel_setup_timer(node)
        self.connection_states.disconnected(node_id, now)
        failed = node.in_flight
        node.in_flight = deque()
        error = Errors.REQUEST_TIMED_OUT if request_timed_out else Errors.NETWORK_EXCEPTION
        for request in failed:
            envelope = request.envelope
            envelope.error = error
            envelope.client_timeout = request_timed_out
            self._complete(node_id, envelope, request.payload, True)
        self._on_disconnect(node_id, request_timed_out)
