"""Sweeps on Spark (local[2]): aggregates match in-process percentiles; failures are recorded, not dropped.

Spark takes ~10 s to start, so these tests share one session (conftest.py) and run two small sweeps.
Until the simulator exists they use `fake_runner` below, a TEST DOUBLE (not the simulator): it draws
request rows from a seeded distribution whose scale depends on the variant's parameters. One test uses
the real `kafkasim.run.run_scenario` and is skipped only while that function does not exist.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pytest
from rich.console import Console

from kafkasim.console.sweep import sweep_command
from kafkasim.scenario.load import load_scenario
from kafkasim.sweep.confidence import ci95_half_width
from kafkasim.sweep.metrics import PERCENTILE_RANK_ERROR, PERCENTILES
from kafkasim.sweep.model import load_sweep
from kafkasim.sweep.output import MANIFEST, IncompleteSweepError, read_manifest
from kafkasim.sweep.plan import plan_sweep
from kafkasim.sweep.sweep import SweepResult, run_sweep

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

# ------------------------------------------------------------------------------------------------------
# Test double: realistic-looking RunResults from a seeded distribution (NOT the simulator).
# ------------------------------------------------------------------------------------------------------

APIS = ("Produce", "FetchConsumer", "FetchFollower")


@dataclass
class FakeRunResult:
    requests: pd.DataFrame
    records: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)


def fake_runner(scenario: Any, *, seed: int) -> FakeRunResult:
    """Lognormal TotalTimeMs per api, slower with fewer io threads and with acks=all; 1% errors.

    Rows sent during the warm-up are ten times slower (a cold start), so statistics that forget to drop
    them are visibly wrong.
    """
    threads = scenario.broker.num_io_threads
    acks = scenario.producers[0].acks
    rng = np.random.default_rng([seed, threads, acks + 1])
    n = 3000
    sent = np.sort(rng.uniform(0.0, scenario.duration, n))
    api = rng.choice(APIS, n)
    median = 4.0 / threads * (2.0 if acks == -1 else 1.0)
    total = rng.lognormal(math.log(median), 0.6, n) * np.where(sent < scenario.warmup, 10.0, 1.0)
    error = np.where(rng.random(n) < 0.01, "REQUEST_TIMED_OUT", "NONE")
    requests = pd.DataFrame({"api": api, "client_send_ms": sent, "TotalTimeMs": total, "error": error})
    produce = requests[requests["api"] == "Produce"]
    records = pd.DataFrame(
        {
            "send_ms": produce["client_send_ms"].to_numpy(),
            "produce_latency_ms": produce["TotalTimeMs"].to_numpy() + 0.5,
            "e2e_latency_ms": produce["TotalTimeMs"].to_numpy() + rng.exponential(2.0, len(produce)),
        }
    )
    return FakeRunResult(requests, records, {"requests": n})


def failing_runner(scenario: Any, *, seed: int) -> FakeRunResult:
    """fake_runner, except that the variant with one io thread and acks=1 raises."""
    if scenario.broker.num_io_threads == 1 and scenario.producers[0].acks == 1:
        raise RuntimeError("simulated engine crash for io=1, acks=1")
    return fake_runner(scenario, seed=seed)


# Spark's executors import test modules by name, which they cannot; ship these functions by value.
cloudpickle = pytest.importorskip("pyspark.cloudpickle")

cloudpickle.register_pickle_by_value(sys.modules[__name__])

SWEEP = """\
base: base.yaml
grid:
  broker.num.io.threads: [1, 4]
  producers[0].acks: [1, all]
seeds: [3, 5]
"""


def _sorted_rank_bounds(values: np.ndarray, q: float, eps: float) -> tuple[float, float]:
    """The order statistics whose rank is within eps*n of the q-quantile's rank (the stated bound)."""
    s = np.sort(values)
    n = len(s)
    lo = max(0, math.ceil((q - eps) * n - 1e-9) - 1)
    hi = min(n - 1, math.ceil((q + eps) * n + 1e-9) - 1)
    return float(s[lo]), float(s[hi])


def _in_process_rows(sweep_path: Path) -> dict[tuple[str, int], pd.DataFrame]:
    """The same runs executed in this process: (variant_id, seed) -> requests after warm-up."""
    plan = plan_sweep(load_sweep(sweep_path))
    out = {}
    for run in plan.runs:
        scenario = load_scenario(run.scenario_yaml)
        requests = fake_runner(scenario, seed=run.seed).requests
        out[(run.variant_id, run.seed)] = requests[requests["client_send_ms"] >= scenario.warmup]
    return out


@pytest.fixture(scope="module")
def clean_sweep(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SweepResult]:
    directory = tmp_path_factory.mktemp("clean")
    (directory / "base.yaml").write_text(Path(__file__).with_name("base.yaml").read_text())
    path = directory / "sweep.yaml"
    path.write_text(SWEEP)
    return path, run_sweep(path, runner=fake_runner, spark=spark)


def test_aggregated_p99_matches_in_process_within_the_rank_bound(clean_sweep: tuple[Path, SweepResult]) -> None:
    path, result = clean_sweep
    assert (result.planned, result.succeeded, result.failed) == (8, 8, 0)
    rows = _in_process_rows(path)
    per_seed = result.per_seed[result.per_seed["metric"] == "TotalTimeMs"]
    per_variant = result.per_variant[result.per_variant["metric"] == "TotalTimeMs"]
    assert sorted(per_seed["variant_id"].unique()) == ["v000", "v001", "v002", "v003"]
    for variant_id in ("v000", "v001", "v002", "v003"):
        for api in APIS:
            per_seed_p99 = []
            for seed in (3, 5):
                values = rows[(variant_id, seed)]
                values = values[values["api"] == api]
                got = per_seed[(per_seed["variant_id"] == variant_id) & (per_seed["seed"] == seed)
                               & (per_seed["group"] == api)].iloc[0]
                lo, hi = _sorted_rank_bounds(values["TotalTimeMs"].to_numpy(), 0.99, PERCENTILE_RANK_ERROR)
                assert lo <= got["p99"] <= hi, (variant_id, seed, api)
                assert got["count"] == len(values)
                assert got["error_rate"] == pytest.approx((values["error"] != "NONE").mean())
                per_seed_p99.append(got["p99"])
            row = per_variant[(per_variant["variant_id"] == variant_id) & (per_variant["group"] == api)
                              & (per_variant["stat"] == "p99")].iloc[0]
            assert row["n_seeds"] == 2
            assert row["mean"] == pytest.approx(np.mean(per_seed_p99))
            half = ci95_half_width(per_seed_p99)
            assert half is not None
            assert (row["ci95_low"], row["ci95_high"]) == pytest.approx((row["mean"] - half, row["mean"] + half))
            pooled = pd.concat([rows[(variant_id, s)] for s in (3, 5)])
            lo, hi = _sorted_rank_bounds(
                pooled.loc[pooled["api"] == api, "TotalTimeMs"].to_numpy(), 0.99, PERCENTILE_RANK_ERROR
            )
            assert lo <= row["pooled"] <= hi


def test_every_percentile_of_the_records_metrics_is_within_the_bound(clean_sweep: tuple[Path, SweepResult]) -> None:
    path, result = clean_sweep
    plan = plan_sweep(load_sweep(path))
    run = plan.runs[5]
    scenario = load_scenario(run.scenario_yaml)
    records = fake_runner(scenario, seed=run.seed).records
    records = records[records["send_ms"] >= scenario.warmup]
    got = result.per_seed[(result.per_seed["variant_id"] == run.variant_id) & (result.per_seed["seed"] == run.seed)
                          & (result.per_seed["metric"] == "e2e_latency_ms")].iloc[0]
    for name, q in PERCENTILES.items():
        lo, hi = _sorted_rank_bounds(records["e2e_latency_ms"].to_numpy(), q, PERCENTILE_RANK_ERROR)
        assert lo <= got[name] <= hi, name


def test_output_is_complete_parquet_by_variant_with_figures(clean_sweep: tuple[Path, SweepResult]) -> None:
    path, result = clean_sweep
    out = result.output_dir
    assert out == path.parent / "sweep.out"
    manifest = read_manifest(out)
    assert (manifest["complete"], manifest["planned"], manifest["succeeded"], manifest["failed"]) == (True, 8, 8, 0)
    assert manifest["percentiles"]["rank_error"] == PERCENTILE_RANK_ERROR
    # Every row of every run is stored (warm-up rows included, flagged), partitioned by variant.
    assert sorted(p.name for p in (out / "requests").iterdir() if p.is_dir()) == [
        f"variant_id=v00{i}" for i in range(4)
    ]
    table = ds.dataset(out / "requests", format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 8 * 3000
    assert table.column("in_warmup").to_numpy().sum() == pytest.approx(8 * 3000 * 0.1, rel=0.2)
    assert set(table.column("seed").to_pylist()) == {3, 5}
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert "TotalTimeMs-Produce.png" in figures and "TotalTimeMs-Produce-heatmap.png" in figures
    assert not [p for p in path.parent.iterdir() if ".partial-" in p.name]
    variants = json.loads((out / "variants.json").read_text())["variants"]
    assert variants[1] == {"variant_id": "v001", "params": {"broker.num.io.threads": 1, "producers[0].acks": "all"}}


def test_failed_variant_is_reported_while_others_complete(spark: SparkSession, sweep_dir: Path) -> None:
    path = sweep_dir / "sweep.yaml"
    path.write_text(SWEEP.replace("seeds: [3, 5]", "seeds: [3, 5]\noutput: results/failing"))
    console = Console(record=True, width=400)
    code = sweep_command(path, runner=failing_runner, spark=spark, console=console, err_console=console)
    text = console.export_text()
    assert code == 1
    assert "planned 8, succeeded 6, failed 2" in text
    assert "failed v000 seed 3: RuntimeError: simulated engine crash for io=1, acks=1" in text
    # Where the time went, phase by phase (no "Spark start": the session was given).
    assert re.search(r"time: runs \d+\.\d s \(simulation \d+\.\d s over 6 runs\), schemas \d+\.\d s, "
                     r"aggregation \d+\.\d s, tables \d+\.\d s, figures \d+\.\d s", text), text
    out = sweep_dir / "results" / "failing"
    manifest = read_manifest(out)
    failed = [r for r in manifest["runs"] if r["status"] == "failed"]
    assert [(r["variant_id"], r["seed"]) for r in failed] == [("v000", 3), ("v000", 5)]
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 8  # nothing dropped: the failures are rows with their traceback
    assert runs.loc[runs["status"] == "failed", "error"].str.contains("Traceback").all()
    per_variant = pd.read_parquet(out / "per_variant.parquet")
    assert sorted(per_variant["variant_id"].unique()) == ["v001", "v002", "v003"]


def test_a_partial_directory_is_never_taken_for_a_result(tmp_path: Path) -> None:
    partial = tmp_path / ".out.partial-1"
    partial.mkdir()
    with pytest.raises(IncompleteSweepError):
        read_manifest(partial)
    (partial / MANIFEST).write_text(json.dumps({"complete": False, "planned": 8}))
    with pytest.raises(IncompleteSweepError, match="complete: false"):
        read_manifest(partial)


def _real_runner_available() -> bool:
    try:
        return callable(getattr(importlib.import_module("kafkasim.run"), "run_scenario", None))
    except ImportError:
        return False


@pytest.mark.skipif(not _real_runner_available(), reason="kafkasim.run.run_scenario (the engine) does not exist yet")
def test_end_to_end_with_the_real_simulator(spark: SparkSession, sweep_dir: Path) -> None:
    from kafkasim.run import run_scenario

    path = sweep_dir / "sweep.yaml"
    path.write_text("base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 8]\nseeds: [1, 2]\nduration: 3s\n")
    result = run_sweep(path, spark=spark)
    assert (result.planned, result.succeeded, result.failed) == (4, 4, 0), result.failed_runs
    assert result.notes == []  # the default metrics' columns all exist in the engine's tables
    # The Spark p99 of one run equals the one computed from the same run in this process.
    run = plan_sweep(load_sweep(path)).runs[3]
    scenario = load_scenario(run.scenario_yaml)
    requests = run_scenario(scenario, seed=run.seed).requests
    produce = requests[(requests["api"] == "Produce") & (requests["client_send_ms"] >= scenario.warmup)]
    values = produce["TotalTimeMs"].dropna().to_numpy()
    got = result.per_seed[(result.per_seed["variant_id"] == run.variant_id) & (result.per_seed["seed"] == run.seed)
                          & (result.per_seed["metric"] == "TotalTimeMs") & (result.per_seed["group"] == "Produce")]
    lo, hi = _sorted_rank_bounds(values, 0.99, PERCENTILE_RANK_ERROR)
    assert lo <= got.iloc[0]["p99"] <= hi
    assert got.iloc[0]["count"] == len(produce)
