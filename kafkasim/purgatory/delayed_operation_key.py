"""Watch keys for delayed operations (Kafka's `DelayedOperationKey.scala`).

The purgatory accepts any hashable key; this is the one produce and fetch use.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicPartitionOperationKey:
    """Operations waiting on one partition: equal iff topic and partition are equal."""

    topic: str
    partition: int

    @property
    def key_label(self) -> str:
        return f"{self.topic}-{self.partition}"
