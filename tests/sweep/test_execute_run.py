"""What one Spark task does with one run, tested in-process: chunks, warm-up flags, failures as rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kafkasim.sweep import spark_job
from kafkasim.sweep.model import load_sweep
from kafkasim.sweep.plan import RunSpec, plan_sweep
from kafkasim.sweep.spark_job import (
    KIND_RUN,
    RUN_COLUMNS,
    STATUS_FAILED,
    STATUS_OK,
    execute_run,
    unify_schemas,
)


class _Result:
    def __init__(self, requests: pd.DataFrame) -> None:
        self.requests = requests
        self.records = None
        self.summary = {"p99": np.float64(1.5)}


def _runner(scenario: Any, *, seed: int) -> _Result:
    sent = np.arange(1000, dtype=float) * 10.0  # 0 .. 9990 ms; the base scenario's warm-up is 1 s
    return _Result(pd.DataFrame({"api": "Produce", "client_send_ms": sent, "TotalTimeMs": sent / 100, "acks": np.uint8(1)}))


def _raising(scenario: Any, *, seed: int) -> _Result:
    raise ValueError(f"no good for seed {seed}")


@pytest.fixture
def spec(sweep_dir: Path) -> RunSpec:
    (sweep_dir / "sweep.yaml").write_text("base: base.yaml\nseeds: [9]\n")
    return plan_sweep(load_sweep(sweep_dir / "sweep.yaml")).runs[0]


def test_a_run_is_one_metadata_row_and_its_table_in_chunks(spec: RunSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spark_job, "CHUNK_ROWS", 300)
    rows = execute_run(spec, _runner, run_index=4)
    assert all(len(r) == len(RUN_COLUMNS) for r in rows)
    meta, chunks = rows[0], rows[1:]
    assert meta[:5] == (4, "v000", 9, KIND_RUN, STATUS_OK)
    assert meta[6] == '{"p99": 1.5}' and meta[7] == 1000
    assert [c[3] for c in chunks] == ["requests"] * 4  # 300 + 300 + 300 + 100 rows
    table = pa.concat_tables(spark_job._from_ipc(c[-1]) for c in chunks)
    assert table.num_rows == 1000
    assert table.column("client_send_ms").to_pylist() == [i * 10.0 for i in range(1000)]
    # Rows sent before the 1 s warm-up are flagged, not dropped; uint8 became a type Spark can hold.
    assert table.column("in_warmup").to_pylist() == [i * 10.0 < 1000.0 for i in range(1000)]
    assert table.schema.field("acks").type == pa.int64()
    assert unify_schemas([meta[9]]).names == ["api", "client_send_ms", "TotalTimeMs", "acks", "in_warmup"]


def test_a_raising_runner_is_one_failed_row_with_its_traceback(spec: RunSpec) -> None:
    rows = execute_run(spec, _raising, run_index=0)
    assert len(rows) == 1
    assert rows[0][3:5] == (KIND_RUN, STATUS_FAILED)
    assert rows[0][5].startswith("ValueError: no good for seed 9\nTraceback")


def test_the_default_runner_is_found_by_import_path() -> None:
    assert spark_job.resolve_runner("kafkasim.sweep.confidence:ci95_half_width")([1.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match="package.module:function"):
        spark_job.resolve_runner("no_colon")
