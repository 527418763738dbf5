"""A sweep's output directory: written under a temporary name, renamed into place when whole.

Layout of `<out>/`:

    _MANIFEST.json          written last; planned / succeeded / failed, every run's status, how to read
    sweep.yaml              the sweep file as given
    base_scenario.yaml      the resolved base scenario
    variants.json           variant_id -> parameter values
    runs.parquet            one row per (variant, seed): status, error, the runner's summary (JSON)
    requests/variant_id=…/  per-request rows of every successful run (+ seed, in_warmup columns)
    records/variant_id=…/   per-batch rows, when the runs produce them
    per_seed.parquet        statistics per (variant, seed, metric, group)
    per_variant.parquet     mean, 95% CI and pooled value per (variant, metric, group, stat)
    per_variant.csv         the same with one column per parameter, for a spreadsheet
    figures/*.png

Until the very end everything lives in `.<out name>.partial-<pid>` beside `<out>`; only a directory with a
manifest saying `"complete": true` is a sweep result. A crash leaves the partial directory (useful for
debugging, never mistaken for a result); `read_manifest` refuses anything else.

Where a sweep may write follows kafkasim.record.output_dir (the rules `kafkasim run --out` follows): never
'', the working directory or its parents, a file or a symbolic link; an existing directory is replaced only
if it is empty or a sweep result (it has the manifest) holding nothing but the files listed above.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from kafkasim.record.output_dir import Layout, check_output_dir, describe, replace_dir
from kafkasim.record.output_dir import OutputDirError as _OutputDirError

MANIFEST = "_MANIFEST.json"
_FILES = frozenset((MANIFEST, "sweep.yaml", "base_scenario.yaml", "variants.json", "runs.parquet",
                    "per_seed.parquet", "per_variant.parquet", "per_variant.csv"))
_TABLE_DIRS = ("requests", "records")  # variant_id=…/part-….parquet, one per run (sweep/task.py); Spark-written
# directories of earlier versions also hold _SUCCESS and .crc files


class IncompleteSweepError(Exception):
    """The directory is not a complete sweep result (no manifest, or one that says it is not complete)."""


class OutputDirError(_OutputDirError):
    """The output directory cannot be used (see kafkasim.record.output_dir); the message says why."""


def _spark_file(name: str) -> bool:
    return name in ("_SUCCESS", "._SUCCESS.crc") or name.startswith(("part-", ".part-"))


def _foreign_in_table(directory: Path) -> list[str]:
    foreign = []
    for path in directory.iterdir():
        if path.is_symlink():
            foreign.append(path.name)
        elif path.is_dir() and path.name.startswith("variant_id="):
            foreign.extend(f"{path.name}/{p.name}" for p in path.iterdir()
                           if p.is_symlink() or not p.is_file() or not _spark_file(p.name))
        elif not (path.is_file() and _spark_file(path.name)):
            foreign.append(path.name)
    return foreign


def _foreign_entries(directory: Path) -> list[str]:
    foreign: list[str] = []
    for path in directory.iterdir():
        name = path.name
        if path.is_symlink():
            foreign.append(name)
        elif name in _FILES and path.is_file():
            continue
        elif name in _TABLE_DIRS and path.is_dir():
            foreign.extend(f"{name}/{n}" for n in _foreign_in_table(path))
        elif name == "figures" and path.is_dir():
            foreign.extend(f"figures/{p.name}" for p in path.iterdir()
                           if p.is_symlink() or not p.is_file() or not p.name.endswith(".png"))
        else:
            foreign.append(name)
    return foreign


SWEEP_LAYOUT = Layout("a kafkasim sweep result", MANIFEST, lambda d: (d / MANIFEST).is_file(), _foreign_entries)


def partial_dir(final: Path) -> Path:
    return final.parent / f".{final.name[:64]}.partial-{os.getpid()}"


def check_sweep_dir(out: str | os.PathLike[str], *, label: str | None = None) -> Path:
    """The absolute output directory if a sweep may write there; OutputDirError (why, what is allowed)."""
    try:
        return check_output_dir(out, SWEEP_LAYOUT, label=label if label is not None else f"--out {describe(str(out))}")
    except _OutputDirError as exc:
        raise OutputDirError(str(exc)) from None


def prepare(final: str | os.PathLike[str], *, label: str | None = None) -> Path:
    """Create and return an empty partial directory for `final`, after checking `final` may be replaced."""
    target = check_sweep_dir(final, label=label)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_dir(target)
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir()
    return partial


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (temp file + rename): a reader sees the old one or the whole new one."""
    tmp = directory / f"{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(directory / MANIFEST)


def publish(partial: Path, final: Path) -> None:
    """Move the finished partial directory to `final`, replacing a previous sweep result there (checked
    again: a file a user added meanwhile is never deleted; OutputDirError then, and `partial` is kept)."""
    try:
        replace_dir(partial, Path(os.path.abspath(final)), SWEEP_LAYOUT)
    except _OutputDirError as exc:
        raise OutputDirError(f"{exc} (the finished sweep is in {partial})") from None


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of a complete sweep result; IncompleteSweepError for anything else."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise IncompleteSweepError(f"{directory} is not a complete sweep result (no {MANIFEST})")
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("complete") is not True:
        raise IncompleteSweepError(f"{directory} is an incomplete sweep result ({MANIFEST} says complete: false)")
    return manifest
