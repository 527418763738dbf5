"""The Spark job of a sweep: one task per (variant, seed); each task writes its own run's Parquet.

Shape of the job:

1. The driver parallelizes one `RunTask` (plain values) per run with one partition per run
   (`numSlices = len(tasks)`), so Spark schedules each run as its own task and a slow run never holds
   others back.
2. Each task (kafkasim.sweep.task, in the executor's Python worker) parses the variant's scenario, calls
   the runner and writes the run's tables with pyarrow straight into the output directory:
   `<out>/<table>/variant_id=<id>/part-<run index>.parquet`, with a `seed` column. Any exception becomes a
   failed run carrying its error text and leaves no file; the task itself succeeds, so one bad variant
   never aborts the others.
3. The driver collects the tasks' small results (status, error, summary, row counts, Arrow schemas): that
   is the only action, and the progress accumulators count it. No row passes through Spark.
4. Runs may differ in schema (say, a column that is all-null in one run); the driver unifies the schemas of
   all successful runs into one that Spark can hold and rewrites, with pyarrow, the rare file that differs
   from it. One Spark task per variant then reads its files to aggregate (aggregate.py).

Nothing is cached: a task that Spark re-runs (a lost executor) repeats the run with the same scenario and
seed and rewrites the same files (runs are deterministic).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkasim.sweep.plan import RunSpec
from kafkasim.sweep.task import (
    STATUS_FAILED,
    STATUS_OK,
    TABLES,
    Runner,
    RunTask,
    TaskResult,
    file_path,
    filesystem,
    resolve_runner,
    run_counted,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_RUNNER",
    "STATUS_FAILED",
    "STATUS_OK",
    "TABLES",
    "JobOutput",
    "ProgressCallback",
    "RunRecord",
    "Runner",
    "resolve_runner",
    "run_job",
    "unify_schemas",
]

DEFAULT_RUNNER = "kafkasim.run:run_scenario"
"""Looked up by import path inside each executor, so the driver never imports the engine for this."""

ProgressCallback = Callable[[int, int, int], None]
"""`progress(done, failed, planned)`: called from a background thread while runs complete."""


@dataclass(frozen=True)
class RunRecord:
    """What the driver keeps of one run: identity, outcome and the runner's summary (JSON text)."""

    variant_id: str
    seed: int
    status: str
    error: str | None
    summary_json: str | None
    requests_rows: int
    records_rows: int
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    """Seconds the task spent parsing, running and writing (see kafkasim.sweep.task.TaskResult)."""


@dataclass
class JobOutput:
    runs: list[RunRecord]
    table_paths: dict[str, str] = field(default_factory=dict)
    """Table name -> Parquet directory (partitioned by variant_id); only tables some run produced."""
    table_columns: dict[str, list[str]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    """Driver-side seconds: `runs` (the job), `reconcile` (schemas unified, differing files rewritten)."""


def unify_schemas(serialized: Iterable[bytes]) -> pa.Schema:
    """One schema for a table across runs; columns that are null in every run become strings.

    Spark cannot hold a column of NullType. `seed` and `variant_id` are the sweep's own columns and are
    left out here (the caller appends `seed`; `variant_id` is the directory partition).
    """
    schemas = [pa.ipc.read_schema(pa.py_buffer(s)) for s in serialized]
    unified = pa.unify_schemas(schemas, promote_options="permissive")
    fields = [
        pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type)
        for f in unified
        if f.name not in ("seed", "variant_id")
    ]
    return pa.schema(fields)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema`'s columns: missing ones all-null, types cast (int -> double etc.)."""
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def spark_schema_for(data_schema: pa.Schema) -> pa.Schema:
    """`data_schema` + `seed`, as Spark will read it back (Spark's types mapped to Arrow's again)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    return to_arrow_schema(from_arrow_schema(data_schema.append(pa.field("seed", pa.int64()))))


def reconcile(out_uri: str, name: str, results: list[TaskResult]) -> pa.Schema | None:
    """Unify one table's schema over the successful runs; rewrite each file whose schema differs.

    Returns the table's schema as stored (data columns and `seed`), or None if no run produced the table.
    """
    have = [r for r in results if r.status == STATUS_OK and name in r.schemas]
    if not have:
        return None
    target = spark_schema_for(unify_schemas(r.schemas[name] for r in have))
    fs, out_dir = filesystem(out_uri)
    for r in have:
        schema = pa.ipc.read_schema(pa.py_buffer(r.schemas[name]))
        if schema.equals(target, check_metadata=False):
            continue
        path = file_path(out_dir, name, r.variant_id, r.run_index)
        table = _conform(pq.read_table(path, filesystem=fs), target)
        tmp = f"{path}.conformed.tmp"
        with fs.open_output_stream(tmp) as sink:
            pq.write_table(table, sink, row_group_size=65_536, compression="snappy")
        fs.move(tmp, path)
    return target


class _ProgressPoller:
    """Polls the run counters (Spark accumulators, merged on the driver as tasks finish) in a thread."""

    def __init__(self, done: Any, failed: Any, planned: int, callback: ProgressCallback | None) -> None:
        self._done, self._failed, self._planned, self._callback = done, failed, planned, callback
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kafkasim-sweep-progress", daemon=True)

    def _report(self) -> None:
        if self._callback is not None:
            # A retried task adds again (accumulators in transformations are at-least-once): clamp.
            done = min(int(self._done.value), self._planned)
            self._callback(done, min(int(self._failed.value), done), self._planned)

    def _loop(self) -> None:
        while not self._stop.wait(0.25):
            self._report()

    def __enter__(self) -> _ProgressPoller:
        if self._callback is not None:
            self._callback(0, 0, self._planned)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._report()


def run_job(
    spark: SparkSession,
    specs: list[RunSpec],
    runner: Runner | str,
    out_dir: str,
    *,
    progress: ProgressCallback | None = None,
) -> JobOutput:
    """Run every spec on Spark; write `<out_dir>/<table>/variant_id=…/*.parquet`; return per-run records."""
    sc = spark.sparkContext
    planned = len(specs)
    done_counter = sc.accumulator(0)
    failed_counter = sc.accumulator(0)
    tasks = [RunTask(i, s.variant_id, s.seed, s.scenario_yaml) for i, s in enumerate(specs)]
    t0 = time.perf_counter()
    rdd = sc.parallelize(tasks, numSlices=max(planned, 1)).map(
        lambda task: run_counted(task, runner, out_dir, done_counter, failed_counter)
    )
    with _ProgressPoller(done_counter, failed_counter, planned, progress):
        results: list[TaskResult] = sorted(rdd.collect(), key=lambda r: r.run_index)
    t1 = time.perf_counter()
    output = JobOutput(
        runs=[
            RunRecord(
                variant_id=r.variant_id,
                seed=r.seed,
                status=r.status,
                error=r.error,
                summary_json=r.summary_json,
                requests_rows=r.rows.get("requests", 0),
                records_rows=r.rows.get("records", 0),
                timings=r.timings,
            )
            for r in results
        ]
    )
    for name in TABLES:
        schema = reconcile(out_dir, name, results)
        if schema is None:
            continue
        output.table_paths[name] = f"{out_dir.rstrip('/')}/{name}"
        output.table_columns[name] = [n for n in schema.names if n != "seed"]
    output.timings.update(runs=t1 - t0, reconcile=time.perf_counter() - t1)
    return output
