"""Whole runs give the same tables whether the brokers read an incremental fetch session's changed
partitions only (``SessionReader.fetch_session_messages``, the default) or every partition of the session
as Kafka does (``LAZY_FETCH_SESSIONS = False``): requests (every timestamp, error and size), records and
every gauge, PurgatorySize included. The scenarios: the shipped cluster scenarios shortened, and random
scenarios with faults from the generator (benchmarks/random_scenarios.py; about a third are clusters).
tests/broker/test_session_reads.py checks the same property step by step on one broker.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kafkasim.broker.session_reads.session_reader as session_reader
from kafkasim import load_scenario
from kafkasim.run import run_scenario

from .test_determinism import table_hash

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import random_scenarios  # noqa: E402

SCENARIOS = ["cluster_slow_broker", "more_partitions_same_bytes", "nic_bound_cluster"]
# Cluster scenarios of the generator (fetch sessions over many partitions, broker faults), and a few others.
CLUSTER_SEEDS = [1, 4, 6, 10, 14, 22, 25, 26, 32, 36, 37, 39]
SEEDS = [*CLUSTER_SEEDS, 2, 3, 5]


def _hashes(scenario, lazy: bool, monkeypatch) -> dict[str, str]:
    monkeypatch.setattr(session_reader, "LAZY_FETCH_SESSIONS", lazy)
    result = run_scenario(scenario)
    return {name: table_hash(getattr(result, name)) for name in ("requests", "records", "timeseries")}


@pytest.mark.parametrize("name", SCENARIOS)
def test_shipped_cluster_scenario_same_tables(name: str, monkeypatch) -> None:
    scenario = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
    scenario = scenario.model_copy(update={"duration": min(scenario.duration, 4_000.0)})
    assert _hashes(scenario, True, monkeypatch) == _hashes(scenario, False, monkeypatch)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_scenario_same_tables(seed: int, monkeypatch) -> None:
    scenario = random_scenarios.load(seed)
    assert _hashes(scenario, True, monkeypatch) == _hashes(scenario, False, monkeypatch)


def test_the_cluster_seeds_are_clusters() -> None:
    assert all("cluster" in random_scenarios.scenario_data(seed) for seed in CLUSTER_SEEDS)
