"""Same scenario + same seed => identical tables, and every file a run writes byte for byte (run-info.json
aside); the seed matters; a component's draws are its own."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from kafkasim.record.result import RunResult
from kafkasim.run import run_scenario

from .support import consumer, producer, scenario

REPO = Path(__file__).resolve().parents[2]


def table_hash(frame: pd.DataFrame) -> str:
    hashed = pd.util.hash_pandas_object(frame, index=True).to_numpy()
    return hashlib.sha256(hashed.tobytes() + ",".join(frame.columns).encode()).hexdigest()


def _busy() -> object:
    # Random latencies, sizes and arrivals everywhere, plus a fault, so that any unseeded draw shows.
    return scenario(
        duration="1500ms",
        network={"default_link": {"latency": {"type": "lognormal", "median": "0.5ms", "p99": "3ms"}}},
        producers=[
            producer("p1", rate="800/s", arrival="poisson", record_size={"type": "uniform", "low": "100B", "high": "2KiB"},
                     **{"linger.ms": 2}),
            producer("p2", acks=1, rate="300/s", arrival="poisson", partitioner="random"),
        ],
        consumers=[consumer("c1")],
        topic={"partitions": 3},
        faults=[{"type": "link_delay", "target": "follower-1", "at": "700ms", "duration": "200ms",
                 "extra": {"type": "exponential", "mean": "2ms"}}],
    )


def _hashes(result: RunResult) -> tuple[str, str, str]:
    return table_hash(result.requests), table_hash(result.records), table_hash(result.timeseries)


def test_same_seed_gives_identical_tables() -> None:
    s = _busy()
    first, second = run_scenario(s), run_scenario(s)
    assert len(first.requests) > 1000
    assert _hashes(first) == _hashes(second)


def test_another_seed_gives_different_requests() -> None:
    s = _busy()
    assert table_hash(run_scenario(s, seed=1).requests) != table_hash(run_scenario(s, seed=2).requests)


def test_adding_a_producer_does_not_change_another_producers_arrivals() -> None:
    base = scenario(duration="1s", producers=[producer("p1", rate="200/s", arrival="poisson")])
    more = scenario(
        duration="1s",
        producers=[producer("p1", rate="200/s", arrival="poisson"), producer("p2", rate="50/s", arrival="poisson")],
    )
    p1 = [run_scenario(s).records.query("producer == 'p1'") for s in (base, more)]
    # Batching may differ (the broker is busier), the arrivals may not: same records, same first one.
    assert p1[0]["record_count"].sum() == p1[1]["record_count"].sum() > 100
    assert p1[0]["first_intended_ms"].min() == p1[1]["first_intended_ms"].min()


SHORT_QUICKSTART = (str(REPO / "scenarios" / "quickstart.yaml"), "--set", "duration=2s", "--set", "warmup=500ms",
                    "--seed", "3")


def _run_in_fresh_process(out: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "random"}
    done = subprocess.run(
        [sys.executable, "-m", "kafkasim", "run", *(args or SHORT_QUICKSTART), "--figures", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_every_file_of_a_run_is_byte_identical_in_a_fresh_process_except_run_info(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _run_in_fresh_process(first)
    _run_in_fresh_process(second)
    a, b = _files(first), _files(second)
    assert a.keys() == b.keys()
    assert {"requests.parquet", "records.parquet", "timeseries.parquet", "summary.json", "scenario.yaml",
            "run-info.json", "figures/latency_cdf.png", "figures/produce_swimlane.png", "report.html"} <= a.keys()
    differ = sorted(name for name in a if a[name] != b[name] and name != "run-info.json")
    assert differ == []
    # Replaying the saved, resolved scenario.yaml gives the same bytes again.
    replay = tmp_path / "replay"
    _run_in_fresh_process(replay, str(first / "scenario.yaml"))
    c = _files(replay)
    assert sorted(name for name in a if a[name] != c.get(name) and name != "run-info.json") == []
    # `kafkasim plot` draws the same figures again from the saved result.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    plotted = subprocess.run([sys.executable, "-m", "kafkasim", "plot", str(second)], capture_output=True,
                             text=True, env=env, timeout=300)
    assert plotted.returncode == 0, plotted.stderr
    again = _files(second)
    figures = [name for name in a if name.startswith("figures/")]
    assert len(figures) >= 6 and [name for name in figures if a[name] != again[name]] == []
    # The wall-clock facts live in run-info.json only.
    assert "wall_seconds" not in json.loads(a["summary.json"])
    info = json.loads(a["run-info.json"])
    assert info["wall_seconds"] > 0 and info["kafkasim_version"]
