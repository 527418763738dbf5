"""`RunResult`: the tables and summary of one run, saved to and loaded from a result directory.

A result directory holds `requests.parquet`, `records.parquet`, `timeseries.parquet`, `summary.json`,
`scenario.yaml` (when the run had a scenario) and whatever the report layer adds (`figures/`). Saving is
atomic: everything is written into a hidden temporary sibling directory which is then renamed into place,
so a crash leaves either the old result, or the new one, never a half-written directory under the
result's name.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

TABLES = ("requests", "records", "timeseries")
SUMMARY_FILE = "summary.json"
SCENARIO_FILE = "scenario.yaml"
REQUIRED_FILES = (*(f"{t}.parquet" for t in TABLES), SUMMARY_FILE)


class ResultDirectoryError(ValueError):
    """A directory that is not (or not entirely) a kafkasim result."""


def _missing_files(directory: Path) -> list[str]:
    return [name for name in REQUIRED_FILES if not (directory / name).is_file()]


def is_result_dir(directory: str | Path) -> bool:
    """True if `directory` holds every file a saved result has."""
    path = Path(directory)
    return path.is_dir() and not _missing_files(path)


class RunResult:
    """The outcome of one run: `requests`, `records`, `timeseries` (DataFrames), `summary` (JSON-able
    dict) and the resolved scenario as YAML text (None for runs built in code without one)."""

    def __init__(
        self,
        requests: pd.DataFrame,
        records: pd.DataFrame,
        timeseries: pd.DataFrame,
        summary: dict[str, Any],
        scenario_yaml: str | None = None,
    ) -> None:
        self.requests = requests
        self.records = records
        self.timeseries = timeseries
        self.summary = summary
        self.scenario_yaml = scenario_yaml

    def __repr__(self) -> str:
        return (
            f"RunResult({len(self.requests)} requests, {len(self.records)} batches, "
            f"{len(self.timeseries)} gauge samples)"
        )

    def save(self, directory: str | Path, extra_writer: Callable[[Path], None] | None = None) -> Path:
        """Write the result to `directory` atomically, replacing an earlier result there.

        `extra_writer(tmp_dir)` may add files (figures) to the temporary directory before it is renamed;
        if it raises, nothing is changed. An existing `directory` is only replaced if it is empty or a
        kafkasim result, so a typo cannot wipe an unrelated folder.
        """
        target = Path(directory).absolute()
        if target.exists():
            if not target.is_dir():
                raise ResultDirectoryError(f"cannot save a result to {target}: it exists and is not a directory")
            if any(target.iterdir()) and not is_result_dir(target):
                raise ResultDirectoryError(
                    f"refusing to replace {target}: it is not empty and not a kafkasim result "
                    f"(missing {', '.join(_missing_files(target))}); choose another directory"
                )
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            # mkdtemp makes the directory private (0700); the result is an ordinary directory, as mkdir makes.
            tmp.chmod(0o777 & ~_current_umask())
            self._write_files(tmp)
            if extra_writer is not None:
                extra_writer(tmp)
            _fsync_dir_files(tmp)
            _replace_dir(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    def _write_files(self, directory: Path) -> None:
        for name in TABLES:
            frame: pd.DataFrame = getattr(self, name)
            frame.to_parquet(directory / f"{name}.parquet", engine="pyarrow", index=False)
        if self.scenario_yaml is not None:
            (directory / SCENARIO_FILE).write_text(self.scenario_yaml, encoding="utf-8")
        # The summary is written last: a directory that has it had everything else written before.
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
        tables = {name: pd.read_parquet(path / f"{name}.parquet", engine="pyarrow") for name in TABLES}
        scenario_path = path / SCENARIO_FILE
        scenario_yaml = scenario_path.read_text(encoding="utf-8") if scenario_path.is_file() else None
        return cls(tables["requests"], tables["records"], tables["timeseries"], summary, scenario_yaml)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir_files(directory: Path) -> None:
    # Data must be on disk before the rename makes the directory visible under its real name.
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())


def _replace_dir(new: Path, target: Path) -> None:
    """Rename `new` to `target`. An existing target is first moved aside to a hidden sibling and deleted
    after the swap (rename cannot replace a non-empty directory); a crash in between leaves no directory
    under the target name rather than a mixed one."""
    if not target.exists():
        os.replace(new, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    old.rmdir()
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
