"""Figures off the critical path: `kafkasim run` draws no figures unless given --figures, says how to get them,
and `kafkasim report RUN_DIR` draws figures/ and report.html later from the saved tables."""

from __future__ import annotations

import pytest

from kafkasim.record.result import FIGURE_NAMES

from .support import QUICKSTART, SHORT, assert_no_traceback, call, kafkasim


def test_a_run_draws_no_figures_by_default_and_prints_the_command_that_draws_them(tmp_path) -> None:
    out = tmp_path / "run"
    result = kafkasim("run", QUICKSTART, *SHORT, "--out", out)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result)
    assert not (out / "figures").exists() and not (out / "report.html").exists()
    assert "matplotlib" not in result.stderr
    last = result.stdout.rstrip().splitlines()[-1]
    assert last.startswith("figures and report.html: ") and last.endswith(f"kafkasim report {out}")


def test_the_hint_is_what_the_user_can_type(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkasim.console.run_command import report_hint

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("UV", raising=False)
    assert report_hint(tmp_path / "runs" / "quickstart-42") == "kafkasim report runs/quickstart-42"
    monkeypatch.setenv("UV", "/usr/bin/uv")  # set by `uv run` for the processes it starts
    assert report_hint(tmp_path / "runs" / "quickstart-42") == "uv run kafkasim report runs/quickstart-42"
    assert report_hint(tmp_path / "my runs" / "a") == "uv run kafkasim report 'my runs/a'"


def test_the_run_imports_neither_matplotlib_nor_the_report_layer(tmp_path) -> None:
    import subprocess
    import sys

    from .support import cli_env

    code = ("import sys; from kafkasim.console.app import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m.startswith(('matplotlib', 'kafkasim.report'))))")
    done = subprocess.run([sys.executable, "-c", code, "run", str(QUICKSTART), *SHORT, "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, env=cli_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_kafkasim_report_draws_the_figures_a_run_with_figures_draws_byte_for_byte(tmp_path) -> None:
    later, now = tmp_path / "later", tmp_path / "now"
    assert call("run", QUICKSTART, *SHORT, "--out", later) == 0
    assert call("run", QUICKSTART, *SHORT, "--figures", "--out", now) == 0
    assert (now / "report.html").is_file() and not (later / "figures").exists()
    assert call("report", later) == 0
    drawn = sorted(p.name for p in (later / "figures").iterdir())
    assert drawn == sorted(p.name for p in (now / "figures").iterdir())
    assert {f"{name}.png" for name in ("latency_cdf", "request_breakdown", "log_offsets", "produce_swimlane")} <= set(drawn)
    assert set(drawn) <= {f"{name}.png" for name in FIGURE_NAMES}
    for name in drawn:
        assert (later / "figures" / name).read_bytes() == (now / "figures" / name).read_bytes(), name
    assert (later / "report.html").read_bytes() == (now / "report.html").read_bytes()
    assert not [p for p in later.iterdir() if p.name.startswith(".")]  # no staging directory left behind


def test_kafkasim_report_never_deletes_a_users_file_in_figures(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert call("run", QUICKSTART, "--set", "duration=200ms", "--set", "warmup=0s", "--out", out) == 0
    (out / "figures").mkdir()
    (out / "figures" / "my-annotated.png").write_bytes(b"mine")
    capsys.readouterr()
    assert call("report", out) == 2
    err = capsys.readouterr().err
    assert "kafkasim did not write (my-annotated.png)" in err and "Traceback" not in err
    assert (out / "figures" / "my-annotated.png").read_bytes() == b"mine"
    assert not (out / "report.html").exists()
