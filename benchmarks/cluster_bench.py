"""Cluster speed and memory: a 6-broker, 600-partition, RF 3 cluster with one producer at high load.

Scenario: benchmarks/scenarios/cluster_600.yaml (Kafka's placer spreads 100 leaders and 200 follower
replicas over each broker; 20,000 records/s of 1 KiB, acks=all, one consumer). What the issue asks of it:
simulated seconds per wall second (target >= 1) and peak memory. Each run is a fresh subprocess, so its
peak RSS is its own; CPU seconds are the process's, next to bare SimPy events per CPU second measured in
the same process (benchmarks/simpy_baseline.py), the yardstick that carries over between machines.

    uv run python benchmarks/cluster_bench.py                 # the README table (~1 minute)
    uv run python benchmarks/cluster_bench.py --duration 2s   # shorter
    uv run python benchmarks/cluster_bench.py --profile 1s    # cProfile of the hot path, top 40
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "benchmarks" / "scenarios" / "cluster_600.yaml"


def _scenario(duration: str, invariants: bool) -> Any:
    from kafkasim.scenario import load_scenario, with_overrides

    return with_overrides(load_scenario(SCENARIO), [f"duration={duration}",
                                                   f"invariants={'true' if invariants else 'false'}"])


def measure(duration: str, invariants: bool) -> dict[str, Any]:
    """One run in this process: speeds and this process's peak RSS."""
    from kafkasim.run.engine import Engine

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from simpy_baseline import simpy_events_per_second

    scenario = _scenario(duration, invariants)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    engine = Engine(scenario)
    build_cpu = time.process_time() - cpu0
    result = engine.run()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    b0 = time.process_time()
    simpy_events_per_second(400_000)
    baseline_cpu = time.process_time() - b0
    requests = result.requests
    simulated_s = float(scenario.duration) / 1000.0
    return {
        "simulated_s": simulated_s,
        "invariants": invariants,
        "brokers": len(engine.components.brokers),
        "partitions": sum(len(t) for t in engine.layout.partitions_by_topic.values()),
        "fetcher_threads": sum(len(b.fetchers) for b in engine.components.brokers),
        "requests": len(requests),
        "requests_by_api": {str(k): int(v) for k, v in requests["api"].value_counts().sort_index().items()},
        "build_cpu_s": build_cpu,
        "cpu_s": cpu,
        "wall_s": wall,
        "sim_s_per_cpu_s": simulated_s / cpu,
        "sim_s_per_wall_s": simulated_s / wall,
        "simpy_events_per_cpu_s": 400_000 / baseline_cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def _in_subprocess(duration: str, invariants: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", duration, "--invariants", "on" if invariants else "off"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(duration: str) -> None:
    runs = [("invariants off", _in_subprocess(duration, False)), ("invariants on", _in_subprocess(duration, True))]
    print("| run | brokers | partitions | fetcher threads | simulated | requests | CPU s | wall s "
          "| simulated s / CPU s | simulated s / wall s | bare SimPy events / CPU s "
          "| CPU per simulated s, in bare SimPy events | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, m in runs:
        yardstick = m["cpu_s"] / m["simulated_s"] * m["simpy_events_per_cpu_s"]
        print(f"| {label} | {m['brokers']} | {m['partitions']} | {m['fetcher_threads']} | {m['simulated_s']:.0f} s "
              f"| {m['requests']:,} | {m['cpu_s']:.1f} | {m['wall_s']:.1f} | {m['sim_s_per_cpu_s']:.2f} "
              f"| {m['sim_s_per_wall_s']:.2f} | {m['simpy_events_per_cpu_s']:,.0f} | {yardstick:,.0f} "
              f"| {m['peak_rss_mb']:.0f} |")
    off = runs[0][1]
    print()
    print(f"Requests by API (invariants off): {off['requests_by_api']}; building the cluster took "
          f"{off['build_cpu_s']:.2f} CPU s of the {off['cpu_s']:.1f}.")


def profile(duration: str) -> None:
    from kafkasim.run.engine import Engine

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from engine_bench import print_cpu_profile

    print_cpu_profile(Engine(_scenario(duration, False)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", default="5s", help="simulated time per run (default 5s)")
    parser.add_argument("--profile", metavar="DURATION", help="cProfile one run instead of the table")
    parser.add_argument("--child", metavar="DURATION", help=argparse.SUPPRESS)
    parser.add_argument("--invariants", choices=["on", "off"], default="off", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.invariants == "on")))
    elif args.profile:
        profile(args.profile)
    else:
        table(args.duration)


if __name__ == "__main__":
    main()
