"""`kafkasim sweep SWEEP.yaml [--master URL] [--out DIR] [--parallelism N]`: printing and exit codes.

The command-line verb in kafkasim/console/app.py calls `sweep_command` and exits with its return value:
0 every run succeeded, 1 some run failed (or a requested metric could not be computed, or Spark aborted),
2 the sweep file (or one of its variants) is invalid, Java is missing, or the output directory is unusable.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafkasim.scenario.errors import ScenarioError
from kafkasim.sweep.java import SparkUnavailableError
from kafkasim.sweep.output import OutputDirError
from kafkasim.sweep.plan import SweepPlan
from kafkasim.sweep.session import resolve_master, writes_class_archive
from kafkasim.sweep.spark_job import Runner
from kafkasim.sweep.sweep import SweepAbortedError, SweepResult, run_sweep

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXIT_OK = 0
EXIT_RUNS_FAILED = 1
EXIT_USAGE = 2


class _ProgressDisplay:
    """A rich progress bar fed by run_sweep's progress callback (called from a polling thread)."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("runs"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task: TaskID | None = None
        self._lock = threading.Lock()

    def __call__(self, done: int, failed: int, planned: int) -> None:
        with self._lock:
            if self._task is None:
                self._progress.start()
                self._task = self._progress.add_task("runs", total=planned, failed="")
            note = f"[red]{failed} failed[/red]" if failed else ""
            self._progress.update(self._task, completed=done, failed=note)

    def stop(self) -> None:
        with self._lock:
            if self._task is not None:
                self._progress.stop()


def result_table(result: SweepResult, stat: str = "p99") -> Table:
    frame = result.variant_table(stat)
    table = Table(title=f"{stat} per variant (mean over seeds ± 95% CI half-width)", title_justify="left")
    params = {k for v in result.variants for k in v.params}
    for column in frame.columns:
        name = str(column)
        if column == "variant" or column in params or column == "runs ok":
            # Identity columns keep their values whole; long key-path headers fold instead.
            widest = max((len(str(v)) for v in frame[column]), default=1)
            table.add_column(name, justify="left" if column == "variant" else "right", overflow="fold",
                             min_width=max(widest, 3))
        else:  # "TotalTimeMs [Produce]" -> two header lines
            table.add_column(name.replace(" [", "\n["), justify="right", overflow="fold", min_width=6)
    for row in frame.itertuples(index=False):
        table.add_row(*("-" if value is None or value != value else escape(str(value)) for value in row))
    return table


_PHASES = (("spark_start", "Spark start"), ("runs", "runs"), ("reconcile", "schemas"),
           ("aggregate", "aggregation"), ("write", "tables"), ("figures", "figures"))


def phase_times(result: SweepResult) -> str:
    """Where the sweep's wall time went, e.g. "Spark start 6.1 s, runs 12.0 s (…), aggregation 3.2 s, …"."""
    parts = []
    for key, label in _PHASES:
        seconds = result.timings.get(key)
        if seconds is None or (key == "spark_start" and seconds < 0.05):
            continue
        text = f"{label} {seconds:.1f} s"
        if key == "runs":
            run_s = [r.timings["run_s"] for r in result.runs if "run_s" in r.timings]
            if run_s:
                text += f" (simulation {sum(run_s):.1f} s over {len(run_s)} runs)"
        parts.append(text)
    return ", ".join(parts)


def sweep_command(
    sweep_file: str | Path,
    *,
    master: str | None = None,
    out: str | Path | None = None,
    parallelism: int | None = None,
    runner: Runner | str | None = None,
    spark: SparkSession | None = None,
    console: Console | None = None,
    err_console: Console | None = None,
) -> int:
    """Run a sweep with progress and a final table; return the exit code (see module docstring)."""
    console = console or Console()
    err_console = err_console or Console(stderr=True)
    if parallelism is not None and parallelism < 1:
        err_console.print(f"[red]kafkasim sweep:[/red] --parallelism must be at least 1, got {parallelism}")
        return EXIT_USAGE
    display = _ProgressDisplay(console)

    def announce(plan: SweepPlan, out_dir: Path) -> None:
        where = resolve_master(master, parallelism) if spark is None else str(spark.sparkContext.master)
        console.print(
            f"sweep {escape(str(sweep_file))}: {len(plan.variants)} variant(s) x {len(plan.seeds)} seed(s) = "
            f"{len(plan.runs)} runs on {escape(where)} -> {escape(str(out_dir))}"
        )
        if spark is None and writes_class_archive(master, parallelism):
            console.print("first sweep with this Java, Spark and environment: its JVM also writes a class archive "
                          "for later sessions to start from (once, ~10 s more)", highlight=False)

    try:
        result = run_sweep(
            sweep_file,
            master=master,
            out=out,
            parallelism=parallelism,
            runner=runner,
            progress=display,
            spark=spark,
            on_planned=announce,
            keep_session=False,  # one sweep per command: its JVM is stopped before the tables are printed
        )
    # soft_wrap: an error is one line per problem however narrow the terminal (no inserted line breaks).
    except ScenarioError as exc:
        err_console.print(f"[red]kafkasim sweep: invalid sweep[/red]\n{escape(str(exc))}", highlight=False,
                          soft_wrap=True)
        return EXIT_USAGE
    except SparkUnavailableError as exc:
        err_console.print(f"[red]{escape(str(exc))}[/red]", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except OutputDirError as exc:
        err_console.print(f"[red]kafkasim sweep:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except SweepAbortedError as exc:
        err_console.print(f"[red]kafkasim sweep:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_RUNS_FAILED
    finally:
        display.stop()

    console.print(result_table(result))
    colour = "green" if result.failed == 0 else "red"
    console.print(
        f"[{colour}]planned {result.planned}, succeeded {result.succeeded}, failed {result.failed}[/{colour}]"
    )
    for run in result.failed_runs:
        first = (run.error or "").splitlines()[0] if run.error else "unknown error"
        console.print(f"  [red]failed[/red] {run.variant_id} seed {run.seed}: {escape(first)}", highlight=False)
    for problem in result.problems:
        console.print(f"  [red]metric not computed[/red]: {escape(problem)}", highlight=False)
    for note in result.notes:
        console.print(f"  [yellow]note[/yellow]: {escape(note)}", highlight=False)
    console.print(
        "percentiles: exact (the value of rank ceil(q x rows)); CI: Student t over seeds; warm-up rows excluded",
        highlight=False,
    )
    console.print(f"results: {escape(str(result.output_dir))}", highlight=False)
    if result.timings:
        console.print(f"time: {phase_times(result)}", highlight=False)
    return EXIT_OK if result.ok else EXIT_RUNS_FAILED
