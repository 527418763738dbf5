"""Where a `kafkasim run scenarios/quickstart.yaml` spends its CPU, phase by phase.

Each measurement is a fresh Python process doing what `kafkasim run` does, in its order, with the CPU time
(user + system of the process, `time.process_time`) taken between the phases:

* imports: the interpreter's start is not counted; the CLI's modules and what `run` loads before the engine;
* build: the scenario loaded and the component tree built (`Engine(...)`);
* simulation loop: the SimPy event loop over the scenario's duration;
* tabulate: the recorded rows turned into the requests/records/timeseries tables and the summary;
* write tables: Parquet, summary.json, scenario.yaml (`RunResult.save` without figures);
* figures: the PNG figures (`write_figures`, its imports included);
* report: report.html (`write_report`);
* print summary: the console summary.

The issue's target (issue 15, item 3): at most half of the run's CPU outside the simulation loop and the
table writes. Bare SimPy events per CPU second are measured in the same process (the yardstick of
benchmarks/README.md), so the loop's cost is also given in those units.

    uv run python benchmarks/quickstart_phases.py            # three fresh processes, the table
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("imports", "build", "simulation loop", "tabulate", "write tables", "figures", "report", "print summary")
INSIDE = ("simulation loop", "write tables")


def measure() -> dict[str, Any]:
    """One run's phases, in this process (call it in a fresh one)."""
    cpu = time.process_time
    marks = [cpu()]
    import kafkasim.console.app  # noqa: F401  (what `kafkasim` imports to parse the command line)
    from kafkasim.console.run_command import _load_writers
    from kafkasim.console.summary import print_summary
    from kafkasim.run.engine import Engine
    from kafkasim.scenario import load_scenario
    from kafkasim.sim.clock import SimClock

    _load_writers()
    marks.append(cpu())
    scenario = load_scenario(ROOT / "scenarios" / "quickstart.yaml")
    engine = Engine(scenario, seed=scenario.seed, clock=SimClock(), progress=lambda _now, _duration: None)
    marks.append(cpu())
    engine._start()
    engine._run_until(float(scenario.duration))
    marks.append(cpu())
    engine.invariants.at_end() if engine.invariants is not None else None
    result = engine._result(float(scenario.duration), 0.0)
    marks.append(cpu())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        result.save(out)
        marks.append(cpu())
        from kafkasim.report import write_figures
        from kafkasim.report.run_events import scenario_from_yaml

        figures = Path(tmp) / "figures"
        figures.mkdir()
        write_figures(result.requests, result.records, result.timeseries, result.summary, figures,
                      scenario=scenario_from_yaml(result.scenario_yaml))
        marks.append(cpu())
        from kafkasim.report.html import write_report

        write_report(result, figures)
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


def _child() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child"], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(Path(__file__).parent))
        print(json.dumps(measure()))
        return
    runs = [_child() for _ in range(args.runs)]
    mean = {name: sum(r["phases"][name] for r in runs) / len(runs) for name in PHASES}
    total = sum(mean.values())
    events = sum(r["simpy_events_per_cpu_s"] for r in runs) / len(runs)
    print(f"scenarios/quickstart.yaml, {runs[0]['requests']:,} requests; mean of {len(runs)} fresh processes; "
          f"bare SimPy {events:,.0f} events per CPU s\n")
    print("| phase | CPU s | share |")
    print("|---|---:|---:|")
    for name in PHASES:
        print(f"| {name} | {mean[name]:.2f} | {mean[name] / total:.0%} |")
    print(f"| **total** | {total:.2f} | 100% |")
    inside = sum(mean[name] for name in INSIDE)
    print(f"\nOutside the simulation loop and the table writes: {(total - inside) / total:.0%} of the CPU "
          f"(target: at most 50%). The loop: {mean['simulation loop'] * events / runs[0]['requests']:,.0f} "
          "bare SimPy events per request.")


if __name__ == "__main__":
    main()
