"""The metadata records the controller writes to the ``__cluster_metadata`` log (Kafka's generated
``*Record`` message classes, the fields the simulator uses) and how a partition change merges into a
``PartitionRegistration`` (Kafka's ``PartitionRegistration.merge``).

A ``PartitionChangeRecord`` only carries the fields that change: ``leader`` is ``NO_LEADER_CHANGE`` (-2)
when the leader is unchanged, ``isr`` / ``leader_recovery_state`` / ``replicas`` are None when unchanged.
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


MetadataRecord = (RegisterBrokerRecord | BrokerRegistrationChangeRecord | TopicRecord | PartitionRecord
                  | PartitionChangeRecord)


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
    )
