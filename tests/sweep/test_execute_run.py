"""What one Spark task does with one run, tested in-process: its own Parquet files, warm-up flags, failures
as results with no file left behind; and the driver's reconciling of runs whose schemas differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkasim.sweep import task as task_module
from kafkasim.sweep.model import load_sweep
from kafkasim.sweep.plan import plan_sweep
from kafkasim.sweep.spark_job import reconcile, unify_schemas
from kafkasim.sweep.task import STATUS_FAILED, STATUS_OK, RunTask, execute_run, resolve_runner


class _Result:
    def __init__(self, requests: pd.DataFrame, records: pd.DataFrame | None = None) -> None:
        self.requests = requests
        self.records = records
        self.summary = {"p99": np.float64(1.5)}


def _runner(scenario: Any, *, seed: int) -> _Result:
    sent = np.arange(1000, dtype=float) * 10.0  # 0 .. 9990 ms; the base scenario's warm-up is 1 s
    return _Result(pd.DataFrame({"api": "Produce", "client_send_ms": sent, "TotalTimeMs": sent / 100,
                                 "acks": np.uint8(1), "seed": 99}))


def _raising(scenario: Any, *, seed: int) -> _Result:
    raise ValueError(f"no good for seed {seed}")


@pytest.fixture
def run_task(sweep_dir: Path) -> RunTask:
    (sweep_dir / "sweep.yaml").write_text("base: base.yaml\nseeds: [9]\n")
    spec = plan_sweep(load_sweep(sweep_dir / "sweep.yaml")).runs[0]
    return RunTask(4, spec.variant_id, spec.seed, spec.scenario_yaml)


def test_a_run_writes_its_own_parquet_and_returns_only_its_outcome(run_task: RunTask, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = execute_run(run_task, _runner, out.as_uri())
    assert (result.run_index, result.variant_id, result.seed, result.status) == (4, "v000", 9, STATUS_OK)
    assert result.summary_json == '{"p99": 1.5}' and result.rows == {"requests": 1000}
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "requests/variant_id=v000/part-00004.parquet"
    ]
    table = pq.read_table(out / "requests" / "variant_id=v000" / "part-00004.parquet")
    assert table.column_names == ["api", "client_send_ms", "TotalTimeMs", "acks", "in_warmup", "seed"]
    assert table.column("client_send_ms").to_pylist() == [i * 10.0 for i in range(1000)]
    # Rows sent before the 1 s warm-up are flagged, not dropped; uint8 became a type Spark can hold; the
    # sweep's seed replaces a runner column of that name.
    assert table.column("in_warmup").to_pylist() == [i * 10.0 < 1000.0 for i in range(1000)]
    assert table.schema.field("acks").type == pa.int64()
    assert set(table.column("seed").to_pylist()) == {9}
    assert pa.ipc.read_schema(pa.py_buffer(result.schemas["requests"])) == table.schema
    assert {"parse_s", "run_s", "write_s"} <= set(result.timings)


def test_a_raising_runner_is_a_failed_result_with_its_traceback(run_task: RunTask, tmp_path: Path) -> None:
    result = execute_run(run_task, _raising, (tmp_path / "out").as_uri())
    assert result.status == STATUS_FAILED
    assert result.error is not None and result.error.startswith("ValueError: no good for seed 9\nTraceback")
    assert not (tmp_path / "out").exists()


def test_a_run_that_fails_while_writing_leaves_no_file(run_task: RunTask, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def both(scenario: Any, *, seed: int) -> _Result:
        result = _runner(scenario, seed=seed)
        result.records = pd.DataFrame({"send_ms": [1.0, 2000.0], "produce_latency_ms": [3.0, 4.0]})
        return result

    calls: list[str] = []
    write = task_module.write_table

    def failing_second(fs: Any, path: str, table: pa.Table) -> str:
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        return write(fs, path, table)

    monkeypatch.setattr(task_module, "write_table", failing_second)
    out = tmp_path / "out"
    result = execute_run(run_task, both, out.as_uri())
    assert result.status == STATUS_FAILED and "OSError: disk full" in (result.error or "")
    assert len(calls) == 2  # the requests table was written, then the records table failed
    assert [p for p in out.rglob("*") if p.is_file()] == []  # the written one was removed


def test_runs_whose_schemas_differ_are_rewritten_to_one_schema(sweep_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    (sweep_dir / "sweep.yaml").write_text("base: base.yaml\nseeds: [1, 2]\n")
    specs = plan_sweep(load_sweep(sweep_dir / "sweep.yaml")).runs

    def varying(scenario: Any, *, seed: int) -> _Result:
        # Seed 1: `error` all null and `count` integer; seed 2: `error` strings and `count` float.
        error = [None, None] if seed == 1 else ["NONE", "TIMEOUT"]
        count = pa.array([1, 2], pa.int64()) if seed == 1 else pa.array([1.5, 2.5], pa.float64())
        return _Result(pa.table({"client_send_ms": [5000.0, 6000.0], "error": pa.array(error), "count": count}))

    out = (tmp_path / "out").as_uri()
    results = [execute_run(RunTask(i, s.variant_id, s.seed, s.scenario_yaml), varying, out)
               for i, s in enumerate(specs)]
    assert unify_schemas(r.schemas["requests"] for r in results).names == ["client_send_ms", "error", "count",
                                                                          "in_warmup"]
    schema = reconcile(out, "requests", results)
    assert schema is not None
    assert [(f.name, str(f.type)) for f in schema] == [
        ("client_send_ms", "double"), ("error", "string"), ("count", "double"), ("in_warmup", "bool"),
        ("seed", "int64"),
    ]
    for i, seed in enumerate((1, 2)):
        table = pq.read_table(tmp_path / "out" / "requests" / "variant_id=v000" / f"part-{i:05d}.parquet")
        assert table.schema.equals(schema, check_metadata=False)
        assert table.column("count").to_pylist() == ([1.0, 2.0] if seed == 1 else [1.5, 2.5])
    assert reconcile(out, "records", results) is None


def test_the_default_runner_is_found_by_import_path() -> None:
    assert resolve_runner("kafkasim.sweep.confidence:ci95_half_width")([1.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match="package.module:function"):
        resolve_runner("no_colon")
