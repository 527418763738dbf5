"""``RecordAccumulator`` and the built-in partitioner, re-expressing Kafka's ``RecordAccumulatorTest``.

kafkasim's accumulator serves one broker (the leader of every partition), so Kafka's tests are taken for
the partitions of one node. A record's size here is its serialized size inside the batch: Kafka's 32-byte
value without key or headers is a 39-byte record (``DefaultRecord.sizeInBytes``).
"""

from __future__ import annotations

import itertools

from kafkasim.broker.records import TopicPartition
from kafkasim.clients.accumulator import RECORD_BATCH_OVERHEAD_BYTES, RecordAccumulator

TOPIC = "test"
TP1, TP2, TP3 = (TopicPartition(TOPIC, p) for p in range(3))
_batch_ids = itertools.count()


def test_drain_batches_resumes_where_max_request_size_stopped() -> None:
    # RecordAccumulatorTest.testDrainBatches, node1's partitions (tp1, tp2): the drain index is kept
    # between drains (RecordAccumulator.drainBatchesForOneNode / updateDrainIndex).
    record_size = 50
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + record_size
    acc = RecordAccumulator([TP1, TP2], batch_size, 10, max_request_size=batch_size)

    def append(tp: TopicPartition) -> None:
        acc.append(tp, record_size, 0.0, 0.0, next(_batch_ids))

    append(TP1)
    append(TP2)
    assert [b.tp for b in acc.drain()] == [TP1]  # the request is full after one batch
    append(TP1)
    assert [b.tp for b in acc.drain()] == [TP2]  # starts where the previous drain stopped
    assert [b.tp for b in acc.drain()] == [TP1]
    append(TP2)
    assert [b.tp for b in acc.drain()] == [TP2]
    append(TP1)
    append(TP2)
    acc.max_request_size = 1 << 30
    assert [b.tp for b in acc.drain()] == [TP1, TP2]


def test_drain_index_after_a_full_pass_is_the_last_visited_partition() -> None:
    # RecordAccumulator.drainBatchesForOneNode calls updateDrainIndex for every partition it visits, so
    # after a full pass the next drain starts at the last partition visited, not one past the start.
    record_size = 50
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + record_size
    acc = RecordAccumulator([TP1, TP2, TP3], batch_size, 10, max_request_size=batch_size)

    def append(tp: TopicPartition) -> None:
        acc.append(tp, record_size, 0.0, 0.0, next(_batch_ids))

    append(TP1)
    assert [b.tp for b in acc.drain()] == [TP1]  # a full pass: tp1, tp2 (empty), tp3 (empty)
    append(TP1)
    append(TP2)
    append(TP3)
    assert [b.tp for b in acc.drain()] == [TP3]
    assert [b.tp for b in acc.drain()] == [TP1]
    assert [b.tp for b in acc.drain()] == [TP2]
