"""A broker's KRaftMetadataCache: the image after each published delta, and the Metadata answer read from it
(KafkaApis.handleTopicMetadataRequest -> MetadataCache.getTopicMetadata)."""

from __future__ import annotations

from kafkasim.broker.metadata import NO_LEADER, MetadataDelta, PartitionRegistration
from kafkasim.broker.records import TopicPartition
from kafkasim.server.metadata_cache import KRaftMetadataCache

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def _registration(leader: int, epoch: int) -> PartitionRegistration:
    return PartitionRegistration(replicas=(0, 1), isr=(0, 1), leader=leader, leader_epoch=epoch, partition_epoch=epoch)


def test_the_answer_follows_the_published_deltas() -> None:
    cache = KRaftMetadataCache({TP0: _registration(0, 0), TP1: _registration(1, 0)})
    assert cache.topic_metadata([TP0, TP1]) == {TP0: (0, 0), TP1: (1, 0)}
    cache.set_image(MetadataDelta(offset=5, partitions={TP0: _registration(1, 1)}, deleted=frozenset({TP1})))
    assert cache.get(TP0) == _registration(1, 1)
    # A partition the image does not have: no leader, no epoch.
    assert cache.topic_metadata([TP0, TP1]) == {TP0: (1, 1), TP1: (NO_LEADER, -1)}


def test_the_cache_is_a_copy_of_the_image_it_started_from() -> None:
    image = {TP0: _registration(0, 0)}
    cache = KRaftMetadataCache(image)
    cache.set_image(MetadataDelta(offset=1, partitions={TP0: _registration(1, 1)}))
    assert image[TP0].leader == 0
