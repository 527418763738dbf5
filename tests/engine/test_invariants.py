"""Invariant checks run with the engine and stop a run that breaks one, naming time, partition, request."""

from __future__ import annotations

from typing import Any

import pytest

from kafkasim import load_scenario
from kafkasim.broker.errors import Errors
from kafkasim.broker.partition import Partition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.run.engine import Engine
from kafkasim.run.invariants import InvariantViolation
from kafkasim.sim.calls import Call

from .support import scenario


def _engine(**sections: Any) -> Engine:
    return Engine(scenario(duration="2s", **sections))


def test_a_clean_run_passes_every_check() -> None:
    engine = _engine()
    result = engine.run()
    assert result.summary["counters"]["invariant_checks"] > 100


def test_high_watermark_moving_backwards_stops_the_run() -> None:
    engine = _engine()
    partition = next(iter(engine.components.replica_manager.partitions.values()))
    # A broken broker: at 1 s the leader's HW drops back to 0.
    Call(engine.env, 1_000.0, lambda _e: partition.log.update_high_watermark(0))
    with pytest.raises(InvariantViolation, match=r"high watermark decreased") as caught:
        engine.run()
    assert caught.value.partition == partition.topic_partition
    assert 1_000.0 <= caught.value.time_ms <= 1_100.0
    assert "partition t-0" in str(caught.value)


@pytest.mark.pure_only  # the compiled KafkaApis calls its typed ReplicaManager natively, past this patch
def test_a_request_answered_twice_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ReplicaManager.append_records

    def answer_twice(self: ReplicaManager, timeout_ms: int, acks: int, entries: Any, callback: Any) -> None:
        def twice(statuses: Any) -> None:
            callback(statuses)
            callback(statuses)

        original(self, timeout_ms, acks, entries, twice)

    monkeypatch.setattr(ReplicaManager, "append_records", answer_twice)
    engine = _engine()
    with pytest.raises(InvariantViolation, match=r"completed twice") as caught:
        engine.run()
    assert "at t=" in str(caught.value)


def test_an_isr_follower_losing_acknowledged_data_stops_the_run() -> None:
    engine = _engine()
    follower = engine.components.followers[0]

    def lose_data(_e: object) -> None:
        fp = next(iter(follower.partitions.values()))
        fp.log.truncate_to(0)  # a follower that silently drops its log while staying in the ISR
        engine.observer.replica_log_end(fp.tp, follower.broker_id, 0)

    Call(engine.env, 1_000.0, lose_data)
    with pytest.raises(InvariantViolation, match=r"replica 1 is in the ISR") as caught:
        engine.run()
    assert caught.value.time_ms == 1_000.0


def test_checks_can_be_switched_off() -> None:
    engine = Engine(scenario(duration="2s", invariants=False))
    partition = next(iter(engine.components.replica_manager.partitions.values()))
    Call(engine.env, 1_000.0, lambda _e: partition.log.update_high_watermark(0))
    result = engine.run()
    assert result.summary["counters"]["invariant_checks"] == 0
    assert engine.invariants is None


def test_a_crashed_and_restarted_follower_is_not_a_violation() -> None:
    # Kafka does not fsync: a crashed replica may lose acknowledged data; replication covers it.
    engine = _engine(
        faults=[{"type": "crash", "target": "follower-1", "at": "1s", "restart_after": "300ms"}],
    )
    result = engine.run()
    assert result.summary["counters"]["invariant_checks"] > 100


# retries: 0 keeps the timeline this case was found with (before the producer retried): the produce
# waiting when follower 1 crashes is the one the test watches.
PAUSE_AND_CRASH = """
name: pause-and-crash
description: RF 4, min ISR 4; follower 3 paused for 1.92 s, follower 1 crashes during the pause
seed: 862314
duration: 5s
warmup: 0s
broker: {num.io.threads: 1, num.network.threads: 3, replica.lag.time.max.ms: 2000, replica.fetch.wait.max.ms: 0,
         replica.fetch.max.bytes: 16KiB, replica.fetch.min.bytes: 1}
topics: [{name: t0, partitions: 1, replication.factor: 4, min.insync.replicas: 4}]
followers:
  link: {latency: {type: uniform, low: 0.1ms, high: 5ms}}
producers:
  - {name: p1, topic: t0, acks: all, rate: 2000/s, linger.ms: 0, record_size: 100B, request.timeout.ms: 500,
     max.in.flight.requests.per.connection: 1, partitioner: round_robin, delivery.timeout.ms: 1000,
     retries: 0}
consumers: []
faults:
  - {type: crash, target: follower-1, at: 3.35s, restart_after: 2.47s}
  - {type: pause, target: follower-3, at: 1.69s, duration: 1.92s}
"""


@pytest.mark.pure_only
def test_a_crashed_follower_still_in_the_isr_counts_toward_min_isr() -> None:
    # Follower 1 crashes at 3.35 s with its log at the leader's LEO (just after it fetched the produce sent at
    # 3.325 s; before the connection handshake that produce went out earlier and the crash was at 3.29 s, with
    # the restart at the same 5.82 s); the leader does not know (no fencing
    # within replica.lag.time.max.ms), so it stays in the maximal ISR. When paused follower 3 catches up
    # at ~3.63 s the HW reaches the waiting produce's offset and Kafka answers NONE:
    # Partition.checkEnoughReplicasReachOffset compares min.insync.replicas (4) with |maximal ISR| (4).
    engine = Engine(load_scenario(PAUSE_AND_CRASH))
    partition = next(iter(engine.components.replica_manager.partitions.values()))
    acked_with_crashed_member: list[float] = []
    checker = engine.invariants.checker  # type: ignore[union-attr]
    on_acked = checker.on_acked

    def watch(tp: Any, end_offset: int, acks: int, now: float, request_id: int | None = None, **kw: Any) -> None:
        if engine.components.followers[0].crashed and 1 in partition.maximal_isr:
            acked_with_crashed_member.append(now)
        on_acked(tp, end_offset, acks, now, request_id, **kw)

    checker.on_acked = watch  # type: ignore[method-assign]
    result = engine.run()
    assert acked_with_crashed_member and min(acked_with_crashed_member) > 3_610
    assert result.summary["counters"]["invariant_checks"] > 1000


@pytest.mark.pure_only
def test_an_acks_all_partition_settled_before_the_followers_have_it_stops_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A broken broker whose DelayedProduce settles a partition at once (HW ignored): the check runs at the
    # moment of that decision (DelayedProduce.tryComplete), here inside the first produce's handling.
    def at_once(self: Partition, required_offset: int) -> tuple[bool, Errors]:
        return True, Errors.NONE

    monkeypatch.setattr(Partition, "check_enough_replicas_reach_offset", at_once)
    engine = _engine()
    with pytest.raises(InvariantViolation, match=r"acknowledged, but ISR replica 1's log ends at -1") as caught:
        engine.run()
    first = engine.components.producers[0]
    assert caught.value.partition is not None and first.records_sent == 1


@pytest.mark.pure_only
def test_an_idempotent_producer_s_batch_written_twice_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # A broker that neither recognises a retried batch (ProducerStateEntry's last 5 batches) nor checks its
    # sequence appends a retry whose response was lost a second time: Kafka promises an idempotent producer
    # that cannot happen, so the run must stop (it used to finish with the copy marked `duplicated`).
    from kafkasim.broker import producer_state_manager

    monkeypatch.setattr(producer_state_manager.ProducerStateEntry, "batch_with_sequence_range",
                        lambda self, first_seq, last_seq: None)
    monkeypatch.setattr(producer_state_manager.ProducerAppendInfo, "_check_sequence",
                        lambda self, producer_epoch, append_first_seq, offset: None)
    engine = Engine(scenario(
        duration="6s",
        producers=[{"name": "p1", "topic": "t", "acks": "all", "rate": "50/s", "arrival": "constant",
                    "record_size": "100B", "linger.ms": 0, "request.timeout.ms": 1000}],
        consumers=[{"name": "c1", "topic": "t"}],
        faults=[{"type": "connection_reset", "target": "p1", "at": "2001ms"}],  # a produce in flight (sent at 2 s)
    ))
    with pytest.raises(InvariantViolation, match=r"an idempotent producer's batch was written twice: batch \d+ of p1"):
        engine.run()


def test_a_not_idempotent_producer_may_write_a_retried_batch_twice() -> None:
    # Without idempotence Kafka promises nothing of the kind: the same lost response gives a copy, and the run
    # finishes with the batch marked `duplicated`.
    engine = Engine(scenario(
        duration="6s",
        producers=[{"name": "p1", "topic": "t", "acks": "all", "rate": "50/s", "arrival": "constant",
                    "record_size": "100B", "linger.ms": 0, "request.timeout.ms": 1000, "enable.idempotence": False}],
        consumers=[{"name": "c1", "topic": "t"}],
        faults=[{"type": "connection_reset", "target": "p1", "at": "2001ms"}],  # a produce in flight (sent at 2 s)
    ))
    result = engine.run()
    assert (result.records["outcome"].astype(str) == "duplicated").sum() >= 1
