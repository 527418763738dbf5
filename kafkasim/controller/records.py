"""The metadata records the controller writes to the ``__cluster_metadata`` log (Kafka's generated
``*Record`` message classes, the fields the simulator uses) and how a partition change merges into a
``PartitionRegistration`` (Kafka's ``PartitionRegistration.merge``).

A ``PartitionChangeRecord`` only carries the fields that change: ``leader`` is ``NO_LEADER_CHANGE`` (-2)
when the leader is unchanged, ``isr`` / ``elr`` / ``last_known_elr`` / ``leader_recovery_state`` / ``replicas``
are None when unchanged (``elr`` is the record's ``eligibleLeaderReplicas`` field, KIP-966).
Merging bumps the partition epoch by one for every record, the leader epoch only when the record sets
the ``leader`` field (to any value, even the current leader or -1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kafkasim.broker.metadata import PartitionRegistration
from kafkasim.broker.records import TopicPartition

NO_LEADER_CHANGE = -2
"""``LeaderConstants.NO_LEADER_CHANGE``."""

# Kafka's BrokerRegistrationFencingChange / BrokerRegistrationInControlledShutdownChange values.
FENCING_NONE = 0
FENCE = 1
UNFENCE = -1


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    broker_id: int
    broker_epoch: int
    fenced: int = FENCING_NONE
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    topic_partition: TopicPartition
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    topic_partition: TopicPartition
    leader: int = NO_LEADER_CHANGE
    isr: tuple[int, ...] | None = None
    leader_recovery_state: int | None = None
    replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ClearElrRecord:
    """Kafka's ``ClearElrRecord``, written when min.insync.replicas changes
    (``ConfigurationControlManager.createClearElrRecordsAsNeeded``): the ELR and last known ELR of every
    partition of ``topic`` (None: of every topic) are emptied (``ReplicationControlManager.replay(ClearElrRecord)``)."""

    topic: str | None = None


MetadataRecord = (RegisterBrokerRecord | BrokerRegistrationChangeRecord | TopicRecord | PartitionRecord
                  | PartitionChangeRecord | ClearElrRecord)


def merge(partition: PartitionRegistration, record: PartitionChangeRecord) -> PartitionRegistration:
    """Kafka's ``PartitionRegistration.merge``."""
    if record.leader == NO_LEADER_CHANGE:
        leader, leader_epoch = partition.leader, partition.leader_epoch
    else:
        leader, leader_epoch = record.leader, partition.leader_epoch + 1
    return replace(
        partition,
        replicas=partition.replicas if record.replicas is None else record.replicas,
        isr=partition.isr if record.isr is None else record.isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition.partition_epoch + 1,
        leader_recovery_state=(partition.leader_recovery_state if record.leader_recovery_state is None
                               else record.leader_recovery_state),
        elr=partition.elr if record.elr is None else record.elr,
        last_known_elr=partition.last_known_elr if record.last_known_elr is None else record.last_known_elr,
    )
