"""A window of a saved run: ``kafkasim report|compare|export|trace RUN_DIR --from T --to T``
(kafkasim.record.window) on a 3-broker run whose leader crashes at 2 s, is fenced and restarts at 13 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkasim.record.result import RunResult
from kafkasim.record.window import Window, WindowError, window_of, windowed
from tests.cli.support import assert_no_traceback, call, kafkasim, ran

CRASH = """\
name: window-crash
description: a leader crash in the middle of a short run
seed: 3
duration: 16s
cluster:
  brokers: 3
topics:
  - {name: t, partitions: 3, replication.factor: 3, min.insync.replicas: 2}
producers:
  - {name: p1, topic: t, rate: 200/s, acks: all}
consumers:
  - {name: c1, topic: t}
faults:
  - {type: crash, target: broker-0, at: 2s, restart_after: 11s}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ran(tmp_path_factory.mktemp("window"), CRASH)


def test_no_option_no_window_and_bad_windows_say_what_is_allowed(run_dir: Path) -> None:
    result = RunResult.load(run_dir)
    assert window_of(result, None, None) is None
    assert window_of(result, "2s", None) == Window(2_000.0, 16_000.0)
    assert window_of(result, None, "1500ms") == Window(0.0, 1_500.0)
    assert window_of(result, "2s", "99s") == Window(2_000.0, 16_000.0)  # the run's end
    with pytest.raises(WindowError, match=r"--from 2x: .*write a time from the run's start"):
        window_of(result, "2x", None)
    with pytest.raises(WindowError, match="the window must end after it starts"):
        window_of(result, "5s", "4s")
    with pytest.raises(WindowError, match="the run lasted 16s; allowed: a start before its end"):
        window_of(result, "17s", None)
    assert Window(20_000.0, 30_000.0).label == "20s-30s" and Window(250.0, 1_500.5).label == "250ms-1500.5ms"


def test_a_window_keeps_the_rows_of_its_time_and_summarizes_them_again(run_dir: Path) -> None:
    result = RunResult.load(run_dir)
    cut = windowed(result, Window(1_000.0, 12_000.0))
    sent = cut.requests["client_send_ms"].to_numpy(float)
    assert len(cut.requests) and ((sent >= 1_000.0) & (sent < 12_000.0)).all()
    meant = cut.records["first_intended_ms"].to_numpy(float)
    assert len(cut.records) and ((meant >= 1_000.0) & (meant < 12_000.0)).all()
    everything = result.requests["client_send_ms"].to_numpy(float)
    assert len(cut.requests) == int(((everything >= 1_000.0) & (everything < 12_000.0)).sum())
    times = cut.timeseries["time_ms"].to_numpy(float)
    assert times.min() >= 1_000.0 and times.max() <= 12_000.0
    summary = cut.summary
    assert summary["window"]["from_ms"] == 1_000.0 and summary["window"]["to_ms"] == 12_000.0
    assert "counters" not in summary  # whole-run totals the rows cannot cut
    assert summary["apis"]["Produce"]["count"] == int((cut.requests["api"] == "Produce").sum())
    # The phases are the run's, clipped: none starts before 1 s or ends after 12 s; the crash is in it.
    phases = summary["phases"]
    assert phases[0]["from_ms"] == 1_000.0 and phases[-1]["to_ms"] == 12_000.0
    assert any("crash broker-0" in p["name"] for p in phases)
    assert sum(p["batches"] for p in phases) == len(cut.records)
    # The failovers that began in the window (the crash at 2 s); none in a window after it.
    assert summary["failovers"] == result.summary["failovers"]
    assert "failovers" not in windowed(result, Window(13_000.0, 16_000.0)).summary


def test_report_of_a_window_goes_to_its_own_directory_and_leaves_the_runs_report(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call("report", run_dir) == 0
    before = (run_dir / "report.html").read_bytes()
    done = kafkasim("report", run_dir, "--from", "1s", "--to", "12s", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "runs" / f"report-{run_dir.name}-1s-12s" / "report.html"
    assert done.stdout.strip().endswith(str(page.relative_to(tmp_path)))
    html = page.read_text(encoding="utf-8")
    assert "window-crash, from 1 s to 12 s only" in html
    assert (run_dir / "report.html").read_bytes() == before
    # Again (in this process: the subprocess above is what a user's shell sees): the earlier window report
    # is replaced; a directory holding anything else is refused.
    again = page.stat().st_mtime_ns
    assert call("report", run_dir, "--from", "1s", "--to", "12s", "--out", page.parent) == 0
    assert page.stat().st_mtime_ns > again
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert call("report", run_dir, "--from", "2s", "--out", other) == 2
    err = capsys.readouterr().err
    assert "notes.txt" in err and "Traceback" not in err
    assert (other / "notes.txt").read_text() == "mine"
    assert call("report", run_dir, "--out", other) == 2
    assert "give --from and/or --to" in capsys.readouterr().err


def test_trace_export_and_compare_read_the_window(run_dir: Path, tmp_path: Path) -> None:
    traced = kafkasim("trace", run_dir, "--slowest", "produce", "--from", "13s", "--out", tmp_path / "tr")
    assert traced.returncode == 0, traced.stderr
    story = json.loads((tmp_path / "tr" / "trace.json").read_text())
    requests = RunResult.load(run_dir).requests
    row = requests[requests["request_id"] == story["request_id"]]
    assert row["api"].item() == "Produce" and row["client_send_ms"].item() >= 13_000.0
    later = requests[(requests["api"] == "Produce") & (requests["client_send_ms"] >= 13_000.0)]
    assert row["TotalTimeMs"].item() == later["TotalTimeMs"].max()
    exported = kafkasim("export", run_dir, "--csv", tmp_path / "csv", "--from", "1s", "--to", "12s")
    assert exported.returncode == 0, exported.stderr
    assert "the window 1s to 12s only" in exported.stderr
    counters = (tmp_path / "csv" / "counters.csv").read_text()
    assert "isr_shrinks" not in counters
    compared = kafkasim("compare", run_dir, run_dir, "--from", "1s", "--to", "12s", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "Each run from 1 s to 12 s only" in compared.stdout
    assert (tmp_path / "runs" / f"compare-{run_dir.name}-vs-{run_dir.name}-1s-12s" / "compare.json").is_file()
    bad = kafkasim("compare", run_dir, run_dir, "--from", "20s")
    assert bad.returncode == 2 and "the run lasted 16s" in bad.stderr
    assert_no_traceback(bad)
