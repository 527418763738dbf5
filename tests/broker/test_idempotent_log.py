"""Log with idempotent producers: duplicate detection, sequence and epoch checks on a leader append, none on a
follower append, producer state across rolls, truncation and retention (Kafka's UnifiedLogTest idempotent
cases re-expressed for simulated batches)."""

import pytest

from kafkasim.broker.config import LogConfig
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.log import Log
from kafkasim.broker.records import RecordBatch
from kafkasim.timer import ManualTime

PID = 1
EPOCH = 0

_ids = [0]


def ibatch(seq: int, records: int = 1, *, pid: int = PID, epoch: int = EPOCH, size: int = 100, ts: int = 0) -> RecordBatch:
    """An idempotent producer's batch (no offsets yet)."""
    _ids[0] += 1
    return RecordBatch(records, size, ts, _ids[0], "p", producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def plain(records: int = 1, size: int = 100, ts: int = 0) -> RecordBatch:
    _ids[0] += 1
    return RecordBatch(records, size, ts, _ids[0], "p")


def make_log(time=None, **config) -> Log:
    return Log(LogConfig(**config), time or ManualTime(), name="t-0")


def error_of(call) -> Errors:
    with pytest.raises(KafkaError) as raised:
        call()
    return raised.value.error


def stamped(batch: RecordBatch, base_offset: int, leader_epoch: int = 0) -> RecordBatch:
    return batch.with_offsets(base_offset, leader_epoch)


def test_duplicate_appends():
    """UnifiedLogTest.testDuplicateAppends."""
    log = make_log()
    seq = 0
    for _ in range(6):  # pad the beginning of the log
        log.append_as_leader([ibatch(seq)], 0)
        seq += 1
    # A batch of 3 records, then its duplicate at the tail.
    multi = ibatch(seq, records=3)
    multi_info = log.append_as_leader([multi], 0)
    assert multi_info.last_offset - multi_info.first_offset + 1 == 3
    leo = log.log_end_offset
    dup_info = log.append_as_leader([ibatch(seq, records=3)], 0)
    assert (dup_info.first_offset, dup_info.last_offset) == (multi_info.first_offset, multi_info.last_offset)
    assert log.log_end_offset == leo
    seq += 3

    # A partial duplicate of the tail is out of order.
    assert error_of(lambda: log.append_as_leader([ibatch(seq - 2, records=2)], 0)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # The batch 4th from the tail (sequence 2) is still retained: a duplicate, no error.
    fourth = log.append_as_leader([ibatch(2)], 0)
    assert (fourth.first_offset, fourth.last_offset) == (2, 2)
    # Older than the last 5 batches: out of order.
    assert error_of(lambda: log.append_as_leader([ibatch(1)], 0)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # A single-record duplicate at the tail answers the original's offsets.
    orig = log.append_as_leader([ibatch(seq)], 0)
    again = log.append_as_leader([ibatch(seq)], 0)
    assert (again.first_offset, again.last_offset) == (orig.first_offset, orig.last_offset)
    assert log.log_end_offset == orig.last_offset + 1


def test_duplicate_answer_carries_original_timestamp_and_current_log_start():
    """UnifiedLog.append's maybeDuplicate case: first/last offset of the original, its timestamp as the log
    append time, the current log start offset; nothing written, the LEO and producer state unchanged."""
    log = make_log()
    log.append_as_leader([ibatch(0, records=4, ts=1234)], 0)
    entry_before = log.producer_state_manager.last_entry(PID)
    size_before = log.size_in_bytes
    info = log.append_as_leader([ibatch(0, records=4, ts=9999)], 0)
    assert (info.first_offset, info.last_offset, info.log_append_time, info.log_start_offset) == (0, 3, 1234, 0)
    assert log.log_end_offset == 4
    assert log.size_in_bytes == size_before
    assert log.producer_state_manager.last_entry(PID) is entry_before


def test_non_sequential_append():
    """UnifiedLogTest.testNonSequentialAppend."""
    log = make_log()
    log.append_as_leader([ibatch(0)], 0)
    assert error_of(lambda: log.append_as_leader([ibatch(2)], 0)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 1


def test_old_producer_epoch():
    """UnifiedLogTest.testOldProducerEpoch."""
    log = make_log()
    log.append_as_leader([ibatch(0, epoch=1)], 0)
    assert error_of(lambda: log.append_as_leader([ibatch(0, epoch=0)], 0)) is Errors.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 1


def test_duplicate_append_to_follower():
    """UnifiedLogTest.testDuplicateAppendToFollower: no validation and no duplicate check on a follower."""
    log = make_log()
    log.append_as_follower([stamped(ibatch(0, records=2), 0)])
    log.append_as_follower([stamped(ibatch(0, records=2), 2)])
    assert log.log_end_offset == 4


def test_multiple_producers_with_duplicates_in_single_append():
    """UnifiedLogTest.testMultipleProducersWithDuplicatesInSingleAppend (follower side)."""
    log = make_log()
    batches = [
        stamped(ibatch(0, pid=1), 0),
        stamped(ibatch(0, pid=2), 1),
        stamped(ibatch(1, pid=1), 2),
        stamped(ibatch(1, pid=2), 3),
        stamped(ibatch(1, pid=1), 4),  # duplicate
    ]
    log.append_as_follower(batches)
    assert log.log_end_offset == 5
    psm = log.producer_state_manager
    assert psm.last_entry(1).last_data_offset == 4
    assert psm.last_entry(2).last_data_offset == 3


def test_follower_append_records_producer_state_for_a_later_leader():
    """A follower's append (origin REPLICATION) updates the producer state, so once leader it answers a retry
    of a replicated batch as a duplicate (UnifiedLog.appendAsFollower -> updateProducers)."""
    log = make_log()
    log.append_as_follower([stamped(ibatch(0, records=3), 0), stamped(ibatch(3, records=2), 3)])
    info = log.append_as_leader([ibatch(3, records=2)], 1)
    assert (info.first_offset, info.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    nxt = log.append_as_leader([ibatch(5)], 1)
    assert nxt.first_offset == 5


def test_mixed_non_idempotent_and_idempotent_batches():
    """Batches without a producer id (RecordBatch.hasProducerId false) are never checked nor recorded."""
    log = make_log()
    log.append_as_leader([plain(), ibatch(0), plain()], 0)
    log.append_as_leader([plain()], 0)
    assert set(log.producer_state_manager.active_producers) == {PID}
    assert log.producer_state_manager.last_entry(PID).last_data_offset == 1


def test_non_idempotent_log_keeps_no_producer_state():
    """Producers that send no producer id leave the producer state empty: no entries, no replay on
    truncation (rebuildProducerState's isEmptyBeforeTruncation)."""
    log = make_log(segment_bytes=250)
    for _ in range(6):
        log.append_as_leader([plain()], 0)
    log.update_high_watermark(log.log_end_offset)
    assert log.producer_state_manager.is_empty
    log.truncate_to(3)
    assert log.producer_state_manager.is_empty
    assert log.log_end_offset == 3


def test_producer_id_map_truncate_to():
    """UnifiedLogTest.testProducerIdMapTruncateTo."""
    log = make_log()
    log.append_as_leader([plain()], 0)
    log.append_as_leader([plain()], 0)
    log.take_producer_snapshot()
    log.append_as_leader([plain()], 0)
    log.take_producer_snapshot()
    psm = log.producer_state_manager

    log.truncate_to(2)
    assert psm.latest_snapshot_offset == 2
    assert psm.map_end_offset == 2
    log.truncate_to(1)
    assert psm.latest_snapshot_offset == 1
    assert psm.map_end_offset == 1
    log.truncate_to(0)
    assert psm.latest_snapshot_offset is None
    assert psm.map_end_offset == 0


def test_producer_id_map_truncate_to_with_no_snapshots():
    """UnifiedLogTest.testProducerIdMapTruncateToWithNoSnapshots: rebuilt from the log start."""
    log = make_log()
    log.append_as_leader([ibatch(0)], 0)
    log.append_as_leader([ibatch(1)], 0)
    log.producer_state_manager.delete_snapshots_before(1 << 62)
    log.truncate_to(1)
    assert {pid: e.last_seq for pid, e in log.producer_state_manager.active_producers.items()} == {PID: 0}


def test_truncation_forgets_truncated_batches_so_their_retry_is_appended_again():
    """After a follower truncates (divergence), the truncated batch is not a duplicate any more: its retry is
    the next in sequence and is appended (rebuildProducerState from the remaining batches)."""
    log = make_log(segment_bytes=250)
    for seq in range(5):
        log.append_as_leader([ibatch(seq)], 0)  # 2 batches a segment: rolls at 2 and 4
    log.truncate_to(3)
    psm = log.producer_state_manager
    assert psm.last_entry(PID).last_seq == 2
    assert psm.last_entry(PID).last_data_offset == 2
    assert error_of(lambda: log.append_as_leader([ibatch(4)], 1)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    retry = log.append_as_leader([ibatch(3)], 1)
    assert retry.first_offset == 3
    assert log.log_end_offset == 4


def test_producer_snapshot_after_segment_roll_on_append():
    """UnifiedLogTest.testProducerSnapshotAfterSegmentRollOnAppend."""
    log = make_log(segment_bytes=1024)
    log.append_as_leader([ibatch(0, size=600)], 0)
    log.append_as_leader([ibatch(1, size=600)], 0)  # overflows the segment: rolls at 1
    assert len(log.segments) == 2
    assert log.active_segment.base_offset == 1
    psm = log.producer_state_manager
    assert psm.latest_snapshot_offset == 1

    log.truncate_to(1)
    assert len(log.segments) == 2
    assert log.active_segment.base_offset == 1
    assert log.active_segment.is_empty
    assert psm.latest_snapshot_offset == 1
    last = psm.last_entry(PID)
    assert last is not None
    assert (last.first_data_offset, last.last_data_offset) == (0, 0)


def test_producer_id_map_truncate_fully_and_start_at():
    """UnifiedLogTest.testProducerIdMapTruncateFullyAndStartAt."""
    log = make_log(segment_bytes=100)
    log.append_as_leader([ibatch(0)], 0)
    log.take_producer_snapshot()
    log.append_as_leader([ibatch(1)], 0)
    log.append_as_leader([ibatch(2)], 0)
    log.take_producer_snapshot()
    psm = log.producer_state_manager
    assert len(log.segments) == 3
    assert psm.map_end_offset == 3
    assert psm.latest_snapshot_offset == 3

    log.truncate_fully_and_start_at(29)
    assert len(log.segments) == 1
    assert psm.latest_snapshot_offset is None
    assert psm.map_end_offset == 29
    assert psm.is_empty


def test_producer_id_expiration_on_segment_deletion():
    """UnifiedLogTest.testProducerIdExpirationOnSegmentDeletion: deleting segments keeps producer state."""
    log = make_log(segment_bytes=100, retention_bytes=200)
    log.append_as_leader([ibatch(0, pid=1)], 0)
    log.take_producer_snapshot()
    log.append_as_leader([ibatch(0, pid=2)], 0)
    log.append_as_leader([ibatch(1, pid=2)], 0)
    log.take_producer_snapshot()
    assert len(log.segments) == 3
    psm = log.producer_state_manager
    assert set(psm.active_producers) == {1, 2}

    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()
    assert len(log.segments) == 2
    assert log.log_start_offset == 1
    assert set(psm.active_producers) == {1, 2}


def test_retention_deletes_producer_state_snapshots():
    """UnifiedLogTest.testRetentionDeletesProducerStateSnapshots (without an empty active segment)."""
    time = ManualTime()
    log = make_log(time, retention_bytes=0, retention_ms=60_000)
    log.append_as_leader([ibatch(0)], 0)
    log.roll()
    log.append_as_leader([ibatch(1)], 0)
    log.roll()
    log.append_as_leader([ibatch(2)], 0)
    log.update_high_watermark(log.log_end_offset)
    psm = log.producer_state_manager
    assert psm.snapshot_offsets == (1, 2)

    time.sleep(60_001)
    log.delete_old_segments()
    assert log.log_start_offset == 3
    assert len(psm.snapshot_offsets) == 1


def test_periodic_producer_id_expiration_on_the_retention_check():
    """UnifiedLogTest.testPeriodicProducerIdExpiration: a producer idle for producer.id.expiration.ms goes at
    the next check (here the retention check, delete_old_segments)."""
    time = ManualTime()
    log = Log(LogConfig(), time, name="t-0", producer_id_expiration_ms=200)
    log.append_as_leader([ibatch(0, ts=time.milliseconds())], 0)
    time.sleep(100)
    log.delete_old_segments()
    assert set(log.producer_state_manager.active_producers) == {PID}
    time.sleep(100)
    log.delete_old_segments()
    assert set(log.producer_state_manager.active_producers) == set()
    # Unknown now: its next sequence is accepted (ProducerAppendInfo.checkSequence).
    log.append_as_leader([ibatch(1, ts=time.milliseconds())], 0)
    assert log.log_end_offset == 2
