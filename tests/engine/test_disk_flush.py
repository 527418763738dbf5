"""Log flushes in a run: flush.messages holds the appending thread (LocalTimeMs on a leader, the next fetch of a
follower), flush.ms flushes from the log flusher task, the broker's one disk queues concurrent flushes, and
Kafka's default (flushing left to the OS) builds no disk at all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kafkasim.run import run_scenario

from .support import after_warmup, consumer, gauge, median, producer, scenario
from .test_determinism import table_hash

FSYNC_MS = 2.0
DISK = {"disk": {"fsync": f"{FSYNC_MS}ms", "write_per_kib": "0ms"}}


def _flush_counters(counters: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in counters.items() if "flush" in k or k == "disk_busy_ms"}


def test_kafka_s_default_leaves_flushing_to_the_os_no_disk_no_gauges() -> None:
    result = run_scenario(scenario(duration="1s", broker=DISK))
    assert _flush_counters(result.summary["counters"]) == {}
    assert not result.timeseries["metric"].isin(["LogFlushRatePerSec", "DiskUtilization"]).any()


def test_flush_messages_1_flushes_once_per_append_per_partition() -> None:
    sc = scenario(
        duration="2s",
        topic={"partitions": 3, "replication.factor": 1, "min.insync.replicas": 1, "flush.messages": 1},
        broker=DISK,
        producers=[producer("p1", acks=1, rate="400/s", partitioner="round_robin", **{"linger.ms": 5})],
    )
    result = run_scenario(sc)
    produce = result.requests[(result.requests["api"] == "Produce") & (result.requests["error_name"] == "NONE")]
    appends = int(produce["partitions"].sum())  # one batch per partition of a request: one append each
    assert produce["partitions"].max() > 1
    counters = result.summary["counters"]
    assert counters["log_flushes"] == appends
    assert counters["log_flush_time_ms"] == pytest.approx(appends * FSYNC_MS)
    assert counters["disk_busy_ms"] == pytest.approx(appends * FSYNC_MS)


def test_a_leader_s_flush_adds_its_cost_to_local_time_and_a_follower_s_to_remote_time() -> None:
    def breakdown(flush: bool) -> dict[str, float]:
        topic = {"flush.messages": 1} if flush else {}
        rows = after_warmup(run_scenario(scenario(duration="2s", topic=topic, broker=DISK)), "Produce")
        return {c: median(rows, c) for c in ("LocalTimeMs", "RemoteTimeMs")}

    base, flushed = breakdown(False), breakdown(True)
    # The leader's handler flushes before it answers; acks=all then waits for a follower whose fetcher thread
    # flushed its copy before fetching again (the fetch that moves the high watermark).
    assert flushed["LocalTimeMs"] - base["LocalTimeMs"] == pytest.approx(FSYNC_MS, abs=1e-6)
    assert flushed["RemoteTimeMs"] - base["RemoteTimeMs"] == pytest.approx(FSYNC_MS, abs=1e-6)


def _local_and_client_p50(partitions: int) -> tuple[float, float, float]:
    sc = scenario(
        duration="3s",
        topic={"partitions": partitions, "replication.factor": 1, "min.insync.replicas": 1, "flush.messages": 1},
        broker={"disk": {"fsync": "0.1ms", "write_per_kib": "0ms"}},
        producers=[producer("p1", acks=1, rate="5000/s", partitioner="round_robin", **{"linger.ms": 10})],
    )
    rows = after_warmup(run_scenario(sc), "Produce")
    return median(rows, "LocalTimeMs"), median(rows, "client_latency_ms"), float(rows["partitions"].mean())


def test_an_fsync_per_append_makes_publish_latency_grow_with_the_partitions() -> None:
    """Issue 32's "fsync per append expressible": with flush.messages=1 a produce of n partitions flushes n
    times on its handler thread, so its LocalTimeMs is the append's plus n fsyncs (n = the partitions a
    request carries: here every partition, 50 records a request spread round robin)."""
    measured = {n: _local_and_client_p50(n) for n in (1, 10, 50)}
    base_local = measured[1][0] - 0.1
    for n, (local, _client, per_request) in measured.items():
        assert per_request == pytest.approx(n, rel=0.05)
        assert local == pytest.approx(base_local + 0.1 * n, rel=0.05)
    client = [measured[n][1] for n in (1, 10, 50)]
    assert client[0] < client[1] < client[2]
    # The growth is the flushes': 4.9 ms more p50 publish latency from 1 to 50 partitions.
    assert client[2] - client[0] == pytest.approx(0.1 * 49, rel=0.1)


def test_flush_ms_flushes_from_the_log_flusher_task_from_its_first_run_at_30s() -> None:
    # LogManager.startup schedules kafka-log-flusher 30 s after start, then every
    # log.flush.scheduler.interval.ms; flushDirtyLogs flushes a log whose last flush is flush.ms old.
    sc = scenario(duration="31s", warmup="0s", sample_interval="100ms", topic={"flush.ms": 100},
                  broker={"log.flush.scheduler.interval.ms": 50})
    result = run_scenario(sc)
    rate = gauge(result, "LogFlushRatePerSec", "broker-0")
    assert (rate[rate["time_ms"] < 30_000]["value"] == 0).all()
    after = rate[rate["time_ms"] > 30_000]
    # A flush every other run of the task (a run 50 ms after a flush finds it too young): 10 per second.
    assert after["value"].mean() == pytest.approx(10.0, rel=0.15)
    # Every broker flushes its replicas: leader and two followers.
    assert result.summary["counters"]["log_flushes"] == pytest.approx(30, abs=3)
    # The flusher's thread is not a request handler: produce LocalTimeMs stays the append's.
    produce = after_warmup(result, "Produce")
    assert produce["LocalTimeMs"].max() < 0.1


def test_flush_ms_alone_flushes_once_kafka_s_scheduler_period_being_long_max() -> None:
    result = run_scenario(scenario(duration="31s", topic={"flush.ms": 100}))
    assert result.summary["counters"]["log_flushes"] == 3  # each broker once, at 30 s


def test_the_shared_disk_queues_flushes_of_concurrent_handlers() -> None:
    # Two producers appending at the same instants to two partitions of one broker: two handler threads flush
    # at once, and the disk serves one after the other.
    sc = scenario(
        duration="1s",
        topic={"partitions": 2, "replication.factor": 1, "min.insync.replicas": 1, "flush.messages": 1},
        broker=DISK,
        producers=[producer("a", acks=1, partitioner="round_robin"), producer("b", acks=1, partitioner="round_robin")],
    )
    result = run_scenario(sc)
    counters = result.summary["counters"]
    assert counters["log_flush_max_ms"] == pytest.approx(2 * FSYNC_MS)
    assert counters["log_flush_time_ms"] > counters["disk_busy_ms"]  # the waits are in Kafka's flush time
    local = after_warmup(result, "Produce")["LocalTimeMs"].to_numpy()
    assert np.isclose(local.max() - local.min(), FSYNC_MS)
    utilisation = gauge(result, "DiskUtilization", "broker-0")["value"]
    assert 0.0 < utilisation.max() <= 1.0


def test_flushes_are_deterministic_and_leave_other_draws_alone() -> None:
    lognormal = {"disk": {"fsync": {"type": "lognormal", "median": "1ms", "p99": "5ms"}}}

    def run(flush: bool) -> Any:
        topic = {"flush.messages": 1} if flush else {}
        producers = [producer("p1", rate="50/s", arrival="poisson", record_size={"type": "uniform", "low": "100B",
                                                                                  "high": "1KiB"})]
        return run_scenario(scenario(duration="1s", topic=topic, broker=lognormal, producers=producers))

    first, again, without = run(True), run(True), run(False)
    assert table_hash(first.requests) == table_hash(again.requests)
    assert first.summary["counters"] == again.summary["counters"]
    assert first.summary["counters"]["log_flush_max_ms"] > 1.0  # drawn, not constant
    # The disk draws from its own streams: the producer's arrivals and sizes (a batch a record at this rate)
    # are the same without it.
    for column in ("first_intended_ms", "size_bytes"):
        assert first.records[column].equals(without.records[column])


def test_a_consumer_that_fell_behind_the_page_cache_reads_from_the_disk() -> None:
    def run(pause: bool) -> Any:
        faults = [{"type": "pause", "target": "c1", "at": "1s", "duration": "1s"}] if pause else []
        return run_scenario(scenario(
            duration="3s", topic={"replication.factor": 1, "min.insync.replicas": 1},
            broker={"disk": {"page_cache": "64KiB", "read_latency": "5ms", "read_per_kib": "0.01ms"}},
            producers=[producer("p1", acks=1, rate="500/s")], consumers=[consumer("c1")], faults=faults,
        ))

    caught_up, lagging = run(False), run(True)
    # A consumer at the log end reads what was just written: the page cache.
    assert caught_up.summary["counters"]["disk_reads"] == 0
    assert after_warmup(caught_up, "FetchConsumer")["LocalTimeMs"].max() < 0.1
    # Paused for 1 s (~80 KB written), it reads on resuming what no longer fits in 64 KiB from the disk.
    counters = lagging.summary["counters"]
    assert counters["disk_reads"] == 1
    fetches = after_warmup(lagging, "FetchConsumer")
    catch_up = fetches.loc[fetches["response_bytes"].idxmax()]
    cold_kib = (catch_up["response_bytes"] - 64 * 1024) / 1024
    assert counters["disk_read_bytes"] / 1024 == pytest.approx(cold_kib, rel=0.05)
    assert catch_up["LocalTimeMs"] == pytest.approx(0.05 + 5.0 + 0.01 * counters["disk_read_bytes"] / 1024, rel=0.05)
