"""`run_sweep`: sweep file -> validated plan -> Spark job -> Parquet + aggregates + figures, all or nothing.

Order matters for the user: the sweep file and every variant are validated first (ScenarioError, nothing
started), then PySpark and Java are checked (SparkUnavailableError), then the output directory (OutputDirError), and only
then does Spark start. Runs that fail are recorded with their error and counted; they never stop the
others. If Spark itself fails, the partial directory is left behind, marked incomplete, and
SweepAbortedError says where it is and where Spark's log is.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

import kafkasim
from kafkasim.sweep.aggregate import Aggregates, aggregate
from kafkasim.sweep.confidence import CONFIDENCE
from kafkasim.sweep.dimensions import Dimension
from kafkasim.sweep.java import check_java, check_pyspark
from kafkasim.sweep.metrics import (
    PERCENTILE_DEFINITION,
    PERCENTILE_RANK_ERROR,
    WARMUP_TIME_COLUMNS,
)
from kafkasim.sweep.model import LoadedSweep, load_sweep
from kafkasim.sweep.output import MANIFEST, check_sweep_dir, prepare, publish, write_manifest
from kafkasim.sweep.plan import SweepPlan, Variant, plan_sweep
from kafkasim.sweep.plots import plot_sweep
from kafkasim.sweep.session import (
    is_local_master,
    keep_spark_log,
    kept_session,
    resolve_master,
    spark_log_path,
    stop_session,
    sweep_session,
)
from kafkasim.sweep.shipping import ship_kafkasim
from kafkasim.sweep.spark_job import (
    DEFAULT_RUNNER,
    STATUS_FAILED,
    STATUS_OK,
    JobOutput,
    ProgressCallback,
    Runner,
    RunRecord,
    run_job,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SweepAbortedError(Exception):
    """Spark could not finish the job (not a failed run: those are recorded and counted)."""


@dataclass
class SweepResult:
    output_dir: Path
    planned: int
    succeeded: int
    failed: int
    runs: list[RunRecord]
    variants: list[Variant]
    dimensions: list[Dimension]
    per_seed: pd.DataFrame
    """Statistics per (variant_id, seed, metric, group): count, error_rate, p50, p95, p99, p999."""
    per_variant: pd.DataFrame
    """Per (variant_id, metric, group, stat): n_seeds, mean, sd, ci95_low, ci95_high, pooled."""
    problems: list[str] = field(default_factory=list)
    """Metrics the sweep file asked for that could not be computed."""
    notes: list[str] = field(default_factory=list)
    """Default metrics skipped because the runs do not have their columns."""
    figures: list[Path] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Wall seconds per phase, in order: `spark_start` (0 with a session given), `runs` (the Spark job:
    every run, each writing its Parquet), `reconcile` (schemas), `aggregate`, `write` (result tables),
    `figures`."""

    @property
    def ok(self) -> bool:
        return self.failed == 0 and not self.problems

    @property
    def failed_runs(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status == STATUS_FAILED]

    def variant_table(self, stat: str = "p99") -> pd.DataFrame:
        """One row per variant: its parameters, runs ok / planned, and `stat` (mean ± 95% CI) per metric."""
        return variant_table(self, stat)


def default_output_dir(loaded: LoadedSweep) -> Path:
    if loaded.sweep.output is not None:
        out = Path(loaded.sweep.output)
        return out if out.is_absolute() else loaded.directory / out
    stem = Path(loaded.file).stem if loaded.file != "<sweep>" else "sweep"
    return loaded.directory / f"{stem}.out"


def _manifest(
    plan: SweepPlan, loaded: LoadedSweep, master: str, job: JobOutput | None, complete: bool, **extra: Any
) -> dict[str, Any]:
    runs = job.runs if job is not None else []
    return {
        "complete": complete,
        "kafkasim_version": kafkasim.__version__,
        "sweep_file": loaded.file,
        "master": master,
        "planned": len(plan.runs),
        "succeeded": sum(r.status == STATUS_OK for r in runs),
        "failed": sum(r.status == STATUS_FAILED for r in runs),
        "variants": len(plan.variants),
        "seeds": plan.seeds,
        "percentiles": {
            "function": "exact",
            "rank_error": PERCENTILE_RANK_ERROR,
            "definition": PERCENTILE_DEFINITION,
        },
        "confidence_interval": f"{CONFIDENCE:.0%} for the mean over seeds, Student t (null with one seed)",
        "warmup": f"rows sent before the scenario's warmup ({', '.join(f'{t}.{c}' for t, c in WARMUP_TIME_COLUMNS.items())}) "
        "are stored with in_warmup=true and excluded from statistics",
        "runs": [
            {
                "variant_id": r.variant_id,
                "seed": r.seed,
                "status": r.status,
                "error": None if r.error is None else r.error.splitlines()[0],
            }
            for r in runs
        ],
        **extra,
    }


def _write_inputs(partial: Path, loaded: LoadedSweep, plan: SweepPlan) -> None:
    (partial / "sweep.yaml").write_text(loaded.text, encoding="utf-8")
    (partial / "base_scenario.yaml").write_text(plan.base_yaml, encoding="utf-8")
    variants = [{"variant_id": v.variant_id, "params": v.params} for v in plan.variants]
    dims = [{"keys": list(d.keys), "values": [list(v) for v in d.values]} for d in plan.dimensions]
    text = json.dumps({"dimensions": dims, "variants": variants}, indent=2, default=str)
    (partial / "variants.json").write_text(text + "\n", encoding="utf-8")


def _params_frame(variants: list[Variant]) -> pd.DataFrame:
    return pd.DataFrame([{"variant_id": v.variant_id, **{k: _cell(x) for k, x in v.params.items()}} for v in variants])


def _cell(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) else json.dumps(value, default=str)


def _write_results(partial: Path, job: JobOutput, aggregates: Aggregates, plan: SweepPlan) -> None:
    runs = pd.DataFrame(
        [r.__dict__ for r in job.runs],
        columns=["variant_id", "seed", "status", "error", "summary_json", "requests_rows", "records_rows"],
    )
    runs.to_parquet(partial / "runs.parquet", index=False)
    aggregates.per_seed.to_parquet(partial / "per_seed.parquet", index=False)
    aggregates.per_variant.to_parquet(partial / "per_variant.parquet", index=False)
    wide = _params_frame(plan.variants).merge(aggregates.per_variant, on="variant_id", how="right")
    wide.to_csv(partial / "per_variant.csv", index=False)


def run_sweep(
    sweep_path: str | Path,
    *,
    master: str | None = None,
    out: str | Path | None = None,
    parallelism: int | None = None,
    runner: Runner | str | None = None,
    progress: ProgressCallback | None = None,
    spark: SparkSession | None = None,
    on_planned: Callable[[SweepPlan, Path], None] | None = None,
    keep_session: bool = True,
) -> SweepResult:
    """Run a sweep file on Spark (default `local[*]`) and return what it produced.

    `runner` defaults to kafkasim.run.run_scenario, looked up by import path in the executors. `spark`
    reuses an existing session, as does an active session of this process (neither is stopped).
    Otherwise the session an earlier sweep of this process started is reused if it runs the same master,
    or one is started; it is kept for the next sweep (a notebook's second sweep pays no JVM start) until
    `kafkasim.sweep.stop_session()` or the interpreter's exit, or stopped at the end with
    `keep_session=False` (the command line's one-shot sweep). A kept session's Python workers keep the
    modules they imported: after changing kafkasim's code (or a runner module's), call `stop_session()` so
    the next sweep imports it afresh. `on_planned(plan, output_dir)` is called once the plan is valid,
    before Spark.
    Raises ScenarioError (bad sweep file or variant), SparkUnavailableError (no PySpark or no Java 17+),
    OutputDirError, SweepAbortedError.
    """
    loaded = load_sweep(sweep_path)
    plan = plan_sweep(loaded)
    resolved_master = resolve_master(master, parallelism)
    if spark is None:
        check_pyspark()
        check_java()
    if out is not None:
        final = check_sweep_dir(out)
    else:
        default = default_output_dir(loaded)
        final = check_sweep_dir(default, label=f"output directory {default}")
    partial = prepare(final)
    if on_planned is not None:
        on_planned(plan, final)
    write_manifest(partial, _manifest(plan, loaded, resolved_master, None, complete=False))
    _write_inputs(partial, loaded, plan)

    t_start = time.perf_counter()
    if spark is None:
        session, started = sweep_session(master, parallelism)
        owned = session is kept_session()
    else:
        session, started, owned = spark, False, False
    timings = {"spark_start": time.perf_counter() - t_start if started else 0.0}
    job: JobOutput | None = None
    try:
        session_master = getattr(getattr(session, "sparkContext", None), "master", None)
        if isinstance(session_master, str) and not is_local_master(session_master):
            ship_kafkasim(session)  # kafkasim and its dependencies: nothing to install on the cluster
        out_uri = partial.resolve().as_uri()
        job = run_job(session, plan.runs, runner or DEFAULT_RUNNER, out_uri, progress=progress)
        timings.update(job.timings)
        t_aggregate = time.perf_counter()
        ok_variants = sorted({r.variant_id for r in job.runs if r.status == STATUS_OK})
        aggregates = aggregate(
            session, out_uri, ok_variants, job.table_columns, loaded.sweep.metric_specs
        )
        timings["aggregate"] = time.perf_counter() - t_aggregate
    except Exception as exc:
        first = spark_failure_cause(exc)
        write_manifest(partial, _manifest(plan, loaded, resolved_master, job, complete=False, error=first))
        log = keep_spark_log() if owned else spark_log_path()
        if owned:
            stop_session()  # a session Spark failed in is not one to keep
        raise SweepAbortedError(
            f"Spark could not finish the sweep: {first} (Spark log: {log}; incomplete output left in {partial})"
        ) from exc
    if owned and not keep_session:
        stop_session()

    explicit = loaded.sweep.metrics is not None
    problems = aggregates.problems if explicit else []
    notes = [] if explicit else [f"skipped default {p}" for p in aggregates.problems]
    t_write = time.perf_counter()
    _write_results(partial, job, aggregates, plan)
    t_figures = time.perf_counter()
    figures = plot_sweep(aggregates.per_variant, plan.dimensions, plan.variant_coords, partial / "figures")
    timings.update(write=t_figures - t_write, figures=time.perf_counter() - t_figures)
    manifest = _manifest(plan, loaded, resolved_master, job, complete=True, problems=problems, notes=notes)
    write_manifest(partial, manifest)
    publish(partial, final)
    return SweepResult(
        output_dir=final,
        planned=len(plan.runs),
        succeeded=manifest["succeeded"],
        failed=manifest["failed"],
        runs=job.runs,
        variants=plan.variants,
        dimensions=plan.dimensions,
        per_seed=aggregates.per_seed,
        per_variant=aggregates.per_variant,
        problems=problems,
        notes=notes,
        figures=[final / p.relative_to(partial) for p in figures],
        timings=timings,
    )


_WORKER_FAILURE = "An exception was thrown from the Python worker"
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
_EXECUTOR_NEEDS = {"simpy", "pydantic", "yaml", "hdrh", "pyarrow", "pandas", "numpy", "mypy_extensions"}
"""Top-level import names of EXECUTOR_DEPENDENCIES."""


def spark_failure_cause(exc: BaseException) -> str:
    """One line naming why Spark failed. For a Python worker's failure that is the worker's exception (the
    last line of its traceback, e.g. "ModuleNotFoundError: No module named 'kafkasim'"), not PySpark's
    "An exception was thrown from the Python worker:" that heads it."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return lines[0][:300]
    # The exception line is the first unindented line after the (indented) frames of the last traceback.
    cause = next((line for line in lines[starts[-1] + 1:] if line.strip() and not line[0].isspace()), lines[0])
    if _WORKER_FAILURE in str(exc):
        cause = f"a Python worker failed: {cause}"
    missing = _MISSING_MODULE.search(cause)
    module = None if missing is None else missing.group(1).split(".")[0]
    if module is not None and (module in _EXECUTOR_NEEDS or module == "kafkasim"):
        what = "kafkasim" if module == "kafkasim" else "kafkasim's dependencies"
        cause += (f" (the workers' Python cannot import {module}: a sweep ships {what} to a cluster's executors "
                  "itself, but a session of your own must be given to run_sweep or have "
                  "kafkasim.sweep.shipping.ship_kafkasim(spark) called; for a local master, run kafkasim with the "
                  "interpreter it is installed in)")
    return cause[:500]


def variant_table(result: SweepResult, stat: str = "p99") -> pd.DataFrame:
    """Parameters, runs ok/planned, and `stat` as 'mean ± half-width' for each (metric, group), per variant."""
    per_run = {v.variant_id: [0, 0] for v in result.variants}
    for run in result.runs:
        per_run[run.variant_id][1] += 1
        per_run[run.variant_id][0] += run.status == STATUS_OK
    rows = []
    picked = result.per_variant[result.per_variant["stat"] == stat] if not result.per_variant.empty else None
    for v in result.variants:
        row: dict[str, Any] = {"variant": v.variant_id, **{k: _cell(x) for k, x in v.params.items()}}
        ok, total = per_run[v.variant_id]
        row["runs ok"] = f"{ok}/{total}"
        if picked is not None:
            for s in picked[picked["variant_id"] == v.variant_id].itertuples(index=False):
                label = str(s.metric) if s.group == "all" else f"{s.metric} [{s.group}]"
                row[label] = _mean_ci(s.mean, s.ci95_low, s.ci95_high)
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_ci(mean: Any, low: Any, high: Any) -> str:
    if mean is None or pd.isna(mean):
        return "-"
    if low is None or pd.isna(low):
        return f"{mean:.3g}"
    return f"{mean:.3g} ± {(high - low) / 2:.2g}"


__all__ = ["MANIFEST", "SweepAbortedError", "SweepResult", "run_sweep", "variant_table"]
