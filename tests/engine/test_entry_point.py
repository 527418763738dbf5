"""kafkasim.run_scenario: a scenario in, a RunResult out (tables, gauges, summary), progress and clock."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import kafkasim
from kafkasim.scenario import Scenario
from kafkasim.sim.clock import SimClock

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"


def _quickstart(duration: str = "2s") -> Scenario:
    return kafkasim.with_overrides(kafkasim.load_scenario(QUICKSTART), [f"duration={duration}", "warmup=500ms"])


def test_quickstart_runs_end_to_end_and_saves(tmp_path: Path) -> None:
    result = kafkasim.run_scenario(_quickstart())
    assert isinstance(result, kafkasim.RunResult)
    apis = result.summary["apis"]
    assert set(apis) == {"Produce", "FetchConsumer", "FetchFollower"}
    assert apis["Produce"]["errors"] == 0
    # acks=all: the produce waits in purgatory for the followers, so RemoteTimeMs dominates its time.
    produce = apis["Produce"]
    assert produce["RemoteTimeMs"]["p50"] > produce["LocalTimeMs"]["p50"]
    # Every acknowledged batch reached the consumer in this quiet run, except the last few in flight.
    records = result.records
    acked = records[np.isfinite(records["ack_ms"].to_numpy(dtype=float))]
    consumed = np.isfinite(acked["consumed_ms:consumer-1"].to_numpy(dtype=float))
    assert consumed.mean() > 0.95
    loaded = kafkasim.RunResult.load(result.save(tmp_path / "run"))
    assert len(loaded.requests) == len(result.requests)
    assert "seed: 42" in (loaded.scenario_yaml or "")


def test_gauges_an_operator_watches_are_sampled() -> None:
    result = kafkasim.run_scenario(_quickstart("1s"))
    ts = result.timeseries
    pairs = set(zip(ts["metric"], ts["entity"], strict=True))
    for expected in [
        ("HighWatermark", "orders-0"),
        ("IsrSize", "orders-0"),
        ("LogEndOffset", "orders-0/replica-0"),
        ("LogEndOffset", "orders-0/replica-1"),
        ("LogEndOffset", "orders-0/replica-2"),
        ("ReplicaLogEndOffsetAtLeader", "orders-0/replica-2"),
        ("LeaderId", "orders-0"),
        ("PurgatorySize", "broker-0/Produce"),
        ("NumDelayedOperations", "broker-0/Fetch"),
        ("RequestQueueSize", "broker-0"),
        ("ResponseQueueSize", "broker-0/processor-2"),
        ("RequestHandlerAvgIdlePercent", "broker-0"),
        ("NetworkProcessorAvgIdlePercent", "broker-0"),
        ("LeaderCount", "broker-0"),
        ("UnderReplicatedPartitions", "broker-0"),
        ("UnderMinIsrPartitionCount", "broker-0"),
        ("InFlightRequests", "producer-1"),
    ]:
        assert expected in pairs, expected
    hw = ts[(ts["metric"] == "HighWatermark")]["value"].to_numpy()
    assert (np.diff(hw) >= 0).all() and hw[-1] > 500


def test_requests_in_flight_at_the_end_are_recorded_unfinished() -> None:
    result = kafkasim.run_scenario(_quickstart("1s"))
    requests = result.requests
    unfinished = requests[np.isnan(requests["client_receive_ms"].to_numpy(dtype=float))]
    # The followers' and the consumer's long polls parked at the end, at least.
    assert len(unfinished) >= 3
    assert not unfinished["client_timeout"].any()


def test_progress_is_reported_up_to_the_end() -> None:
    calls: list[tuple[float, float]] = []
    kafkasim.run_scenario(_quickstart("1s"), progress=lambda now, total: calls.append((now, total)))
    assert calls and calls[-1] == (1000.0, 1000.0)
    assert [now for now, _ in calls] == sorted(now for now, _ in calls)


def test_the_caller_may_pass_the_clock_and_a_seed() -> None:
    clock = SimClock()
    result = kafkasim.run_scenario(_quickstart("600ms"), seed=7, clock=clock)
    assert clock.now_ms == 600.0
    assert result.summary["seed"] == 7
    assert "seed: 7" in (result.scenario_yaml or "")
