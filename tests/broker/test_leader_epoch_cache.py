"""LeaderEpochFileCache: assign, endOffsetFor, truncation (Kafka's LeaderEpochFileCacheTest, in part)."""

import pytest

from kafkasim.broker.leader_epoch_cache import LeaderEpochFileCache


def cache_with(*entries):
    cache = LeaderEpochFileCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_assign_ignores_same_epoch_later_offset_and_drops_contradicted_entries():
    cache = cache_with((0, 0), (1, 10))
    assert not cache.assign(1, 15)
    assert cache.assign(1, 5)  # same epoch, earlier start: replaced
    assert [tuple(e) for e in cache.entries] == [(0, 0), (1, 5)]
    assert cache.assign(2, 3)  # start below epoch 1's: epoch 1 is dropped
    assert [tuple(e) for e in cache.entries] == [(0, 0), (2, 3)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_end_offset_for():
    cache = cache_with((1, 0), (3, 10), (5, 20))
    assert cache.end_offset_for(5, log_end_offset=30) == (5, 30)  # latest epoch: the LEO
    assert cache.end_offset_for(3, 30) == (3, 20)
    assert cache.end_offset_for(4, 30) == (3, 20)  # unknown epoch: largest below it
    assert cache.end_offset_for(0, 30) == (0, 0)  # below every epoch: start of the first one
    assert cache.end_offset_for(6, 30) == (-1, -1)  # beyond every epoch
    assert cache.end_offset_for(-1, 30) == (-1, -1)
    assert LeaderEpochFileCache().end_offset_for(0, 30) == (-1, -1)


def test_truncate_from_end_and_start():
    cache = cache_with((1, 0), (3, 10), (5, 20))
    cache.truncate_from_end(20)
    assert cache.latest_epoch == 3
    cache.truncate_from_start(12)
    assert [tuple(e) for e in cache.entries] == [(3, 12)]
