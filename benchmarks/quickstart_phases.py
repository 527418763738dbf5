"""Where `kafkasim run scenarios/quickstart.yaml` spends its CPU, phase by phase, and what the figures cost.

Each measurement is a fresh Python process doing what the command does, in its order, with the CPU time
(user + system of the process, `time.process_time`) taken between the phases:

* imports: the interpreter's start is not counted; the CLI's modules and what `run` loads before the engine
  (pandas and pyarrow's Parquet writer among them: see kafkasim.console.run_command._load_writers);
* build: the scenario loaded and the component tree built (`Engine(...)`);
* simulation loop: the SimPy event loop over the scenario's duration;
* tabulate: the recorded rows turned into the requests/records/timeseries tables and the summary;
* write tables: Parquet, summary.json, scenario.yaml (`RunResult.save`: what `kafkasim run` writes);
* print summary: the console summary.

`kafkasim run` draws no figures (issue 15, item 3: figures off the critical path); `kafkasim report RUN_DIR`
draws figures/ and report.html from the saved run afterwards, and `kafkasim run --figures` draws the same
files at the end of the run. Their cost is measured too, in another fresh process doing what
`kafkasim report` does on the saved quickstart result: load it (with the imports that takes), import
matplotlib and the report layer, draw the figures, write report.html.

The whole commands are also timed as a user runs them (`python -m kafkasim run ...` as a child process,
its CPU from the operating system, interpreter start included), so the target is judged on the command
itself: at most half of `kafkasim run`'s CPU outside the simulation loop and the table writes. Bare SimPy
events per CPU second are measured in the same process as the loop (the yardstick of benchmarks/README.md).

    uv run python benchmarks/quickstart_phases.py            # three of each, the tables (~40 s)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
PHASES = ("imports", "build", "simulation loop", "tabulate", "write tables", "print summary")
INSIDE = ("simulation loop", "write tables")
REPORT_PHASES = ("load the run", "import matplotlib, report layer", "figures", "report.html")


def measure_run(out: Path) -> dict[str, Any]:
    """One run's phases, in this process (call it in a fresh one); the result is saved to `out`."""
    cpu = time.process_time
    marks = [cpu()]
    import kafkasim.console.app  # noqa: F401  (what `kafkasim` imports to parse the command line)
    from kafkasim.console.blas import single_blas_thread
    from kafkasim.record.arrow_allocator import prefer_system_allocator

    prefer_system_allocator()  # what kafkasim.console.app.main does first
    single_blas_thread()
    from kafkasim.console.run_command import _load_writers
    from kafkasim.console.summary import print_summary
    from kafkasim.run.engine import Engine
    from kafkasim.scenario import load_scenario
    from kafkasim.sim.clock import SimClock

    _load_writers()
    marks.append(cpu())
    scenario = load_scenario(QUICKSTART)
    engine = Engine(scenario, seed=scenario.seed, clock=SimClock(), progress=lambda _now, _duration: None)
    marks.append(cpu())
    engine._start()
    engine._run_until(float(scenario.duration))
    marks.append(cpu())
    engine.invariants.at_end() if engine.invariants is not None else None
    result = engine._result(float(scenario.duration), 0.0)
    marks.append(cpu())
    result.save(out)
    marks.append(cpu())
    from rich.console import Console

    print_summary(Console(file=io.StringIO(), width=120), result.summary, scenario.name, float(scenario.duration),
                  0.0)
    marks.append(cpu())
    from simpy_baseline import simpy_events_per_second

    return {
        "phases": {name: marks[i + 1] - marks[i] for i, name in enumerate(PHASES)},
        "requests": len(result.requests),
        "simpy_events_per_cpu_s": simpy_events_per_second(),
    }


def measure_report(run_dir: Path) -> dict[str, Any]:
    """What `kafkasim report RUN_DIR` does on a run saved without figures, phase by phase (fresh process)."""
    cpu = time.process_time
    marks = [cpu()]
    import kafkasim.console.app  # noqa: F401
    from kafkasim.console.blas import single_blas_thread
    from kafkasim.record.arrow_allocator import prefer_system_allocator

    prefer_system_allocator()  # what kafkasim.console.app.main does first
    single_blas_thread()
    from kafkasim.record.result import RunResult

    result = RunResult.load(run_dir)
    marks.append(cpu())
    from kafkasim.report import write_figures
    from kafkasim.report.html import write_report
    from kafkasim.report.run_events import scenario_from_yaml

    marks.append(cpu())
    with tempfile.TemporaryDirectory() as tmp:
        written = write_figures(result.requests, result.records, result.timeseries, result.summary, tmp,
                                scenario=scenario_from_yaml(result.scenario_yaml), segments=result.segments)
        marks.append(cpu())
        write_report(result, tmp)
        marks.append(cpu())
    return {"phases": {name: marks[i + 1] - marks[i] for i, name in enumerate(REPORT_PHASES)},
            "figures": len(written)}


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _command_cpu(*args: str) -> float:
    """CPU seconds (user + system, interpreter start included) of `python -m kafkasim ARGS` as a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "kafkasim", *args], check=True, capture_output=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _mean(rows: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, float]:
    return {name: sum(r["phases"][name] for r in rows) / len(rows) for name in names}


def _table(mean: dict[str, float]) -> float:
    total = sum(mean.values())
    print("| phase | CPU s | share |")
    print("|---|---:|---:|")
    for name, value in mean.items():
        print(f"| {name} | {value:.2f} | {value / total:.0%} |")
    print(f"| **total** | {total:.2f} | 100% |")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child-run", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--child-report", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.child_run or args.child_report:
        sys.path.insert(0, str(Path(__file__).parent))
        print(json.dumps(measure_run(Path(args.child_run)) if args.child_run else
                         measure_report(Path(args.child_report))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "saved"
        runs = [_child("--child-run", str(saved if i == 0 else Path(tmp) / f"run{i}")) for i in range(args.runs)]
        reports = [_child("--child-report", str(saved)) for _ in range(args.runs)]
        command_run = [_command_cpu("run", str(QUICKSTART), "--no-progress", "--out", str(Path(tmp) / f"cmd{i}"))
                       for i in range(args.runs)]
        command_report = [_command_cpu("report", str(Path(tmp) / f"cmd{i}")) for i in range(args.runs)]
        command_figures = [_command_cpu("run", str(QUICKSTART), "--no-progress", "--figures", "--out",
                                        str(Path(tmp) / f"fig{i}")) for i in range(args.runs)]
    mean = _mean(runs, PHASES)
    events = sum(r["simpy_events_per_cpu_s"] for r in runs) / len(runs)
    n = args.runs
    print(f"scenarios/quickstart.yaml, {runs[0]['requests']:,} requests; mean of {n} fresh processes each; "
          f"bare SimPy {events:,.0f} events per CPU s\n")
    print("`kafkasim run scenarios/quickstart.yaml`, phase by phase:\n")
    total = _table(mean)
    inside = sum(mean[name] for name in INSIDE)
    command = sum(command_run) / n
    print(f"\nOutside the simulation loop and the table writes: {(total - inside) / total:.0%} of the phases' CPU; "
          f"{(command - inside) / command:.0%} of the whole command's {command:.2f} CPU s (interpreter start "
          f"included; target: at most 50%). The loop: "
          f"{mean['simulation loop'] * events / runs[0]['requests']:,.0f} bare SimPy events per request.\n")
    print(f"`kafkasim report RUN_DIR` on that run ({reports[0]['figures']} figures), phase by phase:\n")
    _table(_mean(reports, REPORT_PHASES))
    print(f"\nWhole commands, CPU s (mean of {n}): kafkasim run {command:.2f}; kafkasim report "
          f"{sum(command_report) / n:.2f}; kafkasim run --figures {sum(command_figures) / n:.2f}.")


if __name__ == "__main__":
    main()
