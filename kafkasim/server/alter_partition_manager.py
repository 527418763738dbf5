"""The broker's AlterPartitionManager: ISR changes sent to the controller, answered after a latency."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simpy import Environment

from kafkasim.broker.alter_partition import (
    AlterPartitionCallback,
    ControllerAlterPartitionManager,
    LeaderAndIsr,
)
from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.sim.calls import Call


class DelayedAlterPartitionManager:
    """AlterPartition through a controller that answers after ``latency`` (spec §6.6).

    The controller's decision is taken when the answer is due, as the KRaft controller commits the
    request when it processes it.
    """

    def __init__(self, env: Environment, latency: Callable[[], float]) -> None:
        self.env = env
        self.latency = latency
        self.controller = ControllerAlterPartitionManager(auto_complete=True)
        self.submitted = 0
        self.observer: Any = None

    def submit(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr, callback: AlterPartitionCallback) -> None:
        self.submitted += 1
        if self.observer is not None:
            self.observer.on_alter_partition_submit(topic_partition, leader_and_isr)
        Call(self.env, max(0.0, self.latency()), lambda _e: self._answer(topic_partition, leader_and_isr, callback))

    def _answer(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr, callback: AlterPartitionCallback) -> None:
        observer = self.observer
        if observer is None:
            self.controller.submit(topic_partition, leader_and_isr, callback)
            return

        def answered(result: LeaderAndIsr | Errors) -> None:
            # The checker must know a committed ISR before the acknowledgements it makes possible.
            observer.on_alter_partition_commit(topic_partition, result)
            callback(result)
            observer.after_alter_partition(topic_partition)

        self.controller.submit(topic_partition, leader_and_isr, answered)
