"""Random valid scenarios with faults (benchmarks/random_scenarios.py) run to the end with invariants on.

A fixed set of generator seeds, read through ``kafkasim.load_scenario`` from the YAML text the generator
writes, plus the scenarios the big run (``uv run python benchmarks/random_scenarios.py --count 500``)
found broken, pinned as files under ``random_found/`` so they stay fixed whatever the generator becomes.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kafkasim import load_scenario
from kafkasim.run import run_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import random_scenarios  # noqa: E402

SEEDS = range(1, 61)
FOUND = sorted((Path(__file__).parent / "random_found").glob("*.yaml"))
WALL_LIMIT_S = 60.0  # a hung run fails instead of blocking the suite


def _ends(scenario: Any) -> tuple[float, bool]:
    summary = run_scenario(scenario).summary
    return float(summary["simulated_duration_ms"]), "interrupted_at_ms" in summary


def _run_clean(scenario: Any) -> None:
    """Run in a child process killed after WALL_LIMIT_S: a hang inside compiled code never returns to the
    interpreter, so an alarm signal in this process would never be handled (random_scenarios.in_child)."""
    assert scenario.invariants
    simulated_ms, interrupted = random_scenarios.in_child(_ends, (scenario,), WALL_LIMIT_S)
    assert simulated_ms == scenario.duration
    assert not interrupted


@pytest.mark.parametrize("seed", SEEDS)
def test_random_scenario_runs_clean(seed: int) -> None:
    _run_clean(random_scenarios.load(seed))


@pytest.mark.parametrize("path", FOUND, ids=[p.stem for p in FOUND])
def test_scenario_found_by_the_generator_runs_clean(path: Path) -> None:
    _run_clean(load_scenario(path))


def test_the_fixed_set_covers_what_it_claims() -> None:
    # The seeds above must keep exercising every fault type, crash with and without restart, every acks
    # setting, replication factors 1-5, several producers and consumers, tiny segments and retention.
    seen: Counter[str] = Counter()
    for seed in SEEDS:
        data = random_scenarios.scenario_data(seed)
        for fault in data["faults"]:
            seen[fault["type"]] += 1
            if fault["type"] == "crash":
                seen["crash+restart" if "restart_after" in fault else "crash-forever"] += 1
        starts = sorted((float(f["at"].removesuffix("ms")), f["target"]) for f in data["faults"]
                        if "target" in f)
        seen["faults-on-one-target"] += len(starts) - len({t for _, t in starts})
        for p in data["producers"]:
            seen[f"acks={p['acks']}"] += 1
        seen["producers>1"] += len(data["producers"]) > 1
        seen["consumers>1"] += len(data["consumers"]) > 1
        for t in data["topics"]:
            seen[f"rf={t['replication.factor']}"] += 1
            seen["partitions>1"] += t["partitions"] > 1
            seen["tiny-segments"] += t.get("segment.bytes", 1 << 30) <= 1000
            seen["retention"] += "retention.bytes" in t or "retention.ms" in t
        seen["long-run"] += float(data["duration"].removesuffix("ms")) > 30_000
        cluster = data.get("cluster")
        if cluster is not None:
            seen["cluster"] += 1
            seen["cluster-racks"] += "racks" in cluster
            seen["cluster-overrides"] += "overrides" in cluster
            seen["replica_assignment"] += any("replica_assignment" in t for t in data["topics"])
            seen["num.replica.fetchers>1"] += data["broker"].get("num.replica.fetchers", 1) > 1
            seen["cluster-client-faults"] += any(not f.get("target", "broker-").startswith("broker-")
                                                 for f in data["faults"])
            for f in data["faults"]:
                if f.get("target", "").startswith("broker-"):
                    seen[f"broker-{f['type']}"] += 1
            # Crashes of any broker, leaders included, in runs long enough for the controller to fence it.
            seen["cluster-crash-in-30s-run"] += data["duration"] == "30000ms" and any(
                f["type"] == "crash" and f.get("target", "").startswith("broker-") for f in data["faults"])
            seen["cluster-nic"] += "nic" in cluster
        # The hardware under Kafka's rules, idempotence, unclean elections (the generator's "hardware" stream).
        broker = data["broker"]
        clients = [*data["producers"], *data["consumers"]]
        seen["broker-stalls"] += "stalls" in broker
        seen["broker-stalls-every-requests"] += "every_requests" in broker.get("stalls", {})
        seen["broker-stalls-every-fetches"] += "every_fetches" in broker.get("stalls", {})
        seen["broker-stalls-fetch-pause"] += "fetch_pause" in broker.get("stalls", {})
        seen["machine_stalls"] += "machine_stalls" in data
        seen["cores"] += "cores" in broker
        seen["disk-and-flushes"] += "disk" in broker and any("flush.messages" in t or "flush.ms" in t
                                                             for t in data["topics"])
        seen["tcp"] += "tcp" in data["network"]
        seen["client-costs"] += any("costs" in c for c in clients)
        seen["client-stalls"] += any("stalls" in c for c in clients)
        seen["idempotence"] += any(p.get("enable.idempotence") for p in data["producers"])
        seen["unclean-election"] += any(t.get("unclean.leader.election.enable") for t in data["topics"])
        seen["hardware-preset"] += "hardware" in data
        # One machine under the brokers (the generator's "machine" stream).
        seen["machine-waker-yields"] += bool(data.get("machine_wakeup_preempts"))
        seen["machine-waker-yields-from"] += bool(data.get("machine_wakeup_preempts")) and bool(
            data.get("machine_wakeup_preempts_from"))
        seen["machine-preemption-per-thread"] += data.get("machine_preemption", {}).get("per_running_thread", 0) > 0
        seen["machine-wakeup-scale"] += data.get("machine_wakeup_scale_per_thread", 0) > 0
        seen["machine-fetcher-weight"] += data.get("machine_fetcher_weight", 1) != 1
        seen["network-complete"] += "network_complete" in broker.get("costs", {})
        seen["handler-wakeup"] += "handler_wakeup" in broker.get("costs", {})
        seen["connection-layout-random"] += broker.get("connection_layout") == "random"
        seen["connection-layout-groups"] += broker.get("connection_layout") == "groups"
        seen["clients-stalls"] += "clients_stalls" in data
        seen["machine-wakeup-waits"] += data.get("machine_wakeup_waits", 0) > 0
    wanted = [
        "pause", "slow_disk", "crash", "link_delay", "link_drop", "crash+restart", "crash-forever",
        "faults-on-one-target", "acks=all", "acks=1", "acks=0", "producers>1", "consumers>1",
        "rf=1", "rf=2", "rf=3", "rf=4", "rf=5", "partitions>1", "tiny-segments", "retention", "long-run",
        "cluster", "cluster-racks", "cluster-overrides", "replica_assignment", "num.replica.fetchers>1",
        "cluster-client-faults", "broker-pause", "broker-slow_disk", "broker-crash", "broker-link_delay",
        "broker-link_drop", "cluster-crash-in-30s-run", "connection_reset", "half_open", "shutdown",
        "network_partition", "cluster-nic", "broker-stalls", "machine_stalls", "cores", "disk-and-flushes", "tcp",
        "client-costs", "client-stalls", "idempotence", "unclean-election", "hardware-preset",
        "machine-waker-yields", "machine-waker-yields-from", "machine-preemption-per-thread", "machine-wakeup-scale",
        "network-complete",
        "machine-fetcher-weight", "handler-wakeup", "broker-stalls-every-requests",
        "broker-stalls-every-fetches", "broker-stalls-fetch-pause", "connection-layout-random",
        "machine-wakeup-waits", "connection-layout-groups", "clients-stalls",
    ]
    assert [w for w in wanted if not seen[w]] == []


def test_the_generator_is_deterministic_and_valid() -> None:
    assert random_scenarios.scenario_text(7) == random_scenarios.scenario_text(7)
    assert random_scenarios.scenario_text(7) != random_scenarios.scenario_text(8)
    scenario = random_scenarios.load(7, "500ms")
    assert scenario.duration == 500.0 and scenario.name == "random-7"
