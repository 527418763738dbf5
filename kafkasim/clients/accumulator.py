"""The producer's ``RecordAccumulator`` and partitioners: which records travel together, and when.

Plain synchronous logic (no SimPy); the producer process drives it with the simulated time. Kafka's rules
(``RecordAccumulator.append / ready / drain``, ``BuiltInPartitioner``):

* A record goes into the last batch of its partition's deque if it fits within ``batch.size``; otherwise
  that batch is closed and a new one is started (a record larger than batch.size gets a batch of its own).
* The first batch of a deque is *sendable* when it is full (closed, or another batch queued behind it) or
  has waited ``linger.ms`` since it was created.
* Per broker (node): a node is ready when a batch of a partition it leads is sendable (``ready``); when its
  connection accepts another request, ``drain(node)`` takes the first batch of *every* partition that
  node leads - ready or not - in round-robin order from that node's drain index, up to
  ``max.request.size`` (``drainBatchesForOneNode``). So one full partition drags the lingering batches of
  the node's other partitions along, as in Kafka, and a produce request goes to one broker only.
* A record without a key gets its partition inside the append (``append_record``, Kafka's ``append`` with
  ``UNKNOWN_PARTITION``): the sticky partitioner switches only at a batch boundary (see ``Partitioner``).
* ``first_waking_record``: which of the records the producer has not appended yet would wake the Sender
  (``KafkaProducer.doSend``: ``batchIsFull || newBatchCreated``), found by replaying the appends on copies.

Batch bytes: Kafka's 61-byte record-batch header plus each record's ``record_size`` (taken as the record's
serialized size inside the batch; Kafka's few bytes of per-record varint framing are folded into it).
Compression is not modelled. ``exhausted`` (set by the producer while ``send()`` waits for
``buffer.memory``: ``BufferPool.queued() > 0``) makes every first batch sendable at once.

Retries (``reenqueue``): a failed batch goes back to the *front* of its deque (idempotent: in sequence
order, ``insertInSequenceOrder``) and is not sendable until its retry backoff has passed since its last
attempt (``shouldBackoff``), unless the partition's leader epoch changed since that attempt (KIP-951,
``ProducerBatch.hasLeaderChangedForTheOngoingRetry``). With idempotence the drain assigns sequences on a
batch's first send and stops at a partition whose first batch may not go yet
(``shouldStopDrainBatchesForPartition``, see ``transaction_manager.py``). A partition without a leader
(``NO_LEADER``) belongs to no node: its batches wait until a leader appears or they expire
(``expired_batches``, ``RecordAccumulator.expiredBatches``).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from kafkasim.broker.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RecordBatch,
    TopicPartition,
)
from kafkasim.clients.metadata import NO_LEADER
from kafkasim.clients.transaction_manager import TransactionManager

RECORD_BATCH_OVERHEAD_BYTES: Final = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
MAX_REQUEST_SIZE: Final = 1_048_576  # producer max.request.size default


class ProducerBatch:
    """An open (or closed, not yet acknowledged) batch of one partition on the producer side."""

    __slots__ = (
        "tp",
        "batch_id",
        "created_ms",
        "record_count",
        "size_in_bytes",
        "intended_ms",
        "closed",
        "send_ms",
        "request_id",
        "first_request_id",
        "attempts",
        "last_attempt_ms",
        "retry_backoff_ms",
        "leader_epoch_at_attempt",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "sequence_reset",
        "done",
        "sends",
        "buffer_bytes",
    )

    def __init__(self, tp: TopicPartition, batch_id: int, created_ms: float) -> None:
        self.tp = tp
        self.batch_id = batch_id
        self.created_ms = created_ms
        self.record_count = 0
        self.size_in_bytes = RECORD_BATCH_OVERHEAD_BYTES
        # Intended send time of every record (open-loop latency is measured per record from these).
        self.intended_ms: list[float] = []
        self.closed = False
        self.send_ms = float("nan")
        self.request_id = -1  # the request of its last send
        self.first_request_id = -1  # the request of its first send (a retried batch's attempt 1)
        self.attempts = 0  # ProducerBatch.attempts: how many times it was re-enqueued (sends - 1)
        self.last_attempt_ms = created_ms
        self.retry_backoff_ms = 0.0  # drawn at reenqueue (Kafka draws it on every ready check)
        self.leader_epoch_at_attempt = -1
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.base_sequence = NO_SEQUENCE
        self.sequence_reset = False  # ProducerBatch.sequenceHasBeenReset
        self.done = False  # completed (acknowledged, failed or expired): a later response is ignored
        self.sends = 0  # how many times it was sent (0: failed before it was ever sent)
        self.buffer_bytes = 0  # what it holds of buffer.memory (BufferPool.allocate), returned when done

    def backing_off_ms(self, now_ms: float, leader_epoch: int) -> float:
        """``RecordAccumulator.shouldBackoff``: how long a retried batch still waits (0 = may go)."""
        if self.attempts == 0 or leader_epoch != self.leader_epoch_at_attempt:
            return 0.0  # first send, or the leader changed since the last attempt (KIP-951): no backoff
        left = self.last_attempt_ms + self.retry_backoff_ms - now_ms
        return left if left > 0 else 0.0

    def has_room_for(self, record_size: int, batch_size: int) -> bool:
        # MemoryRecordsBuilder.hasRoomFor: the first record always fits.
        return self.record_count == 0 or self.size_in_bytes + record_size <= batch_size

    def is_full(self, batch_size: int) -> bool:
        return self.closed or self.size_in_bytes >= batch_size

    def to_record_batch(self, producer: str) -> RecordBatch:
        # CreateTime is the first record's intended time: the application's timestamp when it called send().
        return RecordBatch(
            self.record_count, self.size_in_bytes, int(self.intended_ms[0]), self.batch_id, producer,
            producer_id=self.producer_id, producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
        )


class RecordAccumulator:
    """Per-partition deques of batches (Kafka's ``RecordAccumulator``), drained per broker: ``leaders`` maps
    each partition to the broker that leads it (default: one broker, 0, leads them all)."""

    __slots__ = ("batch_size", "linger_ms", "max_request_size", "_deques", "_partitions", "_drain_index", "drains",
                 "_node_partitions", "nodes", "_position", "_nonempty", "_queued", "txn", "_leader_epochs",
                 "exhausted")

    def __init__(
        self,
        partitions: Sequence[TopicPartition],
        batch_size: int,
        linger_ms: float,
        *,
        max_request_size: int = MAX_REQUEST_SIZE,
        leaders: Mapping[TopicPartition, int] | None = None,
        txn: TransactionManager | None = None,
    ) -> None:
        # batch.size = 0 disables batching in Kafka (one record per batch); has_room_for gives exactly that.
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.max_request_size = max_request_size
        self._partitions = list(partitions)
        self._deques: dict[TopicPartition, deque[ProducerBatch]] = {tp: deque() for tp in self._partitions}
        self.txn = txn  # the idempotent producer's TransactionManager; None when idempotence is off
        self.exhausted = False  # RecordAccumulator.ready: a send() is waiting for buffer memory
        self._leader_epochs: dict[TopicPartition, int] = {}
        self._drain_index: dict[int, int] = {}
        self._node_partitions: dict[int, list[TopicPartition]] = {}
        self.nodes: tuple[int, ...] = ()
        self._position: dict[TopicPartition, tuple[int, int]] = {}
        self._nonempty: dict[int, set[int]] = {}
        self._queued = 0
        self.drains = 0  # how many times drain() or reenqueue() ran: a change tells the producer its plan is stale
        self.set_leaders({tp: leaders[tp] if leaders is not None else 0 for tp in self._partitions})

    def set_leaders(self, leaders: Mapping[TopicPartition, int], epochs: Mapping[TopicPartition, int] | None = None
                    ) -> None:
        """Route each partition to its leader (``NO_LEADER``: to none, its batches wait); ``epochs`` are the
        leader epochs the retry backoff compares with (KIP-951)."""
        if epochs is not None:
            self._leader_epochs.update(epochs)
        # The partitions each node leads, in partition order; the nodes in order of their first partition.
        self._node_partitions = {}
        for tp in self._partitions:
            self._node_partitions.setdefault(leaders.get(tp, NO_LEADER), []).append(tp)
        self.nodes = tuple(node for node in self._node_partitions if node != NO_LEADER)
        # Kafka's nodesDrainIndex: where the next drain of each node starts.
        old_index = self._drain_index
        self._drain_index = {
            node: old_index.get(node, 0) % len(tps) for node, tps in self._node_partitions.items()
        }
        # Kafka's ready and drain walk every partition of a node; here only the partitions with a batch
        # queued are walked (same answers: an empty deque is skipped by both), so the cost does not grow
        # with partitions a sticky partitioner is not writing to. Each partition's (node, index in the
        # node's partitions), each node's indices with a non-empty deque, and the batches queued in all.
        self._position = {
            tp: (node, i) for node, tps in self._node_partitions.items() for i, tp in enumerate(tps)
        }
        self._nonempty = {node: set() for node in self._node_partitions}
        for tp, dq in self._deques.items():
            if dq:
                node, index = self._position[tp]
                self._nonempty[node].add(index)
        self.drains += 1

    def leader_epoch(self, tp: TopicPartition) -> int:
        return self._leader_epochs.get(tp, -1)

    def append(self, tp: TopicPartition, record_size: int, intended_ms: float, now_ms: float, new_batch_id: int) -> tuple[bool, bool]:
        """Add one record to ``tp``; returns (batch_is_full, new_batch_created), the two reasons Kafka wakes
        the sender.

        ``new_batch_id`` is used only if a new batch has to be created (ids come from the run's counter).
        """
        dq = self._deques[tp]
        batch_size = self.batch_size
        new_batch = False
        last = dq[-1] if dq else None
        # ProducerBatch.has_room_for (MemoryRecordsBuilder.hasRoomFor), inlined: this runs for every record.
        if last is None or last.closed or (last.record_count > 0 and last.size_in_bytes + record_size > batch_size):
            if last is not None:
                last.closed = True  # closeForRecordAppends: it will never take another record
            last = ProducerBatch(tp, new_batch_id, now_ms)
            if not dq:
                node, index = self._position[tp]
                self._nonempty[node].add(index)
            dq.append(last)
            self._queued += 1
            new_batch = True
        last.record_count += 1
        size = last.size_in_bytes + record_size
        last.size_in_bytes = size
        last.intended_ms.append(intended_ms)
        # ProducerBatch.is_full, inlined (``last`` is open: a closed one was replaced above); another batch
        # queued before it (len(dq) > 1) makes the first one sendable too.
        return dq[0] is not last or size >= batch_size, new_batch

    def append_record(
        self, partitioner: Partitioner, record_size: int, intended_ms: float, now_ms: float, new_batch_id: int
    ) -> tuple[TopicPartition, bool, bool]:
        """``RecordAccumulator.append`` with ``UNKNOWN_PARTITION``: the partitioner picks the partition under
        the deque's view, then learns how many bytes went in; returns (partition, batch_is_full,
        new_batch_created)."""
        state = partitioner.state
        tp = partitioner.partition(state, self, record_size)
        full, new_batch = self.append(tp, record_size, intended_ms, now_ms, new_batch_id)
        if partitioner.sticky_switching:
            partitioner.appended(
                state, self, tp, record_size + RECORD_BATCH_OVERHEAD_BYTES if new_batch else record_size
            )
        return tp, full, new_batch

    # The deque's view the sticky partitioner needs (``Tails``).

    def last_batch(self, tp: TopicPartition) -> ProducerBatch:
        return self._deques[tp][-1]

    def all_batches_full(self, tp: TopicPartition) -> bool:
        """Kafka's ``allBatchesFull``: only the last batch may be incomplete, so check that one."""
        dq = self._deques[tp]
        return not dq or dq[-1].is_full(self.batch_size)

    def fits(self, tp: TopicPartition, record_size: int) -> bool:
        """Would ``tryAppend`` put the record into the last batch (rather than close it and start another)?"""
        dq = self._deques[tp]
        return bool(dq) and not dq[-1].closed and dq[-1].has_room_for(record_size, self.batch_size)

    def close_last(self, tp: TopicPartition) -> None:
        """``closeForRecordAppends`` on the last batch, after a record did not fit into it."""
        dq = self._deques[tp]
        if dq:
            dq[-1].closed = True

    def _only_node(self) -> int:
        if len(self.nodes) != 1:
            raise ValueError(f"the partitions have {len(self.nodes)} leaders: name the node")
        return self.nodes[0]

    def ready_delay_ms(self, now_ms: float, node: int | None = None) -> float | None:
        """``RecordAccumulator.ready`` for one node (the only one if None): 0 if a batch of a partition it
        leads is sendable now; else the time until the earliest linger expiry; None if it has nothing."""
        best: float | None = None
        batch_size = self.batch_size
        linger = self.linger_ms
        deques = self._deques
        if node is None:
            node = self._only_node()
        parts = self._node_partitions.get(node)
        if parts is None:
            return None  # the node leads none of these partitions (any more)
        txn = self.txn
        for index in self._nonempty[node]:  # the answer does not depend on the order
            tp = parts[index]
            dq = deques[tp]
            first = dq[0]
            if first.attempts:
                left = first.backing_off_ms(now_ms, self._leader_epochs.get(tp, -1))
                if left > 0:
                    if best is None or left < best:
                        best = left
                    continue
            if txn is not None and txn.should_stop_drain(first):
                continue  # the response of the batch it waits for wakes the Sender
            if len(dq) > 1 or first.is_full(batch_size) or self.exhausted:
                return 0.0
            left = first.created_ms + linger - now_ms
            if left <= 0:
                return 0.0
            if best is None or left < best:
                best = left
        return best

    def drain(self, node: int | None = None, now_ms: float = 0.0) -> list[ProducerBatch]:
        """Kafka's ``drainBatchesForOneNode`` for ``node`` (the only one if None): the first batch of every
        partition it leads, round robin from its drain index, up to ``max.request.size`` (the first batch
        is always taken, even if larger); a batch in retry backoff is skipped, and the drain stops at a
        partition whose first batch may not go yet (``shouldStopDrainBatchesForPartition``). An idempotent
        batch gets its sequence here, on its first send."""
        self.drains += 1
        if node is None:
            node = self._only_node()
        parts = self._node_partitions.get(node)
        if parts is None:
            return []  # the node leads none of these partitions (any more)
        n = len(parts)
        start = self._drain_index[node]
        nonempty = self._nonempty[node]
        drained: list[ProducerBatch] = []
        size = 0
        # The partitions with a batch, in Kafka's visiting order (from the drain index, wrapping round).
        visit = sorted(nonempty, key=lambda i: i - start if i >= start else i - start + n)
        txn = self.txn
        for i in visit:
            tp = parts[i]
            dq = self._deques[tp]
            first = dq[0]
            epoch = self._leader_epochs.get(tp, -1)
            if first.attempts and first.backing_off_ms(now_ms, epoch) > 0:
                continue
            if (drained and size + first.size_in_bytes > self.max_request_size) or (
                txn is not None and txn.should_stop_drain(first)
            ):
                # updateDrainIndex for every partition visited: the next drain starts at the partition
                # that did not fit (or may not go yet)...
                self._drain_index[node] = i
                return drained
            if txn is not None and first.base_sequence == NO_SEQUENCE:
                txn.assign_sequence(first)
            first.leader_epoch_at_attempt = epoch
            dq.popleft()
            self._queued -= 1
            if not dq:
                nonempty.discard(i)
            first.closed = True
            size += first.size_in_bytes
            drained.append(first)
        # ...or, after a full pass, at the last partition a pass visits (empty ones included).
        self._drain_index[node] = (start + n - 1) % n
        return drained

    def reenqueue(self, batch: ProducerBatch, now_ms: float, backoff_ms: float) -> None:
        """``RecordAccumulator.reenqueue``: one more attempt, backing off ``backoff_ms`` from now, back at the
        front of its deque -- in sequence order when idempotent (``insertInSequenceOrder``)."""
        batch.attempts += 1
        batch.last_attempt_ms = max(batch.last_attempt_ms, now_ms)
        batch.retry_backoff_ms = backoff_ms
        batch.closed = True
        tp = batch.tp
        dq = self._deques[tp]
        if not dq:
            node, index = self._position[tp]
            self._nonempty[node].add(index)
        if self.txn is None or not dq or dq[0].base_sequence == NO_SEQUENCE or dq[0].base_sequence > batch.base_sequence:
            dq.appendleft(batch)
        else:
            # The sequenced batches at the front stay sorted; unsequenced (never sent) ones come after them.
            i = 0
            while i < len(dq) and dq[i].base_sequence != NO_SEQUENCE and dq[i].base_sequence < batch.base_sequence:
                i += 1
            dq.insert(i, batch)
        self._queued += 1
        self.drains += 1

    def expired_batches(self, now_ms: float, delivery_timeout_ms: float) -> list[ProducerBatch]:
        """``RecordAccumulator.expiredBatches``: from the front of every deque, the batches created at least
        ``delivery.timeout.ms`` ago (``ProducerBatch.hasReachedDeliveryTimeout``)."""
        expired: list[ProducerBatch] = []
        for node, nonempty in self._nonempty.items():
            parts = self._node_partitions[node]
            for index in list(nonempty):
                dq = self._deques[parts[index]]
                while dq and delivery_timeout_ms <= now_ms - dq[0].created_ms:
                    expired.append(dq.popleft())
                    self._queued -= 1
                if not dq:
                    nonempty.discard(index)
        if expired:
            self.drains += 1
        return expired

    def front_created_ms(self) -> float:
        """The creation time of the oldest batch at the front of a deque (inf if none): the next delivery
        deadline, as Kafka's ``nextBatchExpiryTimeMs`` (``expiredBatches`` calls
        ``maybeUpdateNextBatchExpiryTime`` with each deque's first batch that has not expired). A batch behind
        a younger one -- a retried batch re-enqueued at the front after an older one, without idempotence --
        expires only when it reaches the front."""
        oldest = math.inf
        for node, nonempty in self._nonempty.items():
            parts = self._node_partitions[node]
            for index in nonempty:
                dq = self._deques[parts[index]]
                if dq and dq[0].created_ms < oldest:
                    oldest = dq[0].created_ms
        return oldest

    def first_waking_record(
        self,
        partitioner: Partitioner,
        upcoming: Sequence[tuple[float, int]],
        draw: Callable[[], tuple[float, int] | None],
        limit: int,
    ) -> float:
        """The intended time of the first upcoming record whose append would wake the Sender, or inf.

        ``upcoming`` holds the records drawn but not yet appended, (intended ms, size) in arrival order;
        ``draw`` draws one more (it also goes to the end of ``upcoming``) or returns None when there are
        no more. The appends are replayed on copies (``VirtualTails``, ``PartitionerState.copy``): neither
        the deques nor the partitioner change. After ``limit`` records without a wake-up the answer is the
        last record looked at (the caller then acts anyway: conservative, still exact).
        """
        linger_zero = self.linger_ms <= 0
        tails = VirtualTails(self)
        state = partitioner.state.copy()
        # A node with a batch queued has a wake-up armed: its linger timer, or (at max in flight) its next
        # response. A node with nothing queued has none, whatever the other nodes have.
        position = self._position
        armed = {node for node, nonempty in self._nonempty.items() if nonempty}
        drawn = len(upcoming)  # ``draw`` appends to ``upcoming``: from k = drawn on, every record is drawn here
        only = partitioner.only  # one partition: nothing for the partitioner to decide or learn
        for k in range(limit):
            if k < drawn:
                intended, size = upcoming[k]
            else:
                record = draw()
                if record is None:
                    return math.inf
                intended, size = record
            closed = tails.closed_batches
            if only is not None:
                tp = only
                full, new_batch = tails.append(only, size)
            else:
                tp, full, new_batch = tails.append_record(partitioner, state, size)
            if full:
                return intended  # a batch becomes sendable
            # KafkaProducer.doSend wakes the Sender on batchIsFull || newBatchCreated. A new batch matters
            # if it is sendable at once, needs its node's first linger timer, or comes with the old
            # partition's batch closed by a sticky switch (that one is sendable now).
            if new_batch and (linger_zero or position[tp][0] not in armed or tails.closed_batches != closed):
                return intended
        return upcoming[-1][0]

    def tail_state(self, tp: TopicPartition) -> list[Any]:
        """[batches queued, last batch size, last batch records, last batch closed] of ``tp``'s deque."""
        dq = self._deques[tp]
        if not dq:
            return [0, 0, 0, False]
        last = dq[-1]
        return [len(dq), last.size_in_bytes, last.record_count, last.closed or last.is_full(self.batch_size)]

    @property
    def queued_batches(self) -> int:
        return self._queued

    def all_batches(self) -> list[ProducerBatch]:
        return [b for tp in self._partitions for b in self._deques[tp]]


class Tails(Protocol):
    """The view of the deques the sticky partitioner decides on: the accumulator itself, or ``VirtualTails``."""

    def all_batches_full(self, tp: TopicPartition) -> bool: ...

    def fits(self, tp: TopicPartition, record_size: int) -> bool: ...

    def close_last(self, tp: TopicPartition) -> None: ...


class VirtualTails:
    """The tails of an accumulator's deques under appends that have not happened yet (the producer looks
    ahead for the record that will wake the Sender). Copy on touch: [batches queued, last batch size,
    last batch records, last batch closed]; the accumulator itself is never changed."""

    __slots__ = ("_acc", "_batch_size", "_state", "closed_batches", "_last_tp", "_last_state")

    def __init__(self, acc: RecordAccumulator) -> None:
        self._acc = acc
        self._batch_size = acc.batch_size
        self._state: dict[TopicPartition, list[Any]] = {}
        self.closed_batches = 0  # batches closed by close_last: each became sendable then
        # The partition append() touched last and its state: a sticky partitioner sends record after record to
        # the same one, so the look-ahead mostly skips the dict lookup.
        self._last_tp: TopicPartition | None = None
        self._last_state: list[Any] = []

    def _tail(self, tp: TopicPartition) -> list[Any]:
        st = self._state.get(tp)
        if st is None:
            st = self._state[tp] = self._acc.tail_state(tp)
        return st

    def all_batches_full(self, tp: TopicPartition) -> bool:
        count, size, _records, closed = self._tail(tp)
        return count == 0 or closed or size >= self._batch_size

    def fits(self, tp: TopicPartition, record_size: int) -> bool:
        count, size, _records, closed = self._tail(tp)
        return count > 0 and not closed and size + record_size <= self._batch_size

    def close_last(self, tp: TopicPartition) -> None:
        st = self._tail(tp)
        if st[0] > 0 and not st[3]:
            st[3] = True
            self.closed_batches += 1

    def append(self, tp: TopicPartition, record_size: int) -> tuple[bool, bool]:
        """``RecordAccumulator.append`` on the copy: (batch_is_full, new_batch_created)."""
        if tp is self._last_tp:
            st = self._last_state
        else:
            st = self._tail(tp)
            self._last_tp = tp
            self._last_state = st
        count, size, records, closed = st
        if count == 0 or closed or (records > 0 and size + record_size > self._batch_size):
            count += 1
            size = RECORD_BATCH_OVERHEAD_BYTES + record_size
            records = 1
            new_batch = True
        else:
            size += record_size
            records += 1
            new_batch = False
        st[0], st[1], st[2], st[3] = count, size, records, False
        return count > 1 or size >= self._batch_size, new_batch

    def append_record(
        self, partitioner: Partitioner, state: PartitionerState, record_size: int
    ) -> tuple[TopicPartition, bool, bool]:
        """``RecordAccumulator.append_record`` on the copy, with a copy of the partitioner's state:
        (partition, batch_is_full, new_batch_created)."""
        tp = partitioner.partition(state, self, record_size)
        full, new_batch = self.append(tp, record_size)
        if partitioner.sticky_switching:
            partitioner.appended(
                state, self, tp, record_size + RECORD_BATCH_OVERHEAD_BYTES if new_batch else record_size
            )
        return tp, full, new_batch


class PartitionerState:
    """What a partitioner remembers between records; copied to look ahead without changing the original."""

    __slots__ = ("current", "produced", "next_rr", "draws")

    def __init__(self) -> None:
        self.current = -1  # the sticky partition's index; -1 before the first record
        self.produced = 0  # bytes appended to it (Kafka's StickyPartitionInfo.producedBytes)
        self.next_rr = 0
        self.draws = 0  # random draws consumed so far

    def copy(self) -> PartitionerState:
        c = PartitionerState()
        c.current, c.produced, c.next_rr, c.draws = self.current, self.produced, self.next_rr, self.draws
        return c


class Partitioner:
    """Chooses a partition per record (records have no key in the simulated workload).

    * ``sticky``: Kafka's ``BuiltInPartitioner`` for keyless records (KIP-794). It stays on one partition
      and counts the bytes appended to it; after an append it switches once ``batch.size`` bytes were
      produced and every batch of the partition is full (``enableSwitch = allBatchesFull``), or once
      twice ``batch.size`` were produced in any case; before an append it completes a switch that was
      held back, as soon as the partition's batches are all full (a drain emptied the deque, or the
      record does not fit the last batch). So the switch falls on a batch boundary and a linger window
      never leaves a fraction of a batch behind. The next partition is ``nextPartition`` without load
      stats: uniform among all partitions, the current one included. Kafka's adaptive weighting by queue
      sizes (``partitioner.adaptive.partitioning.enable``) is not modelled.
    * ``round_robin``: Kafka's ``RoundRobinPartitioner``, one record per partition in turn.
    * ``random``: uniform per record.

    Random draws come from ``rng`` in order. Looking ahead peeks at future draws without consuming them
    (they are kept until the real state reaches them), so looking ahead never changes the partitions.
    """

    __slots__ = ("kind", "state", "_partitions", "_count", "sticky_switching", "only", "_rng", "_batch_size",
                 "_pending", "_pending_base")

    def __init__(self, kind: str, partitions: Sequence[TopicPartition], batch_size: int, rng: random.Random) -> None:
        if kind not in ("sticky", "round_robin", "random"):
            raise ValueError(f"unknown partitioner {kind!r} (allowed: sticky, round_robin, random)")
        self.kind = kind
        self.state = PartitionerState()
        self._partitions = list(partitions)
        # Asked twice per record: kept rather than recomputed.
        self._count = len(self._partitions)
        # Whether ``appended`` has anything to do, and the partition ``partition`` always answers (one
        # partition: no state, no draw) -- the producer's appends skip the partitioner then.
        self.sticky_switching = kind == "sticky" and self._count > 1
        self.only: TopicPartition | None = self._partitions[0] if self._count == 1 else None
        self._rng = rng
        # KafkaProducer: batchSize = max(1, batch.size), which is also the sticky limit.
        self._batch_size = max(1, batch_size)
        self._pending: list[int] = []  # draws peeked at but not yet consumed by ``state``
        self._pending_base = 0  # the draw number of _pending[0]

    def _draw(self, state: PartitionerState) -> int:
        """The next random partition index for ``state`` (Kafka: ``randomPartition() % partitions``)."""
        k = state.draws - self._pending_base
        state.draws += 1
        pending = self._pending
        while len(pending) <= k:
            pending.append(self._rng.randrange(self._count))
        value = pending[k]
        if state is self.state and k >= 63:
            # Forget draws the real state has passed: no look-ahead can start before them again.
            del pending[: k + 1]
            self._pending_base += k + 1
        return value

    def partition(self, state: PartitionerState, tails: Tails, record_size: int) -> TopicPartition:
        """The partition of the next record (may close the old partition's last batch on a switch)."""
        parts = self._partitions
        n = self._count
        if n == 1:
            return parts[0]
        if self.kind == "round_robin":
            i = state.next_rr
            state.next_rr = (i + 1) % n
            return parts[i]
        if self.kind == "random":
            return parts[self._draw(state)]
        # sticky: RecordAccumulator.append with BuiltInPartitioner.peekCurrentPartitionInfo / partitionChanged.
        if state.current < 0:
            state.current = self._draw(state)
            state.produced = 0
        tp = parts[state.current]
        if tails.all_batches_full(tp) and self._update(state, 0, True):
            return parts[state.current]  # completed a switch held back earlier
        if not tails.fits(tp, record_size):
            # tryAppend failed: the last batch is closed for appends, so now all batches are full.
            tails.close_last(tp)
            if self._update(state, 0, True):
                return parts[state.current]
        return tp

    def appended(self, state: PartitionerState, tails: Tails, tp: TopicPartition, appended_bytes: int) -> None:
        """After the append: ``updatePartitionInfo(appendedBytes, enableSwitch = allBatchesFull(deque))``."""
        if self.sticky_switching:
            self._update(state, appended_bytes, tails.all_batches_full(tp))

    def _update(self, state: PartitionerState, appended_bytes: int, enable_switch: bool) -> bool:
        """``BuiltInPartitioner.updatePartitionInfo``; True if it switched partition."""
        produced = state.produced + appended_bytes
        sticky = self._batch_size
        if (produced >= sticky and enable_switch) or produced >= 2 * sticky:
            state.current = self._draw(state)
            state.produced = 0
            return True
        state.produced = produced
        return False
