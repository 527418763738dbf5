"""Producer state is a function of the log: after any mix of leader appends, follower copies, truncations,
rolls and snapshots, every producer's state on a replica matches the batches that replica's log holds
(Kafka's ``ProducerStateManager`` is rebuilt from snapshots and the log, ``UnifiedLog.rebuildProducerState``).

This is what a new leader deduplicates a retried batch with: if a replica's state lost a batch its log still
has, the retry of that batch to it as leader is appended a second time (issue 26, item 1). Seeded histories:
two replicas of one partition, three idempotent producers that sometimes bump their epoch, tiny segments
(rolls take producer snapshots), truncations to random batch boundaries (a follower's divergence), and
leadership moving between the two (the new leader first truncates to its HW, as Kafka's follower does)."""

from __future__ import annotations

import random

import pytest

from kafkasim.broker.config import LogConfig
from kafkasim.broker.errors import KafkaError
from kafkasim.broker.log import Log
from kafkasim.broker.producer_state_manager import NUM_BATCHES_TO_RETAIN
from kafkasim.broker.records import RecordBatch
from kafkasim.timer import ManualTime

SEEDS = range(60)


def _expected_state(log: Log) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
    """Per producer: its epoch and last (up to 5) batches of that epoch, (first seq, last seq, last offset),
    read off the log's batches from its start (no retention here: the log holds every batch)."""
    out: dict[int, tuple[int, list[tuple[int, int, int]]]] = {}
    for segment in log.segments:
        for batch in segment.batches:
            if batch.producer_id < 0:
                continue
            epoch, batches = out.get(batch.producer_id, (batch.producer_epoch, []))
            if batch.producer_epoch != epoch:
                epoch, batches = batch.producer_epoch, []
            batches = [*batches, (batch.base_sequence, batch.last_sequence, batch.last_offset)][-NUM_BATCHES_TO_RETAIN:]
            out[batch.producer_id] = (epoch, batches)
    return out


def _actual_state(log: Log) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
    return {
        pid: (entry.producer_epoch, [(m.first_seq, m.last_seq, m.last_offset) for m in entry.batch_metadata])
        for pid, entry in log.producer_state_manager.active_producers.items()
        if entry.batch_metadata
    }


class _Producer:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.epoch = 0
        self.next_seq = 0


@pytest.mark.parametrize("seed", SEEDS)
def test_producer_state_matches_the_log_after_any_history(seed: int) -> None:
    rng = random.Random(seed)
    time = ManualTime(0)
    config = LogConfig(segment_bytes=rng.choice([250, 400, 1000]))
    replicas = [Log(config, time, name=f"t-0@{i}") for i in range(2)]
    producers = [_Producer(pid) for pid in (101, 102, 103)]
    leader = 0
    leader_epoch = 0
    ids = [0]

    def batch(p: _Producer, records: int) -> RecordBatch:
        ids[0] += 1
        return RecordBatch(records, 100 * records, time.milliseconds(), ids[0], "p", producer_id=p.pid,
                           producer_epoch=p.epoch, base_sequence=p.next_seq)

    for step in range(200):
        time.sleep(rng.randint(0, 5))
        action = rng.random()
        log = replicas[leader]
        follower = replicas[1 - leader]
        if action < 0.55:
            p = rng.choice(producers)
            if rng.random() < 0.05:
                p.epoch, p.next_seq = p.epoch + 1, 0  # an epoch bump (KIP-360): sequences restart at 0
            records = rng.randint(1, 3)
            try:
                log.append_as_leader([batch(p, records)], leader_epoch)
                p.next_seq += records
            except KafkaError:
                pass  # out of order after a truncation lost its earlier batches: the producer would retry
        elif action < 0.8:
            # The follower copies what it lacks (ReplicaFetcherThread), a few batches at a time, after
            # truncating to the last offset where its log and the leader's agree (a divergence).
            leader_batches = [b for s in log.segments for b in s.batches]
            mine = {(b.base_offset, b.batch_id) for s in follower.segments for b in s.batches}
            agree = 0
            for b in leader_batches:
                if (b.base_offset, b.batch_id) not in mine:
                    break
                agree = b.next_offset
            if follower.log_end_offset > agree:
                follower.truncate_to(agree)
            for b in [b for b in leader_batches if b.base_offset >= agree][:rng.randint(1, 4)]:
                follower.append_as_follower([b])
        elif action < 0.9 and follower.log_end_offset > 0:
            # A follower's divergence: it truncates to a batch boundary of its own log.
            boundaries = [b.base_offset for s in follower.segments for b in s.batches]
            follower.truncate_to(rng.choice(boundaries))
        else:
            # Leadership moves to the follower (a clean election: it holds everything below the HW, here the
            # common prefix); the old leader truncates to where the new leader's log ends, as a follower does.
            leader_epoch += 1
            leader = 1 - leader
            for p in producers:
                # The producers' own view: the next sequence after what the new leader holds of them (their
                # unacknowledged batches above it are retried with the same sequences, or fail).
                state = replicas[leader].producer_state_manager.last_entry(p.pid)
                if state is not None and state.batch_metadata and state.producer_epoch == p.epoch:
                    p.next_seq = state.last_seq + 1
        for i, replica in enumerate(replicas):
            assert _actual_state(replica) == _expected_state(replica), (
                f"seed {seed} step {step}: replica {i}'s producer state departs from its log")
