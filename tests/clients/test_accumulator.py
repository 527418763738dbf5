"""``RecordAccumulator`` and the built-in partitioner, re-expressing Kafka's ``RecordAccumulatorTest``.

kafkasim's accumulator serves one broker (the leader of every partition), so Kafka's tests are taken for
the partitions of one node. A record's size here is its serialized size inside the batch: Kafka's 32-byte
value without key or headers is a 39-byte record (``DefaultRecord.sizeInBytes``).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from kafkasim.broker.records import TopicPartition
from kafkasim.clients.accumulator import RECORD_BATCH_OVERHEAD_BYTES, Partitioner, RecordAccumulator

TOPIC = "test"
TP1, TP2, TP3 = (TopicPartition(TOPIC, p) for p in range(3))
_batch_ids = itertools.count()


class SequentialRandom(random.Random):
    """Kafka's tests mock ``BuiltInPartitioner.randomPartition`` with 0, 1, 2, ...: so does this one."""

    def __init__(self) -> None:
        super().__init__(0)
        self.draws = 0

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:  # type: ignore[override]
        assert stop is None and step == 1
        value = self.draws % start
        self.draws += 1
        return value


def send(acc: RecordAccumulator, partitioner: Partitioner, size: int, now_ms: float) -> TopicPartition:
    """``KafkaProducer.send`` of a record without a key: ``RecordAccumulator.append`` with UNKNOWN_PARTITION."""
    tp, _full, _new_batch = acc.append_record(partitioner, size, now_ms, now_ms, next(_batch_ids))
    return tp


def test_built_in_partitioner_fractional_batches() -> None:
    # RecordAccumulatorTest.testBuiltInPartitionerFractionalBatches: with a linger window that holds about
    # 2/3 of batch.size, the partitioner switches only at a batch boundary (BuiltInPartitioner
    # .updatePartitionInfo with enableSwitch = allBatchesFull), so every drain takes exactly one batch
    # of more than half batch.size -- never a fraction left behind on the old partition.
    batch_size, linger_ms, record_size = 512, 10, 39
    parts = [TP1, TP2, TP3]
    acc = RecordAccumulator(parts, batch_size, linger_ms)
    partitioner = Partitioner("sticky", parts, batch_size, random.Random(7))
    now = 0.0
    for _ in range(10):
        for _ in range(batch_size * 2 // 3 // 32):  # Kafka's records carry 32-byte values
            send(acc, partitioner, record_size, now)
        now += linger_ms
        assert acc.ready_delay_ms(now) == 0.0, "one batch should be ready"
        batches = acc.drain()
        assert len(batches) == 1, f"should have 1 batch ready, got {[(b.tp, b.size_in_bytes) for b in batches]}"
        assert batch_size / 2 < batches[0].size_in_bytes < batch_size


def test_uniform_built_in_partitioner() -> None:
    # RecordAccumulatorTest.testUniformBuiltInPartitioner: BuiltInPartitioner.nextPartition picks
    # `random % partitions` among all partitions (the current one included), and switches once the
    # sticky limit (batch.size) is exceeded and the partition's batches are all full.
    batch_size = 1024
    parts = [TP1, TP2, TP3]
    acc = RecordAccumulator(parts, batch_size, 0)
    rng = SequentialRandom()
    partitioner = Partitioner("sticky", parts, batch_size, rng)
    small, large = 12, batch_size + 9  # a 5-byte value; a batch.size-byte value
    # A small record: the first partition is chosen.
    assert send(acc, partitioner, small, 0.0) == TP1
    # A large record exceeds the sticky limit but stays: the first batch was not full yet.
    assert send(acc, partitioner, large, 0.0) == TP1
    # Each further large record completes the previous batch past the sticky limit: switch.
    assert send(acc, partitioner, large, 0.0) == TP2
    assert send(acc, partitioner, large, 0.0) == TP3
    assert send(acc, partitioner, large, 0.0) == TP1
    # Kafka draws lazily (before the append that finds all batches full), counting 1, 2, 3, 4 here;
    # kafkasim treats a batch holding one record larger than batch.size as full at once, so it switches
    # right after that append: the same partitions, each draw one record earlier.
    assert rng.draws == 5


def test_switch_waits_for_the_batch_that_crossed_the_sticky_limit_to_complete() -> None:
    # RecordAccumulator.append passes enableSwitch = allBatchesFull(deque) to
    # BuiltInPartitioner.updatePartitionInfo, and partitionChanged completes the disabled switch once the
    # batches are all full. Produced bytes count Kafka's appendedBytes (a new batch counts its header).
    batch_size, record_size = 512, 39
    parts = [TP1, TP2, TP3]
    acc = RecordAccumulator(parts, batch_size, 10_000)  # nothing lingers out: every batch stays queued
    partitioner = Partitioner("sticky", parts, batch_size, SequentialRandom())
    chosen = [send(acc, partitioner, record_size, 0.0) for _ in range(23)]
    # Records 1-11 fill a batch to 61 + 11 * 39 = 490 bytes; record 12 does not fit, closes it and starts
    # a second batch (produced 590 >= 512, but that batch is incomplete: no switch); records 12-22 fill
    # it; record 23 does not fit either, so both batches are full and the partitioner switches.
    assert chosen[:22] == [TP1] * 22
    assert chosen[22] == TP2
    assert acc.tail_state(TP1) == [2, 490, 11, True]


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


def _fill(acc: RecordAccumulator, tp: TopicPartition, records: int, size: int, now_ms: float = 0.0) -> None:
    for _ in range(records):
        acc.append(tp, size, now_ms, now_ms, next(_batch_ids))


def test_full_batch_is_ready_at_once_and_drained_before_the_next() -> None:
    # RecordAccumulatorTest.testFull: append until the first batch is full; the partition is ready with
    # no linger left; the drain takes the full batch (the oldest), the new one stays queued.
    record_size = 100
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + 5 * record_size
    acc = RecordAccumulator([TP1], batch_size, 10_000)
    _fill(acc, TP1, 4, record_size)
    assert acc.ready_delay_ms(0.0) == 10_000  # not full yet: it lingers
    _fill(acc, TP1, 1, record_size)
    assert acc.ready_delay_ms(0.0) == 0.0  # full: sendable now
    _fill(acc, TP1, 1, record_size)  # goes into a second batch
    drained = acc.drain()
    assert [(b.tp, b.record_count, b.size_in_bytes) for b in drained] == [(TP1, 5, batch_size)]
    assert [b.record_count for b in acc.all_batches()] == [1]


def test_linger_expiry_makes_a_batch_ready() -> None:
    # RecordAccumulatorTest.testLinger: a batch that is not full is not ready until linger.ms after its
    # creation; ready() reports the time left (the Sender's poll timeout), then it drains.
    acc = RecordAccumulator([TP1], 1024, 10)
    assert acc.ready_delay_ms(0.0) is None  # nothing queued
    _fill(acc, TP1, 1, 39, now_ms=5.0)
    assert acc.ready_delay_ms(5.0) == 10.0
    assert acc.ready_delay_ms(14.0) == 1.0
    assert acc.ready_delay_ms(15.0) == 0.0
    assert [b.record_count for b in acc.drain()] == [1]
    assert acc.ready_delay_ms(15.0) is None


def test_drain_takes_one_batch_of_every_partition_in_order_ready_or_not() -> None:
    # RecordAccumulator.drainBatchesForOneNode: one batch per partition of the node, round robin from the
    # drain index, the lingering ones included once any is sendable.
    record_size = 100
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + 2 * record_size
    acc = RecordAccumulator([TP1, TP2, TP3], batch_size, 10_000)
    _fill(acc, TP1, 6, record_size)  # three full batches
    _fill(acc, TP2, 1, record_size)  # lingering
    _fill(acc, TP3, 1, record_size)  # lingering
    assert acc.ready_delay_ms(0.0) == 0.0
    assert [(b.tp, b.record_count) for b in acc.drain()] == [(TP1, 2), (TP2, 1), (TP3, 1)]
    # The next drain again takes one batch of TP1 only (the others are empty).
    assert [(b.tp, b.record_count) for b in acc.drain()] == [(TP1, 2)]
    assert [(b.tp, b.record_count) for b in acc.drain()] == [(TP1, 2)]
    assert acc.drain() == [] and acc.queued_batches == 0


def test_max_request_size_caps_a_drain_but_the_first_batch_always_goes() -> None:
    # drainBatchesForOneNode stops before a batch that would take the request past max.request.size,
    # except the first batch of the request, which goes even if it alone is larger.
    record_size = 100
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + record_size
    acc = RecordAccumulator([TP1, TP2, TP3], batch_size, 0, max_request_size=2 * batch_size)
    for tp in (TP1, TP2, TP3):
        _fill(acc, tp, 1, record_size)
    assert [b.tp for b in acc.drain()] == [TP1, TP2]
    assert [b.tp for b in acc.drain()] == [TP3]
    # A request too small for any batch still carries one per drain (the drain index moved on to TP2,
    # the last partition the previous pass visited).
    acc.max_request_size = 10
    _fill(acc, TP1, 1, record_size)
    _fill(acc, TP2, 1, record_size)
    assert [(b.tp, b.size_in_bytes) for b in acc.drain()] == [(TP2, batch_size)]
    assert [(b.tp, b.size_in_bytes) for b in acc.drain()] == [(TP1, batch_size)]


def test_sticky_partitioner_switches_only_at_batch_boundaries() -> None:
    # BuiltInPartitioner with enableSwitch = allBatchesFull: records stay on one partition until its batch
    # is complete, so every batch but the open one is full when the partition changes.
    record_size = 100
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + 4 * record_size  # four records per batch
    parts = [TP1, TP2, TP3]
    acc = RecordAccumulator(parts, batch_size, 10_000)
    partitioner = Partitioner("sticky", parts, batch_size, SequentialRandom())
    chosen = [send(acc, partitioner, record_size, 0.0) for _ in range(12)]
    assert chosen == [TP1] * 4 + [TP2] * 4 + [TP3] * 4
    assert [(b.tp, b.record_count, b.size_in_bytes) for b in acc.all_batches()] == [
        (tp, 4, batch_size) for tp in parts
    ]


def _upcoming(times: list[float], size: int) -> list[tuple[float, int]]:
    return [(t, size) for t in times]


def _no_more() -> None:
    return None


def test_first_waking_record_is_the_first_record_of_an_empty_accumulator() -> None:
    # KafkaProducer.doSend wakes the Sender on newBatchCreated: the first batch needs its linger timer.
    acc = RecordAccumulator([TP1], 1024, 5)
    partitioner = Partitioner("sticky", [TP1], 1024, random.Random(0))
    assert acc.first_waking_record(partitioner, _upcoming([1.0, 2.0], 100), _no_more, 100) == 1.0


def test_first_waking_record_is_the_one_that_fills_a_batch_and_looking_changes_nothing() -> None:
    # With a batch already queued (its linger timer armed), appends into it wake nobody until one fills it
    # (batchIsFull). Looking ahead replays the appends on copies: the deques and the partitioner stay.
    record_size = 100
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + 3 * record_size
    parts = [TP1, TP2]
    acc = RecordAccumulator(parts, batch_size, 5)
    partitioner = Partitioner("sticky", parts, batch_size, SequentialRandom())
    first = send(acc, partitioner, record_size, 0.0)
    before = (acc.tail_state(first), acc.drains, acc.queued_batches)
    upcoming = _upcoming([1.0, 2.0, 3.0, 4.0], record_size)
    assert acc.first_waking_record(partitioner, upcoming, _no_more, 100) == 2.0  # the third record of the batch
    assert (acc.tail_state(first), acc.drains, acc.queued_batches) == before
    assert (partitioner.state.current, partitioner.state.produced) == (0, RECORD_BATCH_OVERHEAD_BYTES + record_size)
    assert upcoming == _upcoming([1.0, 2.0, 3.0, 4.0], record_size)


def test_first_waking_record_draws_more_records_and_stops_when_they_end() -> None:
    acc = RecordAccumulator([TP1], 1_000_000, 5)
    partitioner = Partitioner("sticky", [TP1], 1_000_000, random.Random(0))
    send(acc, partitioner, 100, 0.0)  # a batch queued: appends into it wake nobody
    upcoming: list[tuple[float, int]] = []
    drawn = iter([(1.0, 100), (2.0, 100)])

    def draw() -> tuple[float, int] | None:
        record = next(drawn, None)
        if record is not None:
            upcoming.append(record)
        return record

    assert acc.first_waking_record(partitioner, upcoming, draw, 100) == math.inf
    assert upcoming == [(1.0, 100), (2.0, 100)]
    # After `limit` records without a wake-up: the last record drawn so far (the producer acts then anyway).
    assert acc.first_waking_record(partitioner, upcoming, _no_more, 1) == 2.0


def test_drain_batches_per_node_with_a_drain_index_per_node() -> None:
    # RecordAccumulatorTest.testDrainBatches: node1 leads tp1, tp2 and node2 leads tp3, tp4; the max
    # request size is one batch. Each node drains only the partitions it leads, from its own drain index
    # (RecordAccumulator.drain -> drainBatchesForOneNode, nodesDrainIndex).
    tp4 = TopicPartition(TOPIC, 3)
    record_size = 50
    batch_size = RECORD_BATCH_OVERHEAD_BYTES + record_size
    leaders = {TP1: 1, TP2: 1, TP3: 2, tp4: 2}
    acc = RecordAccumulator([TP1, TP2, TP3, tp4], batch_size, 10, max_request_size=batch_size, leaders=leaders)
    assert acc.nodes == (1, 2)

    def append(*tps: TopicPartition) -> None:
        for tp in tps:
            acc.append(tp, record_size, 0.0, 0.0, next(_batch_ids))

    append(TP1, TP2, TP3, tp4)
    assert [b.tp for n in (1, 2) for b in acc.drain(n)] == [TP1, TP3]
    append(TP1, TP3)
    assert [b.tp for n in (1, 2) for b in acc.drain(n)] == [TP2, tp4]  # each node's index moved on
    assert [b.tp for n in (1, 2) for b in acc.drain(n)] == [TP1, TP3]  # and wraps around
    # A node is ready only for the partitions it leads.
    append(TP2)
    assert acc.ready_delay_ms(0.0, 1) == 0.0 and acc.ready_delay_ms(0.0, 2) is None
    assert acc.ready_delay_ms(5.0, 1) == 0.0


def test_with_several_leaders_the_node_must_be_named() -> None:
    acc = RecordAccumulator([TP1, TP2], 1024, 10, leaders={TP1: 0, TP2: 1})
    with pytest.raises(ValueError, match="2 leaders"):
        acc.drain()


def test_first_waking_record_a_new_batch_for_a_broker_with_nothing_queued_wakes_the_sender() -> None:
    # Two leaders: TP1 on broker 0, TP2 on broker 1. A batch is queued for broker 0 only (say its
    # connection is at max.in.flight: no linger timer is armed for it, only its response will wake the
    # Sender). The first record for TP2 creates a batch on broker 1, which has nothing queued and so no
    # wake-up of its own: KafkaProducer.doSend wakes the Sender on newBatchCreated, so that the Sender arms
    # broker 1's linger. Waking only on full batches left broker 1's records waiting for broker 0.
    acc = RecordAccumulator([TP1, TP2], 1_000_000, 5, leaders={TP1: 0, TP2: 1})
    partitioner = Partitioner("round_robin", [TP1, TP2], 1_000_000, random.Random(0))
    assert send(acc, partitioner, 100, 0.0) == TP1
    upcoming = _upcoming([1.0, 2.0, 3.0], 100)  # round robin: TP2, TP1, TP2
    assert acc.first_waking_record(partitioner, upcoming, _no_more, 100) == 1.0
    # A second record for broker 0's queued batch alone wakes nobody, as before.
    acc2 = RecordAccumulator([TP1, TP2], 1_000_000, 5, leaders={TP1: 0, TP2: 0})
    p2 = Partitioner("round_robin", [TP1, TP2], 1_000_000, random.Random(0))
    send(acc2, p2, 100, 0.0)
    send(acc2, p2, 100, 0.5)
    assert acc2.first_waking_record(p2, _upcoming([1.0, 2.0], 100), _no_more, 100) == math.inf


class _KafkaWalk:
    """Kafka's ``RecordAccumulator.ready`` and ``drainBatchesForOneNode`` as Kafka writes them: every
    partition of the node visited, empty or not. The accumulator walks only non-empty deques; this is the
    reference it must agree with."""

    def __init__(self, acc: RecordAccumulator, parts: dict[int, list[TopicPartition]]) -> None:
        self.acc = acc
        self.parts = parts
        self.drain_index = {node: 0 for node in parts}

    def ready_delay_ms(self, now: float, node: int) -> float | None:
        best = None
        for tp in self.parts[node]:
            dq = self.acc._deques[tp]
            if not dq:
                continue
            first = dq[0]
            if len(dq) > 1 or first.is_full(self.acc.batch_size):
                return 0.0
            left = first.created_ms + self.acc.linger_ms - now
            if left <= 0:
                return 0.0
            best = left if best is None else min(best, left)
        return best

    def drain_ids(self, node: int) -> list[int]:
        """The batch ids a drain takes (without taking them), and Kafka's drain index after it."""
        parts = self.parts[node]
        n, start, size, ids = len(parts), self.drain_index[node], 0, []
        for k in range(n):
            i = (start + k) % n
            self.drain_index[node] = i
            dq = self.acc._deques[parts[i]]
            if not dq:
                continue
            if ids and size + dq[0].size_in_bytes > self.acc.max_request_size:
                return ids
            size += dq[0].size_in_bytes
            ids.append(dq[0].batch_id)
        return ids


@pytest.mark.parametrize("seed", range(40))
def test_ready_and_drain_walking_only_queued_partitions_give_kafkas_answers(seed: int) -> None:
    # Random appends, drains and ready checks over 2-3 leaders and up to 40 partitions: the ready delay,
    # the drained batches and the drain index equal Kafka's walk over every partition.
    rng = random.Random(seed)
    tps = [TopicPartition("t", p) for p in range(rng.randint(1, 40))]
    leaders = {tp: rng.randrange(rng.randint(1, 3)) for tp in tps}
    acc = RecordAccumulator(tps, rng.choice([100, 1000, 16384]), rng.choice([0.0, 5.0]),
                            max_request_size=rng.choice([200, 3000, 1_048_576]), leaders=leaders)
    parts: dict[int, list[TopicPartition]] = {}
    for tp in tps:
        parts.setdefault(leaders[tp], []).append(tp)
    kafka = _KafkaWalk(acc, parts)
    ids = itertools.count()
    now = 0.0
    for _ in range(400):
        now += rng.uniform(0, 3)
        action = rng.random()
        if action < 0.6:
            acc.append(rng.choice(tps), rng.randint(1, 400), now, now, next(ids))
        else:
            node = rng.choice(list(parts))
            assert acc.ready_delay_ms(now, node) == kafka.ready_delay_ms(now, node)
            if action < 0.85:
                expected = kafka.drain_ids(node)
                assert [b.batch_id for b in acc.drain(node)] == expected
                assert acc._drain_index[node] == kafka.drain_index[node]
        assert acc.queued_batches == sum(len(dq) for dq in acc._deques.values())


def test_a_node_that_no_longer_leads_has_nothing_ready_or_to_drain():
    """After a leader change (``set_leaders``) the Sender still walks its connection to the old leader:
    ``RecordAccumulator.ready`` / ``drain`` for a node that leads nothing answer "nothing" (regression: a
    KeyError on the node once metadata moved every partition away from it)."""
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    acc = RecordAccumulator([tp0, tp1], batch_size=100, linger_ms=0.0, leaders={tp0: 0, tp1: 1})
    acc.append(tp0, 10, 0.0, 0.0, 1)
    acc.set_leaders({tp0: 1, tp1: 1}, {tp0: 1, tp1: 0})
    assert acc.nodes == (1,)
    assert acc.ready_delay_ms(5.0, 0) is None
    assert acc.drain(0, 5.0) == []
    assert acc.ready_delay_ms(5.0, 1) == 0.0
    assert [b.tp for b in acc.drain(1, 5.0)] == [tp0]


def test_a_batch_behind_a_younger_retried_one_expires_when_it_reaches_the_front() -> None:
    """RecordAccumulator.expiredBatches takes expired batches from the front of each deque only, and the next
    expiry time is the first non-expired batch's (maybeUpdateNextBatchExpiryTime). Without idempotence a
    retried batch goes back to the front (addFirst): the older batch A, retried first, ends behind the
    younger B. kafkasim armed the producer's next expiry at A's deadline, where nothing expired, and re-armed
    at the same instant forever (failover stress seed 90 never finished)."""
    acc = RecordAccumulator([TP1], 16_384, 0.0)
    partitioner = Partitioner("sticky", [TP1], 16_384, random.Random(1))
    send(acc, partitioner, 100, 10.0)
    (a,) = acc.drain()
    send(acc, partitioner, 100, 20.0)
    (b,) = acc.drain()
    acc.reenqueue(a, 30.0, 100.0)
    acc.reenqueue(b, 31.0, 100.0)  # at the front, before A
    assert acc.front_created_ms() == b.created_ms == 20.0
    assert acc.expired_batches(1_015.0, 1_000.0) == []  # A's deadline passed, but B is in front
    assert acc.expired_batches(1_020.0, 1_000.0) == [b, a]  # B expires, and A behind it
    assert acc.front_created_ms() == math.inf
