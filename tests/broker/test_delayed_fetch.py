"""DelayedFetch: DelayedFetch.tryComplete's cases A–H with the 3.8+ offset comparison, and onComplete."""

from kafkasim.broker.delayed_fetch import DelayedFetch
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, FetchPartitionStatus, PartitionData
from kafkasim.broker.log import UNKNOWN_OFFSET_METADATA, FetchIsolation, LogOffsetMetadata

from .support import TP, TP1, Broker, Reply, batch

BIG = 10 * 1024 * 1024


def parked_follower(broker: Broker, replica_id: int = 1, **kwargs) -> Reply:
    reply = broker.fetch(replica_id, broker.log.log_end_offset, **kwargs)
    assert not reply.done
    return reply


def check(broker: Broker, tp=TP) -> None:
    broker.rm.fetch_purgatory.check_and_complete(broker.rm.operation_key(tp))


# ------------------------------------------------------------------------------------------ cases A-E


def test_case_a_leader_moved_away():
    broker = Broker()
    follower = parked_follower(broker)
    consumer = broker.fetch(-1, 0)
    broker.rm.make_follower(TP, leader=1, replicas=[0, 1, 2], leader_epoch=1, partition_epoch=1)
    assert follower.partition().error is Errors.NOT_LEADER_OR_FOLLOWER
    assert consumer.partition().error is Errors.NOT_LEADER_OR_FOLLOWER
    assert consumer.partition().high_watermark == -1


def test_case_b_replica_gone_and_c_unknown_partition():
    broker = Broker(partitions=(TP, TP1))
    gone = broker.fetch(-1, 0)
    deleted = broker.fetch(-1, 0, tp=TP1)
    broker.rm.stop_replica(TP)
    broker.rm.stop_replica(TP1, delete=True)
    assert gone.partition().error is Errors.NOT_LEADER_OR_FOLLOWER
    assert deleted.partition(TP1).error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_case_d_offline_log_dir():
    broker = Broker()
    consumer = broker.fetch(-1, 0)
    broker.rm.mark_partition_offline(TP)
    assert consumer.partition().error is Errors.KAFKA_STORAGE_ERROR


def test_case_e_fenced_leader_epoch():
    broker = Broker()
    follower = parked_follower(broker, current_leader_epoch=0)
    broker.rm.make_leader(TP, replicas=[0, 1, 2], leader_epoch=1, partition_epoch=1)
    check(broker)
    assert follower.partition().error is Errors.FENCED_LEADER_EPOCH


# --------------------------------------------------------------------------------------------- case F


def test_case_f_consumer_fetch_beyond_hw_completes_at_once():
    broker = Broker()
    broker.produce(batch(), batch(), acks=1)  # LEO 20, HW 0
    consumer = broker.fetch(-1, 10)
    result = consumer.partition()
    assert result.error is Errors.NONE
    assert not result.records
    assert result.high_watermark == 0


def test_case_f_end_on_newer_segment_completes():
    broker = Broker(replicas=(0, 1), segment_bytes=200)
    broker.produce(batch(), acks=1)
    follower = parked_follower(broker, min_bytes=BIG)
    broker.produce(batch(), acks=1)  # same segment: not enough bytes
    assert not follower.done
    broker.produce(batch(), acks=1)  # rolls
    assert follower.partition().records[0].base_offset == 10


def test_equal_offsets_never_complete_even_across_a_roll():
    # DelayedFetch.tryComplete (3.8+): after an explicit roll the LEO is (N, N, 0) while the parked fetch
    # holds (N, 0, size): the pre-3.8 rule would have called that an older segment and completed.
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), acks=1)
    follower = parked_follower(broker)
    assert broker.log.log_end_offset_metadata == LogOffsetMetadata(10, 0, 100)
    broker.log.roll()
    assert broker.log.log_end_offset_metadata == LogOffsetMetadata(10, 10, 0)
    check(broker)
    assert not follower.done


def test_consumer_at_hw_not_woken_by_hw_moving_to_new_segment():
    broker = Broker(replicas=(0,))
    broker.produce(batch(), acks=1)  # ISR {0}: HW = LEO = 10
    consumer = broker.fetch(-1, 10)
    assert not consumer.done
    broker.log.roll()  # HW == LEO: its metadata moves to the new segment
    assert broker.log.high_watermark_metadata == LogOffsetMetadata(10, 10, 0)
    check(broker)
    assert not consumer.done


# --------------------------------------------------------------------------------------------- case G


def test_case_g_accumulates_position_diff_capped_by_partition_max_bytes():
    broker = Broker(replicas=(0, 1))
    follower = parked_follower(broker, min_bytes=150, partition_max_bytes=100)
    broker.produce(batch(size=200), acks=1)
    assert not follower.done  # min(200, 100) = 100 < 150
    uncapped = Broker(replicas=(0, 1))
    follower = parked_follower(uncapped, min_bytes=150, partition_max_bytes=1000)
    uncapped.produce(batch(size=200), acks=1)
    assert follower.done


def test_case_g_sums_over_partitions():
    broker = Broker(replicas=(0, 1), partitions=(TP, TP1))
    reply = Reply()
    params = FetchParams(1, 500, 150, BIG)
    broker.rm.fetch_messages(params, [(TP, PartitionData(0, 0, BIG)), (TP1, PartitionData(0, 0, BIG))], reply)
    broker.produce(batch(size=100), acks=1, tp=TP)
    assert not reply.done
    broker.produce(batch(size=100), acks=1, tp=TP1)
    results = dict(reply.value)
    assert results[TP].size_in_bytes == 100 and results[TP1].size_in_bytes == 100


def test_follower_fetch_ignores_hw_moves():
    broker = Broker()
    broker.produce(batch(), acks=1)
    follower1 = broker.fetch(1, 10)  # at the LEO: parked
    consumer = broker.fetch(-1, 0)  # at the HW: parked
    assert not follower1.done and not consumer.done
    broker.fetch(2, 10)  # HW 0 -> 10: wakes the purgatories
    assert broker.log.high_watermark == 10
    assert consumer.done
    assert not follower1.done


def test_message_only_metadata_counts_for_nothing_and_unknown_is_ignored():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), acks=1)
    broker.fetch(1, 10)  # HW 10, partition has data
    reply = Reply()
    params = FetchParams(-1, 500, 1, BIG, FetchIsolation.HIGH_WATERMARK)
    message_only = DelayedFetch(
        params, [(TP, FetchPartitionStatus(LogOffsetMetadata(0), PartitionData(0, 0, BIG)))], broker.rm, reply
    )
    assert not message_only.try_complete()  # 0 < 10 but no segment info: neither F nor G
    broker.rm.stop_replica(TP)
    unknown = DelayedFetch(
        params, [(TP, FetchPartitionStatus(UNKNOWN_OFFSET_METADATA, PartitionData(0, 0, BIG)))], broker.rm, reply
    )
    assert not unknown.try_complete()  # the partition is not even looked up
    assert not reply.done


# --------------------------------------------------------------------------------------------- case H


def test_case_h_log_diverged_while_parked():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), batch(), acks=1)  # epoch 0: 0..19
    follower = parked_follower(broker, min_bytes=BIG, last_fetched_epoch=0)
    # The leader's log is rewritten under it (unclean history): epoch 0 now ends at 10.
    broker.log.truncate_to(10)
    broker.log.append_as_leader([batch(), batch()], 1)
    check(broker)
    result = follower.partition()
    assert result.diverging_epoch is not None
    assert (result.diverging_epoch.leader_epoch, result.diverging_epoch.end_offset) == (0, 10)


def test_case_h_not_triggered_when_epoch_still_matches():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), acks=1)
    follower = parked_follower(broker, min_bytes=BIG, last_fetched_epoch=0)
    broker.produce(batch(), acks=1)
    assert not follower.done


# ------------------------------------------------------------------------------------------ on_complete


def test_on_complete_rereads_from_original_offset_without_second_follower_update():
    broker = Broker(replicas=(0, 1, 2))
    follower = broker.fetch(1, 0, min_bytes=250)
    assert not follower.done
    replica = broker.partition.get_replica(1)
    assert replica.last_fetch_time_ms == 0
    broker.time.set(100)
    broker.produce(batch(), acks=1)
    broker.produce(batch(), acks=1)
    assert not follower.done
    broker.time.set(200)
    broker.produce(batch(), acks=1)
    result = follower.partition()
    assert [b.base_offset for b in result.records] == [0, 10, 20]  # everything since the original offset
    assert result.log_end_offset == 30
    assert replica.last_fetch_time_ms == 0  # the purgatory re-read did not update fetch state
    assert replica.log_end_offset == 0


def test_expiration_counts_by_fetcher_type():
    broker = Broker()
    broker.fetch(1, 0)
    broker.fetch(-1, 0)
    broker.fetch(-1, 0)
    broker.advance(500)
    assert broker.rm.metrics.fetch_expires_follower == 1
    assert broker.rm.metrics.fetch_expires_consumer == 2
    assert broker.rm.fetch_purgatory.num_delayed == 0


def test_a_completed_fetch_waiting_for_the_purge_keeps_nothing_per_partition():
    # With 1000 partitions, the completed fetches that wait in the watch lists for the next purge (up to
    # fetch.purgatory.purge.interval.requests of them) held 1000 statuses each: most of a run's memory.
    broker = Broker(partitions=(TP, TP1))
    reply = Reply()
    infos = [(TP, PartitionData(0, 0, BIG)), (TP1, PartitionData(0, 0, BIG))]
    broker.rm.fetch_messages(FetchParams(1, 500, 1, BIG, FetchIsolation.LOG_END), infos, reply)
    assert not reply.done
    broker.produce(batch(), tp=TP, acks=1)
    assert reply.done
    (operation,) = broker.rm.fetch_purgatory.watchers(broker.rm.operation_key(TP1))
    assert isinstance(operation, DelayedFetch) and operation.is_completed
    assert len(operation.fetch_partition_status) == 0
    assert not operation.try_complete()
