"""What one simulated request costs as the partition count grows, at the same load.

Scenario: one topic of N partitions, RF 3 (min ISR 2), one acks=all producer at a fixed total rate
(Poisson, 1 KiB records, linger 5 ms, the default partitioner), one consumer reading the whole topic:
scenarios/quickstart.yaml with the partition count, the rate and the length overridden. Only N changes
between rows, so any growth of the cost per request is work that scales with partitions that exist rather
than with the partitions that changed.

Every row runs in a fresh subprocess (peak RSS is that run's own), next to bare SimPy's events per CPU
second measured in the same process (benchmarks/simpy_baseline.py); the cost per request is given in CPU
microseconds, as a ratio to the 1-partition row and in bare SimPy events (the figure that carries over
between machines).

    uv run python benchmarks/partitions_bench.py                       # 1, 10, 100, 1000 partitions
    uv run python benchmarks/partitions_bench.py --partitions 1,1000 --duration 2s
    uv run python benchmarks/partitions_bench.py --profile 1000        # cProfile at 1000 partitions, top 40
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
SCENARIO = ROOT / "scenarios" / "quickstart.yaml"
RATE = "2000/s"
DEFAULT_PARTITIONS = (1, 10, 100, 1000)
DEFAULT_DURATION = "5s"


def _scenario(partitions: int, duration: str) -> Any:
    from kafkasim.scenario import load_scenario, with_overrides

    return with_overrides(load_scenario(SCENARIO),
        [
            f"topics[0].partitions={partitions}",
            f"producers[0].rate={RATE}",
            "warmup=0s",
            f"duration={duration}",
            "invariants=false",
        ]
    )


def _events_scheduled(env: Any) -> int:
    return int(next(env._eid))  # SimPy numbers every scheduled event with next(env._eid)


def measure(partitions: int, duration: str) -> dict[str, Any]:
    """One run in this process: CPU per request, events, and this process's peak RSS."""
    from kafkasim.run.engine import Engine

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from simpy_baseline import simpy_events_per_second

    scenario = _scenario(partitions, duration)
    engine = Engine(scenario)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = engine.run()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    requests = result.requests
    counts = requests["api"].value_counts().to_dict()
    b0 = time.process_time()
    simpy_events_per_second(400_000)
    baseline_cpu = time.process_time() - b0
    return {
        "partitions": partitions,
        "duration_ms": float(scenario.duration),
        "requests": len(requests),
        "by_api": {str(k): int(v) for k, v in counts.items()},
        "mean_partitions_per_request": float(requests["partitions"].mean()) if len(requests) else 0.0,
        # A fetcher's first (full) fetch names every partition; its incremental ones only those that moved.
        "max_partitions_per_request": int(requests["partitions"].max()) if len(requests) else 0,
        "events": _events_scheduled(engine.env),
        "cpu_s": cpu,
        "wall_s": wall,
        "us_per_request": cpu / max(1, len(requests)) * 1e6,
        "sim_ms_per_wall_s": float(scenario.duration) / wall,
        "simpy_events_per_cpu_s": 400_000 / baseline_cpu,
        "peak_rss_mb": peak_rss_mb,
    }


def _in_subprocess(partitions: int, duration: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(partitions), "--duration", duration]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(partition_counts: list[int], duration: str) -> list[dict[str, Any]]:
    rows = [_in_subprocess(n, duration) for n in partition_counts]
    base = rows[0]["us_per_request"]
    print(f"Rate {RATE}, {duration} simulated per row, invariants off.")
    print()
    print("| partitions | requests | Produce / FetchFollower / FetchConsumer | mean partitions per request | CPU s "
          "| µs per request | vs first row | bare SimPy events / CPU s | bare events per request "
          "| simulated ms / wall s | peak RSS MB |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in rows:
        by_api = m["by_api"]
        apis = " / ".join(f"{by_api.get(a, 0):,}" for a in ("Produce", "FetchFollower", "FetchConsumer"))
        events_per_request = m["us_per_request"] * 1e-6 * m["simpy_events_per_cpu_s"]
        print(f"| {m['partitions']:,} | {m['requests']:,} | {apis} | {m['mean_partitions_per_request']:.1f} | "
              f"{m['cpu_s']:.1f} | {m['us_per_request']:,.0f} | {m['us_per_request'] / base:.2f}x | "
              f"{m['simpy_events_per_cpu_s']:,.0f} | {events_per_request:,.0f} | {m['sim_ms_per_wall_s']:,.0f} | "
              f"{m['peak_rss_mb']:,.0f} |")
    return rows


# Entry points whose cumulative time says which part of the model grows with the partition count (nested
# ones are listed under their callers; shares are of the whole profile).
ENTRY_POINTS = (
    ("broker: fetch (KafkaApis.handleFetch -> ReplicaManager.fetchMessages)", "server/kafka_apis.py", "handle_fetch"),
    ("  readFromLog, every partition of a full or sessionless fetch", "broker/replica_manager.py", "read_from_log"),
    ("  incremental session fetch: read the changed partitions", "broker/session_reads/session_reader.py",
     "fetch_session_messages"),
    ("    the follower's fetch state, per partition read", "broker/partition.py", "update_follower_fetch_state"),
    ("  tryCompleteElseWatch: park, watch every key", "purgatory/delayed_operation_purgatory.py",
     "try_complete_else_watch"),
    ("    watch key by key (small sessions and full fetches)", "purgatory/delayed_operation_purgatory.py", "_watch"),
    ("broker: purgatory checks (checkAndComplete)", "purgatory/delayed_operation_purgatory.py", "check_and_complete"),
    ("  DelayedFetch.onComplete (re-read)", "broker/delayed_fetch.py", "on_complete"),
    ("  SessionDelayedFetch.onComplete (re-read of the changed)", "broker/session_reads/session_delayed_fetch.py",
     "on_complete"),
    ("broker: produce (appendRecords)", "broker/replica_manager.py", "append_records"),
    ("follower: build a fetch request", "server/replica_fetcher_thread.py", "_maybe_fetch"),
    ("follower: process a fetch response", "server/replica_fetcher_thread.py", "_process"),
    ("consumer: build a fetch request", "clients/consumer.py", "_fetch"),
    ("consumer: process a fetch response", "clients/consumer.py", "_on_response"),
    ("producer: accumulator drain", "clients/accumulator.py", "drain"),
    ("gauges", "record/gauges.py", "sample"),
)


def profile(partitions: int, duration: str) -> None:
    import cProfile
    import pstats

    from kafkasim.run.engine import Engine

    engine = Engine(_scenario(partitions, duration))
    # CPU time, not wall time: on a shared machine wall-clock profiles charge waiting to whatever ran.
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    result = engine.run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    requests = len(result.requests)
    print(f"{requests:,} requests at {partitions} partitions, {total:.2f} s profiled "
          f"({total / max(1, requests) * 1e6:,.0f} µs per request under the profiler)")
    print()
    print("| part of the model | calls | cumulative s | share | µs per request |")
    print("|---|---:|---:|---:|---:|")
    for label, path, name in ENTRY_POINTS:
        found = [v for (file, _, function), v in raw.items() if function == name and file.endswith(path)]
        calls = sum(v[1] for v in found)
        cumulative = sum(v[3] for v in found)
        print(f"| {label} | {calls:,} | {cumulative:.2f} | {100 * cumulative / total:.1f}% | "
              f"{cumulative / max(1, requests) * 1e6:,.0f} |")
    print()
    stats.sort_stats("tottime").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default=",".join(map(str, DEFAULT_PARTITIONS)),
                        help="comma-separated partition counts (the first is the reference row)")
    parser.add_argument("--duration", default=DEFAULT_DURATION, help="simulated length of each run")
    parser.add_argument("--profile", metavar="PARTITIONS", type=int, help="cProfile one run with this many partitions")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--child", metavar="PARTITIONS", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.duration)))
    elif args.profile is not None:
        profile(args.profile, args.duration)
    else:
        rows = table([int(n) for n in args.partitions.split(",")], args.duration)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
