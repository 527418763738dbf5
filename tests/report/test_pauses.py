"""`kafkasim compare` sets a simulated run's stalls beside a real run's garbage collections
(kafkasim.report.pauses): each host's pauses begun in the window, how often, what share, median and longest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kafkasim.record.result import RunResult
from kafkasim.report.pauses import run_pauses
from tests.cli.support import QUICKSTART, SHORT, call, kafkasim

STALLS = "broker.stalls={interval: {type: exponential, mean: 100ms}, pause: {type: lognormal, median: 5ms, p99: 20ms}}"
T0 = 1796295567000
# The JVM's own line format (tests/real/test_gc_log.py checks a JVM writes it): times in epoch milliseconds,
# each line stamped when its pause ended. Run time = stamp - T0; the first pause began before the warm-up's end.
GC_LOG = """\
[1796295567122ms] Using Serial
[1796295567505ms] GC(0) Pause Young (Allocation Failure) 8M->2M(30M) 12.000ms
[1796295567900ms] GC(1) Pause Young (Allocation Failure) 11M->3M(30M) 8.000ms
[1796295568300ms] GC(2) Pause Young (Allocation Failure) 12M->3M(30M) 2.000ms
[1796295568600ms] GC(3) Pause Full (Allocation Failure) 12M->3M(30M) 40.000ms
"""


@pytest.fixture(scope="module")
def stalled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pauses") / "sim"
    assert call("run", QUICKSTART, *SHORT, "--set", STALLS, "--out", out, "--no-figures", "--no-progress") == 0
    return out


def _as_real(sim: Path, to: Path) -> Path:
    """The simulated result made to look like a real run with one broker's GC log (the tables are the sim's)."""
    shutil.copytree(sim, to)
    (to / "stalls.parquet").unlink()
    info = json.loads((to / "run-info.json").read_text())
    info.update(engine="kafka", kafka_version="4.3.1", epoch_ms_at_0=T0)
    (to / "run-info.json").write_text(json.dumps(info))
    (to / "kafka" / "broker-0").mkdir(parents=True)
    (to / "kafka" / "broker-0" / "gc-4242.log").write_text(GC_LOG)
    return to


def test_a_real_runs_pauses_are_its_gc_logs_begun_after_the_warm_up(stalled: Path, tmp_path: Path) -> None:
    real = _as_real(stalled, tmp_path / "real")
    hosts = run_pauses(RunResult.load(real), real)
    assert hosts is not None and [h.host for h in hosts] == ["broker-0"]
    (broker,) = hosts
    # Warm-up 500 ms, run 2 s: the pause that began at 493 ms is left out, the three after it are in.
    assert broker.durations_ms.tolist() == [8.0, 2.0, 40.0] and broker.span_ms == 1500.0
    assert broker.per_second == pytest.approx(2.0) and broker.share == pytest.approx(50.0 / 1500.0)
    assert broker.p50_ms == 8.0 and broker.max_ms == 40.0


def test_a_simulated_runs_pauses_are_its_stalls_begun_after_the_warm_up(stalled: Path) -> None:
    result = RunResult.load(stalled)
    assert result.stalls is not None
    hosts = run_pauses(result, stalled)
    assert hosts is not None and hosts
    for host in hosts:
        rows = result.stalls[(result.stalls["host"] == host.host) & (result.stalls["start_ms"] >= 500.0)
                             & (result.stalls["start_ms"] < 2000.0)]
        assert np.array_equal(host.durations_ms, rows["duration_ms"].to_numpy(dtype=float))
    assert sum(h.count for h in hosts) > 5  # one stall every 100 ms on average per broker


def test_compare_prints_the_stalls_beside_the_collections_and_nothing_when_neither_kept_any(
        stalled: Path, tmp_path: Path) -> None:
    real = _as_real(stalled, tmp_path / "real")
    shown = kafkasim("compare", stalled, real, "--out", tmp_path / "cmp")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    at = next(i for i, line in enumerate(lines) if "Stop-the-world pauses per host" in line)
    rows = [line.split() for line in lines[at:]]
    assert ["B", "broker-0", "3", "2.00", "3.3%", "8.000", "40.00"] in rows
    first = [r for r in rows if r[:1] == ["A"] and len(r) == 7]
    assert first and all(r[1].startswith("broker-") for r in first)
    # compare.json holds the same numbers.
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())["pauses"]
    assert saved["B"] == [{"host": "broker-0", "count": 3, "per_second": 2.0, "share_of_time": 0.03333,
                           "p50_ms": 8.0, "max_ms": 40.0}]
    assert [h["host"] for h in saved["A"]] == [r[1] for r in first]
    plain = tmp_path / "plain"
    assert call("run", QUICKSTART, *SHORT, "--out", plain, "--no-figures", "--no-progress") == 0
    quiet = kafkasim("compare", plain, plain, "--out", tmp_path / "cmp2")
    assert quiet.returncode == 0 and "Stop-the-world" not in quiet.stdout
    assert json.loads((tmp_path / "cmp2" / "compare.json").read_text())["pauses"] == {"A": None, "B": None}


def test_hosts_come_in_natural_order(stalled: Path, tmp_path: Path) -> None:
    real = _as_real(stalled, tmp_path / "real")
    for name in ("broker-10", "broker-2", "driver"):
        (real / "kafka" / name).mkdir()
        (real / "kafka" / name / "gc-1.log").write_text(GC_LOG)
    hosts = run_pauses(RunResult.load(real), real)
    assert hosts is not None and [h.host for h in hosts] == ["broker-0", "broker-2", "broker-10", "driver"]
