"""DelayedProduce: its constructor, tryComplete, onExpiration / onComplete (preset REQUEST_TIMED_OUT, cases
A–C, expiration, exactly once)."""

from kafkasim.broker.delayed_produce import DelayedProduce
from kafkasim.broker.errors import Errors
from kafkasim.broker.produce import PartitionResponse, ProducePartitionStatus

from .support import TP, TP1, Broker, Reply, batch


def test_completes_when_hw_reaches_last_offset_plus_one():
    broker = Broker(replicas=(0, 1))
    reply = broker.produce(batch(), batch())  # offsets 0..19: required offset 20
    broker.fetch(1, 10, max_wait_ms=0)
    assert broker.log.high_watermark == 10
    assert not reply.done
    broker.fetch(1, 20, max_wait_ms=0)
    response = reply.partition()
    assert response.error is Errors.NONE
    assert (response.base_offset, response.last_offset, response.log_start_offset) == (0, 19, 0)


def test_hw_not_isr_leo_is_the_condition():
    # Partition.checkEnoughReplicasReachOffset: follower 1 has the data but follower 2 (non-ISR, caught up by
    # time) holds the HW. Follower 2 caught up while fenced (so it did not join the ISR), then was unfenced.
    broker = Broker(replicas=(0, 1, 2), isr=(0, 1))
    broker.rm.fenced_brokers.add(2)
    broker.fetch(2, 0, max_wait_ms=0)
    assert 2 not in broker.partition.maximal_isr
    broker.rm.fenced_brokers.discard(2)
    reply = broker.produce(batch())
    broker.fetch(1, 10, max_wait_ms=0)
    assert broker.log.high_watermark == 0
    assert not reply.done


def test_timeout_answers_request_timed_out_and_counts_per_partition():
    broker = Broker(replicas=(0, 1), partitions=(TP, TP1))
    reply = Reply()
    seen_at_callback = []
    broker.rm.append_records(
        1000,
        -1,
        {TP: [batch()], TP1: [batch()]},
        lambda r: (seen_at_callback.append(broker.rm.metrics.produce_expires), reply(r)),
    )
    broker.rm.try_complete_actions()
    broker.fetch(1, 10, max_wait_ms=0, tp=TP1)  # TP1 satisfied, TP not
    assert not reply.done
    broker.advance(1000)
    assert reply.value[TP].error is Errors.REQUEST_TIMED_OUT
    assert reply.value[TP1].error is Errors.NONE
    # DelayedOperation.run: on_complete (the response) runs before on_expiration (the meter).
    assert seen_at_callback == [0]
    assert broker.rm.metrics.produce_expires == 1
    assert broker.rm.metrics.produce_expires_by_partition == {TP: 1}


def test_preset_request_timed_out_only_for_appended_partitions():
    broker = Broker(replicas=(0, 1))
    statuses = {
        TP: ProducePartitionStatus(10, PartitionResponse(Errors.NONE, 0, 9)),
        TP1: ProducePartitionStatus(0, PartitionResponse(Errors.NOT_LEADER_OR_FOLLOWER)),
    }
    op = DelayedProduce(100, -1, statuses, broker.rm, Reply())
    assert statuses[TP].acks_pending and statuses[TP].response_status.error is Errors.REQUEST_TIMED_OUT
    assert not statuses[TP1].acks_pending
    assert statuses[TP1].response_status.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert not op.try_complete()


def test_case_a_partition_gone_offline_or_deleted():
    for action, expected in (
        (lambda rm: rm.stop_replica(TP), Errors.NOT_LEADER_OR_FOLLOWER),
        (lambda rm: rm.mark_partition_offline(TP), Errors.KAFKA_STORAGE_ERROR),
        (lambda rm: rm.stop_replica(TP, delete=True), Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ):
        broker = Broker(replicas=(0, 1))
        reply = broker.produce(batch())
        action(broker.rm)
        assert reply.partition().error is expected


def test_case_b_lost_leadership():
    broker = Broker(replicas=(0, 1))
    reply = broker.produce(batch())
    broker.rm.make_follower(TP, leader=1, replicas=[0, 1], leader_epoch=1, partition_epoch=1)
    assert reply.partition().error is Errors.NOT_LEADER_OR_FOLLOWER


def test_case_c1_not_enough_replicas_after_append():
    # The HW passed the offset, but the maximal ISR is now below min ISR (the 3.7+ race).
    broker = Broker(replicas=(0, 1), min_isr=2)
    broker.produce(batch(), acks=1)
    broker.fetch(1, 10, max_wait_ms=0)
    broker.produce(batch(), acks=1)  # the follower never fetches this one
    broker.advance(30_001)
    broker.rm.maybe_shrink_isr()
    assert broker.partition.isr == {0}
    reply = Reply()
    status = {TP: ProducePartitionStatus(10, PartitionResponse(Errors.NONE, 0, 9))}
    op = DelayedProduce(100, -1, status, broker.rm, reply)
    assert op.try_complete()
    assert reply.partition().error is Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_callback_exactly_once():
    broker = Broker(replicas=(0, 1))
    reply = broker.produce(batch(), timeout_ms=100)
    broker.fetch(1, 10, max_wait_ms=0)
    assert reply.done
    broker.rm.produce_purgatory.check_and_complete(broker.rm.operation_key(TP))
    broker.advance(1000)
    assert len(reply.calls) == 1
    assert broker.rm.metrics.produce_expires == 0
