"""`RunResult`: the tables and summary of one run, saved to and loaded from a result directory.

A result directory holds `requests.parquet`, `records.parquet`, `timeseries.parquet`, `segments.parquet` (every
segment roll; results written before it existed load with an empty one), `summary.json`,
`stalls.parquet` (when the scenario had stalls on: kafkasim.record.stalls), `retransmissions.parquet` (when a
connection's TCP retransmitted anything: kafkasim.record.retransmissions),
`scenario.yaml` (when the run had a scenario), whatever the report layer adds (`figures/`, `report.html`)
and, written
last, `run-info.json`: the facts of this particular run that a replay cannot reproduce (wall seconds, the
kafkasim version, when it was written, whether the run was cut short). Every other file is a function of
the scenario and the seed alone, byte for byte. `run-info.json` is also how kafkasim recognises a
directory it wrote: only such a directory, holding nothing but kafkasim's files, is ever replaced (see
kafkasim.record.output_dir).

Saving is atomic: everything is written into a hidden temporary sibling directory which is then renamed
into place, so a crash leaves either the old result, or the new one, never a half-written directory under
the result's name.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from kafkasim.record.output_dir import Layout, OutputDirError, check_output_dir, write_dir
from kafkasim.record.recorder import segments_frame
from kafkasim.record.retransmissions import RETRANSMISSIONS_FILE
from kafkasim.record.stalls import STALLS_FILE
from kafkasim.record.table_file import ROW_GROUP_ROWS, TableFile, write_frame

TABLES = ("requests", "records", "timeseries")
# Tables a result may lack (written by a later kafkasim than the result): loaded as empty frames of their columns.
OPTIONAL_TABLES = ("segments",)
SUMMARY_FILE = "summary.json"
SCENARIO_FILE = "scenario.yaml"
RUN_INFO_FILE = "run-info.json"
FIGURES_DIR = "figures"
# A run on a real Kafka cluster (kafkasim.real) keeps its nodes' server.log and request log here.
KAFKA_LOGS_DIR = "kafka"
# The HTML report kafkasim.report.html writes next to the figures (and its name while being written).
REPORT_FILE = "report.html"
REQUIRED_FILES = (*(f"{t}.parquet" for t in TABLES), SUMMARY_FILE)
# Every figure kafkasim.report.write_figures can draw (its builders use these names; a test keeps them equal).
FIGURE_NAMES = ("latency_cdf", "latency_histogram", "request_breakdown", "log_offsets", "isr_size", "purgatory",
                "fetch_waits", "produce_swimlane", "failover_swimlane")
_RESULT_FILES = frozenset((*REQUIRED_FILES, *(f"{t}.parquet" for t in OPTIONAL_TABLES), STALLS_FILE,
                           RETRANSMISSIONS_FILE, SCENARIO_FILE, RUN_INFO_FILE, REPORT_FILE, f".{REPORT_FILE}.partial"))
_FIGURE_FILES = frozenset(name for f in FIGURE_NAMES for name in (f"{f}.png", f".{f}.png.partial"))
_PLOT_STAGING_PREFIX = ".figures.tmp-"  # kafkasim plot's staging directory (inside the result)


class ResultDirectoryError(OutputDirError):
    """A directory that is not (or not entirely) a kafkasim result, or one kafkasim will not write."""


def _foreign_figures(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name not in _FIGURE_FILES or p.is_symlink() or not p.is_file()]


def _foreign_result_entries(directory: Path) -> list[str]:
    foreign: list[str] = []
    for path in directory.iterdir():
        name = path.name
        if path.is_symlink():
            foreign.append(name)
        elif name in _RESULT_FILES:
            if not path.is_file():
                foreign.append(name)
        elif name == FIGURES_DIR and path.is_dir():
            foreign.extend(f"{FIGURES_DIR}/{n}" for n in _foreign_figures(path))
        elif name == KAFKA_LOGS_DIR and path.is_dir() and (directory / RUN_INFO_FILE).is_file():
            pass  # a real run's Kafka logs, written with it
        elif not (name.startswith(_PLOT_STAGING_PREFIX) and path.is_dir()):
            foreign.append(name)
    return foreign


def _is_result_written_by_kafkasim(directory: Path) -> bool:
    # Results written before run-info.json existed are recognised by having every required file.
    return (directory / RUN_INFO_FILE).is_file() or not _missing_files(directory)


RESULT_LAYOUT = Layout("a kafkasim result", RUN_INFO_FILE, _is_result_written_by_kafkasim, _foreign_result_entries)
# The figures/ directory of a result (kafkasim plot replaces it): only kafkasim's figure files.
FIGURES_LAYOUT = Layout(f"the {FIGURES_DIR} directory of a kafkasim result", "", lambda _: True, _foreign_figures)


def check_result_dir(directory: str | os.PathLike[str], *, label: str | None = None) -> Path:
    """The absolute path a result may be saved to; ResultDirectoryError (what is wrong, what is allowed)
    otherwise. Called before a run so that a bad --out costs nothing."""
    try:
        return check_output_dir(directory, RESULT_LAYOUT, label=label)
    except ResultDirectoryError:
        raise
    except OutputDirError as exc:
        raise ResultDirectoryError(str(exc)) from None


def _missing_files(directory: Path) -> list[str]:
    return [name for name in REQUIRED_FILES if not (directory / name).is_file()]


def is_result_dir(directory: str | Path) -> bool:
    """True if `directory` holds every file a saved result has."""
    path = Path(directory)
    return path.is_dir() and not _missing_files(path)


class RunResult:
    """The outcome of one run: `requests`, `records`, `timeseries`, `segments` (DataFrames; a long run's
    `requests` is read from its file when first asked for: kafkasim.record.table_file), `stalls` (a DataFrame
    when the scenario had stalls on, else None), `retransmissions` (a DataFrame when a connection retransmitted,
    else None), `summary` (JSON-able dict) and the resolved scenario as YAML text (None for runs built in code
    without one)."""

    def __init__(
        self,
        requests: pd.DataFrame | TableFile,
        records: pd.DataFrame,
        timeseries: pd.DataFrame,
        summary: dict[str, Any],
        scenario_yaml: str | None = None,
        run_info: dict[str, Any] | None = None,
        segments: pd.DataFrame | None = None,
        stalls: pd.DataFrame | None = None,
        retransmissions: pd.DataFrame | None = None,
    ) -> None:
        # A long run's requests stay in their file until asked for (kafkasim.record.table_file).
        self._requests_file: TableFile | None = requests if isinstance(requests, TableFile) else None
        self._requests: pd.DataFrame | None = None if isinstance(requests, TableFile) else requests
        self.records = records
        self.timeseries = timeseries
        # Every segment roll and when a leader's HW reached the rolled segment (kafkasim.record.recorder).
        self.segments = segments if segments is not None else segments_frame([])
        # The hosts' stalls (kafkasim.record.stalls); None when no host stalled by the scenario's design.
        self.stalls = stalls
        # Every TCP retransmission timer expiry (kafkasim.record.retransmissions); None when there was none.
        self.retransmissions = retransmissions
        self.summary = summary
        self.scenario_yaml = scenario_yaml
        # What a replay of the same scenario and seed cannot reproduce: wall seconds, version, date.
        self.run_info: dict[str, Any] = dict(run_info or {})
        # Other files of the result, by relative path (a real run's Kafka logs under kafka/).
        self.extra_files: dict[str, bytes] = {}

    @property
    def requests(self) -> pd.DataFrame:
        """The requests table (read from its file, once, when the run kept it there)."""
        if self._requests is None:
            assert self._requests_file is not None
            self._requests = self._requests_file.frame()
        return self._requests

    @requests.setter
    def requests(self, frame: pd.DataFrame) -> None:
        self._requests = frame
        self._requests_file = None

    def __getstate__(self) -> dict[str, object]:
        # A pickled result carries its requests table itself: its file is a temporary one of this process.
        state = dict(self.__dict__)
        state["_requests"], state["_requests_file"] = self.requests, None
        return state

    @property
    def request_count(self) -> int:
        """How many rows the requests table has, without reading it."""
        return len(self._requests) if self._requests is not None else len(self._requests_file or ())

    @property
    def requests_source(self) -> pd.DataFrame | TableFile:
        """The requests table as it is held: its DataFrame, or its file (read a column at a time by the summary)."""
        if self._requests is not None:
            return self._requests
        assert self._requests_file is not None
        return self._requests_file

    def __repr__(self) -> str:
        return (
            f"RunResult({self.request_count} requests, {len(self.records)} batches, "
            f"{len(self.timeseries)} gauge samples)"
        )

    def save(self, directory: str | Path, extra_writer: Callable[[Path], None] | None = None) -> Path:
        """Write the result to `directory` atomically, replacing an earlier result there.

        `extra_writer(tmp_dir)` may add files (figures) to the temporary directory before it is renamed;
        if it raises, nothing is changed. An existing `directory` is only replaced if it is empty, or a
        result kafkasim wrote (it has run-info.json) holding nothing but kafkasim's files; anything else,
        and a place that cannot be written (the working directory, '', a file, a name too long, ...),
        raises ResultDirectoryError saying what is wrong and what is allowed.
        """
        target = check_result_dir(directory)

        def write(tmp: Path) -> None:
            self._write_files(tmp)
            if extra_writer is not None:
                extra_writer(tmp)
            self._write_run_info(tmp)
            _fsync_dir_files(tmp)

        try:
            write_dir(target, RESULT_LAYOUT, write, label=str(directory))
        except OutputDirError as exc:
            raise ResultDirectoryError(str(exc)) from None
        return target

    def _write_run_info(self, directory: Path) -> None:
        from kafkasim import KAFKA_VERSION, __version__

        info = {
            "kafkasim_version": __version__,
            "kafka_version_modelled": KAFKA_VERSION,
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            **self.run_info,
        }
        # Written last: its presence says every other file was written before it.
        (directory / RUN_INFO_FILE).write_text(json.dumps(info, indent=2, allow_nan=False) + "\n", encoding="utf-8")

    def _write_files(self, directory: Path) -> None:
        present = tuple(name for name in ("stalls", "retransmissions") if getattr(self, name) is not None)
        for name in (*TABLES, *OPTIONAL_TABLES, *present):
            path = directory / f"{name}.parquet"
            if name == "requests" and self._requests is None and self._requests_file is not None:
                # Never read: its file is the one write_frame writes from the DataFrame (kafkasim.record.table_file).
                self._requests_file.copy_to(path)
                continue
            # A row group at a time: the file pq.write_table writes (its row groups are ROW_GROUP_ROWS long),
            # without an Arrow copy of the whole table beside the DataFrame.
            write_frame(getattr(self, name), path, ROW_GROUP_ROWS)
        if self.scenario_yaml is not None:
            (directory / SCENARIO_FILE).write_text(self.scenario_yaml, encoding="utf-8")
        for relative, data in self.extra_files.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (directory / SUMMARY_FILE).write_text(
            json.dumps(self.summary, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: str | Path) -> RunResult:
        path = Path(directory)
        if not path.is_dir():
            raise ResultDirectoryError(f"no kafkasim result at {path}: not a directory")
        missing = _missing_files(path)
        if missing:
            raise ResultDirectoryError(
                f"{path} is not a complete kafkasim result: missing {', '.join(missing)} "
                f"(a result has {', '.join(REQUIRED_FILES)} and optionally {SCENARIO_FILE})"
            )
        try:
            summary = json.loads((path / SUMMARY_FILE).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ResultDirectoryError(f"{path / SUMMARY_FILE} is not valid JSON: {exc}") from None
        if not isinstance(summary, dict):
            raise ResultDirectoryError(f"{path / SUMMARY_FILE} must hold a JSON object")
        tables = {name: read_frame(path / f"{name}.parquet") for name in TABLES}
        segments_path = path / "segments.parquet"
        segments = read_frame(segments_path) if segments_path.is_file() else None
        stalls_path = path / STALLS_FILE
        stalls = read_frame(stalls_path) if stalls_path.is_file() else None
        retransmissions_path = path / RETRANSMISSIONS_FILE
        retransmissions = read_frame(retransmissions_path) if retransmissions_path.is_file() else None
        scenario_path = path / SCENARIO_FILE
        scenario_yaml = scenario_path.read_text(encoding="utf-8") if scenario_path.is_file() else None
        run_info = read_run_info(path / RUN_INFO_FILE)
        return cls(tables["requests"], tables["records"], tables["timeseries"], summary, scenario_yaml, run_info,
                   segments=segments, stalls=stalls, retransmissions=retransmissions)


def read_frame(path: Path) -> pd.DataFrame:
    """A Parquet file as a DataFrame, read and converted on the calling thread.

    pandas.read_parquet's defaults start Arrow's CPU and I/O thread pools (use_threads, pre_buffer). Those
    threads live until the process exits, and Arrow can end it in std::terminate when they are torn down at
    the interpreter's exit ("terminate called without an active exception", SIGABRT: apache/arrow#34314): a
    `kafkasim compare` that had printed its message and was exiting with 2 died that way in CI. kafkasim's
    results are read once, whole, so one thread costs little; the recorder reads its spools the same way."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path, pre_buffer=False).read(use_threads=False)
    return table.to_pandas(use_threads=False)


def read_run_info(path: Path) -> dict[str, Any]:
    """run-info.json's facts; {} for a result written before kafkasim wrote one (or an unreadable one)."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _fsync_dir_files(directory: Path) -> None:
    # Data must be on disk before the rename makes the directory visible under its real name.
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
