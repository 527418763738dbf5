"""The broker's AlterPartitionManager: ISR changes sent to the controller, answered after a latency."""

from __future__ import annotations

from collections.abc import Callable

from simpy import Environment

from kafkasim.broker.alter_partition import (
    AlterPartitionCallback,
    ControllerAlterPartitionManager,
    LeaderAndIsr,
)
from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.network.observer import Observer
from kafkasim.sim.calls import Call


class DelayedAlterPartitionManager:
    """AlterPartition through a controller that answers after ``latency`` (Kafka's ``AlterPartitionManager``;
    the leader's side is ``Partition.handleAlterPartitionUpdate``).

    The controller's decision is taken when the answer is due, as the KRaft controller commits the
    request when it processes it.
    """

    def __init__(self, env: Environment, latency: Callable[[], float], observer: Observer) -> None:
        self.env = env
        self.latency = latency
        self.controller = ControllerAlterPartitionManager(auto_complete=True)
        self.submitted = 0
        self.observer = observer

    def submit(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr, callback: AlterPartitionCallback) -> None:
        self.submitted += 1
        self.observer.alter_partition_submitted(topic_partition, leader_and_isr)
        Call(self.env, max(0.0, self.latency()), lambda _e: self._answer(topic_partition, leader_and_isr, callback))

    def _answer(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr, callback: AlterPartitionCallback) -> None:
        observer = self.observer

        def answered(result: LeaderAndIsr | Errors) -> None:
            # The checker must know a committed ISR before the acknowledgements it makes possible.
            observer.alter_partition_committed(topic_partition, result)
            callback(result)
            observer.alter_partition_answered(topic_partition)

        self.controller.submit(topic_partition, leader_and_isr, answered)
