"""Watch keys for delayed operations (Kafka's `DelayedOperationKey.scala`).

The purgatory accepts any hashable key; this is the one produce and fetch use.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartitionOperationKey(NamedTuple):
    """Operations waiting on one partition: equal iff topic and partition are equal.

    A NamedTuple (as ``TopicPartition``): every purgatory check and watch hashes its key, and tuple hashing
    and equality are C -- a frozen dataclass's generated ``__hash__`` is a Python call each time (the same
    hash value: both hash ``(topic, partition)``). Purgatories watch only these keys and ``KeyGroup``s, so
    being equal to a plain tuple of the same fields never matters.
    """

    topic: str
    partition: int

    @property
    def key_label(self) -> str:
        return f"{self.topic}-{self.partition}"
