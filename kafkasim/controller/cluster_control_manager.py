"""Kafka's ``ClusterControlManager``: broker registrations and their epochs.

A broker registers (``registerBroker``); the controller writes a ``RegisterBrokerRecord`` whose offset in the
metadata log becomes the broker's **epoch** (a new incarnation's shutdown records, written first, take the
offsets before it: then the epoch is the first of them), with the broker fenced. Registrations change later
only through ``BrokerRegistrationChangeRecord``s (fence, unfence, in controlled shutdown), written by the
``ReplicationControlManager`` and applied here by ``replay``.

A restarted broker (a new incarnation id) cannot register while its previous incarnation still has a valid
heartbeat session: ``DUPLICATE_BROKER_REGISTRATION`` until the old session expires and the broker is fenced.
"""

from __future__ import annotations

from dataclasses import replace

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.metadata import BrokerRegistration
from kafkasim.controller.broker_heartbeat_manager import BrokerHeartbeatManager
from kafkasim.controller.records import (
    FENCE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    RegisterBrokerRecord,
)


class ClusterControlManager:
    """Kafka's ``ClusterControlManager`` (registrations, epochs, ``isActive``)."""

    __slots__ = ("heartbeat_manager", "_registrations", "_incarnations", "_register_offsets")

    def __init__(self, heartbeat_manager: BrokerHeartbeatManager) -> None:
        self.heartbeat_manager = heartbeat_manager
        self._registrations: dict[int, BrokerRegistration] = {}
        self._incarnations: dict[int, str] = {}
        self._register_offsets: dict[int, int] = {}

    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return self._registrations.get(broker_id)

    def registrations(self) -> dict[int, BrokerRegistration]:
        return dict(sorted(self._registrations.items()))

    def register_broker_record_offset(self, broker_id: int) -> int | None:
        """Kafka's ``registerBrokerRecordOffset``: where the broker's current registration was written."""
        return self._register_offsets.get(broker_id)

    def is_new_incarnation(self, broker_id: int, incarnation_id: str) -> bool:
        return self._incarnations.get(broker_id) != incarnation_id

    def is_clean_shutdown(self, broker_id: int, previous_broker_epoch: int) -> bool:
        """Kafka's ``registerBroker``: a new incarnation shut down cleanly iff the epoch its clean-shutdown file
        holds (``previousBrokerEpoch``, -1: none) is the stored registration's (-2 when there is none)."""
        existing = self._registrations.get(broker_id)
        return (existing.epoch if existing is not None else -2) == previous_broker_epoch

    def register_broker(
        self, broker_id: int, incarnation_id: str, new_broker_epoch: int, rack: str | None = None,
    ) -> RegisterBrokerRecord:
        """Kafka's ``registerBroker``: the record to write (``new_broker_epoch``: the offset the registration
        event starts writing at -- the record's own, unless a new incarnation's shutdown records come first)."""
        existing = self._registrations.get(broker_id)
        # Kafka: ClusterControlManager.registerBroker -- "Another broker is registered with that broker id."
        if (existing is not None and self.heartbeat_manager.has_valid_session(broker_id)
                and self._incarnations.get(broker_id) != incarnation_id):
            raise KafkaError(Errors.DUPLICATE_BROKER_REGISTRATION,
                                 f"Another broker is registered with that broker id ({broker_id}).")
        return RegisterBrokerRecord(broker_id, incarnation_id, new_broker_epoch, rack, fenced=True)

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> None:
        """Kafka's ``checkBrokerEpoch``: STALE_BROKER_EPOCH unless the broker is registered with that epoch."""
        registration = self._registrations.get(broker_id)
        if registration is None:
            raise KafkaError(Errors.STALE_BROKER_EPOCH, f"No broker registration found for broker {broker_id}")
        if registration.epoch != broker_epoch:
            raise KafkaError(Errors.STALE_BROKER_EPOCH,
                             f"Expected broker epoch {registration.epoch}, but got broker epoch {broker_epoch}")

    def is_active(self, broker_id: int) -> bool:
        """Kafka's ``isActive``: registered, unfenced and not in controlled shutdown."""
        registration = self._registrations.get(broker_id)
        return registration is not None and not registration.fenced and not registration.in_controlled_shutdown

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        registration = self._registrations.get(broker_id)
        return registration is not None and registration.in_controlled_shutdown

    def replay_register(self, record: RegisterBrokerRecord, offset: int) -> BrokerRegistration:
        registration = BrokerRegistration(record.broker_id, record.broker_epoch, record.rack,
                                          fenced=record.fenced, in_controlled_shutdown=record.in_controlled_shutdown)
        self._registrations[record.broker_id] = registration
        self._incarnations[record.broker_id] = record.incarnation_id
        self._register_offsets[record.broker_id] = offset
        self.heartbeat_manager.register(record.broker_id, record.fenced)
        return registration

    def replay_change(self, record: BrokerRegistrationChangeRecord) -> BrokerRegistration:
        current = self._registrations[record.broker_id]
        fenced = current.fenced
        if record.fenced == FENCE:
            fenced = True
        elif record.fenced == UNFENCE:
            fenced = False
        changed = replace(current, fenced=fenced,
                          in_controlled_shutdown=current.in_controlled_shutdown or record.in_controlled_shutdown)
        self._registrations[record.broker_id] = changed
        return changed
