"""The kafka-log-retention task: deletes old segments on the leader and the followers every
log.retention.check.interval.ms (first run 30 s after start, Kafka's InitialTaskDelayMs), which is what
bounds a long run's memory; consumers and followers keep working across deletions. The invariant checks
(HW <= LEO, HW never decreasing, ...) are on in every run here: a violation would raise."""

from __future__ import annotations

from typing import Any

import pytest

from kafkasim.broker.log import Log
from kafkasim.run.engine import Engine
from kafkasim.server.broker_server import RETENTION_INITIAL_DELAY_MS

from .support import consumer, producer, scenario

SEGMENT_BYTES = 4096
RETENTION_BYTES = 16384
CHECK_INTERVAL_MS = 1000
# 25 batches/s of one ~560-byte record: what the active segment may gain between two retention passes.
APPENDED_PER_INTERVAL = 25 * 600


def _run(duration: str = "36s", topic: dict[str, Any] | None = None, **sections: Any) -> Engine:
    data: dict[str, Any] = {
        "duration": duration,
        "warmup": "0ms",
        "sample_interval": "1s",
        "broker": {"log.retention.check.interval.ms": CHECK_INTERVAL_MS},
        "producers": [producer("p1", rate="25/s", record_size="500B")],
        "consumers": [consumer("c1")],
        "topic": {"segment.bytes": SEGMENT_BYTES, **(topic or {})},
    }
    data.update(sections)
    engine = Engine(scenario(**data), check_invariants=True)
    engine.result = engine.run()  # type: ignore[attr-defined]
    return engine


@pytest.fixture(scope="module")
def kept() -> Engine:
    return _run(topic={"retention.bytes": -1})


@pytest.fixture(scope="module")
def bounded() -> Engine:
    return _run(topic={"retention.bytes": RETENTION_BYTES})


def _logs(engine: Engine) -> list[Log]:
    c = engine.components
    logs = [p.log for p in c.replica_manager.partitions.values()]
    logs += [fp.log for f in c.followers for fp in f.partitions.values()]
    return logs


def _held_batches(log: Log) -> int:
    return sum(len(s.batches) for s in log.segments)


def test_size_retention_drops_batches_on_the_leader_and_the_followers(kept: Engine, bounded: Engine):
    leader = _logs(bounded)[0]
    everything = _logs(kept)[0]
    assert leader.log_end_offset == everything.log_end_offset > 800  # same run up to the deletions
    assert everything.size_in_bytes > 400_000
    assert len(_logs(bounded)) == 3  # the leader and two followers (RF 3)
    for log in _logs(bounded):
        assert log.log_start_offset > 0
        assert log.log_start_offset == log.segments[0].base_offset
        # At most retention.bytes, plus the segment that would take it below the limit, plus what the
        # active segment gained since the last pass.
        assert log.size_in_bytes < RETENTION_BYTES + SEGMENT_BYTES + APPENDED_PER_INTERVAL
        assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
        assert _held_batches(log) < _held_batches(everything) / 10
    for log in _logs(kept):
        assert log.log_start_offset == 0
        assert _held_batches(log) == everything.log_end_offset  # one record per batch, all kept


def test_consumers_and_followers_keep_up_across_deletions(bounded: Engine):
    requests = bounded.result.requests  # type: ignore[attr-defined]
    fetches = requests[(requests["api"].str.startswith("Fetch")) & (requests["client_send_ms"] > 31_000)]
    assert set(fetches["client"]) == {"c1", "follower-1", "follower-2"}
    assert (requests["error"] == 0).all()
    leader = _logs(bounded)[0]
    partition = next(iter(bounded.components.replica_manager.partitions.values()))
    assert sorted(partition.isr) == [0, 1, 2]
    for log in _logs(bounded)[1:]:
        assert log.log_end_offset >= leader.high_watermark - 5
    records = bounded.result.records  # type: ignore[attr-defined]
    assert records["consumed_ms:c1"].notna().mean() > 0.99


def test_a_consumer_paused_past_retention_resets_to_the_log_start():
    engine = _run(
        topic={"retention.bytes": RETENTION_BYTES},
        faults=[{"type": "pause", "target": "c1", "at": "20s", "duration": "14s"}],
    )
    requests = engine.result.requests  # type: ignore[attr-defined]
    c1 = requests[requests["client"] == "c1"]
    # After the pause its position (~offset 500) had been deleted: one OFFSET_OUT_OF_RANGE, then it reads
    # again from the log start, skipping what retention removed (auto.offset.reset=earliest).
    assert list(c1.loc[c1["error"] != 0, "error_name"]) == ["OFFSET_OUT_OF_RANGE"]
    records = engine.result.records  # type: ignore[attr-defined]
    consumed = records["consumed_ms:c1"]
    assert (consumed > 34_000).sum() > 20
    assert consumed.isna().sum() > 100


def test_time_retention_deletes_segments_whose_newest_record_is_older_than_retention_ms():
    engine = _run(topic={"retention.ms": 5000})
    now = engine.env.now
    for log in _logs(engine):
        assert log.log_start_offset > 0
        # Checked every second: whatever is left is at most retention.ms + one interval old.
        assert log.segments[0].largest_timestamp >= now - 5000 - CHECK_INTERVAL_MS
        assert _held_batches(log) < 200


def test_nothing_is_deleted_before_the_first_run():
    engine = _run(duration=f"{RETENTION_INITIAL_DELAY_MS - 1:.0f}ms", topic={"retention.bytes": 0})
    for log in _logs(engine):
        assert log.log_start_offset == 0
        assert len(log.segments) > 10
