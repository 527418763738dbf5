"""``ReplicaManager.apply_delta``: a broker acting on a committed metadata delta (Kafka's
``ReplicaManager.applyDelta``), ported from Kafka's ``ReplicaManagerTest`` and ``PartitionTest``."""

from __future__ import annotations

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, PartitionData
from kafkasim.broker.metadata import NO_LEADER, BrokerRegistration, MetadataDelta, PartitionRegistration
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import FollowerFetchStart, ReplicaManager
from kafkasim.timer import ManualTime

from .support import Reply, batch

TP = TopicPartition("foo", 0)
LOCAL = 1
OTHER = 2


def manager(local: int = LOCAL) -> ReplicaManager:
    return ReplicaManager(
        local,
        KafkaConfig(log=LogConfig(min_insync_replicas=1)),
        ManualTime(0),
        alter_partition_manager=ControllerAlterPartitionManager(),
    )


def registration(leader: int, leader_epoch: int, partition_epoch: int, isr=(LOCAL, OTHER)) -> PartitionRegistration:
    return PartitionRegistration((LOCAL, OTHER), tuple(isr), leader, leader_epoch, partition_epoch)


def delta(reg: PartitionRegistration | None = None, offset: int = 1, **kwargs) -> MetadataDelta:
    return MetadataDelta(offset, {TP: reg} if reg is not None else {}, **kwargs)


def produce(rm: ReplicaManager, acks: int = -1) -> Reply:
    reply = Reply()
    rm.append_records(30_000, acks, {TP: [batch()]}, reply)
    rm.try_complete_actions()
    return reply


def follower_fetch(rm: ReplicaManager, offset: int, *, min_bytes: int = 1, max_wait_ms: int = 0,
                   epoch: int = -1, replica: int = OTHER) -> Reply:
    reply = Reply()
    rm.fetch_messages(FetchParams(replica, max_wait_ms, min_bytes, 10 << 20),
                      [(TP, PartitionData(offset, 0, 1 << 20, epoch))], reply)
    rm.try_complete_actions()
    return reply


def test_delta_from_leader_to_follower() -> None:
    """ReplicaManagerTest.testDeltaFromLeaderToFollower: leader at epoch 0 (no fetcher), produce and
    replicate; then a delta makes the other broker leader at epoch 1: appends fail, the partition follows
    at epoch 1 and fetches from the other broker at its LEO."""
    rm = manager()
    applied = rm.apply_delta(delta(registration(LOCAL, 0, 0)))
    partition = rm.partitions[TP]
    assert partition.is_leader and partition.isr == {LOCAL, OTHER} and partition.leader_epoch == 0
    assert applied.leaders == [TP] and applied.fetchers_to_add == {} and applied.fetchers_to_remove == [TP]
    reply = produce(rm)
    follower_fetch(rm, 10)
    assert reply.partition(TP).error is Errors.NONE

    applied = rm.apply_delta(delta(registration(OTHER, 1, 1), offset=2))
    assert produce(rm).partition(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    assert not partition.is_leader and partition.leader_epoch == 1 and partition.leader_replica_id == OTHER
    assert applied.followers == [TP]
    assert applied.fetchers_to_add == {TP: FollowerFetchStart(OTHER, 1, 10)}


def test_delta_from_follower_to_leader() -> None:
    """ReplicaManagerTest.testDeltaFromFollowerToLeader: a follower (fetching from the other broker)
    becomes leader at epoch 1: its fetcher stops, it leads with the ISR of the metadata, and a produce is
    acknowledged once the other replica has fetched it."""
    rm = manager()
    applied = rm.apply_delta(delta(registration(OTHER, 0, 0)))
    assert applied.fetchers_to_add == {TP: FollowerFetchStart(OTHER, 0, 0)}
    assert produce(rm).partition(TP).error is Errors.NOT_LEADER_OR_FOLLOWER

    applied = rm.apply_delta(delta(registration(LOCAL, 1, 1), offset=2))
    partition = rm.partitions[TP]
    assert applied.leaders == [TP] and TP in applied.fetchers_to_remove and applied.fetchers_to_add == {}
    reply = produce(rm)
    assert not reply.done  # acks=all waits for the other ISR member
    follower_fetch(rm, 10, epoch=1)
    assert reply.partition(TP).error is Errors.NONE
    assert partition.is_leader and partition.isr == {LOCAL, OTHER} and partition.leader_epoch == 1


def test_delta_follower_with_no_change() -> None:
    """ReplicaManagerTest.testDeltaFollowerWithNoChange: the same delta again changes nothing and does not
    restart the fetcher (Kafka restarts fetchers only on a new leader epoch)."""
    rm = manager()
    first = delta(registration(OTHER, 0, 0))
    assert rm.apply_delta(first).fetchers_to_add
    again = rm.apply_delta(first)
    assert again.fetchers_to_add == {} and again.fetchers_to_remove == []
    assert rm.partitions[TP].leader_epoch == 0 and rm.partitions[TP].leader_replica_id == OTHER


def test_delta_to_follower_completes_produce() -> None:
    """ReplicaManagerTest.testDeltaToFollowerCompletesProduce: a parked acks=all produce completes with
    NOT_LEADER_OR_FOLLOWER when the broker becomes follower (completeDelayedOperationsWhenNotPartitionLeader),
    although its records are in the log."""
    rm = manager()
    rm.apply_delta(delta(registration(LOCAL, 0, 0)))
    reply = produce(rm)
    assert not reply.done
    rm.apply_delta(delta(registration(OTHER, 1, 1), offset=2))
    assert rm.partitions[TP].leader_epoch == 1
    assert reply.partition(TP).error is Errors.NOT_LEADER_OR_FOLLOWER


def test_delta_to_follower_completes_fetch() -> None:
    """ReplicaManagerTest.testDeltaToFollowerCompletesFetch: a parked follower fetch completes with
    NOT_LEADER_OR_FOLLOWER when the broker becomes follower (DelayedFetch case A)."""
    rm = manager()
    rm.apply_delta(delta(registration(LOCAL, 0, 0)))
    reply = follower_fetch(rm, 0, min_bytes=1 << 30, max_wait_ms=1000)
    assert not reply.done
    rm.apply_delta(delta(registration(OTHER, 1, 1), offset=2))
    assert reply.partition(TP).error is Errors.NOT_LEADER_OR_FOLLOWER


def test_delta_leader_to_removed_topic_and_follower_to_not_replica() -> None:
    """ReplicaManagerTest.testDeltaLeaderToRemovedTopic / testDeltaFollowerToNotReplica: a deleted topic's
    partition is stopped (a parked produce completes with UNKNOWN_TOPIC_OR_PARTITION: it no longer exists); a partition
    reassigned away is stopped too (the cluster still has it: NOT_LEADER_OR_FOLLOWER)."""
    rm = manager()
    rm.apply_delta(delta(registration(LOCAL, 0, 0)))
    reply = produce(rm)
    applied = rm.apply_delta(MetadataDelta(2, deleted=frozenset({TP})))
    assert applied.stopped == [TP] and applied.fetchers_to_remove == [TP] and TP not in rm.partitions
    # DelayedProduce re-checks through getPartitionOrError: gone from the metadata image too.
    assert reply.partition(TP).error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(rm).partition(TP).error is Errors.UNKNOWN_TOPIC_OR_PARTITION

    rm = manager()
    rm.apply_delta(delta(registration(OTHER, 0, 0)))
    moved = PartitionRegistration((OTHER, 3), (OTHER, 3), OTHER, 1, 1)
    applied = rm.apply_delta(delta(moved, offset=2))
    assert applied.stopped == [TP] and TP not in rm.partitions
    assert produce(rm).partition(TP).error is Errors.NOT_LEADER_OR_FOLLOWER


def test_older_partition_epoch_is_ignored() -> None:
    """PartitionTest (makeLeader / makeFollower): a registration with an older partition epoch than the
    local one (e.g. learned from an AlterPartition answer) is ignored."""
    rm = manager()
    rm.apply_delta(delta(registration(LOCAL, 3, 5)))
    applied = rm.apply_delta(delta(registration(OTHER, 4, 4), offset=2))
    partition = rm.partitions[TP]
    assert partition.is_leader and partition.leader_epoch == 3 and partition.partition_epoch == 5
    assert applied.fetchers_to_add == {}


def test_make_leader_updates_epoch_cache_and_keeps_hw() -> None:
    """PartitionTest.testMakeLeaderUpdatesEpochCache plus Kafka's makeLeader: a follower with records
    above its HW becomes leader: the epoch cache gets (new epoch, LEO), the leader epoch start offset is the
    LEO, the whole log and the follower's own HW are kept, and the other replica's LEO is unknown (-1), so
    the HW waits for its first fetch."""
    rm = manager()
    rm.apply_delta(delta(registration(OTHER, 0, 0)))
    partition = rm.partitions[TP]
    log = partition.log
    log.append_as_follower([RecordBatch(5, 500, 0, 1, "p", 0, 0), RecordBatch(5, 500, 0, 2, "p", 5, 0)])
    log.maybe_update_high_watermark(5)
    rm.apply_delta(delta(registration(LOCAL, 1, 1), offset=2))
    assert log.leader_epoch_cache.entries[-1] == (1, 10)
    assert partition.leader_epoch_start_offset == 10
    assert log.log_end_offset == 10 and log.high_watermark == 5
    other = partition.remote_replica(OTHER)
    assert other is not None and other.log_end_offset == -1
    follower_fetch(rm, 10, epoch=1)
    assert log.high_watermark == 10


def test_same_leader_epoch_isr_shrink_from_metadata_releases_parked_produce() -> None:
    """Kafka's makeLeader re-runs maybeIncrementLeaderHW on a same-epoch update: an ISR shrink delivered by
    metadata together with the other broker's fencing lets a parked acks=all produce complete; the fetchers are untouched
    (ReplicaManager.applyLocalLeadersDelta only removes fetchers, the leader has none)."""
    rm = manager()
    rm.apply_delta(delta(registration(LOCAL, 0, 0)))
    reply = produce(rm)
    assert not reply.done
    # Kafka's controller shrinks the ISR when the other broker is fenced (handleBrokerFenced): one batch
    # with the registration change, so the fenced broker is not ISR-eligible and stops holding the HW.
    rm.apply_delta(delta(registration(LOCAL, 0, 1, isr=(LOCAL,)), offset=2,
                         brokers={OTHER: BrokerRegistration(OTHER, 1, fenced=True)}))
    partition = rm.partitions[TP]
    assert partition.leader_epoch == 0 and partition.isr == {LOCAL}
    assert reply.partition(TP).error is Errors.NONE


def test_new_leader_supersedes_pending_alter_partition() -> None:
    """Kafka's makeLeader takes the ISR from the metadata: a pending AlterPartition is superseded and its
    answer, arriving later, is ignored as stale."""
    controller = ControllerAlterPartitionManager(auto_complete=False)
    rm = ReplicaManager(LOCAL, KafkaConfig(), ManualTime(0), alter_partition_manager=controller)
    rm.apply_delta(delta(registration(LOCAL, 0, 0, isr=(LOCAL,))))
    partition = rm.partitions[TP]
    follower_fetch(rm, 0)  # the other replica is in sync: expansion proposed
    assert partition.partition_state.is_inflight
    rm.apply_delta(delta(registration(LOCAL, 1, 1, isr=(LOCAL,)), offset=2))
    assert not partition.partition_state.is_inflight and partition.isr == {LOCAL}
    controller.complete_all()
    assert partition.isr == {LOCAL} and partition.partition_epoch == 1


def test_leaderless_follower_gets_no_fetcher() -> None:
    """ReplicaManager.applyLocalFollowersDelta: leader -1 (offline partition) => makeFollower, the old
    fetcher removed, no new one."""
    rm = manager()
    rm.apply_delta(delta(registration(OTHER, 0, 0)))
    applied = rm.apply_delta(delta(registration(NO_LEADER, 1, 1, isr=(OTHER,)), offset=2))
    assert applied.fetchers_to_remove == [TP] and applied.fetchers_to_add == {}
    partition = rm.partitions[TP]
    assert partition.leader_replica_id == NO_LEADER and not partition.is_leader


def test_isr_not_expanded_if_replica_is_fenced_or_shutdown() -> None:
    """PartitionTest.testIsrNotExpandedIfReplicaIsFencedOrShutdown: a caught-up follower whose broker the
    metadata says is fenced, or in controlled shutdown, is not added to the ISR; once unfenced it is."""
    controller = ControllerAlterPartitionManager(auto_complete=False)
    rm = ReplicaManager(LOCAL, KafkaConfig(), ManualTime(0), alter_partition_manager=controller)
    rm.apply_delta(delta(registration(LOCAL, 0, 0, isr=(LOCAL,)),
                         brokers={OTHER: BrokerRegistration(OTHER, 1, fenced=True)}))
    partition = rm.partitions[TP]
    follower_fetch(rm, 0)
    assert not partition.partition_state.is_inflight
    rm.apply_delta(MetadataDelta(2, brokers={OTHER: BrokerRegistration(OTHER, 1, fenced=False,
                                                                        in_controlled_shutdown=True)}))
    follower_fetch(rm, 0)
    assert not partition.partition_state.is_inflight
    rm.apply_delta(MetadataDelta(3, brokers={OTHER: BrokerRegistration(OTHER, 1, fenced=False)}))
    follower_fetch(rm, 0)
    assert partition.partition_state.is_inflight and partition.maximal_isr == {LOCAL, OTHER}


def test_controlled_shutdown_stops_followers_out_of_the_isr() -> None:
    """ReplicaManagerTest.testReplicasAreStoppedWhileInControlledShutdownWithKRaft
    (ReplicaManager.applyLocalFollowersDelta): while this broker is in controlled shutdown
    (ReplicaManager.beginControlledShutdown), a follower partition without a leader, or without this broker
    in its ISR, is stopped (no fetcher), not deleted."""
    rm = manager()
    rm.apply_delta(delta(registration(OTHER, 0, 0)))
    rm.begin_controlled_shutdown()
    applied = rm.apply_delta(delta(registration(OTHER, 0, 1, isr=(OTHER,)), offset=2,
                                   brokers={LOCAL: BrokerRegistration(LOCAL, 1, fenced=False,
                                                                      in_controlled_shutdown=True)}))
    assert applied.stopped == [TP] and applied.fetchers_to_remove == [TP] and applied.fetchers_to_add == {}
    assert TP in rm.partitions


def test_a_restarted_broker_fetches_although_its_old_registration_was_in_controlled_shutdown() -> None:
    """Kafka 4.x: isInControlledShutdown belongs to the process (beginControlledShutdown), not to the metadata.
    A broker restarted after a controlled shutdown loads an image in which its old registration is still in
    controlled shutdown and it is out of the ISR; it must fetch, to catch up and rejoin the ISR."""
    rm = manager()
    applied = rm.apply_delta(delta(registration(OTHER, 0, 1, isr=(OTHER,)), offset=2,
                                   brokers={LOCAL: BrokerRegistration(LOCAL, 1, fenced=True,
                                                                      in_controlled_shutdown=True)}))
    assert applied.stopped == [] and TP in applied.fetchers_to_add


def test_delta_to_follower_completes_fetch_with_an_older_epoch_as_fenced() -> None:
    """completeDelayedOperationsWhenNotPartitionLeader -> DelayedFetch.tryComplete case E: a parked fetch
    that carried the old leader epoch completes and is answered FENCED_LEADER_EPOCH (the epoch check comes
    before the leadership check, Partition.localLogWithEpochOrThrow)."""
    rm = manager()
    rm.apply_delta(delta(registration(LOCAL, 0, 0)))
    reply = follower_fetch(rm, 0, min_bytes=1 << 30, max_wait_ms=1000, epoch=0)
    assert not reply.done
    rm.apply_delta(delta(registration(OTHER, 1, 1), offset=2))
    assert reply.partition(TP).error is Errors.FENCED_LEADER_EPOCH
