"""The benchmark scenarios (benchmarks/scenarios/) validate and run, with Kafka's invariants checked, and the
overrides `cluster_bench.py --scale` applies to cluster_600.yaml still name real keys: a schema change that
broke one would otherwise surface only the next time someone measures."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.run import Engine
from kafkasim.scenario import load_scenario, with_overrides

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK_SCENARIOS = sorted((ROOT / "benchmarks" / "scenarios").glob("*.yaml"))


def test_the_benchmarks_have_their_scenarios() -> None:
    assert {p.stem for p in BENCHMARK_SCENARIOS} >= {"cluster_600", "cluster_3000"}


@pytest.mark.parametrize("path", BENCHMARK_SCENARIOS, ids=lambda p: p.stem)
def test_a_benchmark_scenario_runs_with_its_invariants_checked(path: Path) -> None:
    result = Engine(with_overrides(load_scenario(path), ["duration=100ms"]), check_invariants=True).run()
    assert set(result.requests["api"]) >= {"Produce", "FetchFollower"}


def test_the_scaled_cluster_600_is_the_size_asked_for() -> None:
    brokers = 24
    scenario = with_overrides(load_scenario(ROOT / "benchmarks" / "scenarios" / "cluster_600.yaml"),
                              [f"cluster.brokers={brokers}", f"topics[0].partitions={100 * brokers}",
                               f"producers[0].rate={20_000 * brokers // 6}/s"])
    assert scenario.cluster is not None and scenario.cluster.brokers == brokers
    assert scenario.topics[0].partitions == 2400
