import json
import os
from pathlib import Path

import pandas as pd
import pytest

from kafkasim.record.recorder import SEGMENT_COLUMNS, SEGMENT_ROLLED, BatchTrace, Recorder
from kafkasim.record.result import ResultDirectoryError, RunResult, is_result_dir
from kafkasim.record.summary import summarize

from .rows import Row


def _result(n=3, yaml_text="name: test\nseed: 1\n"):
    rec = Recorder(["c"])
    for i in range(n):
        tr = Row(i, "Produce", "p", 1, 100, acks=-1 if i else None, client_send_ms=float(i))
        tr.start_ms = tr.end_ms = i + 1.0
        rec.finish_request(tr)
        rec.finish_batch(BatchTrace(i, "p", "t", 0, 1, 10, -1, float(i), float(i), offset=i))
        rec.sample(float(i), "HighWatermark", "t-0", float(i))
        rec.segment_event(i + 0.5, 0, "t", 0, 10 * (i + 1), SEGMENT_ROLLED, "segment.bytes", True)
    t = rec.tables()
    return RunResult(t.requests, t.records, t.timeseries,
                     summarize(t.requests, t.records, seed=1, simulated_duration_ms=10.0), yaml_text,
                     segments=t.segments)


def test_save_and_load_round_trip(tmp_path):
    original = _result()
    out = original.save(tmp_path / "run")
    assert sorted(p.name for p in out.iterdir()) == [
        "records.parquet", "requests.parquet", "run-info.json", "scenario.yaml", "segments.parquet", "summary.json",
        "timeseries.parquet"]
    loaded = RunResult.load(out)
    pd.testing.assert_frame_equal(loaded.requests, original.requests)
    pd.testing.assert_frame_equal(loaded.records, original.records)
    pd.testing.assert_frame_equal(loaded.timeseries, original.timeseries)
    pd.testing.assert_frame_equal(loaded.segments, original.segments)
    assert list(loaded.segments["base_offset"]) == [10, 20, 30]
    assert str(loaded.requests["acks"].dtype) == "Int8"
    assert loaded.summary == original.summary and loaded.scenario_yaml == original.scenario_yaml
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary directories left


def test_a_result_written_before_the_segments_table_loads_with_an_empty_one(tmp_path):
    out = _result().save(tmp_path / "run")
    (out / "segments.parquet").unlink()
    loaded = RunResult.load(out)
    assert loaded.segments.empty and tuple(loaded.segments.columns) == SEGMENT_COLUMNS
    assert len(loaded.requests) == 3


def test_without_scenario_no_yaml(tmp_path):
    loaded = RunResult.load(_result(yaml_text=None).save(tmp_path / "r"))
    assert loaded.scenario_yaml is None


def test_replacing_a_result_is_complete_and_leaves_no_debris(tmp_path):
    target = tmp_path / "run"
    _result(n=3).save(target)
    _result(n=5).save(target, extra_writer=lambda d: (d / "figures").mkdir())
    loaded = RunResult.load(target)
    assert len(loaded.requests) == 5 and (target / "figures").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_extra_writer_failure_leaves_the_old_result_untouched(tmp_path):
    target = tmp_path / "run"
    _result(n=3).save(target)

    def broken(directory: Path) -> None:
        (directory / "figures").mkdir()
        raise OSError("disk full while drawing")

    with pytest.raises(OSError, match="disk full"):
        _result(n=5).save(target, extra_writer=broken)
    assert len(RunResult.load(target).requests) == 3 and not (target / "figures").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_crash_during_write_never_leaves_a_result_under_the_name(tmp_path, monkeypatch):
    def crash(self, *args, **kwargs):
        raise KeyboardInterrupt

    import pyarrow.parquet as pq

    monkeypatch.setattr(pq.ParquetWriter, "write_table", crash)  # what RunResult.save writes row groups with
    with pytest.raises(KeyboardInterrupt):
        _result().save(tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_replace_an_unrelated_directory(tmp_path):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("...")
    with pytest.raises(ResultDirectoryError, match="is not empty .thesis.tex. and is not a kafkasim result"):
        _result().save(precious)
    assert (precious / "thesis.tex").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    _result().save(empty)
    assert is_result_dir(empty)


def test_load_incomplete_or_foreign_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ResultDirectoryError, match="not a directory"):
        RunResult.load(tmp_path / "nope")
    out = _result().save(tmp_path / "run")
    os.remove(out / "records.parquet")
    with pytest.raises(ResultDirectoryError, match="not a complete kafkasim result: missing records.parquet"):
        RunResult.load(out)
    bad = _result().save(tmp_path / "bad")
    (bad / "summary.json").write_text("{not json")
    with pytest.raises(ResultDirectoryError, match="summary.json is not valid JSON"):
        RunResult.load(bad)


def test_saving_is_deterministic(tmp_path):
    a = _result().save(tmp_path / "a")
    b = _result().save(tmp_path / "b")
    for name in ["requests.parquet", "records.parquet", "timeseries.parquet", "summary.json"]:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert json.loads((a / "summary.json").read_text())["seed"] == 1


def test_a_saved_result_has_ordinary_permissions_not_mkdtemps_private_ones(tmp_path):
    old = os.umask(0o022)
    try:
        out = _result().save(tmp_path / "run")
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(("rows", "row_group_rows"), [(0, 1000), (2500, 1000), (2500, 1024 * 1024)])
def test_tables_are_written_a_row_group_at_a_time_as_write_table_writes_them(tmp_path, monkeypatch, rows,
                                                                             row_group_rows):
    # RunResult.save converts a row group at a time to Arrow (no Arrow copy of a whole table beside the
    # DataFrame); the files are still the bytes pq.write_table writes.
    import pyarrow as pa
    import pyarrow.parquet as pq

    import kafkasim.record.result as result_module

    monkeypatch.setattr(result_module, "ROW_GROUP_ROWS", row_group_rows)
    result = _result(n=rows)
    result.save(tmp_path / "run")
    for name in ("requests", "records", "timeseries"):
        expected = tmp_path / f"{name}.parquet"
        table = pa.Table.from_pandas(getattr(result, name), preserve_index=False, nthreads=1)
        pq.write_table(table, expected, row_group_size=row_group_rows if row_group_rows < 1024 * 1024 else None)
        assert (tmp_path / "run" / f"{name}.parquet").read_bytes() == expected.read_bytes(), name


_COUNT_THREADS_AROUND_A_LOAD = """
import os, sys
import pandas, pyarrow.parquet  # imported first: their own import may start threads, which are not the load's
from kafkasim.record.result import RunResult
before = len(os.listdir("/proc/self/task"))
RunResult.load(sys.argv[1])
print(before, len(os.listdir("/proc/self/task")))
"""


def test_loading_a_result_starts_no_threads(tmp_path):
    """Arrow's thread pools, once started, can end the process in std::terminate at the interpreter's exit
    (apache/arrow#34314): CI saw `kafkasim compare` print its error and then die with SIGABRT instead of exit 2.
    Loading a result reads on the calling thread, so `compare` and `report` never start those pools."""
    import subprocess
    import sys

    out = _result().save(tmp_path / "run")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    counted = subprocess.run([sys.executable, "-c", _COUNT_THREADS_AROUND_A_LOAD, str(out)], capture_output=True,
                             text=True, check=True, env=env)
    before, after = map(int, counted.stdout.split())
    assert after == before
