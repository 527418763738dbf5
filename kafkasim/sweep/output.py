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
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

MANIFEST = "_MANIFEST.json"


class IncompleteSweepError(Exception):
    """The directory is not a complete sweep result (no manifest, or one that says it is not complete)."""


class OutputDirError(Exception):
    """The output directory cannot be used (it holds something that is not a previous sweep result)."""


def partial_dir(final: Path) -> Path:
    return final.parent / f".{final.name}.partial-{os.getpid()}"


def prepare(final: Path) -> Path:
    """Create and return an empty partial directory for `final`, after checking `final` may be replaced."""
    if final.exists() and not (final.is_dir() and (not any(final.iterdir()) or (final / MANIFEST).exists())):
        raise OutputDirError(
            f"output directory {final} exists and is not a sweep result; choose another with --out or remove it"
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_dir(final)
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
    """Move the finished partial directory to `final`, replacing a previous sweep result there."""
    if final.exists():
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        final.replace(old)
        partial.replace(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        partial.replace(final)


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of a complete sweep result; IncompleteSweepError for anything else."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise IncompleteSweepError(f"{directory} is not a complete sweep result (no {MANIFEST})")
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("complete") is not True:
        raise IncompleteSweepError(f"{directory} is an incomplete sweep result ({MANIFEST} says complete: false)")
    return manifest
