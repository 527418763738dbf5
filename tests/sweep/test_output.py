"""Output directory safety, master resolution and figures (no Spark needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kafkasim.sweep.dimensions import Dimension
from kafkasim.sweep.output import (
    MANIFEST,
    IncompleteSweepError,
    OutputDirError,
    prepare,
    publish,
    read_manifest,
    write_manifest,
)
from kafkasim.sweep.plots import plot_sweep
from kafkasim.sweep.session import is_local_master, resolve_master


def test_output_never_replaces_a_folder_that_is_not_a_sweep_result(tmp_path: Path) -> None:
    final = tmp_path / "out"
    final.mkdir()
    (final / "notes.txt").write_text("mine")
    with pytest.raises(OutputDirError, match="is not a kafkasim sweep result .no _MANIFEST.json.*choose an empty or new"):
        prepare(final)
    assert (final / "notes.txt").exists()


def test_output_never_deletes_a_users_file_in_an_earlier_sweep_result(tmp_path: Path) -> None:
    final = tmp_path / "out"
    partial = prepare(final)
    (partial / "requests" / "variant_id=v0").mkdir(parents=True)
    (partial / "requests" / "variant_id=v0" / "part-0000.parquet").write_bytes(b"rows")
    (partial / "requests" / "_SUCCESS").write_bytes(b"")
    write_manifest(partial, {"complete": True})
    publish(partial, final)
    prepare(final)  # an earlier sweep result with only the sweep's own files may be replaced
    (final / "requests" / "variant_id=v0" / "my-notes.txt").write_text("mine")
    (final / "analysis.ipynb").write_text("{}")
    with pytest.raises(OutputDirError, match=r"did not write \(analysis.ipynb, requests/variant_id=v0/my-notes.txt\)"):
        prepare(final)
    # A file added while the sweep ran: the final rename checks again and keeps the user's file.
    (final / "analysis.ipynb").unlink()
    (final / "requests" / "variant_id=v0" / "my-notes.txt").unlink()
    partial = prepare(final)
    write_manifest(partial, {"complete": True})
    (final / "late.txt").write_text("mine")
    with pytest.raises(OutputDirError, match="late.txt"):
        publish(partial, final)
    assert (final / "late.txt").read_text() == "mine" and partial.is_dir()


@pytest.mark.parametrize(
    ("out", "fragment"),
    [
        ("", "an empty path"),
        (".", "is the working directory"),
        ("..", "contains the working directory"),
        ("/dev/null/x", "/dev/null is not a directory"),
        ("/proc/x", "cannot create a directory in /proc"),
        ("x" * 300, "choose a shorter name"),
    ],
)
def test_output_refuses_places_it_must_not_or_cannot_write(
    out: str, fragment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(OutputDirError, match=fragment):
        prepare(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and not list(cwd.iterdir())


def test_sweep_command_refuses_the_working_directory_before_spark(
    sweep_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from io import StringIO

    from rich.console import Console

    from kafkasim.console.sweep import sweep_command

    (sweep_dir / "s.yaml").write_text("base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 2]\nseeds: [1]\n")
    monkeypatch.chdir(sweep_dir)
    err = StringIO()
    # spark=object(): any use of Spark would fail loudly; the directory is refused before it.
    code = sweep_command("s.yaml", out=".", spark=object(),  # type: ignore[arg-type]
                         console=Console(file=StringIO()), err_console=Console(file=err, width=200))
    assert code == 2
    assert "--out .: is the working directory" in err.getvalue()
    assert sorted(p.name for p in sweep_dir.iterdir()) == ["base.yaml", "s.yaml"]


def test_publish_replaces_a_previous_result_whole(tmp_path: Path) -> None:
    final = tmp_path / "out"
    for generation in (1, 2):
        partial = prepare(final)
        write_manifest(partial, {"complete": False})
        with pytest.raises(IncompleteSweepError):
            read_manifest(partial)
        (partial / "variants.json").write_text(str(generation))
        write_manifest(partial, {"complete": True, "generation": generation})
        publish(partial, final)
        assert not partial.exists()
    assert read_manifest(final)["generation"] == 2
    assert (final / "variants.json").read_text() == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no partial or old directories left
    assert json.loads((final / MANIFEST).read_text())["complete"] is True


@pytest.mark.parametrize(
    ("master", "parallelism", "expected"),
    [
        (None, None, "local[*]"),
        (None, 3, "local[3]"),
        ("local[8]", 2, "local[2]"),
        ("spark://head:7077", 16, "spark://head:7077"),
        ("k8s://https://api:6443", None, "k8s://https://api:6443"),
    ],
)
def test_resolve_master(master: str | None, parallelism: int | None, expected: str) -> None:
    assert resolve_master(master, parallelism) == expected


def test_local_master_recognition() -> None:
    assert all(is_local_master(m) for m in ("local", "local[*]", "local[4]", "local[4, 2]"))
    assert not any(is_local_master(m) for m in ("yarn", "spark://h:7077", "localhost", "local[x]", "local[4]\n",
                                                "local[\u0664]"))


def _per_variant(values: dict[str, float]) -> pd.DataFrame:
    rows = []
    for variant_id, p99 in values.items():
        for stat in ("p50", "p95", "p99", "p999"):
            rows.append({"variant_id": variant_id, "metric": "TotalTimeMs", "group": "Produce", "stat": stat,
                         "n_seeds": 2, "mean": p99, "sd": 0.1, "ci95_low": p99 - 1, "ci95_high": p99 + 1,
                         "pooled": p99})
    return pd.DataFrame(rows)


def test_two_dimensions_give_lines_and_a_heatmap(tmp_path: Path) -> None:
    dims = [Dimension(("a",), ((1,), (2,))), Dimension(("b", "c"), (("x", 1), ("y", 2)))]
    coords = {"v000": (0, 0), "v001": (0, 1), "v002": (1, 0), "v003": (1, 1)}
    written = plot_sweep(_per_variant({"v000": 1, "v001": 2, "v002": 3, "v003": 4}), dims, coords, tmp_path)
    assert [p.name for p in written] == ["TotalTimeMs-Produce.png", "TotalTimeMs-Produce-heatmap.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def test_one_dimension_has_no_heatmap_and_no_axes_no_figures(tmp_path: Path) -> None:
    dims = [Dimension(("acks",), ((1,), ("all",)))]
    written = plot_sweep(_per_variant({"v000": 1, "v001": 2}), dims, {"v000": (0,), "v001": (1,)}, tmp_path)
    assert [p.name for p in written] == ["TotalTimeMs-Produce.png"]
    assert plot_sweep(_per_variant({"v000": 1}), [], {"v000": ()}, tmp_path / "none") == []
