"""The producer's ``RecordAccumulator`` and partitioners: which records travel together, and when.

Plain synchronous logic (no SimPy); the producer process drives it with the simulated time. Kafka's rules
(``RecordAccumulator.append / ready / drain``, ``BuiltInPartitioner``):

* A record goes into the last batch of its partition's deque if it fits within ``batch.size``; otherwise
  that batch is closed and a new one is started (a record larger than batch.size gets a batch of its own).
* The first batch of a deque is *sendable* when it is full (closed, or another batch queued behind it) or
  has waited ``linger.ms`` since it was created.
* When any batch is sendable and the connection accepts another request, ``drain`` takes the first batch
  of *every* partition of that broker - ready or not - in round-robin order, up to ``max.request.size``.
  (So one full partition drags the lingering batches of the others along, as in Kafka.)

Batch bytes: Kafka's 61-byte record-batch header plus each record's ``record_size`` (taken as the record's
serialized size inside the batch; Kafka's few bytes of per-record varint framing are folded into it).
Compression, ``buffer.memory``/``max.block.ms`` and idempotence are not modelled.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from typing import Any

from kafkasim.broker.records import RecordBatch, TopicPartition

RECORD_BATCH_OVERHEAD_BYTES = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
MAX_REQUEST_SIZE = 1_048_576  # producer max.request.size default


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
        self.request_id = -1

    def has_room_for(self, record_size: int, batch_size: int) -> bool:
        # MemoryRecordsBuilder.hasRoomFor: the first record always fits.
        return self.record_count == 0 or self.size_in_bytes + record_size <= batch_size

    def is_full(self, batch_size: int) -> bool:
        return self.closed or self.size_in_bytes >= batch_size

    def to_record_batch(self, producer: str) -> RecordBatch:
        # CreateTime is the first record's intended time: the application's timestamp when it called send().
        return RecordBatch(
            self.record_count, self.size_in_bytes, int(self.intended_ms[0]), self.batch_id, producer
        )


class RecordAccumulator:
    """Per-partition deques of batches (Kafka's ``RecordAccumulator``) for a producer talking to one broker."""

    __slots__ = ("batch_size", "linger_ms", "max_request_size", "_deques", "_partitions", "_drain_index", "drains")

    def __init__(
        self,
        partitions: Sequence[TopicPartition],
        batch_size: int,
        linger_ms: float,
        *,
        max_request_size: int = MAX_REQUEST_SIZE,
    ) -> None:
        # batch.size = 0 disables batching in Kafka (one record per batch); has_room_for gives exactly that.
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.max_request_size = max_request_size
        self._partitions = list(partitions)
        self._deques: dict[TopicPartition, deque[ProducerBatch]] = {tp: deque() for tp in self._partitions}
        self._drain_index = 0
        self.drains = 0  # how many times drain() ran: a change tells the producer its plan is stale

    def append(self, tp: TopicPartition, record_size: int, intended_ms: float, now_ms: float, new_batch_id: int) -> tuple[bool, bool]:
        """Add one record; returns (batch_is_full, new_batch_created), the two reasons Kafka wakes the sender.

        ``new_batch_id`` is used only if a new batch has to be created (ids come from the run's counter).
        """
        dq = self._deques[tp]
        new_batch = False
        last = dq[-1] if dq else None
        if last is None or last.closed or not last.has_room_for(record_size, self.batch_size):
            if last is not None:
                last.closed = True  # closeForRecordAppends: it will never take another record
            last = ProducerBatch(tp, new_batch_id, now_ms)
            dq.append(last)
            new_batch = True
        last.record_count += 1
        last.size_in_bytes += record_size
        last.intended_ms.append(intended_ms)
        return len(dq) > 1 or last.is_full(self.batch_size), new_batch

    def ready_delay_ms(self, now_ms: float) -> float | None:
        """0 if some batch is sendable now; else the time until the earliest linger expiry; None if empty."""
        best: float | None = None
        batch_size = self.batch_size
        linger = self.linger_ms
        for dq in self._deques.values():
            if not dq:
                continue
            first = dq[0]
            if len(dq) > 1 or first.is_full(batch_size):
                return 0.0
            left = first.created_ms + linger - now_ms
            if left <= 0:
                return 0.0
            if best is None or left < best:
                best = left
        return best

    def drain(self) -> list[ProducerBatch]:
        """Kafka's ``drainBatchesForOneNode``: the first batch of every partition, round robin, up to
        ``max.request.size`` (the first batch is always taken, even if larger)."""
        self.drains += 1
        parts = self._partitions
        n = len(parts)
        start = self._drain_index
        drained: list[ProducerBatch] = []
        size = 0
        for k in range(n):
            i = (start + k) % n
            # updateDrainIndex for every partition visited: the next drain starts where this one stopped
            # (the partition that did not fit), or after a full pass at the last partition visited.
            self._drain_index = i
            dq = self._deques[parts[i]]
            if not dq:
                continue
            first = dq[0]
            if drained and size + first.size_in_bytes > self.max_request_size:
                return drained
            dq.popleft()
            first.closed = True
            size += first.size_in_bytes
            drained.append(first)
        return drained

    def tail_state(self, tp: TopicPartition) -> list[Any]:
        """[batches queued, last batch size, last batch records, last batch closed] of ``tp``'s deque."""
        dq = self._deques[tp]
        if not dq:
            return [0, 0, 0, False]
        last = dq[-1]
        return [len(dq), last.size_in_bytes, last.record_count, last.closed or last.is_full(self.batch_size)]

    @property
    def queued_batches(self) -> int:
        return sum(len(dq) for dq in self._deques.values())

    def all_batches(self) -> list[ProducerBatch]:
        return [b for tp in self._partitions for b in self._deques[tp]]


class Partitioner:
    """Chooses a partition per record (records have no key in the simulated workload).

    * ``sticky``: Kafka's built-in partitioner for keyless records (KIP-794): stay on one partition until
      about ``batch.size`` bytes were produced to it, then switch to another (uniformly at random among the
      others; Kafka's adaptive weighting by queue size is not modelled).
    * ``round_robin``: Kafka's ``RoundRobinPartitioner``, one record per partition in turn.
    * ``random``: uniform per record.
    """

    __slots__ = ("kind", "_partitions", "_rng", "_batch_size", "_current", "_produced", "_next_rr")

    def __init__(self, kind: str, partitions: Sequence[TopicPartition], batch_size: int, rng: random.Random) -> None:
        if kind not in ("sticky", "round_robin", "random"):
            raise ValueError(f"unknown partitioner {kind!r} (allowed: sticky, round_robin, random)")
        self.kind = kind
        self._partitions = list(partitions)
        self._rng = rng
        self._batch_size = max(1, batch_size)
        self._current = -1
        self._produced = 0
        self._next_rr = 0

    def partition(self, record_size: int) -> TopicPartition:
        parts = self._partitions
        n = len(parts)
        if n == 1:
            return parts[0]
        if self.kind == "round_robin":
            i = self._next_rr
            self._next_rr = (i + 1) % n
            return parts[i]
        if self.kind == "random":
            return parts[self._rng.randrange(n)]
        # sticky (BuiltInPartitioner.updatePartitionInfo): switch once the sticky batch size is reached.
        if self._current < 0 or self._produced >= self._batch_size:
            if self._current < 0:
                self._current = self._rng.randrange(n)
            else:
                k = self._rng.randrange(n - 1)
                self._current = k if k < self._current else k + 1
            self._produced = 0
        self._produced += record_size
        return parts[self._current]
