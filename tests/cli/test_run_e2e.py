"""`kafkasim run` and `kafkasim plot` end to end, as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkasim.console.format import ms, seconds
from kafkasim.console.run_command import report_hint
from kafkasim.record.result import REQUIRED_FILES, RunResult
from kafkasim.scenario import load_scenario

from .support import BROKEN_BROKER, QUICKSTART, SHORT, assert_no_traceback, call, cli_env, kafkasim

PURE = Path(__file__).resolve().parents[2] / "benchmarks" / "pure.py"

FIGURES = {"latency_cdf", "request_breakdown", "log_offsets", "isr_size", "purgatory", "produce_swimlane"}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One short quickstart run with --set overrides and --seed, into the default directory."""
    cwd = tmp_path_factory.mktemp("cwd")
    result = kafkasim("run", QUICKSTART, *SHORT, "--set", "producers[0].linger.ms=0", "--seed", "7", cwd=cwd)
    return result, cwd


def test_run_writes_a_complete_result_under_runs_name_seed(
    finished_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, cwd = finished_run
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result)
    out = cwd / "runs" / "quickstart-7"  # the default: runs/<scenario name>-<seed> under the cwd
    for name in (*REQUIRED_FILES, "scenario.yaml"):
        assert (out / name).is_file(), name
    assert not (out / "figures").exists()  # drawn on request: `kafkasim report` or `run --figures`
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "temporary directories left behind"
    loaded = RunResult.load(out)
    assert loaded.summary["seed"] == 7
    assert loaded.summary["simulated_duration_ms"] == 2_000.0
    assert "interrupted_at_ms" not in loaded.summary
    # The resolved scenario carries the overrides and the seed, and loads back.
    resolved = load_scenario(loaded.scenario_yaml or "")
    assert (resolved.seed, resolved.duration, resolved.warmup) == (7, 2_000.0, 500.0)
    assert resolved.producers[0].linger_ms == 0
    assert loaded.requests["client_send_ms"].max() < 2_000.0


def test_run_prints_the_summary_from_the_saved_summary(
    finished_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, cwd = finished_run
    summary = json.loads((cwd / "runs" / "quickstart-7" / "summary.json").read_text())
    out = result.stdout
    assert max(len(line) for line in out.splitlines()) <= 100
    for api in ("Produce", "FetchConsumer", "FetchFollower"):
        data = summary["apis"][api]
        assert f"{api}: {data['count']:,} requests, {data['errors']} errors" in out
    produce_total = next(line for line in out.splitlines() if line.strip().startswith("TotalTimeMs"))
    stats = summary["apis"]["Produce"]["TotalTimeMs"]
    assert produce_total.split()[1:] == [f"{stats['count']:,}", *(ms(stats[s]) for s in ("p50", "p95", "p99", "p99.9", "max"))]
    for part in ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs", "ResponseSendTimeMs"):
        assert part in out
    e2e = next(line for line in out.splitlines() if "end to end" in line)
    assert e2e.split()[-1] == ms(summary["e2e_latency"]["max"])
    assert "produce acks=all, intended" in out
    assert "ISR shrinks" in out and "Produce purgatory expirations" in out and "Fetch purgatory expirations" in out
    assert out.rstrip().splitlines()[-2:] == ["results: runs/quickstart-7",
                                              f"figures and report.html: {report_hint(Path('runs/quickstart-7'))}"]
    assert "kafkasim: running quickstart (seed 7" in result.stderr


def test_summary_numbers_are_never_cut_in_an_80_column_console(
    finished_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    # A piped run without COLUMNS renders at rich's default 80 columns: labels may wrap, numbers may not.
    from io import StringIO

    from rich.console import Console

    from kafkasim.console.summary import print_summary

    _, cwd = finished_run
    summary = json.loads((cwd / "runs" / "quickstart-7" / "summary.json").read_text())
    buffer = StringIO()
    print_summary(Console(file=buffer, width=80, no_color=True), summary, "quickstart")
    out = buffer.getvalue()
    assert "\u2026" not in out, out
    assert max(len(line) for line in out.splitlines()) <= 80
    e2e = next(line for line in out.splitlines() if "end to end" in line)
    assert e2e.split()[-1] == ms(summary["e2e_latency"]["max"])


def test_plot_regenerates_the_figures_of_a_saved_run(
    finished_run: tuple[subprocess.CompletedProcess[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, cwd = finished_run
    out = cwd / "runs" / "quickstart-7"
    (out / "figures").mkdir()
    (out / "figures" / "isr_size.png").write_bytes(b"a stale figure")  # replaced: it is kafkasim's
    # In process through the console script's entry point (a second matplotlib start-up would double the cost).
    assert call("plot", out) == 0
    assert str(out / "figures" / "latency_cdf.png") in capsys.readouterr().out
    pngs = {p.stem for p in (out / "figures").glob("*.png")}
    assert pngs >= FIGURES
    assert all((out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in FIGURES)
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_ctrl_c_in_wallclock_mode_stops_cleanly_and_keeps_the_partial_run(tmp_path: Path) -> None:
    out = tmp_path / "partial"
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkasim", "run", str(QUICKSTART), "--wallclock", "--no-figures", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )
    try:
        assert process.stderr is not None
        # The "running" line is printed once Ctrl-C is handled; then let ~1 s of wall-clock run pass.
        early = [process.stderr.readline() for _ in range(1)]
        while not early[-1].startswith("kafkasim: running") and early[-1] and len(early) < 50:
            early.append(process.stderr.readline())  # a library's warning may come first
        started = time.monotonic()
        assert early[-1].startswith("kafkasim: running quickstart (seed 42, 30 s simulated, wall-clock x1)"), early
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
        wall_ms = (time.monotonic() - started) * 1000.0
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "kafkasim: interrupted at simulated time" in stderr
    loaded = RunResult.load(out)  # complete and loadable
    assert (out / "scenario.yaml").is_file()
    assert loaded.run_info["partial"].startswith("interrupted (Ctrl-C) at simulated time")
    t = loaded.summary["interrupted_at_ms"]
    # Paced at real time: about a second of simulated time passed before the signal, and no more simulated
    # time than wall time passed in all (the run stopped when asked, long before its 30 s).
    assert 500.0 <= t <= wall_ms + 100.0
    assert loaded.summary["simulated_duration_ms"] == t
    assert len(loaded.requests) > 0 and loaded.timeseries["time_ms"].max() <= t
    assert loaded.requests["client_send_ms"].max() <= t
    assert f"quickstart: seed 42, interrupted at simulated time {seconds(t)} of 30 s" in stdout
    assert f"results: {out}" in stdout


def test_an_invariant_violation_fails_the_run_with_its_message(tmp_path: Path) -> None:
    # In the pure-Python copy (benchmarks/pure.py): the compiled KafkaApis calls its typed ReplicaManager's
    # append_records natively, past any patch of the class.
    out = tmp_path / "never"
    result = subprocess.run(
        [sys.executable, str(PURE), str(BROKEN_BROKER), "run", str(QUICKSTART), "--set", "duration=1s",
         "--set", "warmup=0s", "--no-figures", "--out", str(out)],
        capture_output=True, text=True, env=cli_env(), timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert_no_traceback(result)
    assert "kafkasim: run failed: invariant violated at t=" in result.stderr
    assert "completed twice" in result.stderr
    assert not out.exists()
