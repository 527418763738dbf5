"""ReplicaManager: append_records, action queue, fetch_messages, read_from_log, leadership
changes (Kafka's ReplicaManager.appendRecords, ActionQueue, fetchMessages, readFromLog, Partition.makeLeader);
Kafka's ReplicaManagerTest purgatory interplay re-expressed."""

import random

import pytest

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, PartitionData, fetch_params_from_request
from kafkasim.broker.log import FetchIsolation
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.purgatory import DelayedOperationPurgatory
from kafkasim.timer import ManualTime

from .support import TP, TP1, Broker, Reply, batch

BIG = 10 * 1024 * 1024


class RecordingPurgatory(DelayedOperationPurgatory):
    """A real purgatory that also logs which purgatory was checked, in order."""

    def __init__(self, name: str, log: list, time) -> None:
        super().__init__(name, time=time)
        self.log = log

    def check_and_complete(self, key) -> int:
        self.log.append(self.name)
        return super().check_and_complete(key)


def recording_broker(replicas=(0, 1), **kwargs):
    time = ManualTime()
    checks: list[str] = []
    rm = ReplicaManager(
        0,
        KafkaConfig(**kwargs),
        time,
        alter_partition_manager=ControllerAlterPartitionManager(),
        produce_purgatory=RecordingPurgatory("Produce", checks, time),
        fetch_purgatory=RecordingPurgatory("Fetch", checks, time),
    )
    rm.make_leader(TP, replicas=list(replicas))
    return rm, checks


def fetch_many(broker: Broker, replica_id: int, offsets: dict, *, max_bytes=BIG, partition_max=BIG, **kw) -> Reply:
    reply = Reply()
    params = FetchParams(replica_id, kw.get("max_wait_ms", 500), kw.get("min_bytes", 1), max_bytes)
    infos = [(tp, PartitionData(offset, 0, partition_max)) for tp, offset in offsets.items()]
    broker.rm.fetch_messages(params, infos, reply)
    return reply


# ---------------------------------------------------------------------------------------------- produce


def test_invalid_required_acks():
    broker = Broker(partitions=(TP, TP1))
    reply = Reply()
    broker.rm.append_records(1000, 2, {TP: [batch()], TP1: [batch()]}, reply)
    assert {tp: r.error for tp, r in reply.value.items()} == {
        TP: Errors.INVALID_REQUIRED_ACKS,
        TP1: Errors.INVALID_REQUIRED_ACKS,
    }
    assert broker.log.log_end_offset == 0


@pytest.mark.parametrize("acks", [0, 1])
def test_acks_0_and_1_answer_at_once(acks):
    broker = Broker()
    broker.produce(batch(), acks=acks)
    reply = broker.produce(batch(records=5), acks=acks, end_request=False)
    response = reply.partition()
    assert response.error is Errors.NONE
    assert (response.base_offset, response.last_offset, response.log_append_time) == (10, 14, -1)
    assert broker.rm.produce_purgatory.watched == 0


def test_per_partition_errors():
    broker = Broker(partitions=(TP, TP1))
    known_elsewhere = TopicPartition("t", 2)
    broker.rm.create_partition(known_elsewhere)
    broker.rm.stop_replica(known_elsewhere)
    offline = TopicPartition("t", 3)
    broker.rm.create_partition(offline)
    broker.rm.mark_partition_offline(offline)
    reply = Reply()
    entries = {
        TP: [batch()],
        TP1: [batch(size=2_000_000)],
        TopicPartition("nope", 0): [batch()],
        known_elsewhere: [batch()],
        offline: [batch()],
    }
    broker.rm.append_records(1000, 1, entries, reply)
    errors = {tp: r.error for tp, r in reply.value.items()}
    assert errors == {
        TP: Errors.NONE,
        TP1: Errors.MESSAGE_TOO_LARGE,
        TopicPartition("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        known_elsewhere: Errors.NOT_LEADER_OR_FOLLOWER,
        offline: Errors.KAFKA_STORAGE_ERROR,
    }
    assert (reply.value[TP1].base_offset, reply.value[TP1].last_offset) == (-1, -1)


def test_acks_all_with_every_partition_failed_answers_at_once():
    broker = Broker()
    reply = Reply()
    broker.rm.append_records(1000, -1, {TopicPartition("nope", 0): [batch()]}, reply)
    assert reply.value[TopicPartition("nope", 0)].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.rm.produce_purgatory.watched == 0


def test_acks_all_delayed_produce_watches_every_partition_of_the_request():
    broker = Broker(replicas=(0, 1))
    missing = TopicPartition("nope", 0)
    reply = Reply()
    broker.rm.append_records(1000, -1, {TP: [batch()], missing: [batch()]}, reply)
    purgatory = broker.rm.produce_purgatory
    assert len(purgatory.watchers(broker.rm.operation_key(TP))) == 1
    assert len(purgatory.watchers(broker.rm.operation_key(missing))) == 1
    assert purgatory.num_delayed == 1
    broker.fetch(1, 10, max_wait_ms=0)
    assert reply.value[TP].error is Errors.NONE
    assert reply.value[missing].error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_acks_all_with_leader_alone_completes_in_first_check():
    broker = Broker(replicas=(0,))
    reply = broker.produce(batch(), end_request=False)
    assert reply.partition().error is Errors.NONE
    assert broker.rm.produce_purgatory.num_delayed == 0


# ------------------------------------------------------------------------------------------ action queue


def test_post_append_checks_are_deferred_to_the_end_of_the_request():
    broker = Broker(replicas=(0, 1))
    follower = broker.fetch(1, 0)
    assert not follower.done
    broker.produce(batch(), acks=1, end_request=False)
    assert not follower.done  # ActionQueue: not from inside the append
    assert broker.rm.try_complete_actions() == 1
    assert follower.done


def test_hw_same_checks_fetch_only():
    rm, checks = recording_broker(replicas=(0, 1))
    rm.append_records(1000, 1, {TP: [batch()]}, Reply())
    assert checks == []
    rm.try_complete_actions()
    assert checks == ["Fetch"]


def test_hw_increased_checks_produce_then_fetch():
    rm, checks = recording_broker(replicas=(0,))
    rm.append_records(1000, 1, {TP: [batch()]}, Reply())
    rm.try_complete_actions()
    assert checks == ["Produce", "Fetch"]


def test_failed_append_checks_nothing():
    rm, checks = recording_broker(replicas=(0,))
    rm.append_records(1000, 1, {TopicPartition("nope", 0): [batch()]}, Reply())
    rm.try_complete_actions()
    assert checks == []


def test_try_complete_actions_runs_only_actions_present_at_start():
    broker = Broker()
    ran = []
    broker.rm.action_queue.add(lambda: (ran.append(1), broker.rm.action_queue.add(lambda: ran.append(2))))
    assert broker.rm.try_complete_actions() == 1
    assert ran == [1]
    broker.rm.try_complete_actions()
    assert ran == [1, 2]


def test_follower_hw_increase_checks_fetch_then_produce_synchronously():
    rm, checks = recording_broker(replicas=(0, 1))
    rm.append_records(1000, 1, {TP: [batch()]}, Reply())
    rm.try_complete_actions()
    checks.clear()
    rm.fetch_messages(FetchParams(1, 0, 1, BIG), [(TP, PartitionData(10, 0, BIG))], Reply())
    assert checks == ["Fetch", "Produce"]


# ----------------------------------------------------------------------------------------------- fetch


def test_fetch_immediate_when_no_wait_or_nothing_asked():
    broker = Broker()
    assert broker.fetch(-1, 0, max_wait_ms=0).partition().size_in_bytes == 0
    reply = Reply()
    broker.rm.fetch_messages(FetchParams(-1, 500, 1, BIG), [], reply)
    assert reply.value == []


def test_fetch_immediate_when_min_bytes_available():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(size=100), acks=1)
    assert broker.fetch(1, 0, min_bytes=100).done
    assert not broker.fetch(1, 0, min_bytes=101).done


def test_fetch_immediate_on_error():
    broker = Broker()
    reply = fetch_many(broker, -1, {TP: 0, TopicPartition("nope", 0): 0})
    results = dict(reply.value)
    assert results[TopicPartition("nope", 0)].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert results[TopicPartition("nope", 0)].high_watermark == -1
    assert results[TP].error is Errors.NONE


def test_fetch_out_of_range_is_an_error_result():
    broker = Broker()
    result = broker.fetch(-1, 5).partition()
    assert result.error is Errors.OFFSET_OUT_OF_RANGE


def test_fetch_immediate_on_diverging_epoch():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), acks=1)
    broker.rm.make_leader(TP, replicas=[0, 1], leader_epoch=2, partition_epoch=1)
    broker.produce(batch(), acks=1)
    result = broker.fetch(1, 20, last_fetched_epoch=1).partition()
    assert result.diverging_epoch is not None
    assert result.diverging_epoch.end_offset == 10


def test_parked_fetch_watches_every_partition():
    broker = Broker(replicas=(0, 1), partitions=(TP, TP1))
    reply = fetch_many(broker, 1, {TP: 0, TP1: 0})
    assert not reply.done
    purgatory = broker.rm.fetch_purgatory
    assert len(purgatory.watchers(broker.rm.operation_key(TP))) == 1
    assert len(purgatory.watchers(broker.rm.operation_key(TP1))) == 1
    assert (purgatory.watched, purgatory.num_delayed) == (2, 1)
    broker.produce(batch(), acks=1, tp=TP1)
    assert reply.done
    # Completed through TP1, still listed under TP until TP is checked (Watchers.tryCompleteWatched).
    assert purgatory.watched == 1


# ------------------------------------------------------------------------------------------ read_from_log


def test_read_byte_limit_spans_partitions_and_drops_incomplete_first_entry():
    broker = Broker(replicas=(0, 1), partitions=(TP, TP1))
    broker.produce(batch(size=300), acks=1, tp=TP)
    broker.produce(batch(size=300), acks=1, tp=TP1)
    results = dict(fetch_many(broker, 1, {TP: 0, TP1: 0}, max_bytes=400).value)
    assert results[TP].size_in_bytes == 300
    # 100 bytes left; min-one-message is gone after the first non-empty partition, and the cut first
    # batch is replaced by an empty set (fetch v3+).
    assert results[TP1].size_in_bytes == 0
    assert not results[TP1].records


def test_min_one_message_until_first_non_empty_partition():
    broker = Broker(replicas=(0, 1), partitions=(TP, TP1))
    broker.produce(batch(size=300), acks=1, tp=TP1)
    results = dict(fetch_many(broker, 1, {TP: 0, TP1: 0}, max_bytes=50, min_bytes=1).value)
    assert results[TP].size_in_bytes == 0
    assert results[TP1].size_in_bytes == 300  # exceeds max_bytes: the first non-empty one may


def test_read_respects_partition_max_bytes_with_partial_tail():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(size=100), batch(size=100), batch(size=100), acks=1)
    result = broker.fetch(1, 0, partition_max_bytes=250).partition()
    assert [b.base_offset for b in result.records] == [0, 10]
    assert result.partial_batch.base_offset == 20
    assert result.size_in_bytes == 250


def test_consumer_reads_only_up_to_hw():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), batch(), acks=1)
    broker.fetch(1, 10, max_wait_ms=0)  # HW 10
    result = broker.fetch(-1, 0, max_wait_ms=0).partition()
    assert [b.base_offset for b in result.records] == [0]
    assert (result.high_watermark, result.log_end_offset) == (10, 20)


def test_follower_fetch_updates_follower_state():
    broker = Broker(replicas=(0, 1))
    broker.produce(batch(), acks=1)
    broker.time.set(123)
    result = broker.fetch(1, 10, max_wait_ms=0, log_start_offset=4).partition()
    replica = broker.partition.get_replica(1)
    assert (replica.log_end_offset, replica.log_start_offset, replica.last_fetch_time_ms) == (10, 4, 123)
    assert result.high_watermark == 0  # captured before the read
    assert broker.log.high_watermark == 10
    assert (result.follower_log_start_offset, result.fetch_time_ms) == (4, 123)


# ------------------------------------------------------------------------------------------- leadership


def test_losing_leadership_completes_parked_operations():
    broker = Broker(replicas=(0, 1))
    produce = broker.produce(batch())
    follower = broker.fetch(1, 0, min_bytes=BIG)
    consumer = broker.fetch(-1, 0)
    assert not (produce.done or follower.done or consumer.done)
    broker.rm.make_follower(TP, leader=1, replicas=[0, 1], leader_epoch=1, partition_epoch=1)
    assert produce.partition().error is Errors.NOT_LEADER_OR_FOLLOWER
    assert follower.partition().error is Errors.NOT_LEADER_OR_FOLLOWER
    assert consumer.partition().error is Errors.NOT_LEADER_OR_FOLLOWER
    assert broker.rm.produce_purgatory.num_delayed == 0
    assert broker.rm.fetch_purgatory.num_delayed == 0


def test_maybe_shrink_isr_covers_all_partitions():
    broker = Broker(replicas=(0, 1), partitions=(TP, TP1))
    broker.produce(batch(), acks=1, tp=TP)
    broker.produce(batch(), acks=1, tp=TP1)
    broker.advance(30_001)
    broker.rm.maybe_shrink_isr()
    assert broker.rm.partitions[TP].isr == {0}
    assert broker.rm.partitions[TP1].isr == {0}
    assert broker.rm.metrics.isr_shrinks == 2


def test_fenced_broker_is_not_isr_eligible():
    broker = Broker(replicas=(0, 1), isr=(0,))
    broker.rm.fenced_brokers.add(1)
    broker.fetch(1, 0, max_wait_ms=0)
    assert broker.partition.isr == {0}
    broker.rm.fenced_brokers.clear()
    broker.fetch(1, 0, max_wait_ms=0)
    assert broker.partition.isr == {0, 1}
    assert broker.rm.metrics.isr_expands == 1


def test_create_partition_twice_is_an_error():
    broker = Broker()
    with pytest.raises(ValueError, match="already hosts partition t-0"):
        broker.rm.create_partition(TP)


def test_segment_jitter_streams_are_per_partition_and_seeded():
    config = KafkaConfig(log=LogConfig(segment_jitter_ms=1_000_000))

    def jitters(partitions, seed):
        rm = ReplicaManager(
            0, config, ManualTime(), alter_partition_manager=ControllerAlterPartitionManager(), rng=random.Random(seed)
        )
        return {tp: rm.create_partition(tp).log.active_segment.roll_jitter_ms for tp in partitions}

    a = jitters([TP, TP1], seed=1)
    assert a == jitters([TP, TP1], seed=1)
    assert jitters([TP1], seed=1)[TP1] == a[TP1]  # not shifted by TP's draw
    assert a != jitters([TP, TP1], seed=2)


def test_fetch_params():
    config = KafkaConfig(fetch_max_bytes=1000)
    params = fetch_params_from_request(config, -1, 500, 5000, 50_000)
    assert (params.max_bytes, params.min_bytes, params.isolation) == (1000, 1000, FetchIsolation.HIGH_WATERMARK)
    follower = FetchParams(3, 500, 1, BIG, FetchIsolation.HIGH_WATERMARK)
    assert follower.isolation is FetchIsolation.LOG_END and follower.is_from_follower
    assert fetch_params_from_request(config, -1, 0, 1, 1, read_committed=True).isolation is FetchIsolation.TXN_COMMITTED
    assert FetchParams(-1, 0, 1, 1, request_version=2).hard_max_bytes_limit


def test_make_leader_requires_local_broker_in_replicas():
    broker = Broker()
    with pytest.raises(ValueError, match="broker 0 cannot lead"):
        broker.rm.make_leader(TP1, replicas=[1, 2])
