"""Zero values of Kafka's size keys run as Kafka would; a zero bandwidth is refused with its range.

Kafka defines `replica.fetch.max.bytes`, `replica.fetch.response.max.bytes` (ReplicationConfigs),
`message.max.bytes` (ServerLogConfigs) and the topic's `max.message.bytes` (LogConfig) with `atLeast(0)`, so a
scenario may set them to 0 and the run must behave as the broker would, never end in a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.broker.errors import Errors
from kafkasim.run.engine import run_scenario
from kafkasim.scenario import ScenarioError, load_scenario, with_overrides

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"
SHORT = ["duration=1s", "warmup=0s"]


def _run(*overrides: str):  # type: ignore[no-untyped-def]
    scenario = with_overrides(load_scenario(QUICKSTART), [*SHORT, *overrides])
    return run_scenario(scenario)


def test_a_zero_replica_fetch_max_bytes_replicates_one_batch_per_fetch_after_the_wait() -> None:
    # ReplicaManager.readFromLog: minOneMessage lets the first partition return one batch past a 0 limit, but
    # DelayedFetch.tryComplete counts min(bytes available, partition maxBytes) = 0, so a parked follower fetch
    # only returns when replica.fetch.wait.max.ms (500 ms) expires -- with that batch.
    result = _run("duration=3s", "broker.replica.fetch.max.bytes=0")
    follower_fetches = result.requests[result.requests["api"] == "FetchFollower"].dropna(subset=["end_ms"])
    assert len(follower_fetches) >= 8
    assert (follower_fetches["RemoteTimeMs"] > 490).all()
    assert (follower_fetches["response_bytes"] > 1000).all()  # each carried a batch, not an empty answer
    acked = result.records.dropna(subset=["ack_ms"])
    assert len(acked) >= 3 and (acked["error"] == 0).all()  # the HW moved: acks=all batches completed


def test_a_zero_replica_fetch_response_max_bytes_still_replicates() -> None:
    # The response limit is only a total: the first partition still gets one batch (minOneMessage), and
    # DelayedFetch counts the partition's own maxBytes (1 MiB), so fetches return as data arrives.
    result = _run("broker.replica.fetch.response.max.bytes=0")
    records = result.records
    acked = records.dropna(subset=["ack_ms"])
    assert len(records) > 100 and len(acked) > 0.95 * len(records)
    assert (acked["error"] == 0).all()


@pytest.mark.parametrize("override", ["broker.message.max.bytes=0", "topics[0].max.message.bytes=0"])
def test_a_zero_max_message_size_fails_every_batch_with_message_too_large(override: str) -> None:
    # UnifiedLog.analyzeAndValidateRecords: a batch larger than max.message.bytes is a RecordTooLargeException
    # (MESSAGE_TOO_LARGE); with 0 that is every batch.
    result = _run(override)
    answered = result.records.dropna(subset=["ack_ms"])
    assert len(answered) > 100
    assert (answered["error"] == int(Errors.MESSAGE_TOO_LARGE)).all(), set(answered["error"])


@pytest.mark.parametrize(
    "override",
    [
        "network.default_link.bandwidth=0bit/s",
        "network.default_link.bandwidth=0Gbit/s",
        "network.default_link.to_broker.bandwidth=0B/s",
        "followers.link={bandwidth: 0MB/s}",
        "producers[0].link={from_broker: {bandwidth: 0KiB/s}}",
    ],
)
def test_a_zero_bandwidth_is_refused_with_the_allowed_range(override: str) -> None:
    with pytest.raises(ScenarioError) as e:
        with_overrides(load_scenario(QUICKSTART), [override])
    message = str(e.value)
    assert "bandwidth" in message and "1Kbit/s" in message, message


def test_a_one_millisecond_replica_lag_time_runs_the_isr_check_once(tmp_path: Path) -> None:
    # ReplicaManager schedules isr-expiration every replica.lag.time.max.ms / 2 = 0 ms here; KafkaScheduler
    # runs a task whose period is not > 0 once, instead of rescheduling it at the same instant forever (the
    # run never finished). A subprocess, so that a hang fails the test instead of stalling the suite.
    out = tmp_path / "out"
    sets = ["duration=1s", "warmup=0s", "broker.replica.lag.time.max.ms=1", "broker.replica.fetch.wait.max.ms=0"]
    args = [sys.executable, "-m", "kafkasim", "run", str(QUICKSTART), "--no-figures", "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


ZERO_COSTS = (
    "broker.costs={request: 0ms, append_per_kib: 0ms, read_per_kib: 0ms, network_read: 0ms, "
    "network_read_per_kib: 0ms, network_send: 0ms, network_send_per_kib: 0ms}"
)


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        (["consumers[0].fetch.max.wait.ms=0"], "consumers[0].fetch.max.wait.ms"),
        (["consumers[0].fetch.min.bytes=0"], "consumers[0].fetch.min.bytes"),
        (["broker.replica.fetch.wait.max.ms=0"], "broker.replica.fetch.wait.max.ms"),
    ],
)
def test_a_fetch_that_returns_at_once_with_a_zero_time_round_trip_is_refused(overrides: list[str], path: str) -> None:
    # Without latency or costs a fetch that answers at once is sent again at the same simulated instant:
    # the run never ended (a consumer fetched millions of times without time passing).
    with pytest.raises(ScenarioError) as e:
        with_overrides(load_scenario(QUICKSTART), ["network.default_link.latency=0ms", ZERO_COSTS, *overrides])
    message = str(e.value)
    assert f"{path}: " in message and "round trip" in message and "10us" in message, message


def test_a_zero_latency_network_is_fine_when_fetches_wait_or_requests_cost_time() -> None:
    base = load_scenario(QUICKSTART)
    with_overrides(base, ["network.default_link.latency=0ms", ZERO_COSTS])  # fetches park in purgatory
    with_overrides(base, ["network.default_link.latency=0ms", "consumers[0].fetch.max.wait.ms=0"])  # 70us costs
