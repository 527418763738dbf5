"""`kafkasim trace`: picking a request, its RequestMetrics story, why a DelayedFetch waited, its swimlane."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kafkasim.network.messages import fetch_response_bytes
from kafkasim.record.result import RunResult
from kafkasim.report.trace import (
    TraceError,
    explain_wait,
    pick_request,
    record_bytes,
    segment_rolls,
    trace_request,
)

from .support import QUICKSTART, REPO, SHORT, assert_no_traceback, call, kafkasim, ran

SEGMENT_ROLL = REPO / "scenarios" / "segment_roll_wakes_fetches.yaml"


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trace") / "quick"
    assert call("run", QUICKSTART, *SHORT, "--out", out, "--no-figures", "--no-progress") == 0
    return out


@pytest.fixture(scope="module")
def rolls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny segments rolling every ~2.5 s, min bytes 1 MiB that never arrive, max wait 500 ms."""
    out = tmp_path_factory.mktemp("trace") / "rolls"
    assert call("run", SEGMENT_ROLL, "--set", "duration=6s", "--out", out, "--no-figures", "--no-progress") == 0
    return out


def test_slowest_produce_prints_every_stage_and_writes_the_swimlane(quick: Path, tmp_path: Path) -> None:
    out = tmp_path / "t"
    result = kafkasim("trace", quick, "--slowest", "produce", "--out", out)
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    for stage in ("client send", "arrival (startTimeNanos)", "dequeue (requestDequeueTimeNanos)",
                  "local complete (apiLocalCompleteTimeNanos)", "response complete", "response dequeue",
                  "end (send complete)", "client receive", "RemoteTimeMs", "DelayedProduce"):
        assert stage in result.stdout, stage
    run = RunResult.load(quick)
    kept = run.requests[(run.requests["api"] == "Produce") & (run.requests["client_send_ms"] >= 500)]
    slowest = int(kept.loc[kept["TotalTimeMs"].idxmax(), "request_id"])
    assert f"Produce #{slowest} " in result.stdout
    assert (out / "trace.png").stat().st_size > 10_000
    assert json.loads((out / "trace.json").read_text())["request_id"] == slowest


def test_a_clients_request_at_a_time(quick: Path) -> None:
    run = RunResult.load(quick)
    row, how = pick_request(run, client="consumer-1", at_ms=1000.0)
    assert row["client"] == "consumer-1" and "in flight" in how
    assert row["client_send_ms"] <= 1000.0 <= row["client_receive_ms"]
    # A moment when the producer has nothing in flight: just after a response, before its next send.
    mine = run.requests[run.requests["client"] == "producer-1"].sort_values("client_send_ms")
    running_end = mine["client_receive_ms"].cummax()
    gap = mine[running_end < mine["client_send_ms"].shift(-1)]
    moment = float(running_end[gap.index[0]]) + 1e-6
    after, how = pick_request(run, client="producer-1", at_ms=moment)
    assert "first request sent after" in how and after["client_send_ms"] >= moment
    assert float(after["client_send_ms"]) == float(mine[mine["client_send_ms"] >= moment]["client_send_ms"].min())


def test_a_fetch_woken_by_an_append_says_min_bytes_and_who_woke_it(quick: Path) -> None:
    run = RunResult.load(quick)
    requests = run.requests
    parked = requests[(requests["api"] == "FetchFollower") & (requests["RemoteTimeMs"] > 0.5)
                      & (requests["RemoteTimeMs"] < 400)].iloc[0]
    story = "\n".join(explain_wait(run, parked))
    assert "min bytes was reached" in story and "case G" in story
    assert "Produce #" in story and "appendRecords" in story


def test_delayed_fetch_max_wait_and_segment_roll_are_told_apart(rolls: Path, tmp_path: Path) -> None:
    run = RunResult.load(rolls)
    requests = run.requests
    fetches = requests[(requests["api"] == "FetchFollower") & (requests["client_send_ms"] >= 2000)]
    expired = fetches[fetches["RemoteTimeMs"] >= 499].iloc[0]
    assert "max wait expired" in "\n".join(explain_wait(run, expired))
    early = fetches[fetches["RemoteTimeMs"] < 450]
    assert not early.empty  # the scenario's claim: a roll wakes the parked follower fetches
    story = "\n".join(explain_wait(run, early.iloc[0]))
    assert "segment roll" in story and "case F" in story
    traced = trace_request(run, request_id=int(early.iloc[0]["request_id"]))
    assert traced.story is not None and traced.story.hw_text == "DelayedFetch: a segment roll (case F)"
    traced = trace_request(run, request_id=int(expired["request_id"]))
    assert traced.story is not None and traced.story.hw_text == "DelayedFetch: max wait expired"
    # The reconstructed roll is one the log really made: its offset starts a batch the leader appended.
    found = segment_rolls(run)
    assert found is not None and not found.empty
    appended = set(run.records["offset"].to_numpy(dtype=np.int64).tolist())
    assert set(found["offset"].tolist()) <= appended
    result = kafkasim("trace", rolls, "--request", int(early.iloc[0]["request_id"]), "--out", tmp_path / "r")
    assert result.returncode == 0 and "segment roll" in " ".join(result.stdout.split())


def test_bad_choices_are_one_line_and_exit_2(quick: Path, tmp_path: Path) -> None:
    for args, expected in ((["--request", "99999999"], "no such request"),
                           (["--slowest", "metadata"], "allowed produce, fetch-consumer, fetch-follower"),
                           (["--client", "nobody", "--at", "10"], "no such client"),
                           (["--client", "consumer-1"], "go together"),
                           ([], "pick one request")):
        result = kafkasim("trace", quick, *args, "--out", tmp_path / "x")
        assert result.returncode == 2, (args, result.stderr)
        assert expected in result.stderr, (args, result.stderr)
        assert_no_traceback(result)
    not_a_run = kafkasim("trace", tmp_path, "--request", "1")
    assert not_a_run.returncode == 2 and "not a complete kafkasim result" in not_a_run.stderr
    assert not (tmp_path / "x").exists()
    with pytest.raises(TraceError):
        trace_request(RunResult.load(quick), slowest="produce", request_id=1)


def test_record_bytes_of_an_incremental_fetch_count_the_partitions_its_response_carried() -> None:
    # A follower's incremental fetch named 2 partitions (their offsets moved); its response carried 1 (the
    # other had no news): 500 bytes of records. Results saved before response_partitions existed had only
    # full fetches, whose responses carried the request's partitions.
    row = pd.Series({"api": "FetchFollower", "partitions": 2, "response_partitions": 1,
                     "response_bytes": fetch_response_bytes(1, 500)})
    assert record_bytes(row) == 500
    old = pd.Series({"api": "FetchFollower", "partitions": 2, "response_bytes": fetch_response_bytes(2, 500)})
    assert record_bytes(old) == 500


CRASH_IN_A_CLUSTER = """\
name: crash_in_a_cluster
description: Broker 2 of four crashes; acks=all, a small buffer.memory so that the producer blocks soon.
seed: 3
duration: 16s
warmup: 1s
cluster:
  brokers: 4
topics:
  - name: events
    partitions: 12
    replication.factor: 3
    min.insync.replicas: 2
producers:
  - name: producer-1
    topic: events
    acks: all
    rate: 4000/s
    arrival: poisson
    record_size: 1KiB
    buffer.memory: 4MiB
consumers:
  - name: consumer-1
    topic: events
faults:
  - {type: crash, target: broker-2, at: 4s}
"""


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ran(tmp_path_factory.mktemp("trace"), CRASH_IN_A_CLUSTER, "crash")


def test_a_stalled_batch_of_a_partition_the_crash_never_touched_says_what_held_it(crash: Path, tmp_path: Path) -> None:
    """Issue 23's trial: partitions with no replica on the crashed broker stall too. The trace of such a
    batch names the chain: send() blocked on a full buffer.memory, because every connection's in-flight slots
    were held by a produce parked in a surviving leader's purgatory (a partition whose ISR kept broker 2 until
    its fence) and the requests unread behind it."""
    from kafkasim import load_scenario
    from kafkasim.broker.records import TopicPartition
    from kafkasim.run.cluster_layout import cluster_layout

    scenario = load_scenario(crash / "scenario.yaml")
    layout = cluster_layout(scenario, scenario.seed)
    untouched = [p for p in range(12) if 2 not in layout.replicas[TopicPartition("events", p)]]
    records = RunResult.load(crash).records
    stalled = records[records["partition"].isin(untouched)
                      & (records["created_ms"] - records["first_intended_ms"] > 1_000)]
    assert len(stalled) > 10
    batch = stalled.iloc[len(stalled) // 2]
    out = tmp_path / "t"
    result = kafkasim("trace", crash, "--batch", str(int(batch["batch_id"])), "--out", out)
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    text = " ".join(result.stdout.split())
    for said in ("before the batch existed", "buffer.memory (4.0 MiB) was full", "BufferPool.allocate",
                 "in the leader's produce purgatory", "the ones behind it unread in the muted socket",
                 "crash of broker-2 at 4000 ms, fenced at", f"Produce #{int(batch['first_request_id'])} "):
        assert said in text, said
    story = json.loads((out / "trace.json").read_text())
    assert story["batch"]["batch_id"] == int(batch["batch_id"])
    assert story["request_id"] == int(batch["first_request_id"])
    # A batch that went out at once says so, and no more.
    quick_one = records[(records["first_intended_ms"] < 3_000) & (records["created_ms"] - records["first_intended_ms"]
                                                                   < 0.5)].iloc[0]
    result = kafkasim("trace", crash, "--batch", str(int(quick_one["batch_id"])), "--out", tmp_path / "q")
    assert result.returncode == 0 and "before the batch existed" not in result.stdout
    assert "after its creation (linger.ms 5)" in " ".join(result.stdout.split())


def test_bad_batch_choices_are_one_line_and_exit_2(crash: Path, tmp_path: Path) -> None:
    for args, expected in ((["--batch", "99999999"], "no such batch"),
                           (["--batch", "1", "--request", "1"], "pick one")):
        result = kafkasim("trace", crash, *args, "--out", tmp_path / "x")
        assert result.returncode == 2, (args, result.stderr)
        assert expected in result.stderr, (args, result.stderr)
        assert_no_traceback(result)
