"""`kafkasim export RUN --hlog DIR --csv DIR`: logs HdrHistogram's reader reads back, CSV equal to the summary."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from kafkasim.record.result import RunResult
from kafkasim.report.export import new_histogram

from .support import QUICKSTART, SHORT, assert_no_traceback, call, kafkasim


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "run"
    assert call("run", QUICKSTART, *SHORT, "--out", out, "--no-figures", "--no-progress") == 0
    return out


def _read_log(path: Path) -> tuple[HdrHistogram, int]:
    """Every interval of an .hlog added up, read with hdrh's HistogramLogReader; and how many intervals."""
    total = new_histogram()
    reader = HistogramLogReader(str(path), new_histogram())
    intervals = 0
    while (interval := reader.get_next_interval_histogram()) is not None:
        total.add(interval)
        intervals += 1
    reader.close()
    return total, intervals


def test_hlog_per_api_and_client_reads_back_as_the_summary(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "hlog"
    result = kafkasim("export", run_dir, "--hlog", out)
    assert result.returncode == 0, result.stderr
    summary = RunResult.load(run_dir).summary
    names = sorted(p.name for p in out.glob("*.hlog"))
    assert names == ["api-FetchConsumer.hlog", "api-FetchFollower.hlog", "api-Produce.hlog",
                     "client-consumer-1.hlog", "client-follower-1.hlog", "client-follower-2.hlog",
                     "client-producer-1.hlog"]
    for api, data in summary["apis"].items():
        histogram, intervals = _read_log(out / f"api-{api}.hlog")
        expected = data["TotalTimeMs"]
        assert histogram.get_total_count() == expected["count"]
        assert intervals == 2  # 2 s simulated, one interval per second (warm-up requests left out)
        for name, q in (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p99.9", 99.9)):
            # The summary caps a percentile at the exact maximum; the histogram's answer is within 0.1 %.
            assert min(histogram.get_value_at_percentile(q) / 1000.0, expected["max"]) == pytest.approx(
                expected[name], rel=1e-3)
    producer, _ = _read_log(out / "client-producer-1.hlog")
    assert producer.get_total_count() == summary["apis"]["Produce"]["client_latency_ms"]["count"]
    assert producer.get_value_at_percentile(99.0) / 1000.0 == pytest.approx(
        summary["apis"]["Produce"]["client_latency_ms"]["p99"], rel=1e-3)
    first = (out / "api-Produce.hlog").read_text().splitlines()
    assert any(line.startswith("#[StartTime: 0.000") for line in first)
    assert json.loads((out / "export.json").read_text())["from"] == str(run_dir.resolve())


def test_csv_holds_the_summary_tables(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "csv"
    assert call("export", run_dir, "--csv", out) == 0
    summary = RunResult.load(run_dir).summary
    with open(out / "latency.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    total = next(r for r in rows if r["kind"] == "api" and r["key"] == "Produce" and r["measure"] == "TotalTimeMs")
    assert float(total["p99"]) == summary["apis"]["Produce"]["TotalTimeMs"]["p99"]
    assert int(total["count"]) == summary["apis"]["Produce"]["TotalTimeMs"]["count"]
    assert {r["key"] for r in rows if r["kind"] == "client"} == {"producer-1", "consumer-1", "follower-1",
                                                                  "follower-2"}
    with open(out / "counters.csv", encoding="utf-8") as handle:
        counters = {r["name"]: r["value"] for r in csv.DictReader(handle)}
    assert int(counters["Produce.count"]) == summary["apis"]["Produce"]["count"]
    assert int(counters["isr_shrinks"]) == summary["counters"]["isr_shrinks"]


def test_bad_input_is_one_line_and_exit_2(run_dir: Path, tmp_path: Path) -> None:
    nothing = kafkasim("export", run_dir)
    assert nothing.returncode == 2 and "--hlog DIR, --csv DIR" in nothing.stderr
    not_a_run = kafkasim("export", tmp_path, "--csv", tmp_path / "c")
    assert not_a_run.returncode == 2 and "not a complete kafkasim result" in not_a_run.stderr
    assert_no_traceback(not_a_run)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    refused = kafkasim("export", run_dir, "--hlog", mine)
    assert refused.returncode == 2 and "--hlog" in refused.stderr and "not empty" in refused.stderr
    assert (mine / "notes.txt").read_text() == "mine" and not list(mine.glob("*.hlog"))
    # An earlier export is replaced.
    again = tmp_path / "again"
    assert call("export", run_dir, "--csv", again) == 0
    assert call("export", run_dir, "--csv", again) == 0


def _hdrhistogram_jar() -> Path | None:
    jars = sorted((Path.home() / ".m2" / "repository" / "org" / "hdrhistogram" / "HdrHistogram").glob("*/*.jar"))
    return jars[-1] if jars and shutil.which("java") else None


@pytest.mark.skipif(_hdrhistogram_jar() is None, reason="needs java and HdrHistogram's jar in ~/.m2")
def test_hdrhistograms_own_java_log_processor_reads_the_log(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "hlog"
    assert call("export", run_dir, "--hlog", out) == 0
    processed = tmp_path / "processed"
    subprocess.run(["java", "-cp", str(_hdrhistogram_jar()), "org.HdrHistogram.HistogramLogProcessor", "-i",
                    str(out / "api-Produce.hlog"), "-outputValueUnitRatio", "1000", "-csv", "-o", str(processed)],
                   check=True, capture_output=True, timeout=120)
    with open(processed, encoding="utf-8") as handle:
        last = list(csv.DictReader(line for line in handle if not line.startswith("#")))[-1]
    expected = RunResult.load(run_dir).summary["apis"]["Produce"]["TotalTimeMs"]
    assert int(last["Total_Count"]) == expected["count"]
    assert float(last["Total_50%"]) == pytest.approx(expected["p50"], abs=1e-3)
    assert float(last["Total_99%"]) == pytest.approx(expected["p99"], abs=1e-3)
