"""The idempotent producer's bookkeeping: Kafka's ``TransactionManager`` without transactions.

* Producer id and epoch: given at construction (``InitProducerId`` is not simulated: each producer gets a
  distinct id from the builder); an epoch bump is local (``bumpIdempotentProducerEpoch``; a new producer
  id when the epoch would pass Short.MAX_VALUE).
* Per partition (``TxnPartitionEntry``): the producer id and epoch its sequences belong to, the next
  sequence, the last acknowledged sequence and offset, and the batches in flight (sequence assigned, not
  completed), sorted by base sequence.
* ``can_retry`` is ``TransactionManager.canRetry`` for the idempotent (non-transactional) producer;
  ``should_stop_drain`` is ``RecordAccumulator.shouldStopDrainBatchesForPartition``; unresolved sequences
  (``markSequenceUnresolved`` / ``maybeResolveSequences``) hold back new batches of a partition whose
  expired batches may or may not have been written.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import NO_SEQUENCE, TopicPartition

if TYPE_CHECKING:
    from kafkasim.clients.accumulator import ProducerBatch

SHORT_MAX: Final = 32_767
INT_MAX: Final = 2_147_483_647
NO_LAST_ACKED_SEQUENCE_NUMBER: Final = -1

# Kafka's RetriableException subclasses a produce response can carry (Errors.exception() instanceof
# RetriableException): the non-idempotent producer retries exactly these.
RETRIABLE_ERRORS: Final = frozenset({
    Errors.CORRUPT_MESSAGE,
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.LEADER_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.REQUEST_TIMED_OUT,
    Errors.NETWORK_EXCEPTION,
    Errors.NOT_ENOUGH_REPLICAS,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    Errors.KAFKA_STORAGE_ERROR,
    Errors.REPLICA_NOT_AVAILABLE,
    Errors.FENCED_LEADER_EPOCH,
    Errors.UNKNOWN_LEADER_EPOCH,
    Errors.UNKNOWN_TOPIC_ID,
    Errors.INCONSISTENT_TOPIC_ID,
})


def _increment(sequence: int, by: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: wraps to 0 after Integer.MAX_VALUE."""
    return sequence + by - (INT_MAX + 1) if sequence > INT_MAX - by else sequence + by


class TxnPartitionEntry:
    __slots__ = ("producer_id", "producer_epoch", "next_sequence", "last_acked_sequence", "last_acked_offset",
                 "in_flight", "sequences")

    def __init__(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.next_sequence = 0
        self.last_acked_sequence = NO_LAST_ACKED_SEQUENCE_NUMBER
        self.last_acked_offset = -1
        self.in_flight: list[ProducerBatch] = []  # sorted by base sequence
        self.sequences: list[int] = []  # their base sequences (the sort key)


class TransactionManager:
    """Kafka's ``TransactionManager`` for an idempotent, non-transactional producer."""

    __slots__ = ("producer_id", "producer_epoch", "_partitions", "_unresolved", "_to_rewrite", "epoch_bump_required",
                 "epoch_bumps", "_next_producer_id", "out_of_order_not_next", "out_of_order_gaps")

    def __init__(self, producer_id: int, producer_epoch: int = 0) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self._partitions: dict[TopicPartition, TxnPartitionEntry] = {}
        # partitionsWithUnresolvedSequences: tp -> the next sequence when it was marked.
        self._unresolved: dict[TopicPartition, int] = {}
        self._to_rewrite: set[TopicPartition] = set()
        self.epoch_bump_required = False
        self.epoch_bumps = 0
        self._next_producer_id = producer_id
        # OUT_OF_ORDER_SEQUENCE_NUMBER answers by canRetry's branch: not the next batch (retried as it is), or
        # a gap after the last acknowledged or unresolved sequence (an epoch bump).
        self.out_of_order_not_next = 0
        self.out_of_order_gaps = 0  # a new id after an epoch overflow: the builder spaces ids apart

    def _entry(self, tp: TopicPartition) -> TxnPartitionEntry:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = TxnPartitionEntry(self.producer_id, self.producer_epoch)
        return entry

    # --- drain ---------------------------------------------------------------------------------------

    def has_stale_producer_id_and_epoch(self, tp: TopicPartition) -> bool:
        e = self._entry(tp)
        return e.producer_id != self.producer_id or e.producer_epoch != self.producer_epoch

    def has_in_flight(self, tp: TopicPartition) -> bool:
        entry = self._partitions.get(tp)
        return entry is not None and bool(entry.in_flight)

    def first_in_flight_sequence(self, tp: TopicPartition) -> int:
        entry = self._partitions.get(tp)
        return entry.sequences[0] if entry is not None and entry.sequences else NO_SEQUENCE

    def should_stop_drain(self, first: ProducerBatch) -> bool:
        """``RecordAccumulator.shouldStopDrainBatchesForPartition`` (idempotent part)."""
        tp = first.tp
        if first.base_sequence == NO_SEQUENCE:  # a first send: the common case, kept cheap
            if self._unresolved and tp in self._unresolved:
                return True  # earlier expired batches: wait until it is known whether they were written
            # A new epoch's sequence 0 must not overtake the old epoch's batches (only after a bump).
            return self.epoch_bumps > 0 and self.has_in_flight(tp) and self.has_stale_producer_id_and_epoch(tp)
        first_seq = self.first_in_flight_sequence(tp)
        # A retried batch is sent only when it is the first in flight of its partition: one request at a
        # time until the gap is filled.
        return first_seq != NO_SEQUENCE and first.base_sequence != first_seq

    def assign_sequence(self, batch: ProducerBatch) -> None:
        """At drain, first send only (``RecordAccumulator.drain``): ``maybeUpdateProducerIdAndEpoch``, then
        ``setProducerState`` with the partition's next sequence, and ``addInFlightBatch``."""
        tp = batch.tp
        entry = self._entry(tp)
        if self.has_stale_producer_id_and_epoch(tp) and not entry.in_flight:
            self._start_sequences_at_beginning(tp)
        batch.producer_id = self.producer_id
        batch.producer_epoch = self.producer_epoch
        batch.base_sequence = entry.next_sequence
        entry.next_sequence = _increment(entry.next_sequence, batch.record_count)
        self._add_in_flight(entry, batch)

    @staticmethod
    def _add_in_flight(entry: TxnPartitionEntry, batch: ProducerBatch) -> None:
        i = bisect.bisect_left(entry.sequences, batch.base_sequence)
        entry.sequences.insert(i, batch.base_sequence)
        entry.in_flight.insert(i, batch)

    @staticmethod
    def _remove_in_flight(entry: TxnPartitionEntry, batch: ProducerBatch) -> None:
        for i, b in enumerate(entry.in_flight):
            if b is batch:
                del entry.in_flight[i]
                del entry.sequences[i]
                return

    # --- completion ----------------------------------------------------------------------------------

    def handle_completed(self, batch: ProducerBatch, last_offset: int) -> None:
        """``handleCompletedBatch``: the last acknowledged sequence and offset move forward."""
        entry = self._entry(batch.tp)
        if batch.producer_id == entry.producer_id and batch.producer_epoch == entry.producer_epoch:
            last_seq = _increment(batch.base_sequence, batch.record_count - 1)
            if last_seq > entry.last_acked_sequence:
                entry.last_acked_sequence = last_seq
            if last_offset > entry.last_acked_offset:
                entry.last_acked_offset = last_offset
        self._remove_in_flight(entry, batch)

    def handle_failed(self, batch: ProducerBatch, error: Errors, adjust_sequences: bool) -> None:
        """``handleFailedBatch``: out of the in-flight set; OUT_OF_ORDER_SEQUENCE_NUMBER means a gap in the
        log: bump the epoch; UNKNOWN_PRODUCER_ID: the broker lost the producer, start the partition over
        (``resetSequenceForPartition``); otherwise a batch failed while retries were left
        (``adjustSequenceNumbers``) also bumps the epoch (the idempotent producer's branch)."""
        tp = batch.tp
        entry = self._entry(tp)
        self._remove_in_flight(entry, batch)
        if error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER:
            self.request_epoch_bump(tp)
        elif error == Errors.UNKNOWN_PRODUCER_ID:
            del self._partitions[tp]
            self._unresolved.pop(tp, None)
        elif adjust_sequences:
            self.request_epoch_bump(tp)

    # --- canRetry ------------------------------------------------------------------------------------

    def is_next_sequence(self, tp: TopicPartition, sequence: int) -> bool:
        return sequence - self._entry(tp).last_acked_sequence == 1

    def can_retry(self, batch: ProducerBatch, error: Errors, log_start_offset: int) -> bool:
        """``TransactionManager.canRetry`` (idempotent producer)."""
        tp = batch.tp
        if error == Errors.UNKNOWN_PRODUCER_ID:
            if log_start_offset == -1:
                return True
            if batch.sequence_reset:
                return True
            if self._entry(tp).last_acked_offset < log_start_offset:
                self.request_epoch_bump(tp)  # state removed by retention: bump rather than reuse sequences
                return True
            self.request_epoch_bump(tp)
            return True
        if error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER:
            unresolved = tp in self._unresolved
            if not unresolved and (batch.sequence_reset or not self.is_next_sequence(tp, batch.base_sequence)):
                self.out_of_order_not_next += 1
                return True  # not the next batch: rejected only because an earlier one is missing
            # A real gap (or the batch right after an unresolved sequence): bump the epoch and retry.
            if not unresolved or self._unresolved[tp] == batch.base_sequence:
                self.out_of_order_gaps += 1
                self.request_epoch_bump(tp)
            else:
                self.out_of_order_not_next += 1  # behind an unresolved sequence: wait until it resolves
            return True
        return error in RETRIABLE_ERRORS

    # --- epoch bumps and unresolved sequences --------------------------------------------------------

    def request_epoch_bump(self, tp: TopicPartition) -> None:
        """``requestIdempotentEpochBumpForPartition``."""
        self.epoch_bump_required = True
        self._to_rewrite.add(tp)

    def mark_sequence_unresolved(self, batch: ProducerBatch) -> None:
        """``markSequenceUnresolved``: an expired batch that had been sent may or may not be in the log."""
        next_sequence = _increment(batch.base_sequence, batch.record_count)
        self._unresolved[batch.tp] = max(self._unresolved.get(batch.tp, next_sequence), next_sequence)

    def has_unresolved(self, tp: TopicPartition) -> bool:
        return tp in self._unresolved

    def maybe_resolve_sequences(self) -> None:
        """``maybeResolveSequences``: a partition with nothing in flight is resolved if its last acked
        sequence is right before its next one (the expired batches were written after all), else the
        epoch is bumped."""
        for tp in list(self._unresolved):
            if self.has_in_flight(tp):
                continue
            entry = self._entry(tp)
            if not self.is_next_sequence(tp, entry.next_sequence):
                self.request_epoch_bump(tp)
            del self._unresolved[tp]

    def bump_epoch_if_needed(self) -> bool:
        """``bumpIdempotentEpochAndResetIdIfNeeded`` at the start of every Sender loop; True if it bumped."""
        self.maybe_resolve_sequences()
        if not self.epoch_bump_required:
            return False
        if self.producer_epoch >= SHORT_MAX:
            # resetIdempotentProducerId + InitProducerId: a fresh id, epoch 0 (ids are spaced by the builder).
            self._next_producer_id += 1
            self.producer_id = self._next_producer_id
            self.producer_epoch = 0
        else:
            self.producer_epoch += 1
        for tp in self._to_rewrite:
            self._start_sequences_at_beginning(tp)
            self._unresolved.pop(tp, None)
        self._to_rewrite.clear()
        self.epoch_bump_required = False
        self.epoch_bumps += 1
        return True

    def _start_sequences_at_beginning(self, tp: TopicPartition) -> None:
        """``TxnPartitionEntry.startSequencesAtBeginning``: the in-flight batches get the current id and
        epoch and sequences from 0, in order."""
        entry = self._entry(tp)
        sequence = 0
        for b in entry.in_flight:
            b.producer_id = self.producer_id
            b.producer_epoch = self.producer_epoch
            b.base_sequence = sequence
            b.sequence_reset = True
            sequence = _increment(sequence, b.record_count)
        entry.sequences = [b.base_sequence for b in entry.in_flight]
        entry.producer_id = self.producer_id
        entry.producer_epoch = self.producer_epoch
        entry.next_sequence = sequence
        entry.last_acked_sequence = NO_LAST_ACKED_SEQUENCE_NUMBER
