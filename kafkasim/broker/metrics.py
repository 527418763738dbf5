"""Counters the broker's state machines bump; the engine samples them (Kafka's meters, as totals)."""

from __future__ import annotations

from kafkasim.broker.records import TopicPartition


class BrokerMetrics:
    """Totals behind Kafka's rate meters.

    * ``isr_expands`` / ``isr_shrinks`` / ``failed_isr_updates``: ReplicaManager's IsrExpandsPerSec,
      IsrShrinksPerSec, FailedIsrUpdatesPerSec (counted when the AlterPartition answer arrives).
    * ``produce_expires`` / ``produce_expires_by_partition``: DelayedProduceMetrics ExpiresPerSec, one per
      partition still waiting for acks when its DelayedProduce timed out.
    * ``fetch_expires_follower`` / ``fetch_expires_consumer``: DelayedFetchMetrics ExpiresPerSec by
      ``fetcherType``.
    """

    __slots__ = (
        "isr_expands",
        "isr_shrinks",
        "failed_isr_updates",
        "produce_expires",
        "produce_expires_by_partition",
        "fetch_expires_follower",
        "fetch_expires_consumer",
    )

    def __init__(self) -> None:
        self.isr_expands = 0
        self.isr_shrinks = 0
        self.failed_isr_updates = 0
        self.produce_expires = 0
        self.produce_expires_by_partition: dict[TopicPartition, int] = {}
        self.fetch_expires_follower = 0
        self.fetch_expires_consumer = 0

    def record_produce_expiration(self, topic_partition: TopicPartition) -> None:
        self.produce_expires += 1
        by_partition = self.produce_expires_by_partition
        by_partition[topic_partition] = by_partition.get(topic_partition, 0) + 1

    def record_fetch_expiration(self, is_from_follower: bool) -> None:
        if is_from_follower:
            self.fetch_expires_follower += 1
        else:
            self.fetch_expires_consumer += 1

    def __repr__(self) -> str:
        return (
            f"BrokerMetrics(isr_expands={self.isr_expands}, isr_shrinks={self.isr_shrinks}, "
            f"failed_isr_updates={self.failed_isr_updates}, produce_expires={self.produce_expires}, "
            f"fetch_expires_follower={self.fetch_expires_follower}, "
            f"fetch_expires_consumer={self.fetch_expires_consumer})"
        )
