"""The example sweeps in scenarios/sweeps/ load, plan, and set the scenario fields they claim to vary.

Validation only (no Spark): each file is planned on the driver, and every variant's resolved scenario is
checked to carry its parameter values, so a key path that silently stopped reaching its field, a base
path that moved, or a grid that lost its seeds fails here in a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.scenario.load import load_scenario
from kafkasim.sweep.model import load_sweep
from kafkasim.sweep.plan import plan_sweep
from kafkasim.sweep.sweep import default_output_dir

ROOT = Path(__file__).resolve().parents[2]
SWEEPS = ROOT / "scenarios" / "sweeps"
RUNS_DIR = ROOT / "runs"

FETCH_WAIT = SWEEPS / "fetch_wait_x_acks.yaml"
MIN_BYTES = SWEEPS / "consumer_min_bytes_x_rate.yaml"


def _header(path: Path) -> str:
    """The leading comment block: sweep files have no description key, so the description lives there."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.removeprefix("#").strip())
    return "\n".join(lines)


def test_every_example_sweep_is_listed_here() -> None:
    assert sorted(SWEEPS.glob("*.yaml")) == sorted([FETCH_WAIT, MIN_BYTES])


@pytest.mark.parametrize("path", [FETCH_WAIT, MIN_BYTES], ids=lambda p: p.stem)
def test_example_sweep_plans_with_a_described_two_axis_grid(path: Path) -> None:
    loaded = load_sweep(path)
    plan = plan_sweep(loaded)

    # A base scenario from scenarios/, by relative path.
    assert isinstance(loaded.sweep.base, str)
    assert (path.parent / loaded.sweep.base).resolve().parent == ROOT / "scenarios"
    # Two axes (line plots with one line per value of the second, and a heatmap); >= 3 seeds for a band.
    assert len(plan.dimensions) == 2
    assert len(plan.seeds) >= 3
    assert len(plan.runs) == len(plan.variants) * len(plan.seeds)
    # Results go under runs/ (git-ignored), one directory per sweep.
    assert default_output_dir(loaded).resolve() == RUNS_DIR / "sweeps" / path.stem
    # What it shows and what to look for in the plots, in the header.
    header = _header(path)
    assert "What it shows" in header and "What to look for in the plots" in header
    assert f"kafkasim sweep scenarios/sweeps/{path.name}" in header


def test_fetch_wait_sweep_sets_follower_wait_and_acks() -> None:
    plan = plan_sweep(load_sweep(FETCH_WAIT))
    waits = {v.params["broker.replica.fetch.wait.max.ms"] for v in plan.variants}
    assert 0 in waits and len(waits) >= 4  # busy polling, and waits on both sides of the batch gap
    seen = set()
    for run in plan.runs:
        scenario = load_scenario(run.scenario_yaml)
        assert scenario.broker.replica_fetch_wait_max_ms == run.params["broker.replica.fetch.wait.max.ms"]
        seen.add(scenario.producers[0].acks)
    assert seen == {1, -1}  # acks=1 and acks=all (-1)


def test_min_bytes_sweep_sets_consumer_min_bytes_and_producer_rate() -> None:
    plan = plan_sweep(load_sweep(MIN_BYTES))
    pairs = set()
    for run in plan.runs:
        scenario = load_scenario(run.scenario_yaml)
        pairs.add((scenario.consumers[0].fetch_min_bytes, scenario.producers[0].rate))
        # fetch.max.wait.ms stays at the default: the cap the description talks about.
        assert scenario.consumers[0].fetch_max_wait_ms == 500
    min_bytes = sorted({b for b, _ in pairs})
    rates = sorted({r for _, r in pairs})
    assert min_bytes[0] == 1 and min_bytes[-1] == 256 * 1024
    assert len(rates) >= 3
    assert len(pairs) == len(min_bytes) * len(rates)  # the full cartesian product reached the scenarios
