"""The Spark job of a sweep: one task per (variant, seed), per-request rows to Parquet by variant.

Shape of the job:

1. The driver parallelizes the RunSpecs with one partition per run (`numSlices = len(specs)`), so Spark
   schedules each run as its own task and a slow run never holds others back.
2. Each task parses the variant's scenario and calls the runner inside the executor's Python worker. Any
   exception becomes a failed run carrying its error text; the task itself succeeds, so one bad variant
   never aborts the others. A run yields one metadata row (status, error, summary, table schemas) and
   its tables as Arrow IPC chunks of CHUNK_ROWS rows, so a long run never becomes one giant row.
3. The run rows are cached and their metadata (status, error, summary, schemas) collected: that is the
   only action that runs simulations, and the progress accumulator counts it.
4. The schemas of all successful runs are unified on the driver (runs may differ, e.g. a column that is
   all-null in one run), and `mapInArrow` decodes the IPC chunks into rows of that schema, which Spark's
   writer stores as Parquet partitioned by `variant_id`, with a `seed` column.

Caching is an optimisation, not a correctness requirement: if Spark evicts a cached partition and
recomputes it, the run is repeated with the same scenario and seed and gives the same rows (runs are
deterministic).
"""

from __future__ import annotations

import importlib
import io
import json
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkasim.sweep.metrics import WARMUP_TIME_COLUMNS
from kafkasim.sweep.plan import RunSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Runner = Callable[..., Any]
"""`runner(scenario, *, seed) -> RunResult`-like: an object with `requests` (pandas or Arrow table), and
optionally `records` and `summary`."""

DEFAULT_RUNNER = "kafkasim.run:run_scenario"
"""Looked up by import path inside each executor, so the driver never imports the engine for this."""

STATUS_OK = "ok"
STATUS_FAILED = "failed"

TABLES = ("requests", "records")
"""The per-row tables of a RunResult that a sweep stores (timeseries stay with single runs)."""

CHUNK_ROWS = 65_536
"""Rows per Arrow IPC chunk: a run's tables travel as several moderate rows, never one huge blob."""

KIND_RUN = "run"

RUN_COLUMNS = (
    ("run_index", "int"),
    ("variant_id", "string"),
    ("seed", "bigint"),
    ("kind", "string"),  # "run": the run's metadata; "requests" / "records": one IPC chunk of that table
    ("status", "string"),
    ("error", "string"),
    ("summary_json", "string"),
    ("requests_rows", "bigint"),
    ("records_rows", "bigint"),
    ("requests_schema", "binary"),
    ("records_schema", "binary"),
    ("chunk", "binary"),
)

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


@dataclass
class JobOutput:
    runs: list[RunRecord]
    table_paths: dict[str, str] = field(default_factory=dict)
    """Table name -> Parquet directory (partitioned by variant_id); only tables some run produced."""
    table_columns: dict[str, list[str]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------
# Executor side
# ---------------------------------------------------------------------------------------------------------


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


def _load_scenario(scenario_yaml: str) -> Any:
    from kafkasim.scenario import load_scenario

    return load_scenario(scenario_yaml)


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
    return _spark_compatible(table.replace_schema_metadata(None))


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


def _spark_compatible(table: pa.Table) -> pa.Table:
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


def _to_ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def execute_run(spec: RunSpec, runner: Runner | str, run_index: int = 0) -> list[tuple[Any, ...]]:
    """Run one spec; return its metadata row then its table chunks (see RUN_COLUMNS).

    Never raises: a failure is a single metadata row with status 'failed' and the error with traceback.
    """
    try:
        scenario = _load_scenario(spec.scenario_yaml)
        result = resolve_runner(runner)(scenario, seed=spec.seed)
        warmup_ms = float(getattr(scenario, "warmup", 0.0) or 0.0)
        tables = {
            name: mark_warmup(as_arrow_table(getattr(result, name, None), name), name, warmup_ms)
            for name in TABLES
        }
        if tables["requests"] is None:
            raise TypeError("the runner's result has no `requests` table")
        summary = getattr(result, "summary", None)
        summary_json = None if summary is None else json.dumps(summary, sort_keys=True, default=str)
        chunks = [
            (run_index, spec.variant_id, spec.seed, name, *([None] * 7), _to_ipc(table.slice(start, CHUNK_ROWS)))
            for name, table in tables.items()
            if table is not None
            for start in range(0, max(table.num_rows, 1), CHUNK_ROWS)
        ]
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, never lost
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        return [(run_index, spec.variant_id, spec.seed, KIND_RUN, STATUS_FAILED, error, None, 0, 0, None, None, None)]
    requests, records = tables["requests"], tables["records"]
    meta = (
        run_index,
        spec.variant_id,
        spec.seed,
        KIND_RUN,
        STATUS_OK,
        None,
        summary_json,
        requests.num_rows,
        0 if records is None else records.num_rows,
        requests.schema.serialize().to_pybytes(),
        None if records is None else records.schema.serialize().to_pybytes(),
        None,
    )
    return [meta, *chunks]


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema`'s columns: missing ones all-null, types cast (int -> double etc.)."""
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _decode_batches(
    batches: Iterable[pa.RecordBatch], data_schema: pa.Schema, out_schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        columns = batch.to_pydict()
        for variant_id, seed, blob in zip(columns["variant_id"], columns["seed"], columns["chunk"], strict=True):
            if blob is None:
                continue
            table = _conform(_from_ipc(blob), data_schema)
            table = table.append_column(pa.field("seed", pa.int64()), pa.array([seed] * table.num_rows, pa.int64()))
            table = table.append_column(
                pa.field("variant_id", pa.string()), pa.array([variant_id] * table.num_rows, pa.string())
            )
            yield from table.cast(out_schema).to_batches(max_chunksize=65_536)


# ---------------------------------------------------------------------------------------------------------
# Driver side
# ---------------------------------------------------------------------------------------------------------


def unify_schemas(serialized: Iterable[bytes]) -> pa.Schema:
    """One schema for a table across runs; columns that are null in every run become strings.

    Spark cannot write a column of NullType to Parquet. `seed` and `variant_id` are the sweep's own
    columns: a runner column with either name is replaced by the sweep's value.
    """
    schemas = [pa.ipc.read_schema(pa.py_buffer(s)) for s in serialized]
    unified = pa.unify_schemas(schemas, promote_options="permissive")
    fields = [
        pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type)
        for f in unified
        if f.name not in ("seed", "variant_id")
    ]
    return pa.schema(fields)


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
    from pyspark import StorageLevel
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    sc = spark.sparkContext
    planned = len(specs)
    done_counter = sc.accumulator(0)
    failed_counter = sc.accumulator(0)
    indexed = list(enumerate(specs))

    def run_partition(items: Iterable[tuple[int, RunSpec]]) -> Iterator[tuple[Any, ...]]:
        for run_index, spec in items:
            rows = execute_run(spec, runner, run_index)
            done_counter.add(1)
            if rows[0][4] == STATUS_FAILED:
                failed_counter.add(1)
            yield from rows

    run_schema = ", ".join(f"{name} {kind}" for name, kind in RUN_COLUMNS)
    rdd = sc.parallelize(indexed, numSlices=max(planned, 1)).mapPartitions(run_partition)
    runs_df = spark.createDataFrame(rdd, run_schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with _ProgressPoller(done_counter, failed_counter, planned, progress):
            meta = sorted(
                runs_df.where(runs_df.kind == KIND_RUN).drop("chunk").collect(), key=lambda r: r["run_index"]
            )
        output = JobOutput(
            runs=[
                RunRecord(
                    variant_id=r["variant_id"],
                    seed=r["seed"],
                    status=r["status"],
                    error=r["error"],
                    summary_json=r["summary_json"],
                    requests_rows=r["requests_rows"],
                    records_rows=r["records_rows"],
                )
                for r in meta
            ]
        )
        for name in TABLES:
            schemas = [r[f"{name}_schema"] for r in meta if r["status"] == STATUS_OK and r[f"{name}_schema"]]
            if not schemas:
                continue
            data_schema = unify_schemas(schemas)
            spark_schema = from_arrow_schema(
                data_schema.append(pa.field("seed", pa.int64())).append(pa.field("variant_id", pa.string()))
            )
            out_schema = to_arrow_schema(spark_schema)
            data_schema = pa.schema(list(out_schema)[:-2])

            def decode(
                batches: Iterable[pa.RecordBatch],
                data_schema: pa.Schema = data_schema,
                out_schema: pa.Schema = out_schema,
            ) -> Iterator[pa.RecordBatch]:
                return _decode_batches(batches, data_schema, out_schema)

            path = f"{out_dir}/{name}"
            (
                runs_df.where(runs_df.kind == name)
                .select("variant_id", "seed", "chunk")
                .mapInArrow(decode, spark_schema)
                .write.partitionBy("variant_id")
                .parquet(path)
            )
            output.table_paths[name] = path
            output.table_columns[name] = list(data_schema.names)
        return output
    finally:
        runs_df.unpersist()
