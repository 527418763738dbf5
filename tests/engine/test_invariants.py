"""Invariant checks run with the engine and stop a run that breaks one, naming time, partition, request."""

from __future__ import annotations

from typing import Any

import pytest

from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.scheduling import Call
from kafkasim.run.engine import Engine
from kafkasim.run.invariants import InvariantViolation

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
        assert follower.on_log_end is not None
        follower.on_log_end(fp.tp, follower.broker_id, 0)

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


def test_a_crashed_follower_truncating_to_its_hw_is_not_a_violation() -> None:
    # Kafka does not fsync: a crashed replica may lose acknowledged data; replication covers it.
    engine = _engine(
        faults=[{"type": "crash", "target": "follower-1", "at": "1s", "restart_after": "300ms"}],
    )
    result = engine.run()
    assert result.summary["counters"]["invariant_checks"] > 100
