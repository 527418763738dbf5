"""Replica (updateFetchStateOrThrow, resetReplicaState, isCaughtUp); Kafka's ReplicaTest re-expressed."""

import pytest

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.log import UNKNOWN_OFFSET_METADATA, LogOffsetMetadata
from kafkasim.broker.replica import NEVER_MS, Replica

MAX_LAG = 30_000


def fetch(replica: Replica, offset: int, time_ms: int, leader_end: int, start: int = 0, epoch: int = -1) -> None:
    replica.update_fetch_state(LogOffsetMetadata(offset), start, time_ms, leader_end, epoch)


def test_initial_state():
    r = Replica(1)
    assert r.log_end_offset_metadata == UNKNOWN_OFFSET_METADATA
    assert (r.log_end_offset, r.log_start_offset) == (-1, -1)
    # Kafka's (0, 0, 0): its 0 ms is 1970; the simulated clock starts at 0 (NEVER_MS).
    assert (r.last_fetch_leader_log_end_offset, r.last_fetch_time_ms, r.last_caught_up_time_ms) == (0, NEVER_MS, NEVER_MS)
    assert r.broker_epoch is None


def test_fetch_at_leader_end_is_caught_up_now():
    r = Replica(1)
    fetch(r, 10, 100, leader_end=10, start=3)
    assert (r.log_end_offset, r.log_start_offset) == (10, 3)
    assert r.last_caught_up_time_ms == 100
    assert r.last_fetch_leader_log_end_offset == 10
    assert r.last_fetch_time_ms == 100


def test_caught_up_time_takes_previous_fetch_time():
    # Replica.updateFetchStateOrThrow: reaching the LEO seen at the previous fetch makes the follower caught
    # up as of then.
    r = Replica(1)
    fetch(r, 5, 100, leader_end=8)
    assert r.last_caught_up_time_ms == NEVER_MS  # Kafka's 0
    fetch(r, 8, 200, leader_end=9)
    assert r.last_caught_up_time_ms == 100
    assert r.last_fetch_leader_log_end_offset == 9
    fetch(r, 8, 300, leader_end=12)  # did not reach 9: unchanged
    assert r.last_caught_up_time_ms == 100


def test_caught_up_time_never_goes_back():
    r = Replica(1)
    fetch(r, 10, 500, leader_end=10)
    fetch(r, 10, 400, leader_end=12)  # an older fetch time cannot lower it
    assert r.last_caught_up_time_ms == 500


def test_last_fetch_leader_leo_is_max():
    r = Replica(1)
    fetch(r, 0, 100, leader_end=10)
    fetch(r, 0, 200, leader_end=7)
    assert r.last_fetch_leader_log_end_offset == 10


def test_is_caught_up():
    r = Replica(1)
    fetch(r, 10, 1000, leader_end=10)
    assert r.is_caught_up(10, 1_000_000, MAX_LAG)  # at the leader LEO: caught up however long ago
    assert r.is_caught_up(11, 1000 + MAX_LAG, MAX_LAG)
    assert not r.is_caught_up(11, 1000 + MAX_LAG + 1, MAX_LAG)


def test_fence_stale_broker_epoch():
    r = Replica(1)
    fetch(r, 1, 100, leader_end=5, epoch=2)
    with pytest.raises(KafkaError) as e:
        fetch(r, 2, 200, leader_end=5, epoch=1)
    assert e.value.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert r.log_end_offset == 1
    fetch(r, 2, 200, leader_end=5, epoch=-1)  # no epoch in the request: not checked
    fetch(r, 3, 300, leader_end=5, epoch=3)
    assert (r.log_end_offset, r.broker_epoch) == (3, 3)


def test_reset_when_reelected_and_in_sync():
    r = Replica(1)
    fetch(r, 10, 100, leader_end=10, start=2, epoch=4)
    r.reset_replica_state(current_time_ms=500, leader_end_offset=15, is_new_leader=False, is_follower_in_sync=True)
    assert (r.log_end_offset, r.log_start_offset, r.broker_epoch) == (10, 2, 4)
    assert (r.last_fetch_leader_log_end_offset, r.last_fetch_time_ms, r.last_caught_up_time_ms) == (15, 500, 500)


def test_reset_when_reelected_and_not_in_sync():
    r = Replica(1)
    fetch(r, 10, 100, leader_end=10)
    r.reset_replica_state(500, 15, is_new_leader=False, is_follower_in_sync=False)
    assert r.log_end_offset == 10
    assert (r.last_fetch_leader_log_end_offset, r.last_fetch_time_ms, r.last_caught_up_time_ms) == (
        15, NEVER_MS, NEVER_MS)  # Kafka's (15, 0, 0)


def test_reset_when_new_leader_and_in_sync():
    r = Replica(1)
    fetch(r, 10, 100, leader_end=10, start=2, epoch=4)
    r.reset_replica_state(500, 15, is_new_leader=True, is_follower_in_sync=True)
    assert r.log_end_offset_metadata == UNKNOWN_OFFSET_METADATA
    assert (r.log_start_offset, r.last_fetch_leader_log_end_offset, r.last_fetch_time_ms) == (-1, -1, NEVER_MS)
    assert r.last_caught_up_time_ms == 500
    assert r.broker_epoch is None


def test_a_replica_never_caught_up_is_not_caught_up_early_in_a_run():
    """Kafka's ReplicaState.EMPTY and resetReplicaState use lastCaughtUpTimeMs = 0 for "never", which on
    Kafka's wall clock (ms since 1970) is decades ago. The simulated clock starts at 0, so a literal 0 made a
    replica that never caught up count as caught up for the run's first replica.lag.time.max.ms -- e.g. an
    out-of-ISR follower holding a new leader's HW back (Partition.maybeIncrementLeaderHW) during the first
    30 s. "Never" must stay never."""
    fresh = Replica(1)
    assert not fresh.is_caught_up(leader_end_offset=10, current_time_ms=5_000, replica_max_lag_ms=MAX_LAG)
    reset = Replica(2)
    fetch(reset, 10, 1_000, leader_end=10)
    reset.reset_replica_state(2_000, leader_end_offset=10, is_new_leader=True, is_follower_in_sync=False)
    assert not reset.is_caught_up(leader_end_offset=10, current_time_ms=3_000, replica_max_lag_ms=MAX_LAG)
    # A fetch that reaches the LEO seen at a previous fetch that never happened is not caught up either.
    fetch(reset, 5, 4_000, leader_end=12)
    assert not reset.is_caught_up(leader_end_offset=12, current_time_ms=4_000, replica_max_lag_ms=MAX_LAG)
