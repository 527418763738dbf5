"""`kafkasim compare` and kafkasim.report.compare on two short quickstart runs (linger.ms 5 vs 0)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from kafkasim.console.compare import group_table
from kafkasim.record.result import RunResult
from kafkasim.record.summary import percentiles
from kafkasim.report.compare import CompareError, Group, Run, compare_groups, difference, load_runs
from tests.cli.support import QUICKSTART, SHORT, assert_no_traceback, call, kafkasim


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("compare")
    a, b = base / "linger5", base / "linger0"
    assert call("run", QUICKSTART, *SHORT, "--out", a, "--no-figures", "--no-progress") == 0
    assert call("run", QUICKSTART, *SHORT, "--set", "producers[0].linger.ms=0", "--out", b, "--no-figures",
                "--no-progress") == 0
    return a, b


def test_the_first_runs_numbers_are_the_ones_its_summary_holds(two_runs: tuple[Path, Path]) -> None:
    runs = load_runs(two_runs)
    groups = {(g.kind, g.key): g for g in compare_groups(runs)}
    summary = RunResult.load(two_runs[0]).summary
    for api, data in summary["apis"].items():
        assert groups[("api", api)].stats[0] == data["TotalTimeMs"]
    # One producer (acks=all) and one consumer: their rows are the summary's per-acks and end-to-end rows.
    assert groups[("producer", "producer-1")].stats[0] == summary["produce_latency"]["acks=all"]["from_intended"]
    assert groups[("consumer", "consumer-1")].stats[0] == summary["e2e_latency"]
    assert {k for k, _ in groups} == {"api", "client", "producer", "consumer"}
    assert {key for kind, key in groups if kind == "client"} == {"producer-1", "consumer-1", "follower-1",
                                                                  "follower-2"}


def test_differences_are_the_later_run_against_the_first(two_runs: tuple[Path, Path]) -> None:
    runs = load_runs(two_runs)
    produce = next(g for g in compare_groups(runs) if g.kind == "api" and g.key == "Produce")
    a, b = produce.stats
    assert a is not None and b is not None
    delta, ratio = difference(a, b, "p99") or (0.0, 0.0)
    assert delta == pytest.approx(b["p99"] - a["p99"])
    assert ratio == pytest.approx(b["p99"] / a["p99"])
    # linger.ms=0 sends a batch per record or so: many more produce requests in the same time.
    assert b["count"] > 2 * a["count"]


def test_the_cli_prints_80_column_tables_and_writes_the_figure(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = kafkasim("compare", *two_runs, "--out", out)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result)
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    for expected in ("A = ", "B = ", "Produce", "FetchFollower", "producer-1", "consumer-1", "B-A", "B/A"):
        assert expected in result.stdout
    assert (out / "compare.png").stat().st_size > 10_000
    saved = json.loads((out / "compare.json").read_text())
    assert [r["letter"] for r in saved["runs"]] == ["A", "B"]
    assert str(out / "compare.png") in "".join(result.stdout.split())  # a long path wraps at 80 columns
    # An earlier comparison is replaced; a directory holding a user's file is not.
    assert kafkasim("compare", *two_runs, "--out", out).returncode == 0
    (out / "notes.txt").write_text("mine")
    refused = kafkasim("compare", *two_runs, "--out", out)
    assert refused.returncode == 2 and "notes.txt" in refused.stderr
    assert (out / "notes.txt").read_text() == "mine"


def test_a_real_run_made_on_a_shared_machine_is_said_to_carry_its_waits(two_runs: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    """A real run's run-info.json says how the machine's cores were shared over its load
    (kafkasim.real.machine_cpu): compare names a run that other work or the hypervisor took a share of."""
    shared = tmp_path / "shared"
    shutil.copytree(two_runs[1], shared)
    info = json.loads((shared / "run-info.json").read_text())
    info["machine_cpu"] = {"run": 0.5, "other": 0.03, "idle": 0.4, "steal": 0.07}
    (shared / "run-info.json").write_text(json.dumps(info))
    result = kafkasim("compare", two_runs[0], shared)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert ("B: other work took 3% of the machine's cores during the load and the hypervisor 7% (steal); its "
            "latencies carry those waits.") in text
    assert "A: other work" not in text


def test_bad_input_is_a_message_and_exit_2(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    one = kafkasim("compare", two_runs[0], "--out", tmp_path / "x")
    assert one.returncode == 2 and "at least two" in one.stderr
    assert_no_traceback(one)
    not_a_run = kafkasim("compare", two_runs[0], tmp_path, "--out", tmp_path / "y")
    assert not_a_run.returncode == 2 and "not a complete kafkasim result" in not_a_run.stderr
    broken = tmp_path / "broken"
    shutil.copytree(two_runs[1], broken)
    (broken / "records.parquet").unlink()
    missing = kafkasim("compare", two_runs[0], broken, "--out", tmp_path / "z")
    assert missing.returncode == 2 and "missing records.parquet" in missing.stderr
    assert_no_traceback(missing)
    absent = kafkasim("compare", two_runs[0], tmp_path / "nowhere", "--out", tmp_path / "w")
    assert absent.returncode == 2 and "not a directory" in absent.stderr
    assert not any((tmp_path / n).exists() for n in ("x", "y", "z", "w"))
    with pytest.raises(CompareError, match="at least two"):
        load_runs([two_runs[0]])


def test_a_count_difference_is_a_whole_number() -> None:

    a, b = np.linspace(1.0, 2.0, 500), np.linspace(1.0, 2.0, 409)
    group = Group("api", "Produce", "TotalTimeMs", (percentiles(a), percentiles(b)), (a, b))
    empty = RunResult(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    runs = [Run("A", Path("a"), empty), Run("B", Path("b"), empty)]
    console = Console(width=80, record=True)
    console.print(group_table(runs, group))
    row = next(line for line in console.export_text().splitlines() if "B-A" in line)
    assert row.split()[1] == "-91"


def test_runs_with_several_brokers_handling_requests_are_compared_per_broker() -> None:
    from kafkasim.report.compare import latency_samples

    requests = pd.DataFrame({
        "api": ["Produce", "Produce", "Produce", "FetchFollower"], "client": ["p", "p", "p", "f"],
        "broker": np.array([0, 1, 1, 0], dtype=np.int32), "TotalTimeMs": [1.0, 5.0, 7.0, 3.0],
        "client_latency_ms": [2.0, 6.0, 8.0, 4.0], "client_send_ms": [10.0, 20.0, 30.0, 40.0]})
    records = pd.DataFrame({"producer": pd.Series([], dtype=str)})
    empty = pd.DataFrame(columns=["time_ms", "metric", "entity", "value"])
    samples = latency_samples(RunResult(requests, records, empty, {"warmup_ms": 0.0}, None))
    assert list(samples["broker", "broker-1 Produce", "TotalTimeMs"]) == [5.0, 7.0]
    assert list(samples["broker", "broker-0 FetchFollower", "TotalTimeMs"]) == [3.0]
    one = latency_samples(RunResult(requests[requests["broker"] == 0], records, empty, {"warmup_ms": 0.0}, None))
    assert not [k for k in one if k[0] == "broker"]  # one broker: the per-API groups say it all


def test_each_runs_cores_per_broker_and_kind_are_shown_with_their_ratio_to_the_first(
        two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """summary per_broker cores (kafkasim.run.cores; a real run's from its JVM threads) side by side: the same
    scenario's threads using more CPU for the same load say the machine was slower. A real broker whose threads
    jcmd could not name has its handlers and network threads only together (data plane); a run without cores
    (an older run, a request log) is said to keep none."""
    unnamed, none_kept = tmp_path / "unnamed", tmp_path / "none"
    for copy in (unnamed, none_kept):
        shutil.copytree(two_runs[1], copy)
    summary = json.loads((unnamed / "summary.json").read_text())
    leader = summary["per_broker"]["broker-0"]["cores"]
    leader["request handlers"] = leader["network threads"] = 0.0
    (unnamed / "summary.json").write_text(json.dumps(summary))
    summary = json.loads((none_kept / "summary.json").read_text())
    for data in summary["per_broker"].values():
        data.pop("cores", None)
    (none_kept / "summary.json").write_text(json.dumps(summary))

    runs = load_runs([two_runs[0], unnamed, none_kept])
    first = RunResult.load(two_runs[0]).summary["per_broker"]
    a, b, c = (run.cores for run in runs)
    assert a is not None and b is not None and c is None
    assert a["broker-0"]["request handlers"] == first["broker-0"]["cores"]["request handlers"] > 0
    assert a["broker-0"]["all"] == pytest.approx(first["broker-0"]["cores"]["data plane"])
    assert a["broker-1"]["replica fetchers"] > 0 and a["broker-1"]["all"] == a["broker-1"]["replica fetchers"]
    assert set(b["broker-0"]) == {"data plane", "replica fetchers", "all"}

    out = tmp_path / "cmp"
    result = kafkasim("compare", two_runs[0], unnamed, none_kept, "--out", out)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Cores each broker's threads used after the warm-up, by kind" in text
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in text.splitlines() if "broker-" in line}
    assert rows[("A", "broker-0")][0] == f"{a['broker-0']['request handlers']:.3f}"
    assert rows[("B", "broker-0")][:2] == ["-", "-"]  # handlers, network: not named
    linger0 = RunResult.load(two_runs[1]).summary["per_broker"]["broker-1"]["cores"]["replica fetchers"]
    assert rows[("B/A", "broker-1")][-1] == f"{linger0 / a['broker-1']['replica fetchers']:.2f}x"
    assert any(line.split() == ["C", "none", "kept", "-", "-", "-", "-", "-"] for line in text.splitlines())
    assert max(len(line) for line in text.splitlines()) <= 80
    saved = json.loads((out / "compare.json").read_text())["cores"]
    assert saved["A"] == a and saved["C"] is None
