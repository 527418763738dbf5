"""What ``ReplicaManager.apply_delta`` hands the broker's fetcher manager (Kafka's ``applyDelta`` results:
the partitions for ``removeFetcherForPartitions`` and ``addFetcherForPartitions`` with their
``InitialFetchState``)."""

from __future__ import annotations

from typing import NamedTuple

from kafkasim.broker.log import Log
from kafkasim.broker.records import TopicPartition


class FollowerFetchStart(NamedTuple):
    """Where a follower starts fetching a partition (Kafka's ``InitialFetchState``): from broker ``leader``
    with ``leader_epoch`` as its current leader epoch, at ``init_offset``
    (``ReplicaManager.initialFetchOffset``)."""

    leader: int
    leader_epoch: int
    init_offset: int


class AppliedDelta:
    """What ``ReplicaManager.apply_delta`` did, for the broker's fetcher manager: the partitions whose
    fetchers stop (``removeFetcherForPartitions``), in the order Kafka removes them, and those that start
    fetching from a (new) leader (``addFetcherForPartitions``); plus the partitions that became leader,
    became (or stayed) follower, and were stopped."""

    __slots__ = ("fetchers_to_remove", "fetchers_to_add", "leaders", "followers", "stopped")

    def __init__(self) -> None:
        self.fetchers_to_remove: list[TopicPartition] = []
        self.fetchers_to_add: dict[TopicPartition, FollowerFetchStart] = {}
        self.leaders: list[TopicPartition] = []
        self.followers: list[TopicPartition] = []
        self.stopped: list[TopicPartition] = []

    def __repr__(self) -> str:
        return (
            f"AppliedDelta(leaders={self.leaders}, followers={self.followers}, stopped={self.stopped}, "
            f"remove={self.fetchers_to_remove}, add={self.fetchers_to_add})"
        )


def initial_fetch_offset(log: Log) -> int:
    """Kafka's ``ReplicaManager.initialFetchOffset``: a log with leader epochs starts fetching at its LEO
    (divergence is then found by the leader from the last fetched epoch, KIP-595); one without at its HW."""
    return log.log_end_offset if log.latest_epoch >= 0 else log.high_watermark
