"""Sweeps on Spark local[2] against a plain loop, before and after a change, as ratios measured in one run.

Workloads (each a sweep of 1 variant x 32 seeds of scenarios/quickstart.yaml: RF 3, acks=all, 1000
records/s of 1 KiB, one consumer, 0.5 s warm-up):

- `3s`:  32 runs of 3 simulated seconds (~0.3 s of CPU each);
- `30s`: 32 runs of 30 simulated seconds (~3 s of CPU each);
- fixed cost: a sweep of 2 runs of 0.1 simulated seconds, whose runs cost nothing: what a sweep costs
  besides its runs in a new session (JVM and session, Python workers, Parquet, aggregation, tables).

Every measurement is a fresh Python process:

- loop:   `run_scenario(scenario, seed=s)` for the 32 seeds, one after the other, after the imports and an
          untimed warm-up run (nothing written: the simulator's work alone, the strictest yardstick);
- pool of 2: the same runs on a `multiprocessing` pool of 2 processes forked after the same warm-up, no
          Spark: what the two cores deliver at that moment, the ceiling of any sweep on a shared machine;
- after:  `run_sweep(sweep, master="local[2]")` of this checkout, timed from before the SparkSession starts
          to the result (what `kafkasim sweep` costs, less the command's imports and the session's stop: the
          session a sweep starts is kept for the process's next sweep and stopped at its exit);
- warm session (second sweep): the same `run_sweep` as a process's second sweep, after an untimed sweep that
          started the session sweeps keep (a notebook's second sweep; this checkout only);
- command (kafkasim sweep), fixed cost only: `python -m kafkasim sweep` as a subprocess, from its start to its
          exit: imports, the sweep, the tables it prints, the session and its JVM stopped;
- before: the same with the kafkasim of git revision REV (`--before REV`, extracted with `git archive` and
          put first on PYTHONPATH, for the driver and, through spark.executorEnv.PYTHONPATH, its workers);
          `--after REV` measures a revision the same way instead of this checkout.

Repeats alternate the configurations, in a rotated order each repeat, so a neighbour's load on a shared
machine falls on all of them alike. The 1-minute load average is printed around each measurement.

    uv run --extra spark python benchmarks/sweep_bench.py --before eb1ec5d --after HEAD   # README tables
    uv run --extra spark python benchmarks/sweep_bench.py --quick                     # smoke: 8 runs of 1 s
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
WARMUP = "0.5s"
MASTER = "local[2]"


def _scenario(duration: str) -> Any:
    from kafkasim.scenario import load_scenario, with_overrides

    return with_overrides(load_scenario(SCENARIO), [f"duration={duration}", f"warmup={WARMUP}"])


def _write_sweep(directory: Path, runs: int, duration: str) -> Path:
    """sweep.yaml (1 variant x `runs` seeds) beside base.yaml (the loop's scenario, the same runs)."""
    import yaml

    base = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))
    base.update({"duration": duration, "warmup": WARMUP if duration not in ("0.1s",) else "0s"})
    (directory / "base.yaml").write_text(yaml.safe_dump(base, sort_keys=False), encoding="utf-8")
    seeds = ", ".join(str(s) for s in range(1, runs + 1))
    sweep = directory / "sweep.yaml"
    sweep.write_text(f"base: base.yaml\nseeds: [{seeds}]\n", encoding="utf-8")
    return sweep


# ---------------------------------------------------------------------------------------------------------
# Children: one measurement each, JSON on the last line of stdout.
# ---------------------------------------------------------------------------------------------------------


def child_loop(runs: int, duration: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    from kafkasim.run import run_scenario

    run_scenario(_scenario("1s"), seed=0)  # untimed warm-up: lazy imports, pydantic's first validations
    warm = time.perf_counter() - t0
    scenario = _scenario(duration)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for seed in range(1, runs + 1):
        run_scenario(scenario, seed=seed)
    return {"wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0, "warm_up_s": warm}


_POOL_SCENARIO: Any = None  # set before the pool forks, so the workers inherit it parsed


def _pool_run(seed: int) -> None:
    from kafkasim.run import run_scenario

    run_scenario(_POOL_SCENARIO, seed=seed)


def child_pool(runs: int, duration: str) -> dict[str, Any]:
    """The loop's runs on a multiprocessing pool of 2 forked processes: what two cores deliver right now."""
    import multiprocessing

    from kafkasim.run import run_scenario

    global _POOL_SCENARIO
    run_scenario(_scenario("1s"), seed=0)  # the same untimed warm-up as the loop, before forking
    _POOL_SCENARIO = _scenario(duration)
    wall0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_pool_run, range(1, runs + 1), chunksize=1)
    return {"wall_s": time.perf_counter() - wall0}


def child_sweep(runs: int, duration: str, warm: bool = False) -> dict[str, Any]:
    """`run_sweep` timed in a new session, or (`warm`) as a process's second sweep: after an untimed sweep of 2
    runs of 0.1 s that started the session it keeps (a notebook's second sweep)."""
    import kafkasim
    from kafkasim.sweep.sweep import run_sweep

    with tempfile.TemporaryDirectory(prefix="kafkasim-sweep-bench-") as tmp:
        if warm:
            (Path(tmp) / "first").mkdir()
            run_sweep(_write_sweep(Path(tmp) / "first", 2, "0.1s"), master=MASTER, out=Path(tmp) / "first-out")
        sweep = _write_sweep(Path(tmp), runs, duration)
        t0 = time.perf_counter()
        result = run_sweep(sweep, master=MASTER, out=Path(tmp) / "out")
        wall = time.perf_counter() - t0
    if result.failed:
        raise SystemExit(f"{result.failed} runs failed: {result.failed_runs[0].error}")
    timings = dict(getattr(result, "timings", {}) or {})
    run_s = [r.timings["run_s"] for r in result.runs if getattr(r, "timings", None) and "run_s" in r.timings]
    run_cpu_s = [r.timings["run_cpu_s"] for r in result.runs
                 if getattr(r, "timings", None) and "run_cpu_s" in r.timings]
    return {"wall_s": wall, "timings": timings, "run_s": run_s, "run_cpu_s": run_cpu_s,
            "kafkasim": str(Path(kafkasim.__file__).parent)}


def child_command(runs: int, duration: str) -> dict[str, Any]:
    """`kafkasim sweep` as a user types it: the command's wall time, from its start (imports) to its exit
    (after the session and its JVM are stopped)."""
    with tempfile.TemporaryDirectory(prefix="kafkasim-sweep-bench-") as tmp:
        sweep = _write_sweep(Path(tmp), runs, duration)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kafkasim", "sweep", str(sweep), "--master", MASTER, "--out",
                        str(Path(tmp) / "out")], check=True, capture_output=True, cwd=tmp)
        return {"wall_s": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------------


def _export(rev: str, directory: Path) -> Path:
    """The kafkasim package of git revision `rev`, extracted under `directory`; returns its parent."""
    archive = subprocess.run(["git", "archive", rev, "kafkasim"], cwd=ROOT, check=True, capture_output=True)
    directory.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive.stdout, check=True)
    return directory


def _child(kind: str, runs: int, duration: str, pythonpath: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), *filter(None, [env.get("PYTHONPATH")])])
        # And on the Python workers' path (spark.executorEnv reaches them whatever the JVM's environment).
        env["PYSPARK_SUBMIT_ARGS"] = f"--conf spark.executorEnv.PYTHONPATH={env['PYTHONPATH']} pyspark-shell"
    load = os.getloadavg()[0]
    cmd = [sys.executable, __file__, "--child", kind, "--runs", str(runs), "--duration", duration]
    # Not in the checkout: `python -m pyspark.daemon` puts its working directory first on sys.path, and the
    # checkout's kafkasim would shadow the revision on PYTHONPATH.
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir(), env=env)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    data["load"] = (load, os.getloadavg()[0])
    return data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--child", choices=["loop", "pool", "sweep", "warm", "command"], help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--duration", default="3s")
    parser.add_argument("--before", metavar="REV", help="git revision to compare with (default: none)")
    parser.add_argument("--after", metavar="REV", help="git revision measured as 'after' (default: this checkout)")
    parser.add_argument("--workloads", default="3s:2,30s:1,fixed:2",
                        help="DURATION:REPEATS,... ('fixed' = the fixed-cost sweep); default 3s:2,30s:1,fixed:2")
    parser.add_argument("--quick", action="store_true", help="8 runs of 1 s and the fixed cost, once each")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    args = parser.parse_args(argv)
    if args.child == "loop":
        print(json.dumps(child_loop(args.runs, args.duration)))
        return
    if args.child == "pool":
        print(json.dumps(child_pool(args.runs, args.duration)))
        return
    if args.child in ("sweep", "warm"):
        print(json.dumps(child_sweep(args.runs, args.duration, warm=args.child == "warm")))
        return
    if args.child == "command":
        print(json.dumps(child_command(args.runs, args.duration)))
        return

    workloads = [(w.split(":")[0], int(w.split(":")[1])) for w in args.workloads.split(",")]
    runs = 32
    if args.quick:
        workloads, runs = [("1s", 1), ("fixed", 1)], 8
    with tempfile.TemporaryDirectory(prefix="kafkasim-before-") as tmp:
        before = _export(args.before, Path(tmp) / "before") if args.before else None
        after = _export(args.after, Path(tmp) / "after") if args.after else None
        versions: list[tuple[str, Path | None]] = [("after", after)] + ([("before", before)] if before else [])
        lines = [f"Machine: {os.cpu_count()} CPUs; master {MASTER}; before = {args.before or '-'}, after = "
                 f"{args.after or 'this checkout'}. Wall seconds, median of the repeats; ratio = loop wall / sweep "
                 "wall.", ""]
        raw: dict[str, Any] = {}
        loads: list[float] = []
        for workload, repeats in workloads:
            fixed = workload == "fixed"
            n, duration = (2, "0.1s") if fixed else (runs, workload)
            configs = ([] if fixed else [("loop", None), ("pool of 2", None)]) + [
                (f"sweep {v}", p) for v, p in versions] + [
                ("command (kafkasim sweep)", None) if fixed else ("warm session (second sweep)", None)]
            results: dict[str, list[dict[str, Any]]] = {c: [] for c, _ in configs}
            for i in range(repeats):
                order = configs[i % len(configs):] + configs[:i % len(configs)]  # rotate: no fixed first place
                for name, path in order:
                    kind = name.split()[0]  # loop, pool, sweep, warm or command: the --child it runs
                    print(f"[{workload} {i + 1}/{repeats}] {name} ...", file=sys.stderr, flush=True)
                    data = _child(kind, n, duration, path)
                    results[name].append(data)
                    loads += list(data["load"])
                    print(f"    {data['wall_s']:.1f} s (load {data['load'][0]:.1f} -> {data['load'][1]:.1f})",
                          file=sys.stderr, flush=True)
            raw[workload] = results
            lines += _table(workload, n, duration, results)
        lines.append(f"1-minute load average around the measurements: {min(loads):.1f} to {max(loads):.1f}.")
    text = "\n".join(lines)
    print(text)
    print("\nraw: " + json.dumps(raw))
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")


_PHASES = ("spark_start", "runs", "reconcile", "aggregate", "write", "figures")


def _table(workload: str, n: int, duration: str, results: dict[str, list[dict[str, Any]]]) -> list[str]:
    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    fixed = workload == "fixed"
    title = (f"Fixed cost: a sweep of {n} runs of {duration} in a new session" if fixed
             else f"{n} runs of {duration}")
    lines = [f"**{title}** ({', '.join(f'{k}: {len(v)}x' for k, v in results.items())})", ""]
    loop = med([r["wall_s"] for r in results["loop"]]) if "loop" in results else None
    header = "| configuration | wall s |" + ("" if fixed else " vs loop | runs' CPU s |") + " " + " | ".join(
        f"{p} s" for p in _PHASES) + " |"
    lines += [header, "|---|---:|" + ("" if fixed else "---:|---:|") + "---:|" * len(_PHASES)]
    for name, rs in results.items():
        wall = med([r["wall_s"] for r in rs])
        ratio = "" if fixed else (" 1.00x |" if name == "loop" else f" {loop / wall:.2f}x |" if loop else " - |")
        if not fixed:
            # The simulations' own CPU: the loop process's, or the sum over the sweep's tasks (the same work
            # if a sweep adds nothing per run); a pool does not report it.
            cpu = [r["cpu_s"] if "cpu_s" in r else sum(r["run_cpu_s"]) for r in rs if "cpu_s" in r or r.get("run_cpu_s")]
            ratio += f" {med(cpu):.1f} |" if cpu else " - |"
        phases = " | ".join(
            f"{med([r['timings'][p] for r in rs if p in r.get('timings', {})]):.1f}"
            if any(p in r.get("timings", {}) for r in rs) else "-" for p in _PHASES
        )
        lines.append(f"| {name} | {wall:.1f} |{ratio} {phases} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    main()
