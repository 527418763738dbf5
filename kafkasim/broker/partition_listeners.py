"""``PartitionListeners``: what the hosted partitions tell beyond Kafka's ``ReplicaManager``.

Not Kafka's algorithm: bookkeeping beside ``ReplicaManager``. Every change of a partition a parked fetch's
verdict depends on goes to ``PartitionChanges`` (the simulator's lazy session reads and re-reads), and,
when the run checks invariants, a new leadership, the ISR a leader takes from the metadata, a segment roll
or the high watermark reaching a segment goes to the ``BrokerObserver``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from kafkasim.broker.metadata import LEADER_RECOVERY_RECOVERING, PartitionRegistration
from kafkasim.broker.observer import BrokerObserver
from kafkasim.broker.partition import Partition
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.session_reads.partition_changes import PartitionChanges


class PartitionListeners:
    """The callbacks ``ReplicaManager.create_partition`` gives a partition's ``Log`` and ``Partition``, and
    what ``ReplicaManager`` tells the run's observer."""

    __slots__ = ("broker_id", "partition_changes", "observer", "partitions")

    def __init__(
        self,
        broker_id: int,
        partition_changes: PartitionChanges,
        observer: BrokerObserver | None,
        partitions: Mapping[TopicPartition, Partition],
    ) -> None:
        self.broker_id = broker_id
        self.partition_changes = partition_changes
        self.observer = observer
        self.partitions = partitions  # the ReplicaManager's hosted partitions (read, never written here)

    def on_change(self, topic_partition: TopicPartition) -> Callable[[], None]:
        # A partial rather than a closure: no frame of its own for every append and high watermark move.
        return partial(self.partition_changes.record, topic_partition)

    def on_roll(self, topic_partition: TopicPartition) -> Callable[[int, str], None] | None:
        return partial(self._segment_rolled, topic_partition) if self.observer is not None else None

    def on_high_watermark_segment(self, topic_partition: TopicPartition) -> Callable[[int, bool], None] | None:
        return partial(self._high_watermark_reached_segment, topic_partition) if self.observer is not None else None

    def became_leader(self, topic_partition: TopicPartition, partition: Partition) -> None:
        if self.observer is not None:
            self.observer.became_leader(self.broker_id, topic_partition, partition)

    def isr_from_metadata(self, topic_partition: TopicPartition, registration: PartitionRegistration) -> None:
        observer = self.observer
        if observer is not None and observer.checks:
            observer.isr_from_metadata(self.broker_id, topic_partition, registration.isr,
                                       registration.leader_recovery_state == LEADER_RECOVERY_RECOVERING)

    def _segment_rolled(self, topic_partition: TopicPartition, base_offset: int, reason: str) -> None:
        observer = self.observer
        assert observer is not None  # the listener is only set with one
        partition = self.partitions.get(topic_partition)
        observer.segment_rolled(self.broker_id, topic_partition, base_offset, reason,
                                partition is not None and partition.is_leader)

    def _high_watermark_reached_segment(self, topic_partition: TopicPartition, base_offset: int, passed: bool) -> None:
        observer = self.observer
        assert observer is not None  # the listener is only set with one
        partition = self.partitions.get(topic_partition)
        if partition is not None and partition.is_leader:  # the consumers' fetches park at the leader
            observer.high_watermark_reached_segment(self.broker_id, topic_partition, base_offset, passed)
