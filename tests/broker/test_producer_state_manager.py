"""ProducerStateManager, ProducerStateEntry, ProducerAppendInfo: Kafka's ProducerStateManagerTest cases that
apply without transactions, control records or snapshot files (snapshots are in memory here)."""

import pytest

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.producer_state_manager import (
    NUM_BATCHES_TO_RETAIN,
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    AppendOrigin,
    ProducerStateManager,
    decrement_sequence,
)
from kafkasim.broker.records import RecordBatch

PID = 1
EPOCH = 0
INT_MAX = 2**31 - 1


def append(
    psm: ProducerStateManager,
    producer_id: int,
    epoch: int,
    seq: int,
    offset: int,
    ts: int = 0,
    origin: AppendOrigin = AppendOrigin.CLIENT,
) -> None:
    """ProducerStateManagerTest.appendEntry: a one-record batch at ``offset``, then the map end offset."""
    info = psm.prepare_update(producer_id, origin)
    info.append_data_batch(epoch, seq, seq, ts, offset, offset)
    psm.update(info)
    psm.update_map_end_offset(offset + 1)


def replicate(psm: ProducerStateManager, epoch: int, seq: int, offset: int, ts: int = 0) -> None:
    append(psm, PID, epoch, seq, offset, ts, AppendOrigin.REPLICATION)


def error_of(call) -> Errors:
    with pytest.raises(KafkaError) as raised:
        call()
    return raised.value.error


def entry(psm: ProducerStateManager, producer_id: int = PID):
    found = psm.last_entry(producer_id)
    assert found is not None, f"producer {producer_id} should have an entry"
    return found


def test_basic_id_mapping():
    """ProducerStateManagerTest.testBasicIdMapping."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0)
    append(psm, PID, EPOCH, 1, 1)
    # Duplicates are checked separately (UnifiedLog): appended, they are out of order.
    assert error_of(lambda: append(psm, PID, EPOCH, 1, 1)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # A gap (greater than the next expected sequence).
    assert error_of(lambda: append(psm, PID, EPOCH, 5, 2)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # A new epoch starts at 0.
    append(psm, PID, EPOCH + 1, 0, 3)
    # The old epoch is fenced.
    assert error_of(lambda: append(psm, PID, EPOCH, 0, 4)) is Errors.INVALID_PRODUCER_EPOCH
    assert entry(psm).producer_epoch == EPOCH + 1
    assert entry(psm).last_seq == 0


def test_producer_sequence_wrap_around():
    """ProducerStateManagerTest.testProducerSequenceWrapAround."""
    psm = ProducerStateManager("t-0")
    replicate(psm, 15, INT_MAX, 735)
    append(psm, PID, 15, 0, 735 + 500)
    last = entry(psm)
    assert last.producer_epoch == 15
    assert last.first_seq == INT_MAX
    assert last.last_seq == 0


def test_producer_sequence_with_wrap_around_batch_record():
    """ProducerStateManagerTest.testProducerSequenceWithWrapAroundBatchRecord."""
    psm = ProducerStateManager("t-0")
    info = psm.prepare_update(PID, AppendOrigin.REPLICATION)
    info.append_data_batch(15, INT_MAX - 10, 9, 0, 2000, 2020)
    assert psm.last_entry(PID) is None
    psm.update(info)
    last = entry(psm)
    assert last.first_seq == INT_MAX - 10
    assert last.last_seq == 9
    assert last.first_data_offset == 2000
    assert last.last_data_offset == 2020


def test_producer_sequence_invalid_wrap_around():
    """ProducerStateManagerTest.testProducerSequenceInvalidWrapAround."""
    psm = ProducerStateManager("t-0")
    replicate(psm, 15, INT_MAX, 735)
    assert error_of(lambda: append(psm, PID, 15, 1, 735 + 500)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_record_batch_last_sequence_wraps_like_decrement_sequence():
    """DefaultRecordBatch.lastSequence (incrementSequence) and decrementSequence agree across
    Integer.MAX_VALUE: 21 records from MAX - 10 are MAX - 10 .. MAX, then 0 .. 9."""
    wrapped = RecordBatch(21, 100, 0, 1, producer_id=PID, producer_epoch=0, base_sequence=INT_MAX - 10)
    assert wrapped.last_sequence == 9
    assert decrement_sequence(9, 20) == INT_MAX - 10
    assert decrement_sequence(30, 20) == 10


def test_no_validation_on_first_entry_when_loading_log():
    """ProducerStateManagerTest.testNoValidationOnFirstEntryWhenLoadingLog."""
    psm = ProducerStateManager("t-0")
    replicate(psm, 5, 16, 735)
    last = entry(psm)
    assert last.producer_epoch == 5
    assert (last.first_seq, last.last_seq) == (16, 16)
    assert (last.first_data_offset, last.last_data_offset) == (735, 735)


def test_prepare_update_does_not_mutate():
    """ProducerStateManagerTest.testPrepareUpdateDoesNotMutate."""
    psm = ProducerStateManager("t-0")
    info = psm.prepare_update(PID, AppendOrigin.CLIENT)
    info.append_data_batch(EPOCH, 0, 5, 0, 15, 20)
    assert psm.last_entry(PID) is None
    psm.update(info)
    entry(psm)

    next_info = psm.prepare_update(PID, AppendOrigin.CLIENT)
    next_info.append_data_batch(EPOCH, 6, 10, 0, 26, 30)
    last = entry(psm)
    assert (last.first_seq, last.last_seq, last.last_data_offset) == (0, 5, 20)

    psm.update(next_info)
    last = entry(psm)
    assert (last.first_seq, last.last_seq, last.last_data_offset) == (0, 10, 30)


def test_new_epoch_must_start_at_sequence_zero():
    """ProducerStateManagerTest.testOutOfSequenceAfterControlRecordEpochBump, the part without control
    records: a known producer's higher epoch must restart at sequence 0 (ProducerAppendInfo.checkSequence)."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0)
    append(psm, PID, EPOCH, 1, 1)
    assert error_of(lambda: append(psm, PID, EPOCH + 1, 2, 2)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    append(psm, PID, EPOCH + 1, 0, 2)
    assert entry(psm).producer_epoch == EPOCH + 1
    assert entry(psm).last_seq == 0


def test_unknown_producer_is_accepted_at_any_sequence():
    """ProducerAppendInfo.checkSequence: with no state for the producer (expired, deleted, never replicated)
    Kafka 4.x accepts any first sequence and any epoch -- the broker no longer answers UNKNOWN_PRODUCER_ID
    (KIP-360). ProducerStateManagerTest.testPidExpirationTimeout relies on it."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 3, 17, 0)
    assert (entry(psm).producer_epoch, entry(psm).last_seq) == (3, 17)
    append(psm, PID, 3, 18, 1)


def test_remove_expired_pids_on_reload():
    """ProducerStateManagerTest.testRemoveExpiredPidsOnReload, on one manager (no snapshot files): the
    snapshot past the reloaded end goes, the producer is unknown, its next sequence is accepted."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0, ts=0)
    append(psm, PID, EPOCH, 1, 1, ts=1)
    psm.take_snapshot()
    psm.truncate_and_reload(0, 1, 70_000)
    assert psm.active_producers == {}

    append(psm, PID, EPOCH, 2, 2, ts=70_001)
    assert len(psm.active_producers) == 1
    assert entry(psm).last_seq == 2
    assert psm.map_end_offset == 3


def test_accept_append_without_producer_state_on_replica():
    """ProducerStateManagerTest.testAcceptAppendWithoutProducerStateOnReplica (one manager, as above)."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0, ts=0)
    append(psm, PID, EPOCH, 1, 1, ts=1)
    psm.take_snapshot()
    psm.truncate_and_reload(0, 1, 70_000)
    assert PID not in psm.active_producers
    replicate(psm, EPOCH, 2, 2, ts=70_001)
    last = entry(psm)
    assert (last.producer_epoch, last.first_seq, last.last_seq) == (EPOCH, 2, 2)


def test_accept_append_with_sequence_gaps_on_replica():
    """ProducerStateManagerTest.testAcceptAppendWithSequenceGapsOnReplica."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0)
    assert error_of(lambda: append(psm, PID, EPOCH, 3, 1)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert entry(psm).last_seq == 0
    replicate(psm, EPOCH, 3, 1)
    assert entry(psm).last_seq == 3


def test_replica_accepts_an_older_epoch():
    """ProducerAppendInfo.checkProducerEpoch: an older epoch from replication is only logged (the leader
    validated it), and the entry takes that epoch (ProducerStateEntry.maybeUpdateProducerEpoch)."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 2, 0, 0)
    replicate(psm, 1, 5, 1)
    assert (entry(psm).producer_epoch, entry(psm).last_seq) == (1, 5)
    assert len(entry(psm).batch_metadata) == 1


def test_truncate_and_reload_removes_out_of_range_snapshots():
    """ProducerStateManagerTest.testTruncateAndReloadRemovesOutOfRangeSnapshots."""
    psm = ProducerStateManager("t-0")
    for seq in range(5):
        append(psm, PID, EPOCH, seq, seq)
        psm.take_snapshot()
    psm.truncate_and_reload(1, 3, 0)
    assert psm.oldest_snapshot_offset == 2
    assert psm.latest_snapshot_offset == 3
    # Reloaded from the snapshot at 3: the batches at offsets 0..2.
    assert psm.map_end_offset == 3
    assert entry(psm).last_seq == 2


def test_delete_snapshots_before():
    """ProducerStateManagerTest.testDeleteSnapshotsBefore."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0)
    append(psm, PID, EPOCH, 1, 1)
    psm.take_snapshot()
    assert psm.snapshot_offsets == (2,)
    append(psm, PID, EPOCH, 2, 2)
    psm.take_snapshot()
    assert psm.snapshot_offsets == (2, 3)
    psm.delete_snapshots_before(3)
    assert psm.snapshot_offsets == (3,)
    psm.delete_snapshots_before(4)
    assert psm.snapshot_offsets == ()


def test_truncate_fully_and_start_at():
    """ProducerStateManagerTest.testTruncateFullyAndStartAt."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0)
    append(psm, PID, EPOCH, 1, 1)
    psm.take_snapshot()
    append(psm, PID, EPOCH, 2, 2)
    psm.take_snapshot()
    assert psm.snapshot_offsets == (2, 3)

    psm.truncate_fully_and_start_at(0)
    assert psm.snapshot_offsets == ()
    assert psm.active_producers == {}

    append(psm, PID, EPOCH, 0, 0)
    psm.take_snapshot()
    assert psm.snapshot_offsets == (1,)


def test_load_from_snapshot_retains_non_expired_producers():
    """ProducerStateManagerTest.testLoadFromSnapshotRetainsNonExpiredProducers."""
    psm = ProducerStateManager("t-0")
    append(psm, 1, EPOCH, 0, 0)
    append(psm, 2, EPOCH, 0, 1)
    psm.take_snapshot()
    assert len(psm.active_producers) == 2
    psm.truncate_and_reload(1, 2, 0)
    assert len(psm.active_producers) == 2
    assert (entry(psm, 1).last_seq, entry(psm, 1).last_data_offset) == (0, 0)
    assert (entry(psm, 2).last_seq, entry(psm, 2).last_data_offset) == (0, 1)


def test_load_from_snapshot_drops_expired_producers():
    """ProducerStateManager.loadFromSnapshot filters out producers expired at load time."""
    psm = ProducerStateManager("t-0", producer_id_expiration_ms=1_000)
    append(psm, 1, EPOCH, 0, 0, ts=0)
    append(psm, 2, EPOCH, 0, 1, ts=900)
    psm.take_snapshot()
    append(psm, 2, EPOCH, 1, 2, ts=900)
    psm.truncate_and_reload(0, 2, 1_500)
    assert set(psm.active_producers) == {2}


def test_skip_snapshot_if_offset_unchanged():
    """ProducerStateManagerTest.testSkipSnapshotIfOffsetUnchanged."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, EPOCH, 0, 0)
    psm.take_snapshot()
    assert psm.snapshot_offsets == (1,)
    psm.take_snapshot()
    assert psm.snapshot_offsets == (1,)


def test_pid_expiration_timeout():
    """ProducerStateManagerTest.testPidExpirationTimeout."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 5, 0, 1, ts=0)
    assert psm.remove_expired_producers(PRODUCER_ID_EXPIRATION_MS_DEFAULT - 1) == 0
    assert psm.remove_expired_producers(PRODUCER_ID_EXPIRATION_MS_DEFAULT + 1) == 1
    append(psm, PID, 5, 1, 2, ts=PRODUCER_ID_EXPIRATION_MS_DEFAULT + 1)
    assert len(psm.active_producers) == 1
    assert entry(psm).last_seq == 1
    assert psm.map_end_offset == 3


def test_entry_retains_the_last_five_batches_for_duplicate_detection():
    """ProducerStateEntry.NUM_BATCHES_TO_RETAIN and findDuplicateBatch (the rule UnifiedLogTest
    .testDuplicateAppends exercises): only the last 5 batches, same epoch, exact sequence range."""
    assert NUM_BATCHES_TO_RETAIN == 5
    psm = ProducerStateManager("t-0")
    for seq in range(6):
        append(psm, PID, EPOCH, seq, 10 + seq)
    last = entry(psm)
    assert [m.last_seq for m in last.batch_metadata] == [1, 2, 3, 4, 5]

    def probe(seq: int, epoch: int = EPOCH, records: int = 1):
        return last.find_duplicate_batch(
            RecordBatch(records, 10, 0, 0, producer_id=PID, producer_epoch=epoch, base_sequence=seq)
        )

    assert probe(0) is None  # the 6th from the tail is forgotten
    found = probe(1)
    assert found is not None and (found.first_offset, found.last_offset) == (11, 11)
    assert probe(5) is not None
    assert probe(5, epoch=EPOCH + 1) is None
    assert probe(4, records=2) is None  # [4, 5] is not a retained range
