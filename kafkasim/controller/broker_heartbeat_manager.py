"""Kafka's ``BrokerHeartbeatManager``: the controller's view of each broker's liveness.

Each registered broker has a ``BrokerHeartbeatState``: the time of its last heartbeat (``last_contact_ms``),
the metadata offset it last reported, and the offset of the records that put it into controlled shutdown
(-1 when it is not shutting down). Unfenced brokers are kept sorted by last contact (Kafka's
``BrokerHeartbeatStateList``), so the stale check looks at the first one only; active brokers (unfenced,
not shutting down) are kept sorted by metadata offset (``MetadataOffsetComparator``) for
``lowestActiveOffset``.

Example (session timeout 10 ms): brokers 0, 1, 2, 3 heartbeat at 0, 2, 3 and 4 ms. At 11 ms
``find_one_stale_broker`` returns 0; once 0 is fenced, broker 1 is the next to go stale (after 12 ms). A session
is valid while ``last_contact + timeout >= now`` (Kafka 4.3's ``BrokerHeartbeatTracker.isExpired`` is
``lastContact + timeout < now``), so broker 0 is still valid at exactly 10 ms. When the controller looks is
``QuorumController``'s periodic check (every timeout / 8).

Simplification: Kafka 4.3 keeps the last contact times in a ``BrokerHeartbeatTracker`` keyed by broker id and
epoch, apart from the fencing state, so the entry of a broker that a controlled shutdown fenced still expires
a session later (the controller then logs "Fencing broker N ... because its session has timed out" once more
and writes a fence record that changes nothing); here only unfenced brokers expire.

SimPy-free: time comes from a clock with ``milliseconds()`` (``kafkasim.timer.ManualTime`` in tests, like
Kafka's ``MockTime``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

# The message itself is defined with the other broker <-> controller shapes.
from kafkasim.broker.metadata import BrokerHeartbeatRequest

DEFAULT_SESSION_TIMEOUT_MS = 9000
"""``broker.session.timeout.ms``."""


class ControllerTime(Protocol):
    """The controller's clock in milliseconds, possibly fractional (``ManualTime`` in tests; the SimPy clock,
    whose sub-millisecond part matters because Kafka's deadlines are in nanoseconds)."""

    def milliseconds(self) -> float: ...


class BrokerControlState(enum.Enum):
    """Kafka's ``BrokerControlState``."""

    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)

    @property
    def in_controlled_shutdown(self) -> bool:
        return self is BrokerControlState.CONTROLLED_SHUTDOWN

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerControlState.SHUTDOWN_NOW


@dataclass(frozen=True, slots=True)
class BrokerControlStates:
    """Kafka's ``BrokerControlStates``: a broker's state before and after a heartbeat."""

    current: BrokerControlState
    next: BrokerControlState


class BrokerHeartbeatState:
    """Kafka's ``BrokerHeartbeatState``."""

    __slots__ = ("id", "last_contact_ms", "metadata_offset", "controlled_shutdown_offset", "fenced")

    def __init__(self, broker_id: int) -> None:
        self.id = broker_id
        self.last_contact_ms: float = 0.0
        self.metadata_offset = -1
        self.controlled_shutdown_offset = -1
        self.fenced = True

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0

    def __repr__(self) -> str:
        return (f"BrokerHeartbeatState(id={self.id}, last_contact_ms={self.last_contact_ms}, "
                f"metadata_offset={self.metadata_offset}, fenced={self.fenced}, "
                f"controlled_shutdown_offset={self.controlled_shutdown_offset})")


class BrokerHeartbeatManager:
    """Kafka's ``BrokerHeartbeatManager`` (times in ms)."""

    __slots__ = ("_time", "session_timeout_ms", "_brokers")

    def __init__(self, time: ControllerTime, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS) -> None:
        self._time = time
        self.session_timeout_ms = session_timeout_ms
        self._brokers: dict[int, BrokerHeartbeatState] = {}

    def time(self) -> ControllerTime:
        return self._time

    def state(self, broker_id: int) -> BrokerHeartbeatState | None:
        return self._brokers.get(broker_id)

    def _state_or_throw(self, broker_id: int) -> BrokerHeartbeatState:
        broker = self._brokers.get(broker_id)
        if broker is None:
            raise KeyError(f"broker {broker_id} is not registered with the heartbeat manager")
        return broker

    def unfenced(self) -> list[BrokerHeartbeatState]:
        """Kafka's ``BrokerHeartbeatStateList``: unfenced brokers by last contact (ties by id)."""
        return sorted((b for b in self._brokers.values() if not b.fenced),
                      key=lambda b: (b.last_contact_ms, b.id))

    def active(self) -> list[BrokerHeartbeatState]:
        """Unfenced brokers not in controlled shutdown, by metadata offset (``MetadataOffsetComparator``:
        offset, then id)."""
        return sorted((b for b in self._brokers.values() if not b.fenced and not b.shutting_down),
                      key=lambda b: (b.metadata_offset, b.id))

    def register(self, broker_id: int, fenced: bool) -> None:
        """Kafka's ``register``, called when a ``RegisterBrokerRecord`` is replayed: the metadata offset is
        kept only when the fencing state changes. (Fencing changes are applied by ``touch`` and ``fence`` as
        the heartbeat or stale check decides them, not again when their records are replayed.)"""
        broker = self._brokers.get(broker_id)
        metadata_offset = -1
        if broker is None:
            self._brokers[broker_id] = BrokerHeartbeatState(broker_id)
        elif broker.fenced != fenced:
            metadata_offset = broker.metadata_offset
        self.touch(broker_id, fenced, metadata_offset)

    def remove(self, broker_id: int) -> None:
        self._brokers.pop(broker_id, None)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int) -> None:
        """Kafka's ``touch``: a heartbeat was handled; the last contact becomes now."""
        broker = self._brokers.get(broker_id)
        if broker is None:
            broker = BrokerHeartbeatState(broker_id)
            self._brokers[broker_id] = broker
        broker.last_contact_ms = self._time.milliseconds()
        broker.metadata_offset = metadata_offset
        broker.fenced = fenced
        if fenced:
            # Kafka: "If a broker is fenced, it leaves controlled shutdown. On its next heartbeat, it will
            # shut down immediately."
            broker.controlled_shutdown_offset = -1

    def fence(self, broker_id: int) -> None:
        """Kafka's ``fence``: the broker leaves the unfenced list (and the active set)."""
        broker = self._brokers.get(broker_id)
        if broker is not None:
            self.touch(broker_id, True, broker.metadata_offset)

    def has_valid_session(self, broker_id: int) -> bool:
        broker = self._brokers.get(broker_id)
        return broker is not None and self._has_valid_session(broker)

    def _has_valid_session(self, broker: BrokerHeartbeatState) -> bool:
        # Kafka: BrokerHeartbeatManager.hasValidSession -- valid while lastContact + timeout >= now.
        if broker.fenced:
            return False
        return broker.last_contact_ms + self.session_timeout_ms >= self._time.milliseconds()

    def find_one_stale_broker(self) -> int | None:
        """Kafka's ``findOneStaleBroker``: the list is sorted by last contact, so if the first unfenced broker
        is not stale, none is."""
        unfenced = self.unfenced()
        if unfenced and not self._has_valid_session(unfenced[0]):
            return unfenced[0].id
        return None

    def lowest_active_offset(self) -> int | None:
        """Kafka's ``lowestActiveOffset``: the smallest metadata offset any active broker reported (None,
        Kafka's Long.MAX_VALUE, when no broker is active)."""
        active = self.active()
        return active[0].metadata_offset if active else None

    def maybe_update_controlled_shutdown_offset(self, broker_id: int, offset: int) -> None:
        """Kafka's ``maybeUpdateControlledShutdownOffset``: the first controlled-shutdown batch's offset
        sticks; the broker leaves the active set."""
        broker = self._state_or_throw(broker_id)
        if broker.fenced:
            raise RuntimeError(f"Fenced brokers cannot enter controlled shutdown (broker {broker_id}).")
        if broker.controlled_shutdown_offset < 0:
            broker.controlled_shutdown_offset = offset

    def update_controlled_shutdown_offset(self, broker_id: int, offset: int) -> None:
        """Kafka's ``updateControlledShutdownOffset`` (tests): always overwrites."""
        broker = self._state_or_throw(broker_id)
        if broker.fenced:
            raise RuntimeError(f"Fenced brokers cannot enter controlled shutdown (broker {broker_id}).")
        broker.controlled_shutdown_offset = offset

    def current_broker_state(self, broker: BrokerHeartbeatState) -> BrokerControlState:
        # Kafka: BrokerHeartbeatManager.currentBrokerState -- shutting down is checked before fenced.
        if broker.shutting_down:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        if broker.fenced:
            return BrokerControlState.FENCED
        return BrokerControlState.UNFENCED

    def calculate_next_broker_state(
        self, broker_id: int, request: BrokerHeartbeatRequest, register_broker_record_offset: int,
        has_leaderships: bool,
    ) -> BrokerControlStates:
        """Kafka's ``calculateNextBrokerState`` (``has_leaderships``: the broker leads some partition)."""
        broker = self._state_or_throw(broker_id)
        current = self.current_broker_state(broker)
        S = BrokerControlState
        if current is S.FENCED:
            if request.want_shutdown:
                return BrokerControlStates(current, S.SHUTDOWN_NOW)
            if not request.want_fence and request.current_metadata_offset >= register_broker_record_offset:
                return BrokerControlStates(current, S.UNFENCED)
            return BrokerControlStates(current, S.FENCED)
        if current is S.UNFENCED:
            if request.want_fence:
                return BrokerControlStates(current, S.SHUTDOWN_NOW if request.want_shutdown else S.FENCED)
            if request.want_shutdown:
                return BrokerControlStates(
                    current, S.CONTROLLED_SHUTDOWN if has_leaderships else S.SHUTDOWN_NOW)
            return BrokerControlStates(current, S.UNFENCED)
        # CONTROLLED_SHUTDOWN: granted once the broker leads nothing and every active broker has caught up to
        # the records that began the shutdown.
        if has_leaderships:
            return BrokerControlStates(current, S.CONTROLLED_SHUTDOWN)
        lowest = self.lowest_active_offset()
        if lowest is None or broker.controlled_shutdown_offset <= lowest:
            return BrokerControlStates(current, S.SHUTDOWN_NOW)
        return BrokerControlStates(current, S.CONTROLLED_SHUTDOWN)
