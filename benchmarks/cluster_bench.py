"""Cluster speed and memory: a large RF 3 cluster with one producer at high load.

Scenarios (benchmarks/scenarios/): cluster_600.yaml, the default (6 brokers, 600 partitions: Kafka's placer
spreads 100 leaders and 200 follower replicas over each broker; 20,000 records/s of 1 KiB, acks=all, one
consumer), and cluster_3000.yaml, production size (12 brokers, 3,000 partitions, 100,000 records/s of 1 KiB,
three consumers). What is measured: simulated seconds per CPU and per wall second, and peak memory. Each run
is a fresh subprocess, so its peak RSS is its own; CPU seconds are the process's, next to bare SimPy events
per CPU second measured in the same process (benchmarks/simpy_baseline.py), the yardstick that carries over
between machines.

    uv run python benchmarks/cluster_bench.py                 # the README table (~1 minute)
    uv run python benchmarks/cluster_bench.py --scenario cluster_3000
    uv run python benchmarks/cluster_bench.py --duration 2s   # shorter
    uv run python benchmarks/cluster_bench.py --scale 3,24 --duration 3s   # cost per request as it grows
    uv run python benchmarks/cluster_bench.py --profile 1s    # cProfile of the hot path, top 40
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "benchmarks" / "scenarios"


def _scenario(name: str, duration: str, invariants: bool, brokers: int | None = None) -> Any:
    """The scenario; with ``brokers``, cluster_600's density at that size: 100 partitions and 3,333 records/s
    per broker."""
    from kafkasim.scenario import load_scenario, with_overrides

    scaled = ([f"cluster.brokers={brokers}", f"topics[0].partitions={100 * brokers}",
               f"producers[0].rate={20_000 * brokers // 6}/s"] if brokers is not None else [])
    return with_overrides(load_scenario(SCENARIOS / f"{name}.yaml"),
                          [f"duration={duration}", f"invariants={'true' if invariants else 'false'}", *scaled])


def measure(name: str, duration: str, invariants: bool, brokers: int | None = None) -> dict[str, Any]:
    """One run in this process: CPU by phase (building, the loop, the tables and summary), the cyclic
    collector's share, RSS at the loop's end and this process's peak RSS."""
    import gc

    from kafkasim.run.engine import Engine

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from engine_bench import current_rss_mb, peak_rss_mb
    from simpy_baseline import simpy_events_per_second

    gc_cpu = [0.0]
    gc_started = [0.0]

    def on_gc(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.process_time()
        else:
            gc_cpu[0] += time.process_time() - gc_started[0]

    # The yardstick first: measured after the run, its events would pay for collections walking the run's heap.
    b0 = time.process_time()
    simpy_events_per_second(400_000)
    baseline_cpu = time.process_time() - b0
    scenario = _scenario(name, duration, invariants, brokers)
    gc.callbacks.append(on_gc)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    engine = Engine(scenario)
    build_cpu = time.process_time() - cpu0
    loop_end: dict[str, float] = {}
    tabulate = engine._result

    def result_at_loop_end(*args: Any, **kwargs: Any) -> Any:
        # The loop is over when the engine builds its result: CPU and RSS at that instant.
        loop_end.setdefault("cpu", time.process_time())
        loop_end.setdefault("rss_mb", current_rss_mb())
        return tabulate(*args, **kwargs)

    engine._result = result_at_loop_end  # type: ignore[method-assign]
    result = engine.run()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    gc.callbacks.remove(on_gc)
    requests = result.requests
    simulated_s = float(scenario.duration) / 1000.0
    loop_cpu = loop_end["cpu"] - cpu0 - build_cpu
    return {
        "scenario": name,
        "simulated_s": simulated_s,
        "invariants": invariants,
        "brokers": len(engine.components.brokers),
        "partitions": sum(len(t) for t in engine.layout.partitions_by_topic.values()),
        "fetcher_threads": sum(len(b.fetchers) for b in engine.components.brokers),
        "requests": len(requests),
        "batches": len(result.records),
        "requests_by_api": {str(k): int(v) for k, v in requests["api"].value_counts().sort_index().items()},
        "build_cpu_s": build_cpu,
        "loop_cpu_s": loop_cpu,
        "tables_cpu_s": cpu - build_cpu - loop_cpu,
        "gc_cpu_s": gc_cpu[0],
        "cpu_s": cpu,
        "wall_s": wall,
        "sim_s_per_cpu_s": simulated_s / cpu,
        "sim_s_per_wall_s": simulated_s / wall,
        "simpy_events_per_cpu_s": 400_000 / baseline_cpu,
        "loop_end_rss_mb": loop_end["rss_mb"],
        "peak_rss_mb": peak_rss_mb(loop_end["rss_mb"]),
    }


def _in_subprocess(name: str, duration: str, invariants: bool, brokers: int | None = None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--scenario", name, "--child", duration,
           "--invariants", "on" if invariants else "off", *(["--brokers", str(brokers)] if brokers else [])]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(name: str, duration: str) -> None:
    runs = [("invariants off", _in_subprocess(name, duration, False)),
            ("invariants on", _in_subprocess(name, duration, True))]
    print(f"`{name}.yaml`")
    print()
    print("| run | brokers | partitions | simulated | requests | batches | CPU s | of which build / loop / tables "
          "| cyclic GC | simulated s / CPU s | simulated s / wall s | bare SimPy events / CPU s "
          "| CPU per simulated s, in bare SimPy events | RSS at the loop's end MB | peak RSS MB |")
    print("|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, m in runs:
        yardstick = m["cpu_s"] / m["simulated_s"] * m["simpy_events_per_cpu_s"]
        print(f"| {label} | {m['brokers']} | {m['partitions']} | {m['simulated_s']:.0f} s | {m['requests']:,} "
              f"| {m['batches']:,} | {m['cpu_s']:.1f} | {m['build_cpu_s']:.1f} / {m['loop_cpu_s']:.1f} / "
              f"{m['tables_cpu_s']:.1f} | {m['gc_cpu_s'] / m['cpu_s']:.0%} | {m['sim_s_per_cpu_s']:.2f} "
              f"| {m['sim_s_per_wall_s']:.2f} | {m['simpy_events_per_cpu_s']:,.0f} | {yardstick:,.0f} "
              f"| {m['loop_end_rss_mb']:.0f} | {m['peak_rss_mb']:.0f} |")
    off = runs[0][1]
    print()
    print(f"Requests by API (invariants off): {off['requests_by_api']}; {off['fetcher_threads']} fetcher threads.")


def scale(sizes: list[int], duration: str) -> None:
    """CPU per request of the loop as the cluster grows at cluster_600's density (invariants off)."""
    runs = [_in_subprocess("cluster_600", duration, False, n) for n in sizes]
    print("| brokers | partitions | records / s | requests | loop CPU s | cyclic GC | µs of loop CPU per request "
          "| vs the first row | bare SimPy events / CPU s | loop CPU per request, in bare SimPy events |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    first = runs[0]["loop_cpu_s"] / runs[0]["requests"]
    for n, m in zip(sizes, runs, strict=True):
        per = m["loop_cpu_s"] / m["requests"]
        print(f"| {n} | {m['partitions']:,} | {20_000 * n // 6:,} | {m['requests']:,} | {m['loop_cpu_s']:.1f} "
              f"| {m['gc_cpu_s'] / m['cpu_s']:.0%} | {per * 1e6:.0f} | {per / first:.2f} "
              f"| {m['simpy_events_per_cpu_s']:,.0f} | {per * m['simpy_events_per_cpu_s']:.0f} |")


def profile(name: str, duration: str) -> None:
    from kafkasim.run.engine import Engine

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from engine_bench import print_cpu_profile

    print_cpu_profile(Engine(_scenario(name, duration, False)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="cluster_600", choices=["cluster_600", "cluster_3000"],
                        help="which of benchmarks/scenarios/ (default cluster_600)")
    parser.add_argument("--duration", default="5s", help="simulated time per run (default 5s)")
    parser.add_argument("--profile", metavar="DURATION", help="cProfile one run instead of the table")
    parser.add_argument("--scale", metavar="BROKERS", help="comma-separated broker counts: cluster_600's density "
                        "at each size, CPU per request (e.g. 3,24)")
    parser.add_argument("--child", metavar="DURATION", help=argparse.SUPPRESS)
    parser.add_argument("--brokers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--invariants", choices=["on", "off"], default="off", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.scenario, args.child, args.invariants == "on", args.brokers)))
    elif args.scale:
        scale([int(n) for n in args.scale.split(",")], args.duration)
    elif args.profile:
        profile(args.scenario, args.profile)
    else:
        table(args.scenario, args.duration)


if __name__ == "__main__":
    main()
