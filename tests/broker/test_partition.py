"""Partition: HW (maybeIncrementLeaderHW), ISR expand/shrink (maybeExpandIsr, maybeShrinkIsr), AlterPartition
answers (handleAlterPartitionUpdate), leadership (makeLeader), fetch validation (fetchRecords); Kafka's
PartitionTest and IsrExpirationTest cases re-expressed."""

import pytest

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager, LeaderAndIsr
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import FetchParams, PartitionData
from kafkasim.broker.log import LeaderHwChange, Log, LogOffsetMetadata
from kafkasim.broker.partition import (
    CommittedPartitionState,
    DelayedOperations,
    Partition,
    PendingExpandIsr,
    PendingShrinkIsr,
)
from kafkasim.broker.replica import NEVER_MS
from kafkasim.timer import ManualTime

from .support import TP, batch

LAG = 30_000


class RecordingPurgatory:
    """Records which purgatory was checked, in order (stands where the real purgatories are wired)."""

    def __init__(self, name: str, calls: list) -> None:
        self.name = name
        self.calls = calls

    def check_and_complete(self, key) -> int:
        self.calls.append(self.name)
        return 0


class Setup:
    def __init__(self, replicas=(0, 1, 2), isr=None, *, min_isr=1, auto_complete=True, fenced=(), epoch=0):
        self.time = ManualTime()
        self.log = Log(LogConfig(min_insync_replicas=min_isr), self.time, name="t-0")
        self.controller = ControllerAlterPartitionManager(auto_complete=auto_complete)
        self.checks: list[str] = []
        self.fenced = set(fenced)
        operations = DelayedOperations(
            TP, RecordingPurgatory("Produce", self.checks), RecordingPurgatory("Fetch", self.checks)
        )
        self.partition = Partition(
            TP,
            0,
            KafkaConfig(replica_lag_time_max_ms=LAG, log=self.log.config),
            self.time,
            self.log,
            self.controller,
            delayed_operations=operations,
            is_replica_isr_eligible=lambda b: b not in self.fenced,
        )
        self.partition.make_leader(epoch, replicas if isr is None else isr, list(replicas), 0)
        self.checks.clear()

    def append(self, n: int = 1, acks: int = 1):
        info = None
        for _ in range(n):
            info = self.partition.append_records_to_leader([batch()], acks)
        return info

    def follower_fetch(self, replica_id: int, offset: int, *, epoch: int = -1, last_fetched_epoch: int = -1):
        params = FetchParams(replica_id, 500, 1, 10 * 1024 * 1024)
        data = PartitionData(offset, 0, 1024 * 1024, epoch, last_fetched_epoch)
        return self.partition.fetch_records(params, data, self.time.milliseconds(), 1024 * 1024, True, True)

    def consumer_fetch(self, offset: int, *, epoch: int = -1):
        params = FetchParams(-1, 500, 1, 10 * 1024 * 1024)
        data = PartitionData(offset, 0, 1024 * 1024, epoch)
        return self.partition.fetch_records(params, data, self.time.milliseconds(), 1024 * 1024, True, False)


# ------------------------------------------------------------------------------------------ high watermark


def test_hw_is_min_leo_over_isr_and_waits_for_unknown_followers():
    s = Setup()
    s.append(2)
    s.follower_fetch(1, 20)
    assert s.log.high_watermark == 0  # follower 2's LEO is still unknown (-1)
    s.follower_fetch(2, 10)
    assert s.log.high_watermark == 10
    s.follower_fetch(2, 20)
    assert s.log.high_watermark == 20


def test_hw_increase_from_follower_fetch_checks_fetch_then_produce():
    s = Setup(isr=(0, 1))
    s.fenced.add(2)
    s.append(1)
    s.follower_fetch(1, 10)
    assert s.log.high_watermark == 10
    assert s.checks == ["Fetch", "Produce"]
    s.checks.clear()
    s.follower_fetch(1, 10)  # LEO unchanged: no HW computation, no checks
    assert s.checks == []


def test_pending_expansion_counts_for_hw_immediately():
    # PendingExpandIsr.maximalIsr: a pending expand's new member is in the maximal ISR at once.
    s = Setup(isr=(0, 1), auto_complete=False)
    s.append(1)
    s.time.set(LAG + 10_000)  # follower 2 is not caught up by time
    s.follower_fetch(2, 0)  # LEO 0 >= HW 0 and >= epoch start 0: expansion proposed
    assert isinstance(s.partition.partition_state, PendingExpandIsr)
    assert s.partition.isr == {0, 1}
    assert s.partition.maximal_isr == {0, 1, 2}
    s.follower_fetch(1, 10)
    assert s.log.high_watermark == 0  # held by pending member 2


def test_pending_shrink_does_not_release_hw():
    s = Setup(auto_complete=False)
    s.append(1)
    s.follower_fetch(2, 0)
    s.time.set(LAG + 1)
    s.follower_fetch(1, 10)
    assert s.log.high_watermark == 0
    s.partition.maybe_shrink_isr()
    assert isinstance(s.partition.partition_state, PendingShrinkIsr)
    assert s.partition.maximal_isr == {0, 1, 2}
    s.follower_fetch(1, 10)
    assert s.log.high_watermark == 0
    s.checks.clear()
    s.controller.complete_all()
    assert s.partition.isr == {0, 1}
    assert s.log.high_watermark == 10
    assert s.checks == ["Fetch", "Produce"]


def test_caught_up_eligible_non_isr_follower_holds_hw():
    # Partition.maybeIncrementLeaderHW: a caught-up, ISR-eligible follower outside the ISR still holds the HW,
    # so a catching-up follower does not chase a moving HW forever.
    # Follower 2 caught up at t=0 while fenced (so it did not join the ISR), then was unfenced: caught up "by
    # time" and eligible. (Right after an election a follower outside the ISR is not caught up: Kafka's
    # resetReplicaState sets lastCaughtUpTimeMs to 0, i.e. never.)
    s = Setup(isr=(0, 1), fenced=(2,))
    s.follower_fetch(2, 0)
    assert 2 not in s.partition.maximal_isr
    s.fenced.clear()
    s.append(1)
    s.follower_fetch(1, 10)
    assert s.log.high_watermark == 0
    s.time.set(LAG + 1)  # no longer caught up by time: it stops holding the HW
    s.follower_fetch(1, 10)
    s.partition.maybe_increment_leader_hw()
    assert s.log.high_watermark == 10


def test_ineligible_or_lagging_non_isr_follower_does_not_hold_hw():
    s = Setup(isr=(0, 1), fenced=(2,))
    s.append(1)
    s.follower_fetch(1, 10)
    assert s.log.high_watermark == 10
    s2 = Setup(isr=(0, 1))
    s2.append(1)
    s2.time.set(LAG + 1)
    s2.follower_fetch(1, 10)
    assert s2.log.high_watermark == 10


def test_hw_frozen_under_min_isr():
    # Partition.maybeIncrementLeaderHW (3.7+, KAFKA-15583): the committed ISR {0} is under min ISR 2, so even
    # the leader alone does not move the HW.
    s = Setup(isr=(0,), min_isr=2, fenced=(1, 2))
    info = s.append(1)
    assert info.leader_hw_change is LeaderHwChange.SAME
    assert s.log.high_watermark == 0
    alone = Setup(isr=(0,), min_isr=1, fenced=(1, 2))
    info = alone.append(1)
    assert info.leader_hw_change is LeaderHwChange.INCREASED
    assert alone.log.high_watermark == 10


def test_effective_min_isr_is_capped_by_replication_factor():
    s = Setup(replicas=(0, 1), min_isr=3)
    assert s.partition.effective_min_isr == 2
    s.append(1, acks=-1)
    assert s.log.log_end_offset == 10


def test_append_min_isr_check_uses_committed_isr_and_only_acks_all():
    s = Setup(isr=(0,), min_isr=2, auto_complete=False)
    s.follower_fetch(1, 0)  # pending expansion: maximal ISR {0, 1}, committed {0}
    assert s.partition.maximal_isr == {0, 1}
    with pytest.raises(KafkaError) as e:
        s.append(1, acks=-1)
    assert e.value.error is Errors.NOT_ENOUGH_REPLICAS
    assert s.log.log_end_offset == 0
    s.append(1, acks=1)
    s.append(1, acks=0)
    assert s.log.log_end_offset == 20


def test_append_on_follower_is_not_leader():
    s = Setup()
    s.partition.make_follower(1, 1, (), [0, 1, 2], 1)
    with pytest.raises(KafkaError) as e:
        s.append(1)
    assert e.value.error is Errors.NOT_LEADER_OR_FOLLOWER


def test_check_enough_replicas_reach_offset():
    s = Setup(replicas=(0, 1), min_isr=2, auto_complete=False)
    s.append(1, acks=-1)
    assert s.partition.check_enough_replicas_reach_offset(10) == (False, Errors.NONE)
    s.follower_fetch(1, 10)
    assert s.partition.check_enough_replicas_reach_offset(10) == (True, Errors.NONE)
    # The HW already passed the offset when the ISR shrank below min ISR: the race 3.7+ leaves.
    s.time.set(LAG + 1)
    s.append(1, acks=1)
    s.partition.maybe_shrink_isr()
    s.controller.complete_all()
    assert s.partition.isr == {0}
    assert s.partition.check_enough_replicas_reach_offset(10) == (True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert s.partition.check_enough_replicas_reach_offset(20) == (False, Errors.NONE)
    s.partition.make_follower(1, 1, (), [0, 1], 2)
    assert s.partition.check_enough_replicas_reach_offset(10) == (False, Errors.NOT_LEADER_OR_FOLLOWER)


# ---------------------------------------------------------------------------------------------- expansion


def test_expansion_requires_hw_and_leader_epoch_start_offset():
    s = Setup(isr=(0, 1))
    s.log.append_as_leader([batch(), batch()], 0)  # written in an earlier epoch
    s.partition.make_leader(1, [0, 1], [0, 1, 2], 1)
    assert s.partition.leader_epoch_start_offset == 20
    assert s.log.high_watermark == 0  # follower 1's LEO unknown again
    s.follower_fetch(2, 10)  # >= HW 0 but < epoch start 20
    assert s.partition.isr == {0, 1}
    s.follower_fetch(2, 20)
    assert s.partition.isr == {0, 1, 2}
    assert s.partition.partition_epoch == 2
    assert s.partition.metrics.isr_expands == 1


def test_expansion_ignores_lag_time_and_skips_ineligible():
    s = Setup(isr=(0, 1), fenced=(2,))
    s.time.set(10 * LAG)
    s.follower_fetch(2, 0)
    assert s.partition.isr == {0, 1}  # fenced broker is not eligible
    s.fenced.clear()
    s.follower_fetch(2, 0)
    assert s.partition.isr == {0, 1, 2}  # long idle, but its LEO is at the HW


def test_expansion_below_hw_does_not_happen():
    s = Setup(isr=(0, 1))
    s.time.set(LAG + 1)  # so follower 2 no longer holds the HW
    s.append(2)
    s.follower_fetch(1, 20)
    assert s.log.high_watermark == 20
    s.follower_fetch(2, 10)
    assert s.partition.isr == {0, 1}


def test_only_one_alter_partition_in_flight():
    s = Setup(isr=(0,), auto_complete=False)
    s.follower_fetch(1, 0)
    s.follower_fetch(2, 0)
    assert len(s.controller.pending) == 1
    s.controller.complete_all()
    assert s.partition.isr == {0, 1}
    s.follower_fetch(2, 0)
    s.controller.complete_all()
    assert s.partition.isr == {0, 1, 2}


# ------------------------------------------------------------------------------------ shrink (expiration)


def test_isr_expiration_for_stuck_followers():
    # IsrExpirationTest.testIsrExpirationForStuckFollowers / IfNoFetchRequestMade.
    s = Setup()
    s.append(1)
    s.time.set(LAG)
    s.partition.maybe_shrink_isr()
    assert s.partition.isr == {0, 1, 2}  # exactly lag ms: still caught up
    s.time.set(LAG + 1)
    assert s.partition.get_out_of_sync_replicas(LAG) == [1, 2]
    s.partition.maybe_shrink_isr()
    assert s.partition.isr == {0}
    assert s.partition.metrics.isr_shrinks == 1


def test_isr_expiration_for_slow_followers():
    # Followers keep fetching but never reach the LEO seen at their previous fetch.
    s = Setup()
    for t in range(0, LAG + 2_000, 1_000):
        s.time.set(t)
        s.append(1)
        s.follower_fetch(1, max(0, s.log.log_end_offset - 20))
        s.follower_fetch(2, s.log.log_end_offset)
    assert s.partition.get_out_of_sync_replicas(LAG) == [1]
    s.partition.maybe_shrink_isr()
    assert s.partition.isr == {0, 2}


def test_follower_at_leader_leo_never_expires():
    # IsrExpirationTest.testIsrExpirationForCaughtUpFollowers.
    s = Setup()
    s.append(1)
    s.follower_fetch(1, 10)
    s.follower_fetch(2, 10)
    s.time.set(100 * LAG)
    s.partition.maybe_shrink_isr()
    assert s.partition.isr == {0, 1, 2}


def test_follower_reaching_previous_leo_counts_as_caught_up_then():
    # Replica.updateFetchStateOrThrow in context: fetch at t=20000 sees LEO 20; the next fetch (t=40000)
    # reaches 20 while the LEO is 30 => caught up as of 20000, so at t=50000 it is still within the 30 s lag.
    s = Setup(replicas=(0, 1))
    s.append(2)
    s.time.set(20_000)
    s.follower_fetch(1, 10)
    s.append(1)
    s.time.set(40_000)
    s.follower_fetch(1, 20)
    assert s.partition.get_replica(1).last_caught_up_time_ms == 20_000
    s.time.set(50_000)
    assert s.partition.get_out_of_sync_replicas(LAG) == []
    s.time.set(50_001)
    assert s.partition.get_out_of_sync_replicas(LAG) == [1]


def test_shrink_not_attempted_while_in_flight_or_not_leader():
    s = Setup(isr=(0, 1), auto_complete=False)
    s.follower_fetch(2, 0)  # expansion in flight
    s.time.set(LAG + 1)
    assert s.partition.get_out_of_sync_replicas(LAG) == []
    s.partition.maybe_shrink_isr()
    assert len(s.controller.pending) == 1
    s.controller.complete_all()
    s.partition.make_follower(1, 1, (), [0, 1, 2], 5)
    s.partition.maybe_shrink_isr()
    assert s.controller.pending == ()


# ---------------------------------------------------------------------------------- AlterPartition answers


def test_ineligible_replica_reverts_to_committed_state():
    s = Setup(isr=(0, 1), auto_complete=False)
    s.follower_fetch(2, 0)
    s.controller.complete_next(Errors.INELIGIBLE_REPLICA)
    assert isinstance(s.partition.partition_state, CommittedPartitionState)
    assert s.partition.maximal_isr == {0, 1}
    assert s.partition.metrics.failed_isr_updates == 1
    assert s.controller.pending == ()


def test_fenced_leader_epoch_stays_pending_without_retry():
    s = Setup(isr=(0, 1), auto_complete=False)
    s.follower_fetch(2, 0)
    s.controller.complete_next(Errors.FENCED_LEADER_EPOCH)
    assert isinstance(s.partition.partition_state, PendingExpandIsr)
    assert s.controller.pending == ()
    assert s.controller.submitted == 1


def test_other_errors_retry_the_same_request():
    s = Setup(isr=(0, 1), auto_complete=False)
    s.follower_fetch(2, 0)
    sent = s.controller.pending[0][1]
    s.controller.complete_next(Errors.NETWORK_EXCEPTION)
    assert s.controller.pending == ((TP, sent),)
    s.controller.complete_all()
    assert s.partition.isr == {0, 1, 2}


def test_stale_answer_after_new_leadership_is_ignored():
    s = Setup(isr=(0, 1), auto_complete=False)
    s.follower_fetch(2, 0)
    s.partition.make_leader(1, [0, 1], [0, 1, 2], 3)
    s.controller.complete_all()  # the expansion's answer arrives after the election
    assert s.partition.isr == {0, 1}
    assert s.partition.partition_epoch == 3


def test_success_with_other_leader_epoch_is_ignored():
    s = Setup(isr=(0, 1), auto_complete=False)
    s.follower_fetch(2, 0)
    proposed = s.partition.partition_state
    s.partition._handle_alter_partition_response(proposed, LeaderAndIsr(0, 7, (0, 1, 2), 1))
    assert s.partition.partition_state is proposed
    assert s.partition.metrics.failed_isr_updates == 1


def test_controller_rejects_stale_epochs():
    controller = ControllerAlterPartitionManager()
    assert controller.alter_partition(TP, LeaderAndIsr(0, 1, (0, 1), 4)) == LeaderAndIsr(0, 1, (0, 1), 5)
    assert controller.alter_partition(TP, LeaderAndIsr(0, 0, (0,), 5)) is Errors.FENCED_LEADER_EPOCH
    assert controller.alter_partition(TP, LeaderAndIsr(0, 1, (0,), 4)) is Errors.INVALID_UPDATE_VERSION
    controller.fenced_brokers.add(1)
    assert controller.alter_partition(TP, LeaderAndIsr(0, 1, (0, 1), 5)) is Errors.INELIGIBLE_REPLICA
    with pytest.raises(ValueError, match="no AlterPartition request is pending"):
        controller.complete_next()


# -------------------------------------------------------------------------------------------- leadership


def test_new_leader_epoch_resets_followers():
    s = Setup(isr=(0, 1))
    s.append(1)
    s.follower_fetch(1, 10)
    s.follower_fetch(2, 5)
    s.time.set(1_000)
    s.partition.make_leader(1, [0, 1], [0, 1, 2], 1)  # re-elected: states kept, times reset
    r1, r2 = s.partition.get_replica(1), s.partition.get_replica(2)
    assert (r1.log_end_offset, r1.last_caught_up_time_ms, r1.last_fetch_leader_log_end_offset) == (10, 1_000, 10)
    assert (r2.log_end_offset, r2.last_caught_up_time_ms, r2.last_fetch_time_ms) == (5, NEVER_MS, NEVER_MS)  # Kafka's 0
    s.time.set(2_000)
    s.partition.make_leader(1, [0, 1], [0, 1, 2], 2)  # same epoch: nothing reset
    assert r1.last_caught_up_time_ms == 1_000
    assert s.partition.make_leader(2, [0], [0, 1, 2], 1) is False  # older partition epoch: ignored
    assert s.partition.leader_epoch == 1


def test_new_leader_forgets_follower_state():
    s = Setup(isr=(0, 1))
    s.append(1)
    s.follower_fetch(1, 10)
    s.partition.make_follower(1, 1, (), [0, 1, 2], 1)
    assert s.partition.remote_replicas == ()
    assert s.partition.make_leader(2, [0, 1], [0, 1, 2], 2) is True
    assert s.partition.get_replica(1).log_end_offset == -1


def test_make_follower_with_no_leader_id_change():
    """PartitionTest.testMakeFollowerWithNoLeaderIdChange: makeFollower returns True (restart the fetcher)
    iff the leader epoch is new, even when the leader id stays the same."""
    s = Setup()
    assert s.partition.make_follower(1, 1, (), [0, 1, 2], 1) is True
    assert s.partition.make_follower(1, 4, (), [0, 1, 2], 1) is True
    assert s.partition.make_follower(1, 4, (), [0, 1, 2], 1) is False
    assert s.partition.leader_replica_id == 1 and s.partition.leader_epoch_start_offset is None


def test_do_not_update_epoch_start_offset_if_leader_epoch_is_not_bumped():
    """PartitionTest.testDoNotUpdateEpochStartOffsetIfLeaderEpochIsNotBumped and
    testDoNotResetReplicaStateIfLeaderEpochIsNotBumped: makeLeader with the same leader epoch and a newer
    partition epoch keeps the epoch start offset, the epoch cache and the followers' states."""
    s = Setup(replicas=(0, 1), isr=(0,), epoch=8)
    assert s.partition.leader_epoch_start_offset == 0 and s.log.leader_epoch_cache.entries[-1] == (8, 0)
    s.follower_fetch(1, 0)
    s.append(1)
    assert s.partition.make_leader(8, [0], [0, 1], 2) is False
    assert s.partition.partition_epoch == 2 and s.partition.leader_epoch == 8
    assert s.partition.leader_epoch_start_offset == 0 and s.log.leader_epoch_cache.entries[-1] == (8, 0)
    r1 = s.partition.get_replica(1)
    assert (r1.log_end_offset, r1.log_start_offset) == (0, 0)


def test_follower_does_not_join_isr_until_caught_up_to_offset_within_current_leader_epoch():
    """PartitionTest.testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch: after
    leader -> follower -> leader again (epoch 8 -> 9 -> 10), a follower reaching the HW but not the new
    epoch's start offset stays out of the ISR; it joins once it reaches the start offset."""
    s = Setup(replicas=(0, 1, 2), isr=(0, 2), epoch=8)
    s.time.set(LAG + 1)  # follower 1 (never fetched) no longer counts as caught up: it does not hold the HW
    s.append(2)  # offsets 0-19
    s.follower_fetch(2, 0)
    s.follower_fetch(2, 10)
    assert s.log.high_watermark == 10
    s.partition.make_follower(2, 9, (), [0, 1, 2], 1)
    assert s.partition.make_leader(10, [0, 2], [0, 1, 2], 1) is True
    start = s.log.log_end_offset
    assert s.partition.leader_epoch_start_offset == start == 20
    s.append(1)
    s.follower_fetch(1, 10)  # at the HW, below the epoch start
    assert s.partition.isr == {0, 2} and not s.partition.partition_state.is_inflight
    s.follower_fetch(1, start)
    assert s.partition.maximal_isr == {0, 1, 2}


def test_make_leader_with_leader_only_isr_moves_hw():
    s = Setup(isr=(0, 1))
    s.append(1)
    assert s.log.high_watermark == 0
    s.partition.make_leader(1, [0], [0, 1, 2], 1)
    s.time.set(LAG + 1)
    s.partition.make_leader(1, [0], [0, 1, 2], 2)
    assert s.log.high_watermark == 10
    assert s.checks == ["Fetch", "Produce"]


# ------------------------------------------------------------------------------------------- fetch_records


def test_fetch_returns_hw_captured_before_the_read():
    # Partition.readRecords: the fetch that advances the HW reports the old one.
    s = Setup(replicas=(0, 1))
    s.append(1)
    info = s.follower_fetch(1, 10)
    assert s.log.high_watermark == 10
    assert info.high_watermark == 0
    assert info.log_end_offset == 10


def test_fetch_validation_errors():
    s = Setup(replicas=(0, 1))
    for replica_id, epoch, expected in ((5, -1, Errors.NOT_LEADER_OR_FOLLOWER), (5, 0, Errors.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(KafkaError) as e:
            s.follower_fetch(replica_id, 0, epoch=epoch)
        assert e.value.error is expected
    s.partition.make_leader(3, [0, 1], [0, 1], 1)
    for epoch, expected in ((2, Errors.FENCED_LEADER_EPOCH), (4, Errors.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(KafkaError) as e:
            s.consumer_fetch(0, epoch=epoch)
        assert e.value.error is expected
    s.consumer_fetch(0, epoch=3)
    s.partition.make_follower(1, 4, (), [0, 1], 2)
    with pytest.raises(KafkaError) as e:
        s.consumer_fetch(0)
    assert e.value.error is Errors.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KafkaError) as e:
        s.partition.fetch_offset_snapshot(-1, True)
    assert e.value.error is Errors.NOT_LEADER_OR_FOLLOWER


def test_diverging_epoch_returns_empty_and_skips_follower_update():
    s = Setup(replicas=(0, 1))
    s.append(1)  # epoch 0: 0..9
    s.partition.make_leader(2, [0, 1], [0, 1], 1)
    s.append(1)  # epoch 2: 10..19
    before = s.partition.get_replica(1).log_end_offset
    info = s.follower_fetch(1, 15, last_fetched_epoch=1)
    assert info.diverging_epoch is not None
    assert (info.diverging_epoch.leader_epoch, info.diverging_epoch.end_offset) == (0, 10)
    assert info.fetched_data.size_in_bytes == 0
    assert s.partition.get_replica(1).log_end_offset == before
    ok = s.follower_fetch(1, 10, last_fetched_epoch=0)
    assert ok.diverging_epoch is None
    assert s.partition.get_replica(1).log_end_offset == 10
    with pytest.raises(KafkaError) as e:
        s.follower_fetch(1, 10, last_fetched_epoch=9)  # beyond any epoch: undefined
    assert e.value.error is Errors.OFFSET_OUT_OF_RANGE


def test_follower_fetch_records_follower_metadata():
    s = Setup(replicas=(0, 1))
    s.append(2)
    s.follower_fetch(1, 10)
    assert s.partition.get_replica(1).log_end_offset_metadata == LogOffsetMetadata(10, 0, 100)


def test_acks_check_uses_maximal_isr_for_min_isr():
    # Partition.checkEnoughReplicasReachOffset: committed ISR {0} is under min ISR 2 but a pending expansion
    # makes the maximal ISR {0, 1}.
    s = Setup(replicas=(0, 1), min_isr=2, auto_complete=False)
    s.append(1)
    s.follower_fetch(1, 10)  # HW 10
    s.append(1)
    s.time.set(LAG + 1)
    s.partition.maybe_shrink_isr()
    s.controller.complete_all()
    assert s.partition.isr == {0}
    s.follower_fetch(1, 10)  # in sync again (LEO 10 >= HW 10): expansion pending
    assert s.partition.isr == {0} and s.partition.maximal_isr == {0, 1}
    assert s.partition.check_enough_replicas_reach_offset(10) == (True, Errors.NONE)
