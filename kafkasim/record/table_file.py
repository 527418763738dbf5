"""`TableFile`: a result table kept as its Parquet file rather than as a DataFrame in memory.

A long run's requests table is most of what its result holds (about 200 bytes a request as a DataFrame: a
million requests, 200 MB, next to the simulation that is still in memory when the result is built). A run that
spooled it (kafkasim.record.recorder) writes it sorted into a file of its own instead of reading it back
whole (``sorted_table_file``), a row group at a time: the run's summary reads the columns it needs one at a
time (``column``), `kafkasim run` copies the file into the result directory, and only a caller that asks for
the DataFrame (``RunResult.requests``) reads it all.

The file is what `RunResult.save` writes from the DataFrame, byte for byte (the same conversion through
pandas, the same row groups of ``ROW_GROUP_ROWS``; tests/record/test_table_file.py). It lives in a temporary
directory that goes with the last `TableFile` holding it, or at the process's exit; a killed process's is
cleared by the next run like the spool's (kafkasim.record.spool_dir).
"""

from __future__ import annotations

import shutil
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import DTypeLike

from kafkasim.record.spool_dir import make_spool_dir

ROW_GROUP_ROWS = 65_536
"""Rows per row group of every table kafkasim writes (a result's, and a `TableFile`'s): the rows held in
memory at once to write one (Arrow's default, 1,048,576, was a whole long run's table)."""

# Spool row groups read while sorting, kept for the next output row group (rows come in nearly sorted: a
# request's row is written when it ends, its id given when it was sent). Each is ~10 MB in Arrow (50,000
# requests); sorting 500,000 requests took the same CPU keeping 1, 2 or 4 of them, and its peak RSS was ~30 MB
# lower with 2 than with 4 (benchmarks/README.md, "Third pass").
_CACHED_ROW_GROUPS = 2


class TableFile:
    """One table as a Parquet file: its row count and columns without reading it, a column at a time, or the
    whole DataFrame."""

    def __init__(self, path: Path, num_rows: int, columns: list[str], owner: object | None = None) -> None:
        self.path = path
        self.num_rows = num_rows
        self.columns = columns
        # What deletes the file's directory when the last holder goes (None: the caller's file).
        self._owner = owner

    def __len__(self) -> int:
        return self.num_rows

    def _read(self, name: str, as_dictionary: bool = False) -> pa.Table:
        # One thread, no read-ahead: kafkasim.record.result.read_frame says why. A table, not just the column:
        # its pandas metadata gives the column back its dtype (a nullable Int8 stays one). `as_dictionary`: a
        # text column as the file stores it, a dictionary and indices per row group.
        return pq.ParquetFile(self.path, pre_buffer=False, read_dictionary=[name] if as_dictionary else None).read(
            columns=[name], use_threads=False)

    def series(self, name: str) -> pd.Series:
        """Column `name` as the DataFrame's column would be."""
        return self._read(name).to_pandas(use_threads=False)[name]

    def column(self, name: str, dtype: DTypeLike | None = None) -> np.ndarray:
        """Column `name` as a NumPy array (as ``frame[name].to_numpy(dtype)`` would give it). A string column
        comes as an object array whose equal values are one str object (8 bytes a row, not a string each)."""
        table = self._read(name)
        values = table.column(0)
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            encoded = pc.dictionary_encode(values).combine_chunks()
            words = np.array([*encoded.dictionary.to_pylist(), None], dtype=object)
            indices = encoded.indices.fill_null(len(words) - 1).to_numpy(zero_copy_only=False)
            out = words[indices]
            return out if dtype is None else out.astype(dtype)
        return table.to_pandas(use_threads=False)[name].to_numpy(dtype=dtype)

    def text(self, name: str) -> pd.Categorical:
        """String column `name` as text (a missing value "None", as ``astype(str)`` writes it), a Categorical: a
        small integer code a row (one byte for a few words) where an object array takes 8 bytes a row."""
        # Read as the file stores it, a dictionary and indices per row group: no string is made for each row.
        column = self._read(name, as_dictionary=True).unify_dictionaries().column(0)
        words_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if not (pa.types.is_string(words_type) or pa.types.is_large_string(words_type)):
            return pd.Categorical(self.series(name).astype(str))  # not text in the file: as astype(str) writes it
        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        encoded = column.combine_chunks()
        words = encoded.dictionary.to_pylist()
        codes = encoded.indices
        if codes.null_count:
            if "None" not in words:
                words.append("None")
            codes = codes.fill_null(words.index("None"))
        return pd.Categorical.from_codes(codes.to_numpy(zero_copy_only=False), categories=words)

    def floats(self, name: str) -> np.ndarray:
        """Column `name` as float64, a missing value NaN (``frame[name].to_numpy(float, na_value=nan)``)."""
        column = self._read(name).column(0)
        if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            return self.series(name).to_numpy(dtype=np.float64, na_value=np.nan)
        # Straight from Arrow: one float64 array made, where through pandas a million rows made three.
        return pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy()

    def frame(self) -> pd.DataFrame:
        from kafkasim.record.result import read_frame

        return read_frame(self.path)

    def copy_to(self, path: Path) -> None:
        shutil.copyfile(self.path, path)


class _TableDirectory:
    """The temporary directory of a sorted table: deleted when the last `TableFile` holding it goes."""

    def __init__(self, parent: Path | None) -> None:
        self.path = make_spool_dir(parent)
        self.cleanup = weakref.finalize(self, shutil.rmtree, self.path, True)


class _RowGroupWriter:
    """A Parquet file written a DataFrame piece at a time, one row group each, each converted from pandas (its
    dtypes in the file's pandas metadata) on one thread: each Arrow thread maps ~72 MB of address space, and a
    run that ran out of memory still writes its partial results."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer: pq.ParquetWriter | None = None

    def write(self, piece: pd.DataFrame) -> None:
        writer = self._writer
        self.write_table(pa.Table.from_pandas(piece, preserve_index=False, nthreads=1,
                                              schema=writer.schema if writer is not None else None))

    def write_table(self, table: pa.Table) -> None:
        """A row group already in Arrow, with the schema (and pandas metadata) `write` gives its DataFrame."""
        writer = self._writer
        if writer is None:
            writer = self._writer = pq.ParquetWriter(self.path, table.schema)
        writer.write_table(table)

    def close(self) -> None:
        assert self._writer is not None
        self._writer.close()


def write_frame(frame: pd.DataFrame, path: Path, row_group_rows: int = ROW_GROUP_ROWS) -> None:
    """`frame` as the Parquet file a result holds, ``ROW_GROUP_ROWS`` rows to a row group (the bytes
    ``pq.write_table`` writes with that row group size), without an Arrow copy of the whole table."""
    out = _RowGroupWriter(path)
    for start in range(0, max(len(frame), 1), row_group_rows):
        out.write(frame.iloc[start:start + row_group_rows])
    out.close()


def sorted_table_file(spool: Path, key: str, name: str, parent: Path | None,
                      row_group_rows: int = ROW_GROUP_ROWS) -> TableFile:
    """The table spooled in `spool`, sorted by `key` (stable), as a `TableFile` named `name`.parquet in a
    temporary directory under `parent` (the system's temporary directory if None): the file `write_frame`
    writes from the sorted DataFrame, built ``ROW_GROUP_ROWS`` rows at a time from the spool's row groups
    that hold them, so that at most a few row groups are in memory at once."""
    source = pq.ParquetFile(spool, pre_buffer=False)
    meta = source.metadata
    sizes = np.array([meta.row_group(i).num_rows for i in range(meta.num_row_groups)], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)))
    order = np.argsort(source.read(columns=[key], use_threads=False).column(0).to_numpy(), kind="stable")
    directory = _TableDirectory(parent)
    out = _RowGroupWriter(directory.path / f"{name}.parquet")
    cache: dict[int, pa.Table] = {}
    base = np.zeros(len(sizes), dtype=np.int64)  # a row group's first row in this output group's read
    total = len(order)
    for first in range(0, max(total, 1), row_group_rows):
        rows = order[first:first + row_group_rows]
        groups = np.searchsorted(starts, rows, side="right") - 1
        needed = np.unique(groups).tolist()
        pieces = []
        for group in needed:
            chunk = cache.pop(group, None)
            if chunk is None:
                chunk = source.read_row_group(group, use_threads=False)
            cache[group] = chunk  # most recently used last
            pieces.append(chunk)
        while len(cache) > max(_CACHED_ROW_GROUPS, len(needed)):
            del cache[next(iter(cache))]
        # Each output row's place in the row groups read, concatenated in group order (zero-copy in Arrow).
        base[needed] = np.concatenate(([0], np.cumsum([p.num_rows for p in pieces])))[:-1]
        joined = pa.concat_tables(pieces) if len(pieces) != 1 else pieces[0]
        selected = joined.take(pa.array(rows - starts[groups] + base[groups])) if total else joined.slice(0, 0)
        # The spool's chunks came from DataFrames (pa.Table.from_pandas), so their schema already carries the
        # pandas metadata write_frame's conversion gives the sorted frame: written as they are, with no round
        # trip through pandas (which made a Python object of every string, and left a run's memory fragmented).
        out.write_table(selected)
        del selected, joined, pieces
    out.close()
    columns = list(source.schema_arrow.names)
    return TableFile(out.path, total, columns, owner=directory)
