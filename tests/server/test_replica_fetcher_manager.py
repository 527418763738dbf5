"""Kafka's ``AbstractFetcherManager``: the fetcher id of a partition and the threads keyed by (source broker,
fetcher id). Java's hash values below are the JVM's (``String.hashCode`` over UTF-16 code units, 32-bit
int overflow)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from kafkasim.broker.records import TopicPartition
from kafkasim.server.replica_fetcher_manager import (
    INT_MIN,
    AbstractFetcherManager,
    InitialFetchState,
    get_fetcher_id,
    java_string_hash_code,
    to_int32,
    utils_abs,
)


def test_java_string_hash_code_matches_the_jvm() -> None:
    assert java_string_hash_code("") == 0
    assert java_string_hash_code("t") == 116
    assert java_string_hash_code("topic") == 110546223
    # "Aa" and "BB" collide in Java (65*31+97 == 66*31+66 == 2112).
    assert java_string_hash_code("Aa") == java_string_hash_code("BB") == 2112
    # Sums that overflow 32 bits on the way.
    assert java_string_hash_code("hello world") == 1794106052
    assert java_string_hash_code("polygenelubricants") == INT_MIN
    # A character outside the BMP is two UTF-16 code units (0xD83D, 0xDE00), not one code point.
    assert java_string_hash_code("\U0001F600") == 0xD83D * 31 + 0xDE00


def test_utils_abs_maps_integer_min_value_to_zero() -> None:
    assert utils_abs(INT_MIN) == 0
    assert utils_abs(-5) == 5 and utils_abs(7) == 7 and utils_abs(2**31 - 1) == 2**31 - 1


def test_get_fetcher_id_is_kafkas_formula_with_int_overflow() -> None:
    # 31 * 110546223 = 3426932913 wraps to -868034383: abs 868034383 (odd) -> fetcher 1 of 2.
    assert to_int32(31 * 110546223) == -868034383
    assert [get_fetcher_id("topic", p, 2) for p in range(4)] == [1, 0, 1, 0]
    assert [get_fetcher_id("topic", p, 3) for p in range(3)] == [868034383 % 3, 868034382 % 3, 868034381 % 3]
    assert all(get_fetcher_id("topic", p, 1) == 0 for p in range(10))
    # 31 * Integer.MIN_VALUE wraps to Integer.MIN_VALUE itself: Utils.abs gives 0, where a plain abs would
    # give 2^31 (and 2^31 % 3 == 2).
    assert to_int32(31 * INT_MIN + 0) == INT_MIN
    assert get_fetcher_id("polygenelubricants", 0, 3) == 0
    assert (2**31) % 3 == 2


class FakeThread:
    """Stands for an ``AbstractFetcherThread``: remembers what the manager gave it."""

    def __init__(self, fetcher_id: int, source: int) -> None:
        self.fetcher_id = fetcher_id
        self._source = source
        self.partitions: dict[TopicPartition, InitialFetchState] = {}

    @property
    def source_broker(self) -> int:
        return self._source

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    def add_partitions(self, partitions: Mapping[TopicPartition, InitialFetchState]) -> None:
        self.partitions.update(partitions)

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.partitions.pop(tp, None)


def _manager(num_fetchers: int) -> tuple[AbstractFetcherManager[FakeThread], list[FakeThread]]:
    created: list[FakeThread] = []

    def create(fetcher_id: int, source: int) -> FakeThread:
        thread = FakeThread(fetcher_id, source)
        created.append(thread)
        return thread

    return AbstractFetcherManager("fetcher-manager", num_fetchers, create), created


def test_add_and_remove_partition() -> None:
    # AbstractFetcherManagerTest.testAddAndRemovePartition: one partition, one thread created for its
    # (leader, fetcher id); removing the partition leaves the thread without it.
    manager, created = _manager(2)
    tp = TopicPartition("topic", 0)
    manager.add_fetcher_for_partitions({tp: InitialFetchState(leader=0, current_leader_epoch=15)})
    assert len(created) == 1 and created[0].fetcher_id == get_fetcher_id("topic", 0, 2) == 1
    assert created[0].partitions == {tp: InitialFetchState(0, 15)}
    assert manager.fetcher_for(tp, 0) is created[0]
    manager.remove_fetcher_for_partitions([tp])
    assert created[0].partition_count == 0


def test_threads_are_keyed_by_source_broker_and_fetcher_id() -> None:
    manager, created = _manager(2)
    tps = [TopicPartition("topic", p) for p in range(6)]
    # Partitions 0..2 led by broker 0, 3..5 by broker 1; added one call at a time and all at once.
    manager.add_fetcher_for_partitions({tps[0]: InitialFetchState(0, 0)})
    manager.add_fetcher_for_partitions({tp: InitialFetchState(0 if tp.partition < 3 else 1, 0) for tp in tps[1:]})
    keys = [(k.broker_id, k.fetcher_id) for k in manager.fetcher_thread_map]
    assert keys == [(0, 1), (0, 0), (1, 0), (1, 1)]  # at most num_fetchers threads per source broker
    assert len(created) == 4
    by_key = {(k.broker_id, k.fetcher_id): t for k, t in manager.fetcher_thread_map.items()}
    assert sorted(tp.partition for tp in by_key[(0, 1)].partitions) == [0, 2]
    assert sorted(tp.partition for tp in by_key[(0, 0)].partitions) == [1]
    assert sorted(tp.partition for tp in by_key[(1, 1)].partitions) == [4]
    assert sorted(tp.partition for tp in by_key[(1, 0)].partitions) == [3, 5]
    assert all(t.source_broker == k.broker_id for k, t in manager.fetcher_thread_map.items())


def test_one_fetcher_means_one_thread_per_source_broker() -> None:
    manager, created = _manager(1)
    manager.add_fetcher_for_partitions(
        {TopicPartition(topic, p): InitialFetchState(p % 2, 0) for topic in ("a", "b") for p in range(4)}
    )
    assert [(t.source_broker, t.partition_count) for t in created] == [(0, 4), (1, 4)]


def test_num_fetchers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="num.replica.fetchers must be >= 1"):
        _manager(0)
