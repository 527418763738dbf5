"""Simulator speed and memory: how many simulated requests (and simulated ms) one core runs per second.

Scenario: RF 3, acks=all, one producer at 5000 records/s (1 KiB, linger 5 ms, Poisson), one consumer --
scenarios/quickstart.yaml with the rate raised. Every configuration runs in a fresh subprocess, so peak
RSS is that run's own. Speeds are per CPU second of the process (the machine may be shared; wall time is
printed too), next to bare SimPy's events per second measured the same way in the same run
(benchmarks/simpy_baseline.py): the ratio of the two is the figure that carries over between machines.

    uv run python benchmarks/engine_bench.py                # the README table (~2 minutes)
    uv run python benchmarks/engine_bench.py --quick        # a smoke run
    uv run python benchmarks/engine_bench.py --profile 5s   # cProfile of the hot path, top 40
    uv run python benchmarks/engine_bench.py --split 20s    # CPU in the broker vs the engine
    uv run python benchmarks/engine_bench.py --memory 150s,375s,750s  # RSS vs run length (200 k..1 M requests)
    uv run python benchmarks/engine_bench.py --memory 150s,375s,750s --retention 64MiB  # the same, logs bounded

Memory: peak RSS of runs of two lengths; the difference divided by the difference in requests is the
memory a recorded request costs (what grows with run length: the result tables themselves).
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
BENCH_OVERRIDES = ["producers[0].rate=5000/s", "warmup=0s"]
MAX_ROWS = 50_000  # kafkasim.run.engine.MAX_ROWS_IN_MEMORY


def _retention_overrides(retention: str | None) -> list[str]:
    """``retention.bytes`` = ``retention`` with segments a quarter of it, checked every 10 s (Kafka's default
    5 min would make a sawtooth of 5 simulated minutes of log, as large as the runs' differences)."""
    if retention is None:
        return []
    from kafkasim.scenario.units import parse_size

    size = parse_size(retention) if not retention.isdigit() else int(retention)
    return [
        f"topics[0].retention.bytes={size}",
        f"topics[0].segment.bytes={max(size // 4, 14)}",
        "broker.log.retention.check.interval.ms=10000",
    ]


def _scenario(duration: str, invariants: bool, retention: str | None = None) -> Any:
    from kafkasim.scenario import load_scenario, with_overrides

    overrides = [*BENCH_OVERRIDES, f"duration={duration}", f"invariants={'true' if invariants else 'false'}"]
    return with_overrides(load_scenario(SCENARIO), [*overrides, *_retention_overrides(retention)])


def _held_batches(engine: Any) -> int:
    c = engine.components
    logs = [p.log for p in c.replica_manager.partitions.values()]
    logs += [fp.log for f in c.followers for fp in f.partitions.values()]
    return sum(len(segment.batches) for log in logs for segment in log.segments)


def current_rss_mb() -> float:
    """This process's resident set now, in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mb(*seen_mb: float) -> float:
    """This process's peak resident set, in MB: the kernel's high-water mark (ru_maxrss), or the largest resident
    set read from /proc/self/statm (``seen_mb``) if that is larger. Linux folds each thread's cached RSS counters
    into the high-water mark only now and then (mm's sync_mm_rss), so statm can read a few hundred KB above it:
    a loop's end RSS of 569.84 MB against a "peak" of 569.67 MB."""
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, current_rss_mb(), *seen_mb)


def _events_scheduled(env: Any) -> int:
    # SimPy numbers every scheduled event with next(env._eid); the next number is the count so far.
    return int(next(env._eid))


def measure(duration: str, invariants: bool, retention: str | None = None) -> dict[str, Any]:
    """One run in this process: speeds and this process's peak RSS."""
    from kafkasim.run.engine import Engine

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from simpy_baseline import simpy_events_per_second

    scenario = _scenario(duration, invariants, retention)
    engine = Engine(scenario)
    rss_loop_end: list[float] = []
    build_result = engine._result

    def result_after_snapshot(duration_ms: float, wall_seconds: float) -> Any:
        rss_loop_end.append(current_rss_mb())  # the simulation state and recorded rows, before the tables
        return build_result(duration_ms, wall_seconds)

    engine._result = result_after_snapshot  # type: ignore[method-assign]
    rss_start = current_rss_mb()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = engine.run()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    events = _events_scheduled(engine.env)
    requests = result.request_count  # not len(result.requests): that would read the table into memory
    cpu_sim = result.run_info["wall_seconds"]  # the simulation loop alone, wall clock
    b0 = time.process_time()
    baseline = simpy_events_per_second(400_000)
    baseline_cpu = time.process_time() - b0
    baseline_events = 4 * (400_000 // 4)
    return {
        "duration_ms": float(scenario.duration),
        "invariants": invariants,
        "requests": requests,
        "batches": len(result.records),
        "events": events,
        "cpu_s": cpu,
        "wall_s": wall,
        "loop_wall_s": cpu_sim,
        "requests_per_cpu_s": requests / cpu,
        "requests_per_wall_s": requests / wall,
        "sim_ms_per_cpu_s": float(scenario.duration) / cpu,
        "sim_ms_per_wall_s": float(scenario.duration) / wall,
        "events_per_cpu_s": events / cpu,
        "simpy_events_per_s": baseline,
        "simpy_events_per_cpu_s": baseline_events / baseline_cpu,
        "simpy_baseline_cpu_s": baseline_cpu,
        "peak_rss_mb": peak_rss_mb(rss_start, rss_loop_end[0]),
        "rss_start_mb": rss_start,
        "rss_loop_end_mb": rss_loop_end[0],
        "invariant_checks": result.summary["counters"].get("invariant_checks", 0),
        "log_batches_held": _held_batches(engine),  # leader and follower logs, at the end of the run
    }


def _in_subprocess(duration: str, invariants: bool, retention: str | None = None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", duration, "--invariants", "on" if invariants else "off"]
    if retention is not None:
        cmd += ["--retention", retention]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def _row(label: str, m: dict[str, Any]) -> str:
    # The ratio: simulated requests per CPU second over bare SimPy events per CPU second, both measured in
    # the same process -- how many bare SimPy events one simulated request costs is its inverse.
    ratio = m["requests_per_cpu_s"] / m["simpy_events_per_cpu_s"]
    return (
        f"| {label} | {m['duration_ms'] / 1000:.0f} s | {m['requests']:,} | {m['cpu_s']:.1f} | {m['wall_s']:.1f} | "
        f"{m['requests_per_cpu_s']:,.0f} | {m['requests_per_wall_s']:,.0f} | {m['sim_ms_per_cpu_s']:,.0f} | "
        f"{m['sim_ms_per_wall_s']:,.0f} | {m['events'] / m['requests']:.2f} | "
        f"{m['simpy_events_per_cpu_s']:,.0f} | {m['simpy_events_per_s']:,.0f} | {ratio:.4f} | {1 / ratio:.0f} | "
        f"{m['rss_loop_end_mb']:.0f} | {m['peak_rss_mb']:.0f} |"
    )


def table(short: str, long: str) -> None:
    from kafkasim.compiled import describe

    print(f"kafkasim build: {describe()}")
    on = _in_subprocess(short, True)
    off = _in_subprocess(short, False)
    long_off = _in_subprocess(long, False)
    print("| run | simulated | requests | CPU s | wall s | requests / CPU s | requests / wall s "
          "| simulated ms / CPU s | simulated ms / wall s | SimPy events / request "
          "| bare SimPy events / CPU s | bare SimPy events / wall s | ratio (requests / CPU s ÷ bare events / CPU s) "
          "| bare events per request | RSS at end of loop MB | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(_row("invariants on", on))
    print(_row("invariants off", off))
    print(_row("invariants off, long", long_off))
    cost = on["cpu_s"] / off["cpu_s"] - 1.0
    print()
    print(f"Invariant checks: {on['invariant_checks']:,} checks, +{100 * cost:.0f}% CPU.")
    extra_requests = long_off["requests"] - off["requests"]
    if extra_requests > 0:
        loop = (long_off["rss_loop_end_mb"] - off["rss_loop_end_mb"]) / extra_requests * 1e6
        peak = (long_off["peak_rss_mb"] - off["peak_rss_mb"]) / extra_requests * 1e6
        print(f"Memory per million recorded requests between these two runs: {loop:,.0f} MB of RSS at the end of "
              f"the simulation loop, {peak:,.0f} MB of peak RSS (building the result tables at the end). The short run "
              f"is below {MAX_ROWS:,} rows, the recorder's buffer before it spools to Parquet, so this slope includes "
              f"the start-up step; --memory measures the steady state.")


def memory(durations: list[str], retention: str | None = None) -> None:
    """RSS of runs of increasing length (invariants off): what a recorded request costs once the recorder's
    row buffer (MAX_ROWS) is full and spooling, i.e. in steady state."""
    runs = [_in_subprocess(duration, False, retention) for duration in durations]
    print("| simulated | requests | batches | batches held in the logs at the end | CPU s | RSS at end of loop MB "
          "| peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for m in runs:
        print(f"| {m['duration_ms'] / 1000:.0f} s | {m['requests']:,} | {m['batches']:,} | {m['log_batches_held']:,} | "
              f"{m['cpu_s']:.1f} | {m['rss_loop_end_mb']:.0f} | {m['peak_rss_mb']:.0f} |")
    for a, b in zip(runs, runs[1:], strict=False):
        extra = (b["requests"] - a["requests"]) / 1e6
        print(f"{a['requests']:,} -> {b['requests']:,} requests: "
              f"{(b['rss_loop_end_mb'] - a['rss_loop_end_mb']) / extra:,.0f} MB of loop-end RSS and "
              f"{(b['peak_rss_mb'] - a['peak_rss_mb']) / extra:,.0f} MB of peak RSS per million requests")


def profile(duration: str) -> None:
    from kafkasim.run.engine import Engine

    print_cpu_profile(Engine(_scenario(duration, False)))


def print_cpu_profile(engine: Any, top: int = 40) -> None:
    """Run ``engine`` under cProfile and print its ``top`` functions by own time. CPU time, not wall time:
    on a shared machine wall-clock profiles charge waiting to whatever ran."""
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    engine.run()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def split(duration: str) -> None:
    """CPU time inside the broker's state machines (ReplicaManager entry points, purgatory reapers) vs the
    rest of the loop (pipeline, clients, links, SimPy, recorder), and building the result."""
    from kafkasim.broker.replica_manager import ReplicaManager
    from kafkasim.purgatory import DelayedOperationPurgatory
    from kafkasim.run.engine import Engine

    spent: dict[str, float] = {}
    depth = [0]

    def timed(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            # Nested entry points (a fetch completing a produce) count once, in the outer one.
            if depth[0]:
                return original(*args, **kwargs)
            depth[0] += 1
            t0 = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - t0
                depth[0] -= 1

        setattr(owner, name, wrapper)

    for name in ("append_records", "fetch_messages", "try_complete_actions", "maybe_shrink_isr"):
        timed(ReplicaManager, name, "broker")
    timed(DelayedOperationPurgatory, "advance_clock", "broker")
    engine = Engine(_scenario(duration, False))
    timed(engine, "_result", "result tables and summary")
    t0 = time.process_time()
    result = engine.run()
    total = time.process_time() - t0
    loop = total - spent["result tables and summary"]
    print(f"{len(result.requests):,} requests, {total:.2f} CPU s in Engine.run")
    print(f"  broker state machines (ReplicaManager, purgatories): {spent['broker']:.2f} s "
          f"({100 * spent['broker'] / loop:.0f}% of the loop)")
    print(f"  engine, clients, links, SimPy, recorder:             {loop - spent['broker']:.2f} s "
          f"({100 * (loop - spent['broker']) / loop:.0f}% of the loop)")
    print(f"  result tables and summary:                           {spent['result tables and summary']:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    parser.add_argument("--profile", metavar="DURATION", help="cProfile one run of this simulated length")
    parser.add_argument("--split", metavar="DURATION", help="CPU split broker vs engine for one run")
    parser.add_argument("--memory", metavar="DURATIONS", help="comma-separated run lengths: RSS per million requests")
    parser.add_argument("--retention", metavar="BYTES", help="with --memory: topic retention.bytes (segments 1/4 of it)")
    parser.add_argument("--child", metavar="DURATION", help=argparse.SUPPRESS)
    parser.add_argument("--invariants", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.invariants == "on", args.retention)))
    elif args.profile:
        profile(args.profile)
    elif args.split:
        split(args.split)
    elif args.memory:
        memory(args.memory.split(","), args.retention)
    elif args.quick:
        table("2s", "4s")
    else:
        table("20s", "60s")


if __name__ == "__main__":
    main()
