"""A broker's ``MetadataCache`` (Kafka's ``KRaftMetadataCache``): the partitions of the metadata image it has
applied, and the answer to a client's Metadata request read from it (``KafkaApis.handleTopicMetadataRequest``
-> ``MetadataCache.getTopicMetadata``).

The broker's channel to the controller (``MetadataLoader``) sets the image as each committed delta is
published (``BrokerMetadataPublisher.onMetadataUpdate``: ``metadataCache.setImage`` first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkasim.broker.metadata import NO_LEADER, MetadataDelta, PartitionRegistration
from kafkasim.broker.records import TopicPartition


class KRaftMetadataCache:
    """One broker's view of the partitions' registrations, as of the last metadata delta it published."""

    __slots__ = ("partitions",)

    def __init__(self, partitions: Mapping[TopicPartition, PartitionRegistration]) -> None:
        self.partitions: dict[TopicPartition, PartitionRegistration] = dict(partitions)

    def get(self, tp: TopicPartition) -> PartitionRegistration | None:
        return self.partitions.get(tp)

    def set_image(self, delta: MetadataDelta) -> None:
        """``metadataCache.setImage``: the image after ``delta``."""
        self.partitions.update(delta.partitions)
        for tp in delta.deleted:
            self.partitions.pop(tp, None)

    def topic_metadata(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """``KafkaApis.handleTopicMetadataRequest`` (``MetadataCache.getTopicMetadata``): ``{tp: (leader,
        leader epoch)}``, ``(NO_LEADER, -1)`` for a partition the image does not have."""
        answer: dict[TopicPartition, tuple[int, int]] = {}
        for tp in partitions:
            registration = self.partitions.get(tp)
            if registration is not None:
                answer[tp] = (registration.leader, registration.leader_epoch)
            else:
                answer[tp] = (NO_LEADER, -1)
        return answer
