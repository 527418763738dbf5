"""The producer's delivery semantics: retries and their backoff, the delivery timeout, idempotent sequences
and ordering, ``TransactionManager.canRetry``, metadata -- Kafka's ``SenderTest``, ``ExponentialBackoffTest``
and ``MetadataTest`` cases that apply, each named in its docstring. The producer runs on a bare SimPy
environment with scripted connections (``Harness`` from ``test_producer_unit``)."""

from __future__ import annotations

import random

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import NO_SEQUENCE, RecordBatch, TopicPartition
from kafkasim.clients.accumulator import RecordAccumulator
from kafkasim.clients.metadata import Metadata
from kafkasim.network.messages import RequestEnvelope
from kafkasim.sim.backoff import ExponentialBackoff

from .test_producer_unit import TP, Harness

INT_MAX = 2_147_483_647


def _batch(envelope: RequestEnvelope) -> RecordBatch:
    (batches,) = envelope.body.entries.values()
    (batch,) = batches
    return batch


def _seq(envelope: RequestEnvelope) -> tuple[int, int]:
    """(producer epoch, base sequence) of the request's one batch."""
    b = _batch(envelope)
    return b.producer_epoch, b.base_sequence


def test_retries_resend_after_a_backoff_until_retries_run_out() -> None:
    """SenderTest.testRetries / testCanRetryWithoutIdempotence: a retriable error re-enqueues the batch
    (attempts + 1); once attempts reach ``retries`` the error reaches the application."""
    h = Harness(retries=1, stop_ms=1.5)  # one record, at 1 ms
    h.run(until=5.0)
    assert len(h.sent) == 1
    h.respond_with(h.sent[0], Errors.NOT_ENOUGH_REPLICAS)
    assert h.reports.batches == []  # a retriable error is never surfaced while retrying
    h.run(until=200.0)
    # retry.backoff.ms = 100 with jitter 0.2: the retry goes 80..120 ms after the failed attempt.
    assert len(h.sent) == 2 and 85.0 <= h.sent[1].client_send_ms < 125.0
    assert _batch(h.sent[1]).batch_id == _batch(h.sent[0]).batch_id
    h.respond_with(h.sent[1], Errors.NOT_ENOUGH_REPLICAS)
    h.run(until=2000.0)
    assert len(h.sent) == 2
    assert [(n, e) for _t, _id, n, e, _b in h.reports.batches] == [(1, Errors.NOT_ENOUGH_REPLICAS)]


def test_non_retriable_errors_fail_at_once() -> None:
    """SenderTest.testCanRetryWithoutIdempotence (the non-retriable half): INVALID_REQUIRED_ACKS is not a
    RetriableException, so the batch fails on its first answer."""
    h = Harness(retries=INT_MAX, stop_ms=1.5)
    h.run(until=5.0)
    h.respond_with(h.sent[0], Errors.INVALID_REQUIRED_ACKS)
    h.run(until=1000.0)
    assert len(h.sent) == 1
    assert [e for *_x, e, _b in h.reports.batches] == [Errors.INVALID_REQUIRED_ACKS]


def test_exponential_backoff_doubles_with_jitter_and_caps_after_jitter() -> None:
    """ExponentialBackoffTest.testExponentialBackoff: initial 100, x2, max 1000, jitter 0.2 -- each value
    within 20% of 100 * 2^attempts, and never above the cap."""
    backoff = ExponentialBackoff(100, 2, 1000, 0.2, random.Random(7))
    for attempts in range(10):
        expected = min(100 * 2**attempts, 1000 * 2)  # expMax = log2(10): the term stops growing at 1000
        term = 100 * 2 ** min(attempts, 3.321928094887362)
        value = backoff.backoff(attempts)
        assert value <= 1000
        assert int(term * 0.8) <= value <= min(1000, term * 1.2), (attempts, value, expected)
    # Without jitter (ExponentialBackoffTest.testExponentialBackoffWithoutJitter): exactly 100, 200, 400, 800, 1000.
    exact = ExponentialBackoff(100, 2, 1000, 0.0, random.Random(7))
    assert [exact.backoff(a) for a in range(6)] == [100, 200, 400, 800, 1000, 1000]


def test_in_flight_batch_expires_at_delivery_timeout_and_its_late_response_is_ignored() -> None:
    """SenderTest.testInflightBatchesExpireOnDeliveryTimeout: a batch in flight past delivery.timeout.ms
    fails with TimeoutException (REQUEST_TIMED_OUT here) although request.timeout.ms has not passed;
    the response that comes later completes nothing."""
    h = Harness(retries=INT_MAX, stop_ms=1.5, delivery_timeout_ms=1500, request_timeout_ms=30_000)
    h.run(until=1500.0)
    assert h.reports.batches == []
    h.run(until=1502.0)
    assert [(t, e) for t, _id, _n, e, _b in h.reports.batches] == [(1501.0, Errors.REQUEST_TIMED_OUT)]
    h.respond(h.sent[0], base_offset=0)
    assert len(h.reports.batches) == 1


def test_queued_batches_expire_at_delivery_timeout() -> None:
    """SenderTest.testExpiredBatchesInMultiplePartitions / RecordAccumulator.expiredBatches: a batch still in
    the accumulator (here: behind a request that never completes, max.in.flight = 1) fails once
    delivery.timeout.ms has passed since it was created."""
    h = Harness(retries=INT_MAX, max_in_flight=1, stop_ms=2.5, delivery_timeout_ms=1500, request_timeout_ms=30_000)
    h.run(until=1503.0)
    # Record 1 in flight (created at 1), record 2 queued (created at 2): both expire, each at its deadline.
    assert [(t, n, e) for t, _id, n, e, _b in h.reports.batches] == [
        (1501.0, 1, Errors.REQUEST_TIMED_OUT),
        (1502.0, 1, Errors.REQUEST_TIMED_OUT),
    ]
    assert len(h.sent) == 1 and h.producer.accumulator.queued_batches == 0


def test_expired_retries_stop_before_retries_run_out() -> None:
    """SenderTest.testExpiredBatchDoesNotRetry: a failure after delivery.timeout.ms is final, even with
    retries left."""
    h = Harness(retries=INT_MAX, stop_ms=1.5, delivery_timeout_ms=1500, request_timeout_ms=30_000)
    h.run(until=5.0)
    h.respond_with(h.sent[0], Errors.NOT_ENOUGH_REPLICAS)
    for _ in range(40):  # keep failing every retry until the delivery timeout
        h.run(until=h.env.now + 150.0)
        if len(h.sent) and h.sent[-1].response is None and h.sent[-1].error is None:
            h.respond_with(h.sent[-1], Errors.NOT_ENOUGH_REPLICAS)
    assert [(t, e) for t, _id, _n, e, _b in h.reports.batches] == [(1501.0, Errors.REQUEST_TIMED_OUT)]
    # Backoff grows 100, 200, 400, 800 (+/-20%): about 4 retries fit into 1.5 s.
    assert 4 <= len(h.sent) <= 6
    gaps = [b.client_send_ms - a.client_send_ms for a, b in zip(h.sent, h.sent[1:], strict=False)]
    assert gaps[1] > gaps[0] * 1.2


def test_idempotent_batches_get_sequences_at_drain() -> None:
    """SenderTest.testIdempotenceWithMultipleInflights: each drained batch takes the partition's next
    sequence (by its record count); the first response acks sequence 0."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, gap_ms=10.0, stop_ms=25.0)
    h.run(until=22.0)
    assert [_seq(e) for e in h.sent] == [(0, 0), (0, 1)]
    assert _batch(h.sent[0]).producer_id == 0
    h.respond(h.sent[0], base_offset=0)
    txn = h.producer.txn
    assert txn is not None and txn.is_next_sequence(TP, 1)


def test_idempotent_retries_go_one_at_a_time_in_sequence_order() -> None:
    """SenderTest.testIdempotenceWithMultipleInflightsRetriedInOrder: three batches in flight; the first
    fails (LEADER_NOT_AVAILABLE), the others come back OUT_OF_ORDER_SEQUENCE_NUMBER (not the next
    sequence: retried, no epoch bump). They are re-sent in sequence order, one request at a time (a retried
    batch goes only when it is the first in flight of its partition), keeping their sequences; a fourth
    batch queued behind them goes after them with sequence 3."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, gap_ms=10.0, stop_ms=45.0)  # records at 10..40
    h.run(until=35.0)
    assert [_seq(e) for e in h.sent] == [(0, 0), (0, 1), (0, 2)]
    h.respond_with(h.sent[0], Errors.LEADER_NOT_AVAILABLE)
    h.respond_with(h.sent[1], Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    h.respond_with(h.sent[2], Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    h.run(until=200.0)
    # Only sequence 0 was re-sent; 1 and 2 wait for it although their backoff is over; the batch of 40 ms
    # is queued behind them.
    assert [_seq(e) for e in h.sent[3:]] == [(0, 0)]
    assert h.producer.in_flight == 1
    txn = h.producer.txn
    assert txn is not None and txn.producer_epoch == 0
    answered = 3
    while answered < len(h.sent):
        envelope = h.sent[answered]
        h.respond(envelope, base_offset=_seq(envelope)[1])
        answered += 1
        h.run(until=h.env.now + 1.0)
    assert [_seq(e) for e in h.sent[3:]] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    # Sequence 1 went only after 0 was acked, 2 only after 1 (in Kafka's words: the in-flight count is
    # reduced to one during retries); the new batch (3) may follow 2 at once.
    acked = sorted(t for t, *_x in h.reports.batches)
    assert h.sent[4].client_send_ms >= acked[0] and h.sent[5].client_send_ms >= acked[1]
    assert [(e, b) for *_x, e, b in h.reports.batches] == [(Errors.NONE, i) for i in range(4)]


def test_out_of_order_for_the_next_sequence_bumps_the_epoch() -> None:
    """SenderTest.testEpochBumpOnOutOfOrderSequenceForNextBatch: sequence 0 is acked, then the next batch
    (sequence 1 = last acked + 1) is refused OUT_OF_ORDER_SEQUENCE_NUMBER: a real gap. The producer bumps its
    epoch and the batch is retried with the new epoch from sequence 0."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, gap_ms=10.0, stop_ms=25.0)
    h.run(until=22.0)
    h.respond(h.sent[0], base_offset=0)
    h.respond_with(h.sent[1], Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, log_start_offset=0)
    h.run(until=200.0)
    txn = h.producer.txn
    assert txn is not None and txn.producer_epoch == 1
    assert _seq(h.sent[2]) == (1, 0)
    assert _batch(h.sent[2]).batch_id == _batch(h.sent[1]).batch_id


def test_unknown_producer_id_with_unknown_log_start_is_retried_without_bump() -> None:
    """SenderTest.testUnknownProducerErrorShouldBeRetriedWhenLogStartOffsetIsUnknown: UNKNOWN_PRODUCER_ID with
    logStartOffset -1 is retried as it is (same epoch, same sequence)."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, gap_ms=10.0, stop_ms=25.0)
    h.run(until=22.0)
    h.respond(h.sent[0], base_offset=0)
    h.respond_with(h.sent[1], Errors.UNKNOWN_PRODUCER_ID, log_start_offset=-1)
    h.run(until=200.0)
    assert _seq(h.sent[2]) == (0, 1)
    txn = h.producer.txn
    assert txn is not None and txn.producer_epoch == 0


def test_unknown_producer_id_after_retention_bumps_the_epoch() -> None:
    """SenderTest.testIdempotentUnknownProducerHandlingWhenRetentionLimitReached: UNKNOWN_PRODUCER_ID while the
    last acked offset is below the log start offset (retention removed the producer's state): bump the
    epoch and retry from sequence 0."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, gap_ms=10.0, stop_ms=25.0)
    h.run(until=22.0)
    h.respond(h.sent[0], base_offset=0)
    h.respond_with(h.sent[1], Errors.UNKNOWN_PRODUCER_ID, log_start_offset=5)
    h.run(until=200.0)
    assert _seq(h.sent[2]) == (1, 0)


def test_expiry_of_first_batch_should_cause_epoch_bump_if_future_batches_fail() -> None:
    """SenderTest.testExpiryOfFirstBatchShouldCauseEpochBumpIfFutureBatchesFail: the first batch (retried
    after NOT_LEADER_OR_FOLLOWER) expires: its sequence is unresolved, and a new batch is held back. The
    second batch then gets OUT_OF_ORDER_SEQUENCE_NUMBER: it is the next sequence after the unresolved one,
    so the epoch is bumped, it is retried as sequence 0 of epoch 1, and the held-back batch follows."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, gap_ms=1000.0, stop_ms=3500.0,
                delivery_timeout_ms=1500, request_timeout_ms=30_000)
    h.run(until=2001.0)
    assert [_seq(e) for e in h.sent] == [(0, 0), (0, 1)]
    h.respond_with(h.sent[0], Errors.NOT_LEADER_OR_FOLLOWER)
    h.run(until=2501.0)  # the first batch is re-sent (~2100) and expires in flight at 2500
    assert [(t, e) for t, _id, _n, e, _b in h.reports.batches] == [(2500.0, Errors.REQUEST_TIMED_OUT)]
    txn = h.producer.txn
    assert txn is not None and txn.has_unresolved(TP)
    h.respond_with(h.sent[1], Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, log_start_offset=0)
    h.run(until=2900.0)
    assert txn.producer_epoch == 1 and not txn.has_unresolved(TP)
    assert _seq(h.sent[-1]) == (1, 0) and _batch(h.sent[-1]).batch_id == _batch(h.sent[1]).batch_id
    h.run(until=3001.0)  # the record of 3000 ms: sequence 1 of the new epoch
    assert _seq(h.sent[-1]) == (1, 1)


def test_a_late_error_for_an_expired_batch_leaves_the_transaction_manager_alone() -> None:
    """Sender.failBatch calls TransactionManager.handleFailedBatch only if ProducerBatch.completeExceptionally
    changed the batch's state: an error answer for a batch that already expired (FAILED -> FAILED, ignored)
    neither bumps the epoch nor rewrites the sequences of the batches after it. (kafkasim bumped it: with a
    delivery.timeout.ms shorter than the faults, failover stress seed 15 bumped twice on two late answers,
    rewrote the sequences of batches already written in the old epoch, and its next batch was refused
    OUT_OF_ORDER_SEQUENCE_NUMBER until it expired.)"""
    h = Harness(retries=INT_MAX, enable_idempotence=True, stop_ms=1.5, delivery_timeout_ms=1500,
                request_timeout_ms=30_000)
    h.run(until=1502.0)
    assert [(t, e) for t, _id, _n, e, _b in h.reports.batches] == [(1501.0, Errors.REQUEST_TIMED_OUT)]
    txn = h.producer.txn
    assert txn is not None and not txn.epoch_bump_required
    for error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER):
        h.respond_with(h.sent[0], error, log_start_offset=0)
        h.run(until=h.env.now + 100.0)
        assert (txn.producer_epoch, txn.epoch_bumps, txn.epoch_bump_required) == (0, 0, False)
        assert len(h.reports.batches) == 1


def test_expired_unsent_batches_do_not_leave_sequences_unresolved() -> None:
    """SenderTest.testExpiryOfUnsentBatchesShouldNotCauseUnresolvedSequences: a batch that expires before it
    was ever sent has no sequence; nothing is unresolved."""
    h = Harness(retries=INT_MAX, enable_idempotence=True, max_in_flight=1, stop_ms=2.5, delivery_timeout_ms=1500,
                request_timeout_ms=30_000)
    h.run(until=1501.5)
    txn = h.producer.txn
    assert txn is not None
    # Record 1 (sent once, not retried) and record 2 (never sent) expired.
    assert len(h.reports.batches) == 1
    h.run(until=1503.0)
    assert len(h.reports.batches) == 2 and not txn.has_unresolved(TP)


def test_a_changed_leader_epoch_skips_the_retry_backoff() -> None:
    """SenderTest.testProducerBatchRetriesWhenPartitionLeaderChanges (KIP-951): NOT_LEADER_OR_FOLLOWER requests
    a metadata update; the refresh brings a newer leader epoch, so the retry goes at once, without
    waiting for its backoff."""
    epoch = [0]
    h = Harness(retries=INT_MAX, enable_idempotence=True, stop_ms=1.5, metadata_round_trip_ms=5.0,
                fetch_metadata=lambda: {TP: (0, epoch[0])})
    h.run(until=5.0)
    epoch[0] = 1
    h.respond_with(h.sent[0], Errors.NOT_LEADER_OR_FOLLOWER)
    h.run(until=50.0)
    assert [e.client_send_ms for e in h.sent] == [1.0, 10.0]  # the refresh answered at 5 + 5 ms
    assert h.producer.metadata.leader_epoch(TP) == 1


def test_metadata_ignores_an_older_leader_epoch() -> None:
    """MetadataTest.testIgnoreLeaderEpochInOlderMetadataResponse: a response with an older leader epoch does
    not roll the client's view back."""
    tp = TopicPartition("t", 0)
    metadata = Metadata({tp: (1, 10)}, ExponentialBackoff(100, 2, 1000, 0.2, random.Random(1)))
    assert metadata.update({tp: (2, 9)}, 0.0) == set()
    assert (metadata.leader(tp), metadata.leader_epoch(tp)) == (1, 10)
    assert metadata.update({tp: (2, 11)}, 0.0) == {tp}
    assert (metadata.leader(tp), metadata.leader_epoch(tp)) == (2, 11)


def test_metadata_refreshes_back_off_while_responses_bring_nothing_new() -> None:
    """MetadataTest.testTimeToNextUpdateRetryBackoff: after a response the next refresh waits about
    retry.backoff.ms; equivalent responses back off exponentially to retry.backoff.max.ms."""
    tp = TopicPartition("t", 0)
    metadata = Metadata({tp: (1, 0)}, ExponentialBackoff(100, 2, 1000, 0.0, random.Random(1)))
    assert metadata.time_to_next_update(0.0) == float("inf")  # nothing requested
    metadata.request_update()
    assert metadata.time_to_next_update(0.0) == 0.0
    waits = []
    now = 0.0
    for _ in range(6):
        metadata.refresh_started()
        metadata.update({tp: (1, 0)}, now)
        metadata.request_update()
        waits.append(metadata.time_to_next_update(now))
    assert waits == [100, 200, 400, 800, 1000, 1000]


def test_acks_zero_never_retries() -> None:
    """Sender: an acks=0 batch is done once written to the socket (no response to retry on)."""
    h = Harness(acks=0, retries=INT_MAX, stop_ms=1.5)
    h.run(until=500.0)
    assert len(h.sent) == 1 and [e for *_x, e, _b in h.reports.batches] == [Errors.NONE]
    assert _batch(h.sent[0]).base_sequence == NO_SEQUENCE


def test_a_full_buffer_blocks_send_until_memory_is_freed() -> None:
    """BufferPoolTest.testDelayedAllocation: with buffer.memory for two batches and both in flight, the
    next record's send() blocks; the response that completes a batch frees its memory and the record
    goes then -- its latency counts from its intended time (1 ms records, batch.size = one record)."""
    batch = 100 + 61  # RECORD + the batch header: batch.size of exactly one record
    h = Harness(retries=INT_MAX, batch_size=batch, buffer_memory=2 * batch, max_in_flight=5, stop_ms=3.5)
    h.run(until=50.0)
    assert [e.client_send_ms for e in h.sent] == [1.0, 2.0]  # the record of 3 ms waits for memory
    h.respond(h.sent[0], base_offset=0)
    h.run(until=60.0)
    assert [e.client_send_ms for e in h.sent] == [1.0, 2.0, 50.0]
    assert _batch(h.sent[2]).create_time_ms == 3  # CreateTime: its intended time


def test_a_send_blocked_longer_than_max_block_ms_fails_with_buffer_exhausted() -> None:
    """BufferPoolTest.testBlockTimeout: allocate gives up after max.block.ms (BufferExhaustedException, a
    TimeoutException: REQUEST_TIMED_OUT here, never sent); the application goes on with the next record,
    which blocks again."""
    batch = 100 + 61
    h = Harness(retries=INT_MAX, batch_size=batch, buffer_memory=2 * batch, max_block_ms=20.0, stop_ms=4.5,
                request_timeout_ms=30_000)
    h.run(until=100.0)
    # Record 3 blocked from 3 ms and failed at 23; record 4 (intended at 4) blocked from 23, failed at 43.
    assert [(t, e) for t, _id, _n, e, _b in h.reports.batches] == [
        (23.0, Errors.REQUEST_TIMED_OUT),
        (43.0, Errors.REQUEST_TIMED_OUT),
    ]
    assert h.producer.buffer_exhausted == 2 and len(h.sent) == 2


def test_a_blocked_send_makes_lingering_batches_sendable() -> None:
    """RecordAccumulator.ready: ``exhausted = free.queued() > 0`` -- while a send() waits for memory, a batch
    still inside its linger.ms is sendable at once."""
    acc = RecordAccumulator([TP], 16_384, 1000.0)
    acc.append(TP, 100, 0.0, 0.0, 0)
    assert acc.ready_delay_ms(10.0) == 990.0
    acc.exhausted = True
    assert acc.ready_delay_ms(10.0) == 0.0
