"""Sweeps on Spark: 32 runs on local[2] against the same 32 runs one after another in one process.

The workload is one scenario (scenarios/quickstart.yaml, RF 3, acks=all, 1000 records/s, shortened to
DURATION simulated seconds) with 32 seeds: a sweep of 1 variant x 32 seeds. Each configuration runs in
its own fresh Python process, so every Spark measurement pays its own JVM start:

- sequential: `run_scenario(scenario, seed=s)` for the 32 seeds in one loop (no Spark, nothing written),
              after an untimed warm-up run (imports; see _warm_up).
- pool of N:  the same runs on a `multiprocessing` pool of N processes forked after the same warm-up (no
              Spark, nothing written): what N cores deliver at that moment, the ceiling for any parallel
              speed-up on a shared machine.
- local[N]:   build the SparkSession, run one trivial job (`parallelize([0]).count()`, which also starts
              the first Python worker: that pair is Spark's start-up overhead), then `run_sweep` on that
              session (Parquet, aggregation, figures), then the same sweep once more on the now-warm
              session. "cold" = start-up + first sweep, what `kafkasim sweep` costs; "warm" = the second.

Inside Spark each run is timed by the runner itself (CPU and wall seconds in the executor's Python
worker), so the table can split a sweep into the simulator's work and everything around it; the Spark
JVM's own CPU seconds (/proc, Linux) and the driver's are measured around each sweep.

    uv run --extra spark python benchmarks/spark_bench.py             # README table (~5 minutes)
    uv run --extra spark python benchmarks/spark_bench.py --quick     # 8 runs of 1 s, one repeat
    uv run --extra spark python benchmarks/spark_bench.py --markdown out.md

The machine may be shared: the script prints the 1-minute load average before and after each
measurement, and repeats every configuration (interleaved, median reported).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "quickstart.yaml"
RUNS = 32
DURATION = "3s"
WARMUP = "0.5s"


def _write_sweep(directory: Path, runs: int, duration: str) -> Path:
    """bench.yaml (1 variant x `runs` seeds) beside base.yaml (the benchmark scenario, as sequential runs it)."""
    import yaml

    base = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))
    base.update({"duration": duration, "warmup": WARMUP})
    (directory / "base.yaml").write_text(yaml.safe_dump(base, sort_keys=False), encoding="utf-8")
    seeds = ", ".join(str(s) for s in range(1, runs + 1))
    sweep = directory / "bench.yaml"
    sweep.write_text(f"base: base.yaml\nseeds: [{seeds}]\nmetrics: [TotalTimeMs, produce_latency_ms]\n",
                     encoding="utf-8")
    return sweep


def _scenario(duration: str) -> Any:
    from kafkasim.scenario import load_scenario, with_overrides

    return with_overrides(load_scenario(SCENARIO), [f"duration={duration}", f"warmup={WARMUP}"])


def timed_runner(scenario: Any, *, seed: int) -> Any:
    """kafkasim.run.run_scenario, with its own CPU and wall seconds added to the summary.

    Defined in the benchmark's __main__, so Spark ships it to the workers by value (cloudpickle).
    """
    from kafkasim.run import run_scenario

    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run_scenario(scenario, seed=seed)
    result.summary["_bench"] = {
        "cpu_s": time.process_time() - cpu0,
        "wall_s": time.perf_counter() - wall0,
        "pid": os.getpid(),
    }
    return result


# ---------------------------------------------------------------------------------------------------------
# Child processes: one measurement each, JSON on the last line of stdout.
# ---------------------------------------------------------------------------------------------------------


def _warm_up() -> float:
    """Import the engine and do one short run, untimed: the first run in a process pays lazy imports and
    pydantic's first validation (seconds). Spark's Python workers pay this inside the sweep, once each."""
    t0 = time.perf_counter()
    from kafkasim.run import run_scenario

    run_scenario(_scenario("1s"), seed=0)
    return time.perf_counter() - t0


def child_sequential(runs: int, duration: str) -> dict[str, Any]:
    from kafkasim.run import run_scenario

    t_import = _warm_up()
    scenario = _scenario(duration)
    per_run = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for seed in range(1, runs + 1):
        start = time.perf_counter()
        run_scenario(scenario, seed=seed)
        per_run.append(time.perf_counter() - start)
    return {
        "import_s": t_import,
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "per_run_wall_s": per_run,
    }


_POOL_SCENARIO: Any = None  # set before the pool forks, so the workers inherit it parsed


def _pool_run(seed: int) -> float:
    from kafkasim.run import run_scenario

    cpu0 = time.process_time()
    run_scenario(_POOL_SCENARIO, seed=seed)
    return time.process_time() - cpu0


def child_pool(processes: int, runs: int, duration: str) -> dict[str, Any]:
    """The same runs on a multiprocessing pool: what `processes` cores give right now, without Spark."""
    import multiprocessing

    global _POOL_SCENARIO
    t_import = _warm_up()  # before forking: the workers start warm, like the sequential loop
    _POOL_SCENARIO = _scenario(duration)
    wall0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        cpu = pool.map(_pool_run, range(1, runs + 1), chunksize=1)
    return {"import_s": t_import, "wall_s": time.perf_counter() - wall0, "task_cpu_s": cpu}


def _jvm_cpu_s(spark: Any) -> float:
    """CPU seconds (user + system) of the Spark JVM so far (the driver's gateway child process)."""
    pid = spark.sparkContext._gateway.proc.pid
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(module: Any, name: str, spent: dict[str, float], spark: Any) -> None:
    """Wrap `module.name` so that its wall and JVM CPU seconds add up in `spent` (profiling only)."""
    inner = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        jvm0, t0 = _jvm_cpu_s(spark), time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[f"{name}_s"] = spent.get(f"{name}_s", 0.0) + time.perf_counter() - t0
            spent[f"{name}_jvm_cpu_s"] = spent.get(f"{name}_jvm_cpu_s", 0.0) + _jvm_cpu_s(spark) - jvm0

    setattr(module, name, wrapper)


def _sweep_once(spark: Any, sweep_file: Path, out: Path) -> dict[str, Any]:
    import kafkasim.sweep.sweep as sweep_module
    from kafkasim.sweep import run_sweep

    runs_done_at: list[float] = []
    jvm_at_runs_done: list[float] = []
    spent: dict[str, float] = {}
    originals = {name: getattr(sweep_module, name) for name in ("aggregate", "plot_sweep")}
    for name in originals:
        _timed(sweep_module, name, spent, spark)

    def progress(done: int, failed: int, planned: int) -> None:
        if done == planned and not runs_done_at:
            runs_done_at.append(time.perf_counter())
            jvm_at_runs_done.append(_jvm_cpu_s(spark))

    jvm0, driver0, t0 = _jvm_cpu_s(spark), time.process_time(), time.perf_counter()
    try:
        result = run_sweep(sweep_file, out=out, spark=spark, runner=timed_runner, progress=progress)
    finally:
        for name, original in originals.items():
            setattr(sweep_module, name, original)
    wall = time.perf_counter() - t0
    jvm_cpu, driver_cpu = _jvm_cpu_s(spark) - jvm0, time.process_time() - driver0
    if result.failed:
        raise SystemExit(f"{result.failed} runs failed: {result.failed_runs[0].error}")
    bench = [json.loads(r.summary_json or "{}")["_bench"] for r in result.runs]
    # The progress poller looks every 0.25 s, so "runs phase" is late by up to that much.
    runs_phase = (runs_done_at[0] - t0) if runs_done_at else float("nan")
    return {
        "wall_s": wall,
        "runs_phase_s": runs_phase,
        "task_cpu_s": [b["cpu_s"] for b in bench],
        "task_wall_s": [b["wall_s"] for b in bench],
        "workers": len({b["pid"] for b in bench}),
        "jvm_cpu_s": jvm_cpu,
        "runs_phase_jvm_cpu_s": (jvm_at_runs_done[0] - jvm0) if jvm_at_runs_done else float("nan"),
        "driver_cpu_s": driver_cpu,
        **spent,
    }


def child_spark(master: str, runs: int, duration: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    from kafkasim.sweep.session import build_spark_session

    t_import = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="kafkasim-spark-bench-") as tmp:
        sweep_file = _write_sweep(Path(tmp), runs, duration)
        t1 = time.perf_counter()
        spark = build_spark_session(master)
        t_session = time.perf_counter() - t1
        t2 = time.perf_counter()
        spark.sparkContext.parallelize([0], 1).count()
        t_first_job = time.perf_counter() - t2
        startup_jvm_cpu = _jvm_cpu_s(spark)
        try:
            cold = _sweep_once(spark, sweep_file, Path(tmp) / "cold")
            warm = _sweep_once(spark, sweep_file, Path(tmp) / "warm")
        finally:
            spark.stop()
    return {
        "import_s": t_import,
        "session_s": t_session,
        "first_job_s": t_first_job,
        "startup_s": t_session + t_first_job,
        "startup_jvm_cpu_s": startup_jvm_cpu,
        "cold": cold,
        "warm": warm,
    }


# ---------------------------------------------------------------------------------------------------------
# Driver: run the children interleaved, summarize.
# ---------------------------------------------------------------------------------------------------------


JVM_C1 = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JIT with the C1 compiler only, serial GC: less JVM CPU for short jobs (an experiment, not the default)."""


def _child(kind: str, arg: str, runs: int, duration: str) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    env = dict(os.environ)
    if arg.endswith("+c1"):
        # JAVA_TOOL_OPTIONS reaches the JVM that PySpark launches, whatever Spark's own options say.
        env["JAVA_TOOL_OPTIONS"] = JVM_C1
        arg = arg.removesuffix("+c1")
    cmd = [sys.executable, __file__, "--child", kind, "--arg", arg, "--runs", str(runs), "--duration", duration]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{kind} {arg} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["process_s"] = elapsed
    data["load"] = (load_before, os.getloadavg()[0])
    return data


def _wall(kind: str, data: dict[str, Any]) -> float:
    """The wall time a user waits for the 32 runs: for Spark, start-up + the first sweep."""
    return float(data["startup_s"] + data["cold"]["wall_s"]) if kind == "spark" else float(data["wall_s"])


def _median(values: list[float]) -> float:
    return statistics.median(values)


def summarize(results: dict[tuple[str, str], list[dict[str, Any]]], runs: int, duration: str) -> str:
    seq = results[("sequential", "")]
    seq_wall = _median([r["wall_s"] for r in seq])
    seq_cpu = _median([r["cpu_s"] / runs for r in seq])
    lines = [
        f"Workload: {runs} runs = scenarios/quickstart.yaml x {runs} seeds, {duration} simulated each (warm-up "
        f"{WARMUP}); each configuration in a fresh process; median of {len(seq)} repeat(s), interleaved.",
        "",
        "| configuration | wall s | vs sequential | Spark start-up s | runs phase s | after the runs s "
        "| mean run CPU s | mean run wall s | JVM CPU s | driver CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| sequential, one process | {seq_wall:.1f} | 1.00x | - | {seq_wall:.1f} | - | {seq_cpu:.2f} "
        f"| {seq_wall / runs:.2f} | - | - |",
    ]
    for (kind, arg), rs in results.items():
        if kind == "pool":
            wall = _median([r["wall_s"] for r in rs])
            cpu = _median([statistics.mean(r["task_cpu_s"]) for r in rs])
            lines.append(f"| multiprocessing pool of {arg}, no Spark | {wall:.1f} | {seq_wall / wall:.2f}x | - "
                         f"| {wall:.1f} | - | {cpu:.2f} | - | - | - |")
        if kind != "spark":
            continue
        startup = _median([r["startup_s"] for r in rs])
        for phase in ("cold", "warm"):
            cold = phase == "cold"
            wall = _median([r[phase]["wall_s"] + (r["startup_s"] if cold else 0.0) for r in rs])
            runs_phase = _median([r[phase]["runs_phase_s"] for r in rs])
            after = _median([r[phase]["wall_s"] - r[phase]["runs_phase_s"] for r in rs])
            task_cpu = _median([statistics.mean(r[phase]["task_cpu_s"]) for r in rs])
            task_wall = _median([statistics.mean(r[phase]["task_wall_s"]) for r in rs])
            jvm = _median([r[phase]["jvm_cpu_s"] + (r["startup_jvm_cpu_s"] if cold else 0.0) for r in rs])
            driver = _median([r[phase]["driver_cpu_s"] for r in rs])
            name = arg.replace("+c1", f" (JVM: {JVM_C1})")
            label = f"{name}: start-up + sweep" if cold else f"{name}: same sweep again, warm session"
            lines.append(
                f"| {label} | {wall:.1f} | {seq_wall / wall:.2f}x | {f'{startup:.1f}' if cold else '-'} "
                f"| {runs_phase:.1f} | {after:.1f} | {task_cpu:.2f} | {task_wall:.2f} | {jvm:.1f} | {driver:.1f} |"
            )
    spark_keys = [k for k in results if k[0] == "spark"]
    if spark_keys:
        lines += [
            "",
            "Where a sweep's wall time goes (median; JVM CPU seconds in parentheses). 'Parquet' is everything "
            "after the last run but before aggregation: decoding the runs' Arrow chunks and writing them.",
            "",
            "| configuration | runs | Parquet | aggregation (percentile_approx) | figures |",
            "|---|---:|---:|---:|---:|",
        ]
        for kind, arg in spark_keys:
            for phase in ("cold", "warm"):
                ps = [r[phase] for r in results[(kind, arg)]]
                if "aggregate_s" not in ps[0]:
                    continue
                parquet = _median([p["wall_s"] - p["runs_phase_s"] - p["aggregate_s"] - p["plot_sweep_s"]
                                   for p in ps])
                lines.append(
                    f"| {arg} {phase} | {_median([p['runs_phase_s'] for p in ps]):.1f} "
                    f"({_median([p['runs_phase_jvm_cpu_s'] for p in ps]):.1f}) | {parquet:.1f} "
                    f"| {_median([p['aggregate_s'] for p in ps]):.1f} "
                    f"({_median([p['aggregate_jvm_cpu_s'] for p in ps]):.1f}) "
                    f"| {_median([p['plot_sweep_s'] for p in ps]):.1f} |"
                )
        lines += ["", "Start-up (median): " + "; ".join(
            f"{arg}: session {_median([r['session_s'] for r in results[(kind, arg)]]):.1f} s + first job "
            f"{_median([r['first_job_s'] for r in results[(kind, arg)]]):.1f} s, JVM CPU "
            f"{_median([r['startup_jvm_cpu_s'] for r in results[(kind, arg)]]):.1f} s"
            for kind, arg in spark_keys
        ) + "."]
    loads = [x for rs in results.values() for r in rs for x in r["load"]]
    lines.append(f"1-minute load average around the measurements: {min(loads):.1f} to {max(loads):.1f} "
                 f"on {os.cpu_count()} CPUs.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--child", choices=["sequential", "pool", "spark"], help=argparse.SUPPRESS)
    parser.add_argument("--arg", default="", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs per sweep (default {RUNS})")
    parser.add_argument("--duration", default=DURATION, help=f"simulated duration of each run (default {DURATION})")
    parser.add_argument("--repeat", type=int, default=2, help="repeats of every configuration (default 2)")
    parser.add_argument("--masters", default="local[2],local[1]",
                        help="Spark masters to measure; a '+c1' suffix runs that master's JVM with " + JVM_C1)
    parser.add_argument("--pool", type=int, default=2, help="processes of the no-Spark pool (0: skip)")
    parser.add_argument("--quick", action="store_true", help="8 runs of 1 s, one repeat, local[2] only")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)

    if args.child == "sequential":
        print(json.dumps(child_sequential(args.runs, args.duration)))
        return
    if args.child == "pool":
        print(json.dumps(child_pool(int(args.arg), args.runs, args.duration)))
        return
    if args.child == "spark":
        print(json.dumps(child_spark(args.arg, args.runs, args.duration)))
        return

    if args.quick:
        args.runs, args.duration, args.repeat, args.masters = 8, "1s", 1, "local[2]"
    configs = [("sequential", "")]
    if args.pool > 0:
        configs.append(("pool", str(args.pool)))
    configs += [("spark", m.strip()) for m in args.masters.split(",") if m.strip()]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {c: [] for c in configs}
    for i in range(args.repeat):
        for kind, arg in configs:
            print(f"[{i + 1}/{args.repeat}] {kind} {arg} ...", file=sys.stderr, flush=True)
            data = _child(kind, arg, args.runs, args.duration)
            results[(kind, arg)].append(data)
            print(f"    {_wall(kind, data):.1f} s (load {data['load'][0]:.1f} -> {data['load'][1]:.1f})",
                  file=sys.stderr, flush=True)
    table = summarize(results, args.runs, args.duration)
    print(table)
    print("\nraw: " + json.dumps({f"{k} {a}".strip(): v for (k, a), v in results.items()}))
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
