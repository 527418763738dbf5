"""Kafka's ``ClusterConnectionStates`` (``org.apache.kafka.clients``): the state of a client's connection to
each node, and when it may try to connect again.

A node is DISCONNECTED (never tried, or its connection failed or closed), CONNECTING (the TCP handshake is
under way) or READY. Two backoffs, each Kafka's ``ExponentialBackoff`` (x2, +-20% jitter), decide the timing:

* ``reconnect.backoff.ms`` (50 ms, growing to ``reconnect.backoff.max.ms``, 1 s): after a disconnect no new
  connection is tried before the node's current backoff has passed since the last attempt
  (``canConnect``, ``connectionDelay``). Each disconnect without a READY in between grows it
  (``updateReconnectBackoff``); READY resets it (``resetReconnectBackoff``).
* ``socket.connection.setup.timeout.ms`` (10 s, growing to ``socket.connection.setup.timeout.max.ms``, 30 s):
  a connection still CONNECTING that long has timed out (``isConnectionSetupTimeout``; the NetworkClient then
  closes it: ``handleTimedOutConnections``). A failed attempt grows it (``updateConnectionSetupTimeout``);
  a READY connection, or one that disconnects after it was READY, resets it.

Worked example, Kafka's defaults: a producer cut from its leader. Its request times out at t; the node is
DISCONNECTED with backoff 50 ms (+-20%), so at t + ~50 ms ``canConnect`` and the Sender starts a connection:
CONNECTING, setup timeout 10 s +-20%. The SYNs are lost in the cut, so at ~t + 10 s it times out:
DISCONNECTED, backoff 100 ms, and the next attempt's setup timeout is ~20 s, then ~30 s (the cap), while the
reconnect backoff goes 200, 400, 800, 1000 ms.

The jitter is drawn from the client's own named stream (Kafka: ``ThreadLocalRandom``), in Kafka's order:
two draws when a node is first seen (``connecting``: reconnect and setup backoffs at 0 failures), one for
each backoff a transition updates or resets. Not modelled: ``CHECKING_API_VERSIONS`` (no ApiVersions
exchange: a connection is READY once its handshake completes), authentication failures, throttling, and the
DNS resolution of a node's host (one address per node).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

from kafkasim.sim.backoff import ExponentialBackoff
from kafkasim.sim.calls import DEADLINE_TOLERANCE_MS

# ConnectionState: AUTHENTICATION_FAILED and CHECKING_API_VERSIONS are not modelled.
DISCONNECTED: Final = 0
CONNECTING: Final = 1
READY: Final = 2
STATE_NAMES: Final = ("DISCONNECTED", "CONNECTING", "READY")

# ClusterConnectionStates' constants.
RECONNECT_BACKOFF_EXP_BASE: Final = 2
RECONNECT_BACKOFF_JITTER: Final = 0.2
CONNECTION_SETUP_TIMEOUT_EXP_BASE: Final = 2
CONNECTION_SETUP_TIMEOUT_JITTER: Final = 0.2


@dataclass(frozen=True, slots=True)
class ConnectionConfig:
    """A client's connection configs (``CommonClientConfigs``), Kafka's defaults. A producer's and a
    consumer's are their own configs; the replica fetcher's are its broker's ``socket.connection.setup.*``,
    with no reconnect backoff at all (``BrokerBlockingSender`` builds its NetworkClient with 0 and 0)."""

    reconnect_backoff_ms: float = 50.0  # reconnect.backoff.ms
    reconnect_backoff_max_ms: float = 1000.0  # reconnect.backoff.max.ms
    socket_connection_setup_timeout_ms: float = 10_000.0  # socket.connection.setup.timeout.ms
    socket_connection_setup_timeout_max_ms: float = 30_000.0  # socket.connection.setup.timeout.max.ms


class NodeConnectionState:
    """``ClusterConnectionStates.NodeConnectionState``: one node's state and backoffs."""

    __slots__ = ("state", "last_connect_attempt_ms", "failed_attempts", "failed_connect_attempts",
                 "reconnect_backoff_ms", "connection_setup_timeout_ms")

    def __init__(self, state: int, last_connect_attempt_ms: float, reconnect_backoff_ms: float,
                 connection_setup_timeout_ms: float) -> None:
        self.state = state
        self.last_connect_attempt_ms = last_connect_attempt_ms
        self.failed_attempts = 0
        self.failed_connect_attempts = 0
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.connection_setup_timeout_ms = connection_setup_timeout_ms

    def __repr__(self) -> str:
        return (f"NodeConnectionState(state={STATE_NAMES[self.state]}, lastConnectAttemptMs="
                f"{self.last_connect_attempt_ms}, failedAttempts={self.failed_attempts}, failedConnectAttempts="
                f"{self.failed_connect_attempts})")


class ClusterConnectionStates:
    """Kafka's ``ClusterConnectionStates``, by node id; every method is Kafka's, with Kafka's rules."""

    __slots__ = ("_node_state", "_connecting_nodes", "_reconnect_backoff", "_connection_setup_timeout")

    def __init__(self, config: ConnectionConfig, rng: random.Random) -> None:
        self._reconnect_backoff = ExponentialBackoff(
            config.reconnect_backoff_ms, RECONNECT_BACKOFF_EXP_BASE, config.reconnect_backoff_max_ms,
            RECONNECT_BACKOFF_JITTER, rng)
        self._connection_setup_timeout = ExponentialBackoff(
            config.socket_connection_setup_timeout_ms, CONNECTION_SETUP_TIMEOUT_EXP_BASE,
            config.socket_connection_setup_timeout_max_ms, CONNECTION_SETUP_TIMEOUT_JITTER, rng)
        self._node_state: dict[int, NodeConnectionState] = {}
        self._connecting_nodes: dict[int, None] = {}  # insertion-ordered, as a set

    def can_connect(self, node: int, now: float) -> bool:
        """``canConnect``: never tried, or disconnected for at least the node's reconnect backoff."""
        state = self._node_state.get(node)
        if state is None:
            return True
        return state.state == DISCONNECTED and not self._backing_off(state, now)

    def is_blacked_out(self, node: int, now: float) -> bool:
        """``isBlackedOut``: disconnected and still inside the reconnect backoff."""
        state = self._node_state.get(node)
        return state is not None and state.state == DISCONNECTED and self._backing_off(state, now)

    @staticmethod
    def _backing_off(state: NodeConnectionState, now: float) -> bool:
        # Kafka's times are whole ms; ours are floats: a wakeup at last attempt + backoff can compute its
        # "now - last attempt" one ulp short of the backoff, and would then wait for ever at the same instant.
        return now - state.last_connect_attempt_ms + DEADLINE_TOLERANCE_MS < state.reconnect_backoff_ms

    def connection_delay(self, node: int, now: float) -> float:
        """``connectionDelay``: disconnected, the rest of the reconnect backoff; connecting, the setup timeout
        (Kafka's value: the whole of it, not what is left); connected, for ever (a wakeup comes)."""
        state = self._node_state.get(node)
        if state is None:
            return 0.0
        if state.state == CONNECTING:
            return state.connection_setup_timeout_ms
        if state.state == DISCONNECTED:
            return state.reconnect_backoff_ms - (now - state.last_connect_attempt_ms) if self._backing_off(state, now) else 0.0
        return math.inf

    def is_connecting(self, node: int) -> bool:
        state = self._node_state.get(node)
        return state is not None and state.state == CONNECTING

    def connecting(self, node: int, now: float) -> None:
        """``connecting``: a connection attempt starts now. A node seen for the first time gets its backoffs
        at 0 failures (two jitter draws)."""
        state = self._node_state.get(node)
        if state is not None:
            state.last_connect_attempt_ms = now
            state.state = CONNECTING
        else:
            self._node_state[node] = NodeConnectionState(
                CONNECTING, now, self._reconnect_backoff.backoff(0), self._connection_setup_timeout.backoff(0))
        self._connecting_nodes[node] = None

    def disconnected(self, node: int, now: float) -> None:
        """``disconnected``: the reconnect backoff grows; a failed attempt (CONNECTING) grows the setup
        timeout, a connection lost after READY resets it."""
        state = self._state(node)
        state.last_connect_attempt_ms = now
        self._update_reconnect_backoff(state)
        if state.state == CONNECTING:
            self._update_connection_setup_timeout(state)
            self._connecting_nodes.pop(node, None)
        else:
            self._reset_connection_setup_timeout(state)
        state.state = DISCONNECTED

    def ready(self, node: int) -> None:
        """``ready``: connected; both backoffs start over."""
        state = self._state(node)
        state.state = READY
        self._reset_reconnect_backoff(state)
        self._reset_connection_setup_timeout(state)
        self._connecting_nodes.pop(node, None)

    def is_ready(self, node: int, now: float) -> bool:
        """``isReady`` (no throttling is modelled: ``now`` is Kafka's signature)."""
        state = self._node_state.get(node)
        return state is not None and state.state == READY

    def has_ready_nodes(self, now: float) -> bool:
        return any(state.state == READY for state in self._node_state.values())

    def is_disconnected(self, node: int) -> bool:
        state = self._node_state.get(node)
        return state is not None and state.state == DISCONNECTED

    def remove(self, node: int) -> None:
        """``remove``: forget the node (unlike ``disconnected``, no backoff: ``connectionDelay`` is 0)."""
        self._node_state.pop(node, None)
        self._connecting_nodes.pop(node, None)

    def connection_state(self, node: int) -> int:
        return self._state(node).state

    def last_connect_attempt_ms(self, node: int) -> float:
        state = self._node_state.get(node)
        return state.last_connect_attempt_ms if state is not None else 0.0

    def connection_setup_timeout_ms(self, node: int) -> float:
        return self._state(node).connection_setup_timeout_ms

    def is_connection_setup_timeout(self, node: int, now: float) -> bool:
        """``isConnectionSetupTimeout``: CONNECTING for longer than the node's setup timeout (strictly)."""
        state = self._state(node)
        if state.state != CONNECTING:
            raise ValueError(f"Node {node} is not in connecting state")
        return now - state.last_connect_attempt_ms > state.connection_setup_timeout_ms

    def nodes_with_connection_setup_timeout(self, now: float) -> list[int]:
        return [node for node in self._connecting_nodes if self.is_connection_setup_timeout(node, now)]

    def connecting_nodes(self) -> list[int]:
        return list(self._connecting_nodes)

    def _state(self, node: int) -> NodeConnectionState:
        state = self._node_state.get(node)
        if state is None:
            raise ValueError(f"No entry found for connection {node}")
        return state

    def _reset_reconnect_backoff(self, state: NodeConnectionState) -> None:
        state.failed_attempts = 0
        state.reconnect_backoff_ms = self._reconnect_backoff.backoff(0)

    def _reset_connection_setup_timeout(self, state: NodeConnectionState) -> None:
        state.failed_connect_attempts = 0
        state.connection_setup_timeout_ms = self._connection_setup_timeout.backoff(0)

    def _update_reconnect_backoff(self, state: NodeConnectionState) -> None:
        # reconnect.backoff.ms * 2 ** failures (+-20%), the failures counted before this one.
        state.reconnect_backoff_ms = self._reconnect_backoff.backoff(state.failed_attempts)
        state.failed_attempts += 1

    def _update_connection_setup_timeout(self, state: NodeConnectionState) -> None:
        # socket.connection.setup.timeout.ms * 2 ** failures (+-20%), this failure counted.
        state.failed_connect_attempts += 1
        state.connection_setup_timeout_ms = self._connection_setup_timeout.backoff(state.failed_connect_attempts)
