"""The cluster metadata a broker receives from the KRaft controller: Kafka's ``PartitionRegistration`` (one
partition's replicas, ISR, leader and epochs in the metadata image) and a ``MetadataDelta`` (what one
committed batch of metadata records changed), which ``ReplicaManager.apply_delta`` acts on (Kafka's
``ReplicaManager.applyDelta``).

Plain data, no behaviour: the controller (``kafkasim.controller``) makes them, brokers and clients read
them; the heartbeat and registration messages between a broker and the controller live here too. Field names are Kafka's (``PartitionRegistration``, ``BrokerRegistration``), in snake_case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition

NO_LEADER: Final = -1
"""``LeaderConstants.NO_LEADER``: a partition with no leader (offline)."""

LEADER_RECOVERY_RECOVERED: Final = 0
"""``LeaderRecoveryState.RECOVERED``."""
LEADER_RECOVERY_RECOVERING: Final = 1
"""``LeaderRecoveryState.RECOVERING``: set by an unclean election until the new leader reports back."""


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """One partition in the metadata image (Kafka's ``PartitionRegistration``)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """One broker in the metadata image (Kafka's ``BrokerRegistration``, the fields the simulator uses)."""

    broker_id: int
    epoch: int
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    """The fields of Kafka's ``BrokerHeartbeatRequestData`` the controller reads (defaults are Kafka's): what a
    broker's ``BrokerLifecycleManager`` sends and the controller's ``BrokerHeartbeatManager`` reads."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int = 0
    want_fence: bool = False
    want_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatReply:
    """Kafka's ``BrokerHeartbeatReply`` (plus the error, which Kafka carries in the response)."""

    is_caught_up: bool
    is_fenced: bool
    in_controlled_shutdown: bool
    should_shut_down: bool
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class BrokerRegistrationReply:
    """Kafka's ``BrokerRegistrationReply``: the new broker epoch (-1 with an error)."""

    epoch: int
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class MetadataDelta:
    """What one committed batch of metadata records changed (Kafka's ``MetadataDelta``, reduced to topics and
    brokers): ``offset`` is the batch's last record offset in the metadata log; ``partitions`` the partitions
    whose registration changed (their new registration); ``deleted`` partitions removed; ``brokers`` the
    brokers whose registration changed."""

    offset: int
    partitions: Mapping[TopicPartition, PartitionRegistration] = field(default_factory=dict)
    deleted: frozenset[TopicPartition] = frozenset()
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
