"""Kafka's purgatory: `DelayedOperation` and `DelayedOperationPurgatory`, single-threaded, no SimPy."""

from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.delayed_operation_key import TopicPartitionOperationKey
from kafkasim.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from kafkasim.purgatory.watchers import Watchers

__all__ = ["DelayedOperation", "DelayedOperationPurgatory", "TopicPartitionOperationKey", "Watchers"]
