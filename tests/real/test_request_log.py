"""Kafka's request log (kafka.request.logger at DEBUG) read into the requests table, and
`kafkasim import-request-log` end to end. The lines in data/ were written by Kafka 4.3.1 brokers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kafkasim.real.request_log import parse_lines
from kafkasim.record.result import RunResult

DATA = Path(__file__).with_name("data")
LOG = DATA / "broker-0.log"


def test_each_completed_request_becomes_a_row_with_the_brokers_own_breakdown() -> None:
    log = parse_lines([(0, LOG)])
    rows = log.requests
    assert list(rows["api"]) == ["Produce", "FetchConsumer", "FetchConsumer"]
    produce = rows.iloc[0]
    body = json.loads(LOG.read_text().splitlines()[0].split("Completed request:", 1)[1])
    # Every RequestMetrics column is the broker's own figure, to the microsecond.
    for column, key in (("RequestQueueTimeMs", "requestQueueTimeMs"), ("LocalTimeMs", "localTimeMs"),
                        ("RemoteTimeMs", "remoteTimeMs"), ("ResponseQueueTimeMs", "responseQueueTimeMs"),
                        ("ResponseSendTimeMs", "sendTimeMs"), ("TotalTimeMs", "totalTimeMs")):
        # TotalTimeMs is the sum of the parts, each logged to the microsecond: a few microseconds of rounding.
        assert produce[column] == pytest.approx(body[key], abs=0.005 if key == "totalTimeMs" else 1e-6), column
    assert produce["client"] == "p1" and produce["acks"] == -1 and produce["error"] == 0
    assert produce["broker"] == 0 and produce["partitions"] == 1 and produce["request_bytes"] == 2260
    # What only a client knows is missing, not made up.
    assert np.isnan(produce["client_send_ms"]) and np.isnan(produce["client_latency_ms"])
    assert np.isnan(produce["intended_ms"]) and not produce["client_timeout"]
    # The idle consumer's fetch waited its fetch.max.wait.ms (500) in the purgatory.
    assert rows.iloc[2]["RemoteTimeMs"] == pytest.approx(500.819)
    # Time 0 is the first request's arrival; the log's line times are when each response was sent.
    assert log.origin_epoch_ms == 1795863266207 - 169  # the first arrival, floored to the millisecond
    assert produce["start_ms"] == pytest.approx(0.806, abs=1e-6)
    assert log.batches[0].base_offset == 0 and log.batches[0].topic == "mrNy46I5QOK2QS6gWjH6OQ"
    assert log.other_apis == {"METADATA": 1} and not log.bad_lines


def test_a_follower_fetch_is_fetch_follower_named_after_its_fetcher_thread(tmp_path: Path) -> None:
    line = LOG.read_text().splitlines()[1]
    head, body = line.split("Completed request:", 1)
    data = json.loads(body)
    data["requestHeader"]["clientId"] = "broker-2-fetcher-0"
    data["request"]["replicaState"] = {"replicaId": 2, "replicaEpoch": 31}
    path = tmp_path / "follower.log"
    path.write_text(f"{head}Completed request:{json.dumps(data)}\n")
    rows = parse_lines([(1, path)], follower_name=lambda replica, fetcher, source: f"f{replica}-{fetcher}-{source}")
    assert list(rows.requests["api"]) == ["FetchFollower"]
    assert list(rows.requests["client"]) == ["f2-0-1"]


def test_bad_lines_are_counted_and_named_never_a_traceback(tmp_path: Path) -> None:
    good = LOG.read_text().splitlines()
    path = tmp_path / "mixed.log"
    path.write_text("\n".join([good[0], "[2024-01-01] INFO something else (kafka.server)", good[1][:200],
                               "1795863283681 Completed request:{\"a\": [1, 2]}", good[2]]) + "\n")
    log = parse_lines([(0, path)])
    assert len(log.requests) == 2
    assert [(b.line, b.why.split(" (")[0]) for b in log.bad_lines] == [
        (2, "no 'Completed request:' JSON"), (3, "the JSON is cut off or malformed"),
        (4, "the JSON has no requestHeader")]
    summary = log.bad_summary()
    assert summary is not None and summary.startswith("3 line(s) of 5") and f"{path}:2" in summary


def kafkasim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkasim", *args], capture_output=True, text=True, timeout=300)


def test_import_request_log_writes_a_result_report_can_read(tmp_path: Path) -> None:
    out = tmp_path / "imported"
    done = kafkasim("import-request-log", str(LOG), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "read 1 Produce, 2 FetchConsumer request(s)" in done.stderr and "1 METADATA" in done.stderr
    result = RunResult.load(out)
    assert len(result.requests) == 3 and len(result.records) == 0
    assert result.summary["apis"]["FetchConsumer"]["count"] == 2
    assert result.run_info["engine"] == "kafka-request-log"
    report = kafkasim("report", str(out))
    assert report.returncode == 0, report.stderr
    assert (out / "report.html").is_file()


def test_import_request_log_without_any_request_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("[1795863242215] INFO [KafkaRaftServer nodeId=1000] Kafka Server started\n")
    done = kafkasim("import-request-log", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "1 line(s) of 1 were not completed requests" in done.stderr
    assert "kafkasim: error: no PRODUCE or FETCH request" in done.stderr and "Traceback" not in done.stderr
    missing = kafkasim("import-request-log", str(tmp_path / "nope.log"), "--out", str(tmp_path / "out"))
    assert missing.returncode == 2 and "no such request log file" in missing.stderr
