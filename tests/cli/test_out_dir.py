"""Where `kafkasim run --out`, `RunResult.save`, `kafkasim plot` and `kafkasim sweep --out` may write: every
bad location is refused before any work with one clear line and exit 2; no user file is ever deleted."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from kafkasim.record.output_dir import OutputDirError
from kafkasim.record.result import RunResult
from kafkasim.scenario import with_overrides

from .support import QUICKSTART, call

TINY = ["--set", "duration=200ms", "--set", "warmup=0s", "--no-figures"]
CHOOSE = "choose an empty or new directory"


@pytest.fixture(autouse=True)
def _narrow_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")


def _refused(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    """Run `kafkasim run` in process; it must exit 2 before simulating; return its error line."""
    assert call("run", QUICKSTART, *TINY, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkasim: error: "), err
    assert "kafkasim: running" not in err  # refused before the simulation ran
    assert "Traceback" not in err
    return err


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under `root` (not following links) -> content hash / kind."""
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                files[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                files[rel] = "dir"
    return files


def test_out_dot_in_an_empty_working_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = tmp_path / "empty"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    err = _refused(capsys, "--out", ".")
    assert "--out .: is the working directory" in err and CHOOSE in err
    assert cwd.is_dir() and list(cwd.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_out_empty_string_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    err = _refused(capsys, "--out", "")
    assert "--out '': an empty path" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", ["..", "../..", "/"])
def test_an_ancestor_of_the_working_directory_is_refused(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    err = _refused(capsys, "--out", out)
    assert "contains the working directory" in err and CHOOSE in err
    assert cwd.is_dir()


def test_rerunning_into_an_earlier_result_never_deletes_a_users_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "result"
    assert call("run", QUICKSTART, *TINY, "--seed", "1", "--out", out) == 0
    (out / "notes.txt").write_text("what I saw")
    (out / "analysis").mkdir()
    (out / "analysis" / "plot.py").write_text("print(1)")
    before = _snapshot(tmp_path)
    capsys.readouterr()
    err = _refused(capsys, "--seed", "2", "--out", out)
    assert "but it also holds files kafkasim did not write (analysis, notes.txt)" in err
    assert "move them elsewhere or choose an empty or new directory" in err
    assert _snapshot(tmp_path) == before
    assert RunResult.load(out).summary["seed"] == 1


def test_an_earlier_result_with_only_kafkasims_files_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "result"
    assert call("run", QUICKSTART, *TINY, "--seed", "1", "--out", out) == 0
    assert (out / "run-info.json").is_file()
    assert call("run", QUICKSTART, *TINY, "--seed", "2", "--out", out) == 0
    assert RunResult.load(out).summary["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]


def test_a_directory_kafkasim_did_not_write_is_refused_even_with_result_file_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text("{}")
    err = _refused(capsys, "--out", mine)
    assert "is not empty (summary.json) and is not a kafkasim result (no run-info.json)" in err
    assert (mine / "summary.json").read_text() == "{}"


@pytest.mark.parametrize(
    ("out", "fragment"),
    [
        ("/proc/x", "cannot create a directory in /proc"),
        ("/dev/null/x", "/dev/null is not a directory"),
        ("/proc/self/status/x", "/proc/self/status is not a directory"),
    ],
)
def test_unwritable_locations_are_refused_before_the_run(
    out: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(capsys, "--out", out)
    assert fragment in err, err


def test_a_name_longer_than_the_file_system_allows_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, "--out", tmp_path / ("a" * 300))
    assert "is longer than this file system allows (255 bytes); choose a shorter name" in err
    assert list(tmp_path.iterdir()) == []


def test_a_symbolic_link_and_a_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "real"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    assert "is a symbolic link" in _refused(capsys, "--out", link)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert "exists and is not a directory" in _refused(capsys, "--out", a_file)
    assert link.is_symlink() and a_file.read_text() == "x"


def test_run_result_save_raises_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkasim.run.engine import run_scenario
    from kafkasim.scenario import load_scenario

    result = run_scenario(with_overrides(load_scenario(QUICKSTART), ["duration=200ms", "warmup=0s"]))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("keep")
    for bad, fragment in [("", "an empty path"), (".", "is the working directory"), ("..", "contains the working"),
                          ("/dev/null/x", "is not a directory"), ("a" * 300, "choose a shorter name")]:
        with pytest.raises(OutputDirError, match=fragment):
            result.save(bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    saved = result.save("fine")
    (saved / "notes.txt").write_text("mine")
    with pytest.raises(OutputDirError, match="did not write .notes.txt."):
        result.save("fine")
    assert (saved / "notes.txt").read_text() == "mine"


def test_a_file_added_while_the_run_went_on_is_not_deleted(tmp_path: Path) -> None:
    # The check before the run passes; a user file appears before the result is renamed into place.
    from kafkasim.run.engine import run_scenario
    from kafkasim.scenario import load_scenario

    result = run_scenario(with_overrides(load_scenario(QUICKSTART), ["duration=200ms", "warmup=0s"]))
    out = result.save(tmp_path / "r")

    def add_user_file(directory: Path) -> None:
        (out / "late.txt").write_text("written during the run")

    with pytest.raises(OutputDirError, match="late.txt"):
        result.save(out, extra_writer=add_user_file)
    assert (out / "late.txt").read_text() == "written during the run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_plot_never_deletes_a_users_file_in_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result"
    assert call("run", QUICKSTART, *TINY, "--out", out) == 0
    (out / "figures").mkdir()
    (out / "figures" / "my-annotated.png").write_bytes(b"mine")
    capsys.readouterr()
    assert call("plot", out) == 2
    err = capsys.readouterr().err
    assert "kafkasim did not write (my-annotated.png)" in err and "Traceback" not in err
    assert (out / "figures" / "my-annotated.png").read_bytes() == b"mine"


def test_plot_of_a_read_only_result_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result"
    assert call("run", QUICKSTART, *TINY, "--out", out) == 0
    capsys.readouterr()
    out.chmod(0o555)
    try:
        if os.access(out, os.W_OK) and os.geteuid() == 0:
            pytest.skip("root can write to a read-only directory")
        assert call("plot", out) == 2
        assert "cannot create a directory in" in capsys.readouterr().err
    finally:
        out.chmod(0o755)


# ------------------------------------------------------------------------------------------------------
# A seeded generator of hostile --out values: exit 2 with a clear message or a correct run, never a lost file.
# ------------------------------------------------------------------------------------------------------


def _hostile_outs(rng: random.Random, home: Path, count: int = 40) -> list[str]:
    """`count` --out values composed at random from hostile parts, after the plain hostile ones."""
    cwd = home / "work" / "deep"
    plain = [
        "", ".", "..", "./", "../..", str(cwd), str(cwd.parent), str(home), "/", ".//.", "deep/..",
        "/proc/x", "/proc/1/x", "/dev/null/x", "/dev/null", "/sys/x", "n" * 256, "é" * 128,
    ]
    bases = ["", ".", "..", "../..", str(cwd), str(cwd.parent), str(home), "/", "/proc", "/proc/self", "/dev/null",
             "/sys", str(home / "a_file.txt"), str(home / "foreign"), str(home / "own_plus"), str(home / "empty_dir"),
             str(home / "link_to_dir"), str(home / "dangling"), str(home / "link_to_cwd"), str(home / "link_to_file"),
             str(home / "own_plus" / "figures")]
    tails = ["", ".", "..", "x", "new/nested", "n" * rng.choice([254, 255, 256, 300]), "é" * rng.choice([127, 128]),
             "figures", "summary.json", "run-info.json", ".x.tmp-1"]
    composed = []
    for _ in range(count):
        parts = [rng.choice(bases)] + [rng.choice(tails) for _ in range(rng.randint(0, 2))]
        composed.append(os.path.join(*parts) if parts[0] else os.path.join("", *parts[1:]))
    return plain + composed


def test_hostile_out_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(20251124)
    home = tmp_path / "home"
    cwd = home / "work" / "deep"
    cwd.mkdir(parents=True)
    (cwd / "scenario-notes.md").write_text("in the working directory")
    (home / "a_file.txt").write_text("a file")
    (home / "foreign").mkdir()
    (home / "foreign" / "thesis.tex").write_text("precious")
    (home / "empty_dir").mkdir()
    (home / "link_to_dir").symlink_to(home / "foreign")
    (home / "dangling").symlink_to(home / "nowhere")
    (home / "link_to_cwd").symlink_to(cwd)
    (home / "link_to_file").symlink_to(home / "a_file.txt")
    monkeypatch.chdir(cwd)
    assert call("run", QUICKSTART, *TINY, "--out", home / "own_plus") == 0
    (home / "own_plus" / "extra.csv").write_text("user data")
    capsys.readouterr()
    user_files = _snapshot(home)
    outs = ["fresh", "new/nested/dir", str(home / "empty_dir"), "n" * 255, *_hostile_outs(rng, home)]
    ran = []
    for out in outs:
        code = call("run", QUICKSTART, *TINY, "--out", out)
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        if code == 2:
            line = captured.err.strip()
            assert line.startswith("kafkasim: error: --out ") and "\n" not in line, (out, captured.err)
            assert "kafkasim: running" not in captured.err
        else:
            assert code == 0, (out, captured.err)
            result_dir = Path(os.path.abspath(out))
            assert RunResult.load(result_dir).summary["simulated_duration_ms"] == 200.0
            ran.append(out)
        now = _snapshot(home)
        lost = {k: v for k, v in user_files.items() if now.get(k) != v}
        assert not lost, (out, lost)
        assert cwd.is_dir()
    # Some of them are ordinary places a run may write to.
    assert {"fresh", "new/nested/dir", str(home / "empty_dir"), "n" * 255} <= set(ran)
    assert (home / "own_plus" / "extra.csv").read_text() == "user data"


def test_the_figures_a_result_may_hold_are_the_ones_the_report_draws() -> None:
    from kafkasim.record.result import FIGURE_NAMES
    from kafkasim.report.figures import figure_builders

    assert tuple(name for name, _ in figure_builders(None, None, None, None, None)) == FIGURE_NAMES
