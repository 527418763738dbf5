"""``DelayedProduce``: an acks=all produce waiting for the HW to pass its last offset (Kafka's
``DelayedProduce``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkasim.broker.errors import Errors
from kafkasim.broker.produce import PartitionResponse, ProducePartitionStatus
from kafkasim.broker.records import TopicPartition
from kafkasim.purgatory import DelayedOperation

if TYPE_CHECKING:
    from kafkasim.broker.replica_manager import ReplicaManager

ProduceResponseCallback = Callable[[dict[TopicPartition, PartitionResponse]], None]


class DelayedProduce(DelayedOperation):
    """Completes when every partition that appended has HW >= its ``required_offset`` (or failed).

    As Kafka's ``DelayedProduce`` constructor: partitions that appended start as "acks pending" with the error
    preset to REQUEST_TIMED_OUT, which is what they answer if the timeout fires first; partitions that failed
    locally keep their error and do not wait.
    """

    __slots__ = ("required_acks", "produce_status", "replica_manager", "response_callback")

    def __init__(
        self,
        delay_ms: int,
        required_acks: int,
        produce_status: dict[TopicPartition, ProducePartitionStatus],
        replica_manager: ReplicaManager,
        response_callback: ProduceResponseCallback,
    ) -> None:
        super().__init__(delay_ms)
        self.required_acks = required_acks
        self.produce_status = produce_status
        self.replica_manager = replica_manager
        self.response_callback = response_callback
        for status in produce_status.values():
            if status.response_status.error is Errors.NONE:
                status.acks_pending = True
                status.response_status.error = Errors.REQUEST_TIMED_OUT
            else:
                status.acks_pending = False

    def try_complete(self) -> bool:
        """Kafka's ``DelayedProduce.tryComplete``, its cases A (partition gone / offline / unknown), B (not
        leader), C (HW reached)."""
        pending = False
        get_partition_or_error = self.replica_manager.get_partition_or_error
        for topic_partition, status in self.produce_status.items():
            if not status.acks_pending:
                continue
            partition = get_partition_or_error(topic_partition)
            if isinstance(partition, Errors):
                has_enough, error = False, partition
            else:
                has_enough, error = partition.check_enough_replicas_reach_offset(status.required_offset)
            if error is not Errors.NONE or has_enough:
                status.acks_pending = False
                # NONE clears the preset REQUEST_TIMED_OUT.
                status.response_status.error = error
                if error is Errors.NONE:
                    observer = self.replica_manager.observer
                    if observer is not None and observer.checks and not isinstance(partition, Errors):
                        observer.acks_satisfied(topic_partition, status.required_offset, partition)
            else:
                pending = True
        if not pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        metrics = self.replica_manager.metrics
        for topic_partition, status in self.produce_status.items():
            if status.acks_pending:
                metrics.record_produce_expiration(topic_partition)

    def on_complete(self) -> None:
        self.response_callback({tp: status.response_status for tp, status in self.produce_status.items()})

    def __repr__(self) -> str:
        return f"DelayedProduce(acks={self.required_acks}, {self.produce_status!r}, completed={self.is_completed})"
