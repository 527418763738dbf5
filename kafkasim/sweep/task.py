"""What one Spark task of a sweep does, in an executor's Python worker: run, then write its own Parquet.

A task gets a plain tuple (run index, variant id, seed, resolved scenario YAML), parses the scenario,
calls the runner, and writes the run's tables with pyarrow straight into the sweep's output directory:

    <out>/<table>/variant_id=<variant_id>/part-<run index>.parquet      (data columns, in_warmup, seed)

Only a small tuple travels back to the driver (`TaskResult`: status, error, summary, row counts, the
tables' Arrow schemas, timings); no row passes through Spark. Spark tasks then read the files to aggregate.

The files are written under temporary names (`.part-….tmp`) and renamed only when every table of the run
is written, so a run that fails half-way leaves no file that could be mistaken for its rows. A task that
Spark retries writes the same bytes again (runs are deterministic), so a retry never duplicates rows.

This module is what each Python worker imports for a task: it imports pyarrow and, when a run starts, the
runner's own modules; never pandas-only helpers, pyspark.sql, matplotlib or the rest of kafkasim.sweep.
"""

from __future__ import annotations

import importlib
import json
import os
import time
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

# pydantic and yaml, which this imports, are what parsing the scenario imports anyway.
from kafkasim.sweep.metrics import WARMUP_TIME_COLUMNS

Runner = Callable[..., Any]
"""`runner(scenario, *, seed) -> RunResult`-like: an object with `requests` (pandas or Arrow table), and
optionally `records` and `summary`."""

STATUS_OK = "ok"
STATUS_FAILED = "failed"

TABLES = ("requests", "records")
"""The per-row tables of a RunResult that a sweep stores (timeseries stay with single runs)."""

ROW_GROUP_ROWS = 65_536
"""Rows per Parquet row group: a long run is several row groups, which Spark can read in parallel."""


class RunTask(NamedTuple):
    """What the driver sends a task: plain values, so the worker imports nothing to unpickle them."""

    run_index: int
    variant_id: str
    seed: int
    scenario_yaml: str


class TaskResult(NamedTuple):
    """What a task sends back: the run's outcome, never its rows."""

    run_index: int
    variant_id: str
    seed: int
    status: str
    error: str | None
    summary_json: str | None
    rows: dict[str, int]
    """Table name -> rows written (only the tables the run produced)."""
    schemas: dict[str, bytes]
    """Table name -> the written file's Arrow schema (serialized), for the driver to reconcile runs."""
    timings: dict[str, float]
    """Seconds spent by this task: parse, run, write; and the worker's pid (as a float) and first-task flag."""


def resolve_runner(runner: Runner | str) -> Runner:
    """A callable runner, from itself or from a `"module:function"` import path."""
    if callable(runner):
        return runner
    module_name, _, attr = runner.partition(":")
    if not module_name or not attr:
        raise ValueError(f"runner import path must look like 'package.module:function', got {runner!r}")
    resolved = getattr(importlib.import_module(module_name), attr)
    if not callable(resolved):
        raise TypeError(f"runner {runner!r} is not callable")
    return resolved


def as_arrow_table(data: Any, what: str) -> pa.Table | None:
    """A run's table as Arrow with Spark-compatible types; None if the result has no such table."""
    if data is None:
        return None
    if isinstance(data, pa.Table):
        table = data
    elif hasattr(data, "to_arrow"):
        table = data.to_arrow()
    else:
        import pandas as pd

        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"RunResult.{what} must be a pandas DataFrame or pyarrow Table, got {type(data)}")
        table = pa.Table.from_pandas(data, preserve_index=False)
    return spark_compatible(table.replace_schema_metadata(None))


def mark_warmup(table: pa.Table | None, name: str, warmup_ms: float) -> pa.Table | None:
    """Add `in_warmup`: the row was sent before the scenario's warm-up ended (excluded from statistics).

    Rows without a send time (or tables without the column) are kept: a row is only excluded when it is
    known to belong to the warm-up.
    """
    if table is None:
        return None
    column = WARMUP_TIME_COLUMNS[name]
    if warmup_ms <= 0 or column not in table.column_names:
        flags = pa.array([False] * table.num_rows, pa.bool_())
    else:
        sent = table.column(column).cast(pa.float64())
        flags = pc.fill_null(pc.less(sent, warmup_ms), False)
    if "in_warmup" in table.column_names:
        table = table.drop_columns(["in_warmup"])
    return table.append_column("in_warmup", flags)


def spark_compatible(table: pa.Table) -> pa.Table:
    """Cast types Spark cannot hold (unsigned ints, dictionaries, large strings) to ones it can."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_unsigned_integer(t):
            t = pa.int64()
        elif pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_large_binary(t):
            t = pa.binary()
        fields.append(pa.field(f.name, t))
    target = pa.schema(fields)
    return table if target == table.schema else table.cast(target)


def with_seed(table: pa.Table, seed: int) -> pa.Table:
    """The sweep's `seed` column last; a runner column named `seed` or `variant_id` gives way to the sweep's."""
    drop = [c for c in ("seed", "variant_id") if c in table.column_names]
    if drop:
        table = table.drop_columns(drop)
    return table.append_column(pa.field("seed", pa.int64()), pa.array([seed] * table.num_rows, pa.int64()))


def file_path(out_dir: str, table: str, variant_id: str, run_index: int) -> str:
    """Where a run's table goes, inside the output directory's filesystem (see `filesystem`)."""
    return f"{out_dir}/{table}/variant_id={variant_id}/part-{run_index:05d}.parquet"


def filesystem(out_uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and the path inside it for an output URI (`file:///…`, `hdfs://…`, `s3://…`)."""
    fs, path = pafs.FileSystem.from_uri(out_uri)
    return fs, path.rstrip("/")


def write_table(fs: pafs.FileSystem, path: str, table: pa.Table) -> str:
    """Write `table` as Parquet to a temporary name beside `path`; return that name (renamed by the caller)."""
    directory, _, name = path.rpartition("/")
    fs.create_dir(directory, recursive=True)
    tmp = f"{directory}/.{name}.{os.getpid()}.tmp"
    with fs.open_output_stream(tmp) as sink:
        pq.write_table(table, sink, row_group_size=ROW_GROUP_ROWS, compression="snappy")
    return tmp


def _load_scenario(scenario_yaml: str) -> Any:
    from kafkasim.scenario import load_scenario

    return load_scenario(scenario_yaml)


_FIRST_TASK = [True]


def execute_run(task: RunTask, runner: Runner | str, out_uri: str) -> TaskResult:
    """Run one task and write its tables under `out_uri`; never raises (a failure is a failed TaskResult,
    with the error and its traceback, and no file left behind)."""
    first, _FIRST_TASK[0] = _FIRST_TASK[0], False
    timings: dict[str, float] = {"pid": float(os.getpid()), "first_task_in_worker": float(first)}
    written: list[tuple[str, str]] = []
    fs: pafs.FileSystem | None = None
    try:
        t0 = time.perf_counter()
        run = resolve_runner(runner)
        scenario = _load_scenario(task.scenario_yaml)
        t1 = time.perf_counter()
        cpu1 = time.process_time()
        result = run(scenario, seed=task.seed)
        t2 = time.perf_counter()
        timings.update(parse_s=t1 - t0, run_s=t2 - t1, run_cpu_s=time.process_time() - cpu1)
        warmup_ms = float(getattr(scenario, "warmup", 0.0) or 0.0)
        tables = {
            name: mark_warmup(as_arrow_table(getattr(result, name, None), name), name, warmup_ms)
            for name in TABLES
        }
        if tables["requests"] is None:
            raise TypeError("the runner's result has no `requests` table")
        summary = getattr(result, "summary", None)
        summary_json = None if summary is None else json.dumps(summary, sort_keys=True, default=str)
        fs, out_dir = filesystem(out_uri)
        rows: dict[str, int] = {}
        schemas: dict[str, bytes] = {}
        for name, table in tables.items():
            if table is None:
                continue
            table = with_seed(table, task.seed)
            path = file_path(out_dir, name, task.variant_id, task.run_index)
            written.append((write_table(fs, path, table), path))
            rows[name] = table.num_rows
            schemas[name] = table.schema.serialize().to_pybytes()
        for tmp, path in written:
            fs.move(tmp, path)
        written.clear()
        timings["write_s"] = time.perf_counter() - t2
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, never lost
        for tmp, _ in written:
            try:
                if fs is not None:
                    fs.delete_file(tmp)
            except OSError:
                pass
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        return TaskResult(task.run_index, task.variant_id, task.seed, STATUS_FAILED, error, None, {}, {}, timings)
    return TaskResult(task.run_index, task.variant_id, task.seed, STATUS_OK, None, summary_json, rows, schemas,
                      timings)


def run_counted(task: RunTask, runner: Runner | str, out_uri: str, done: Any, failed: Any) -> TaskResult:
    """`execute_run`, counted in the job's accumulators (the driver's progress display reads them)."""
    result = execute_run(task, runner, out_uri)
    done.add(1)
    if result.status == STATUS_FAILED:
        failed.add(1)
    return result
