"""ReplicaManager.appendRecords with idempotent producers: a retried batch whose response was lost is answered
with the original offsets, by the leader or by a follower that replicated it and became leader; an acks=all
duplicate waits for the HW to pass the original batch (ReplicaManager.buildProducePartitionStatus:
requiredOffset = info.lastOffset + 1, the original's for a duplicate)."""

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, PartitionData
from kafkasim.broker.records import RecordBatch
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.timer import ManualTime

from .support import TP, Broker, Reply

PID = 7
_ids = [1000]


def ibatch(seq: int, records: int = 5, *, epoch: int = 0, ts: int = 0) -> RecordBatch:
    _ids[0] += 1
    return RecordBatch(records, 100, ts, _ids[0], "p", producer_id=PID, producer_epoch=epoch, base_sequence=seq)


def produce(rm: ReplicaManager, batch: RecordBatch, acks: int = -1) -> Reply:
    reply = Reply()
    rm.append_records(30_000, acks, {TP: [batch]}, reply)
    rm.try_complete_actions()
    return reply


def test_retry_after_lost_response_is_answered_with_the_original_offsets():
    """The broker appended the batch but its response was lost: the retry (same producer id, epoch and
    sequences) gets NONE with the original base offset and nothing is appended again."""
    broker = Broker(replicas=(0,))
    first = broker.produce(ibatch(0), acks=1).partition()
    broker.produce(ibatch(5), acks=1)
    leo = broker.log.log_end_offset
    retry = broker.produce(ibatch(0), acks=1).partition()
    assert retry.error is Errors.NONE
    assert (retry.base_offset, retry.last_offset) == (first.base_offset, first.last_offset) == (0, 4)
    assert retry.log_start_offset == 0
    assert broker.log.log_end_offset == leo == 10


def test_sequence_and_epoch_errors_are_partition_errors_with_nothing_appended():
    """OUT_OF_ORDER_SEQUENCE_NUMBER and INVALID_PRODUCER_EPOCH (ProducerAppendInfo) come back in the
    partition's response, with nothing appended and no DelayedProduce parked."""
    broker = Broker(replicas=(0,))
    broker.produce(ibatch(0, epoch=3), acks=-1)
    gap = broker.produce(ibatch(10, epoch=3), acks=-1).partition()
    assert gap.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert gap.base_offset == -1
    fenced = broker.produce(ibatch(5, epoch=2), acks=-1).partition()
    assert fenced.error is Errors.INVALID_PRODUCER_EPOCH
    assert broker.log.log_end_offset == 5
    assert broker.rm.produce_purgatory.num_delayed == 0


def test_acks_all_duplicate_completes_when_the_hw_passes_the_original():
    """An acks=all retry of a batch still waiting for replication parks with the ORIGINAL batch's
    requiredOffset and completes, with the original offsets, once the HW passes it."""
    broker = Broker(replicas=(0, 1, 2))
    original = broker.produce(ibatch(0), acks=-1)
    retry = broker.produce(ibatch(0), acks=-1)
    assert not original.done and not retry.done
    assert broker.log.log_end_offset == 5

    broker.fetch(1, 5, max_wait_ms=0)
    assert not retry.done  # HW still 0: follower 2 has not fetched
    broker.fetch(2, 5, max_wait_ms=0)
    assert broker.log.high_watermark == 5
    for reply in (original, retry):
        response = reply.partition()
        assert response.error is Errors.NONE
        assert (response.base_offset, response.last_offset) == (0, 4)


def test_acks_all_duplicate_of_a_committed_batch_answers_at_once():
    """The original is already below the HW: the duplicate's DelayedProduce completes on its first try."""
    broker = Broker(replicas=(0, 1))
    broker.produce(ibatch(0), acks=-1)
    broker.catch_up(1)
    broker.catch_up(1)
    assert broker.log.high_watermark == 5
    broker.produce(ibatch(5), acks=1)  # HW 5 < LEO 10: the duplicate of seq 0 must not wait for 10
    retry = broker.produce(ibatch(0), acks=-1).partition()
    assert retry.error is Errors.NONE
    assert retry.base_offset == 0


def _follower(broker_id: int) -> ReplicaManager:
    config = KafkaConfig(log=LogConfig(min_insync_replicas=1))
    # Past replica.lag.time.max.ms: the old leader (out of the ISR) does not count as caught up on the new one.
    time = ManualTime(100_000)
    rm = ReplicaManager(broker_id, config, time, alter_partition_manager=ControllerAlterPartitionManager())
    rm.create_partition(TP)
    rm.make_follower(TP, leader=0, replicas=[0, 1, 2], leader_epoch=0, partition_epoch=0)
    return rm


def test_new_leader_deduplicates_a_retry_of_a_batch_it_replicated():
    """Leader 0 appends the batch, follower 1 replicates it, the response is lost and leadership moves to 1
    (clean election): the producer's retry to the new leader is a duplicate, answered with the original
    offsets (the follower's producer state came from its REPLICATION appends)."""
    leader = Broker(replicas=(0, 1, 2))
    leader.produce(ibatch(0), acks=1)
    leader.produce(ibatch(5), acks=1)
    follower = _follower(1)
    follower.partitions[TP].append_records_to_follower_or_future_replica(list(leader.log.segments[0].batches))
    assert follower.partitions[TP].log.log_end_offset == 10

    follower.make_leader(TP, replicas=[0, 1, 2], isr=[1, 2], leader_epoch=1, partition_epoch=1)
    retry = produce(follower, ibatch(5), acks=1).partition()
    assert retry.error is Errors.NONE
    assert (retry.base_offset, retry.last_offset) == (5, 9)
    assert follower.partitions[TP].log.log_end_offset == 10
    # The next batch continues the sequence on the new leader, at the new leader's end.
    nxt = produce(follower, ibatch(10), acks=1).partition()
    assert (nxt.error, nxt.base_offset) == (Errors.NONE, 10)


def test_new_leader_without_the_batch_appends_the_retry():
    """The follower had replicated only the first batch (acks=1 data lost in the failover): the retry of the
    second is the next in sequence and is appended at the new leader's end."""
    leader = Broker(replicas=(0, 1, 2))
    leader.produce(ibatch(0), acks=1)
    leader.produce(ibatch(5), acks=1)
    follower = _follower(1)
    follower.partitions[TP].append_records_to_follower_or_future_replica(list(leader.log.segments[0].batches)[:1])
    follower.make_leader(TP, replicas=[0, 1, 2], isr=[1, 2], leader_epoch=1, partition_epoch=1)
    retry = produce(follower, ibatch(5), acks=1).partition()
    assert (retry.error, retry.base_offset) == (Errors.NONE, 5)
    assert follower.partitions[TP].log.log_end_offset == 10


def test_acks_all_retry_on_new_leader_waits_for_its_hw_to_pass_the_original():
    """A batch replicated to follower 1 but not committed when leadership moved: the acks=all retry on the
    new leader is a duplicate, parked until the new leader's HW passes the original (follower 2 fetches),
    then answered with the original offsets -- written once, acknowledged once committed."""
    leader = Broker(replicas=(0, 1, 2))
    leader.produce(ibatch(0), acks=-1)
    follower = _follower(1)
    follower.partitions[TP].append_records_to_follower_or_future_replica(list(leader.log.segments[0].batches))
    follower.make_leader(TP, replicas=[0, 1, 2], isr=[1, 2], leader_epoch=1, partition_epoch=1)
    new_leader = follower.partitions[TP]
    assert new_leader.log.high_watermark == 0

    retry = produce(follower, ibatch(0), acks=-1)
    assert not retry.done
    assert new_leader.log.log_end_offset == 5
    reply = Reply()
    follower.fetch_messages(FetchParams(2, 0, 1, 1 << 20), [(TP, PartitionData(5, 0, 1 << 20, 1))], reply)
    follower.try_complete_actions()
    assert new_leader.log.high_watermark == 5
    response = retry.partition()
    assert response.error is Errors.NONE
    assert (response.base_offset, response.last_offset) == (0, 4)
