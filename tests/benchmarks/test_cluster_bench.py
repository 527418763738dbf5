"""The cluster benchmark runs (not a timing test): its scenarios (benchmarks/scenarios/) validate and run with
Kafka's invariants checked, and `--scale` builds the size it is asked for and measures every phase. A schema
change that broke one would otherwise surface only the next time someone measures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafkasim.run import Engine
from kafkasim.scenario import load_scenario, with_overrides

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import cluster_bench as bench  # noqa: E402

BENCHMARK_SCENARIOS = sorted((ROOT / "benchmarks" / "scenarios").glob("*.yaml"))


def test_the_benchmarks_have_their_scenarios() -> None:
    assert {p.stem for p in BENCHMARK_SCENARIOS} >= {"cluster_600", "cluster_3000"}


@pytest.mark.parametrize("path", BENCHMARK_SCENARIOS, ids=lambda p: p.stem)
def test_a_benchmark_scenario_runs_with_its_invariants_checked(path: Path) -> None:
    result = Engine(with_overrides(load_scenario(path), ["duration=100ms"]), check_invariants=True).run()
    assert set(result.requests["api"]) >= {"Produce", "FetchFollower"}


def test_a_scaled_run_is_the_size_asked_for_and_measures_each_phase() -> None:
    m = bench.measure("cluster_600", "100ms", False, brokers=24)
    assert (m["brokers"], m["partitions"]) == (24, 2400)
    assert m["build_cpu_s"] > 0 and m["loop_cpu_s"] > 0 and m["tables_cpu_s"] > 0
    assert 0 <= m["gc_cpu_s"] < m["cpu_s"]
    assert 0 < m["loop_end_rss_mb"] <= m["peak_rss_mb"]


def test_the_peak_rss_is_never_below_a_resident_set_the_benchmark_read() -> None:
    # Regression: the kernel's high-water mark (ru_maxrss) lags the resident set statm reports, and a run's loop
    # end once read 569.84 MB against a "peak" of 569.67 MB.
    from engine_bench import current_rss_mb, peak_rss_mb

    assert peak_rss_mb() >= current_rss_mb()
    assert peak_rss_mb(1e9) == 1e9
