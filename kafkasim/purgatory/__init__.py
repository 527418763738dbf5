"""Kafka's purgatory: `DelayedOperation` and `DelayedOperationPurgatory`, single-threaded, no SimPy."""

from kafkasim.purgatory.delay_queue_timer import DelayQueueTimer
from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.delayed_operation_key import TopicPartitionOperationKey
from kafkasim.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from kafkasim.purgatory.group_watch_strategy import GroupWatchStrategy
from kafkasim.purgatory.key_group import KeyGroup
from kafkasim.purgatory.purgatory_timer import (
    PURGATORY_TIMER_KINDS,
    PurgatoryTimer,
    PurgatoryTimerKind,
    new_purgatory_timer,
)
from kafkasim.purgatory.watchers import Watchers

__all__ = [
    "PURGATORY_TIMER_KINDS",
    "DelayQueueTimer",
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "GroupWatchStrategy",
    "KeyGroup",
    "PurgatoryTimer",
    "PurgatoryTimerKind",
    "TopicPartitionOperationKey",
    "Watchers",
    "new_purgatory_timer",
]
