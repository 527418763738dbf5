"""A long run's requests table kept as its file (kafkasim.record.table_file): the file is the one a result saves
from the sorted DataFrame, byte for byte; its columns read one at a time are the DataFrame's; the summary and the
saved result of a run whose requests table stayed a file are those of the same run built in memory."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import kafkasim.run.engine as engine_module
from kafkasim.record.recorder import Recorder
from kafkasim.record.table_file import TableFile, sorted_table_file, write_frame
from kafkasim.run.engine import Engine
from kafkasim.scenario import load_scenario, with_overrides

from .rows import Row

ROOT = Path(__file__).resolve().parents[2]


def _rows(n: int, rng: np.random.Generator) -> list[Row]:
    """Request rows finished out of id order, as a run finishes them: most soon after they were sent, some
    (a long poll, a client timeout) many rows later."""
    rows = []
    for i in range(n):
        row = Row(i, ["Produce", "FetchFollower", "FetchConsumer"][i % 3], f"client-{i % 4}", i % 3, 1,
                  acks=[-1, 1, 0, None][i % 4], client_send_ms=float(i))
        row.end_ms, row.error = float(i) + 3, 0 if i % 11 else 6
        rows.append(row)
    finish = np.arange(n) + np.where(rng.random(n) < 0.05, rng.integers(0, n, n), rng.integers(0, 30, n))
    return [rows[i] for i in np.argsort(finish, kind="stable")]


@pytest.mark.parametrize(("n", "max_rows", "row_group_rows"), [(1, 1, 10), (977, 50, 64), (2000, 300, 128),
                                                                 (500, 100, 100_000)])
def test_the_sorted_file_is_the_file_saved_from_the_sorted_frame(tmp_path, n, max_rows, row_group_rows):
    in_memory = Recorder(max_rows_in_memory=None)
    spooled = Recorder(max_rows_in_memory=max_rows, spool_dir=tmp_path / "spool")
    (tmp_path / "spool").mkdir()
    for row in _rows(n, np.random.default_rng(n)):
        in_memory.finish_request(row)
    for row in _rows(n, np.random.default_rng(n)):
        spooled.finish_request(row)
    expected = in_memory.tables().requests
    assert isinstance(expected, pd.DataFrame) and expected["request_id"].tolist() == list(range(n))
    spooled._spools["requests"].finish(spooled._tail("requests"))
    table = sorted_table_file(spooled._spools["requests"].path, "request_id", "requests", tmp_path, row_group_rows)
    write_frame(expected, tmp_path / "expected.parquet", row_group_rows)
    assert table.path.read_bytes() == (tmp_path / "expected.parquet").read_bytes()
    assert len(table) == n and table.columns == list(expected.columns)
    assert pq.ParquetFile(table.path).metadata.num_row_groups == -(-n // row_group_rows)
    pd.testing.assert_frame_equal(table.frame(), expected, check_exact=True)


def test_its_columns_are_the_frames(tmp_path):
    frame = pd.DataFrame({
        "name": ["a", None, "b", "a"],
        "acks": pd.array([1, None, -1, 0], dtype="Int8"),
        "ms": [1.5, np.nan, 2.0, 3.0],
        "n": np.array([1, 2, 3, 4], dtype=np.int32),
        "flag": [True, False, True, False],
    })
    write_frame(frame, tmp_path / "t.parquet")
    table = TableFile(tmp_path / "t.parquet", len(frame), list(frame.columns))
    names = table.column("name")
    assert names.tolist() == ["a", None, "b", "a"] and names.dtype == object
    assert names[0] is names[3]  # one str object per distinct value, not one per row
    np.testing.assert_array_equal(table.column("n"), frame["n"].to_numpy())
    np.testing.assert_array_equal(table.column("flag", bool), frame["flag"].to_numpy(dtype=bool))
    np.testing.assert_array_equal(table.floats("ms"), frame["ms"].to_numpy(float, na_value=np.nan))
    np.testing.assert_array_equal(table.floats("acks"), frame["acks"].to_numpy(float, na_value=np.nan))
    assert str(table.series("acks").dtype) == "Int8"


@pytest.mark.parametrize("words", [["a", None, "b", "a", "c"], ["None", None, "b", "None", "a"], ["x"] * 5])
def test_its_text_is_the_frames_as_str_a_byte_a_row(tmp_path, words):
    frame = pd.DataFrame({"name": words})
    # Row groups of two: each has its own dictionary in the file, and the words are unified across them.
    write_frame(frame, tmp_path / "t.parquet", row_group_rows=2)
    text = TableFile(tmp_path / "t.parquet", len(frame), ["name"]).text("name")
    assert isinstance(text, pd.Categorical) and text.codes.dtype == np.int8
    assert text.tolist() == frame["name"].astype(str).tolist()
    np.testing.assert_array_equal(text == "b", frame["name"].astype(str).to_numpy() == "b")


def test_the_text_of_a_column_that_is_not_text_is_its_values_as_str(tmp_path):
    frame = pd.DataFrame({"acks": pd.array([1, None, -1, 1], dtype="Int8"), "n": np.array([3, 1, 3, 2])})
    write_frame(frame, tmp_path / "t.parquet", row_group_rows=2)
    table = TableFile(tmp_path / "t.parquet", len(frame), list(frame.columns))
    for name in frame.columns:
        assert table.text(name).tolist() == frame[name].astype(str).tolist()


def test_its_directory_goes_with_the_last_holder(tmp_path):
    rec = Recorder(max_rows_in_memory=10, spool_dir=tmp_path)
    for row in _rows(55, np.random.default_rng(1)):
        rec.finish_request(row)
    table = rec.tables().requests
    assert isinstance(table, TableFile) and table.path.is_file()
    directory = table.path.parent
    assert [p.name for p in tmp_path.iterdir()] == [directory.name]
    del table
    gc.collect()
    assert not directory.exists()


def _scenario():
    return with_overrides(load_scenario(ROOT / "scenarios" / "quickstart.yaml"),
                          ["duration=3s", "warmup=500ms", "producers[0].rate=1500/s"])


def test_a_run_whose_requests_stayed_a_file_summarises_and_saves_as_one_built_in_memory(tmp_path, monkeypatch):
    whole = Engine(_scenario()).run()
    assert isinstance(whole.requests_source, pd.DataFrame)
    monkeypatch.setattr(engine_module, "MAX_ROWS_IN_MEMORY", 500)
    kept = Engine(_scenario()).run()
    assert isinstance(kept.requests_source, TableFile)  # not read: the summary read it a column at a time
    assert kept.request_count == len(whole.requests) > 2000
    assert json.dumps(kept.summary, sort_keys=True) == json.dumps(whole.summary, sort_keys=True)
    kept.save(tmp_path / "kept")
    assert isinstance(kept.requests_source, TableFile)  # saved by copying its file
    whole.save(tmp_path / "whole")
    for name in ("requests", "records", "timeseries", "segments", "summary.json"):
        file = name if "." in name else f"{name}.parquet"
        assert (tmp_path / "kept" / file).read_bytes() == (tmp_path / "whole" / file).read_bytes(), name
    pd.testing.assert_frame_equal(kept.requests, whole.requests, check_exact=True)
    assert isinstance(kept.requests_source, pd.DataFrame)  # read once asked for


def test_a_result_whose_requests_stayed_a_file_pickles_with_its_table(monkeypatch):
    monkeypatch.setattr(engine_module, "MAX_ROWS_IN_MEMORY", 500)
    result = Engine(with_overrides(_scenario(), ["duration=1s"])).run()
    assert isinstance(result.requests_source, TableFile)
    copy = pickle.loads(pickle.dumps(result))
    assert isinstance(result.requests_source, pd.DataFrame)  # read to be pickled
    pd.testing.assert_frame_equal(copy.requests, result.requests, check_exact=True)
    assert copy.summary == result.summary and copy.request_count == result.request_count
