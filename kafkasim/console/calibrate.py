"""`kafkasim calibrate RESULT... --out PRESET`: fit kafkasim's costs to one or more measured runs of a scenario
and write the preset."""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafkasim.console.run_command import EXIT_OK, EXIT_USAGE, error
from kafkasim.scenario.units import format_duration


def _machine() -> str:
    return f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def calibrate_command(result_dirs: str | list[str], out: str, *, scenario_file: str | None = None,
                      sim_duration: str | None = None, max_evaluations: int = 200, jobs: int | None = None,
                      sim_runs: int = 1, console: Console | None = None) -> int:
    """Everything `kafkasim calibrate` does; returns the exit code. Several results are runs of one scenario:
    the fit reproduces each statistic's median over them."""
    from kafkasim.calibrate.collector import measure
    from kafkasim.calibrate.parameters import PARAMETERS, min_evaluations
    from kafkasim.calibrate.preset import document, is_preset_file, with_collector, write_preset
    from kafkasim.calibrate.targets import MIN_COUNT, targets
    from kafkasim.record.result import ResultDirectoryError, RunResult
    from kafkasim.scenario import ScenarioError, load_scenario
    from kafkasim.scenario.units import parse_duration

    console = console or Console()
    fewest = min_evaluations(len(PARAMETERS)) * sim_runs
    if max_evaluations < fewest:
        each = f", {sim_runs} runs each (--sim-runs)" if sim_runs > 1 else ""
        error(f"--max-evaluations {max_evaluations}: a fit of kafkasim's {len(PARAMETERS)} parameters needs at least "
              f"{fewest} simulated runs (the start and its Jacobian, then a step and the Jacobian there{each}); "
              f"allowed: {fewest} or more")
        return EXIT_USAGE
    dirs = [result_dirs] if isinstance(result_dirs, str) else list(result_dirs)
    target = Path(out)
    if target.is_dir():
        error(f"--out {out}: is a directory; give the preset file to write (e.g. {Path(out) / 'fitted.yaml'})")
        return EXIT_USAGE
    if target.exists() and not is_preset_file(target):
        error(f"--out {out}: exists and is not a preset kafkasim wrote; kafkasim never overwrites other files")
        return EXIT_USAGE
    if not target.parent.is_dir():
        error(f"--out {out}: no directory {target.parent}")
        return EXIT_USAGE
    where = [Path(d).resolve() for d in dirs]
    if len(set(where)) != len(where):
        twice = sorted({d for d, w in zip(dirs, where, strict=True) if where.count(w) > 1})
        error(f"RESULT: {', '.join(twice)} name the same run; each run counts once in the medians")
        return EXIT_USAGE
    results = []
    for result_dir in dirs:
        try:
            results.append(RunResult.load(result_dir))
        except ResultDirectoryError as exc:
            error(str(exc))
            return EXIT_USAGE
    result, result_dir = results[0], dirs[0]
    if scenario_file is None:
        # Several runs are medians of one workload: the same scenario.yaml, byte for byte.
        texts = [r.scenario_yaml for r in results]
        for other, text in zip(dirs[1:], texts[1:], strict=True):
            if texts[0] is not None and text != texts[0]:
                error(f"{other}: ran a different scenario.yaml than {result_dir}; the runs of one calibration are runs "
                      "of one scenario (or give the workload with --scenario FILE)")
                return EXIT_USAGE
    try:
        if scenario_file is not None:
            scenario = load_scenario(Path(scenario_file))
        elif result.scenario_yaml is not None:
            scenario = load_scenario(result.scenario_yaml)
        else:
            error(f"{result_dir} has no scenario.yaml (an imported request log): give the workload that produced "
                  "the requests with --scenario FILE (its topics, clients and rates)")
            return EXIT_USAGE
    except ScenarioError as exc:
        from kafkasim.console.run_command import scenario_error_message

        error(scenario_error_message(exc))
        return EXIT_USAGE
    duration_ms: float | None = None
    if sim_duration is not None:
        try:
            duration_ms = parse_duration(sim_duration)
        except ValueError as exc:
            error(f"--sim-duration {sim_duration!r}: {exc}")
            return EXIT_USAGE
    summaries = [r.summary for r in results]
    wanted = targets(summaries)
    if not wanted:
        error(f"{', '.join(dirs)}: no statistic with at least {MIN_COUNT} values to fit (summary.json has no Produce "
              "or Fetch requests, produce or end-to-end latencies); a run of a few seconds under load has them")
        return EXIT_USAGE
    # A real run made on a shared machine: its waits for a core are fitted as Kafka's (kafkasim.real.machine_cpu).
    from kafkasim.real.machine_cpu import shared_machine

    for shared_dir, shared in zip(dirs, results, strict=True):
        said = shared_machine(shared.run_info.get("machine_cpu"))
        if said is not None:
            print(f"kafkasim: note: {shared_dir}: {said}; the fit takes those waits for Kafka's", file=sys.stderr)
    # The leader's collector, measured from the runs' GC logs where they kept them: every broker of the fit
    # stalls after as many of its requests (kafkasim.calibrate.collector).
    gc = measure([(Path(d), r) for d, r in zip(dirs, results, strict=True)])
    print(f"kafkasim: note: {gc.said}", file=sys.stderr)
    scenario = with_collector(scenario, gc.collector)
    # Imported once the input is known good: scipy and the engine take seconds to load, a mistyped path should not.
    from kafkasim.calibrate.fit import fit

    measured = result_dir if len(dirs) == 1 else f"the medians of {len(dirs)} runs ({', '.join(dirs)})"
    jobs = jobs if jobs is not None else max(1, os.cpu_count() or 1)
    print(f"kafkasim: fitting {len(wanted)} statistics of {measured} ({scenario.name}) with "
          f"scipy.optimize.least_squares, at most {max_evaluations} simulated runs of "
          f"{format_duration(duration_ms or scenario.duration)}"
          f"{f' (each statistic the median of {sim_runs})' if sim_runs > 1 else ''}, {jobs} at once", file=sys.stderr, flush=True)
    bar = Progress(TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[cost]}"),
                   TimeElapsedColumn(), console=Console(stderr=True), transient=False)
    task = bar.add_task("fit", total=max_evaluations, cost="")

    def progress(done: int, most: int, best: float) -> None:
        bar.update(task, completed=min(done, most), cost=f"sum of squares {best:.3g}")

    with bar:
        fitted = fit(scenario, summaries, sim_duration_ms=duration_ms, max_evaluations=max_evaluations,
                     progress=progress, jobs=jobs, requests=[r.requests for r in results], sim_runs=sim_runs)
    source = ", ".join(str(Path(d).resolve()) for d in dirs)
    if len(dirs) > 1:
        source = f"the medians of {len(dirs)} runs: {source}"
    doc = document(fitted, source=source, scenario=scenario, run_info=result.run_info,
                   when=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), machine=_machine(),
                   machine_cpu=[r.run_info.get("machine_cpu") for r in results], collector=gc.collector)
    write_preset(target, doc)
    _print_parameters(console, doc)
    _print_fit(console, doc)
    console.print(f"preset: {target}  (use it: kafkasim run SCENARIO --preset {target})")
    return EXIT_OK


def _print_parameters(console: Console, doc: dict[str, object]) -> None:
    table = Table(title="Fitted parameters (×/÷ one standard deviation)", title_justify="left")
    for column in ("parameter", "value", "±", "fitted from"):
        table.add_column(column, justify="right" if column in ("value", "±") else "left")
    parameters = doc["parameters"]
    assert isinstance(parameters, dict)
    for name, p in parameters.items():
        factor = p["uncertainty_factor"]
        shown = "not determined" if factor is None else f"×/÷ {factor:.3g}"
        if p["at_bound"]:
            shown += " (at a bound)"
        table.add_row(name, f"{p['value']:.4g} {p['unit']}", shown, p["fitted_from"])
    console.print(table)


def _print_fit(console: Console, doc: dict[str, object]) -> None:
    table = Table(title="The fitted run beside the measured one (ms)", title_justify="left")
    for column in ("statistic", "measured", "fitted", "fitted/measured", "before the fit"):
        table.add_column(column, justify="left" if column == "statistic" else "right")
    rows = doc["fit"]
    assert isinstance(rows, list)
    for row in rows:
        measured, fitted, before = row["measured_ms"], row["fitted_ms"], row["before_ms"]
        ratio = "-" if fitted is None or measured == 0 else f"{fitted / measured:.2f}"
        table.add_row(row["statistic"], f"{measured:.3f}", "-" if fitted is None else f"{fitted:.3f}", ratio,
                      "-" if before is None else f"{before:.3f}")
    console.print(table)

