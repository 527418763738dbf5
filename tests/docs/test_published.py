"""docs/validation.md's "Published measurements", docs/published.json and the kreps-2014 preset's fitted values
(docs/make_published.py) keep up with each other, and each figure's rule holds kafkasim to what it says."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from kafkasim.calibrate import published
from kafkasim.calibrate.published import FIGURES, RUNS, Figure, evaluate
from kafkasim.run import run_scenario
from kafkasim.scenario import load_scenario, with_overrides
from kafkasim.scenario.hardware import KREPS_FITTED
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def _data() -> dict:
    return json.loads((ROOT / published.JSON_FILE).read_text(encoding="utf-8"))


def _script() -> ModuleType:
    return load_script(ROOT / "docs" / "make_published.py")


def test_the_preset_holds_the_values_the_committed_fit_found() -> None:
    fit = _data()["fit"]
    assert {k: v["value"] for k, v in fit["values"].items()} == KREPS_FITTED
    # Every fitted value is named by the figure that fitted it, and no figure names a value the fit lacks.
    assert {f.fitted for f in FIGURES if f.fitted} == set(KREPS_FITTED)


def test_the_committed_rows_are_every_figure_and_the_page_shows_them() -> None:
    data = _data()
    assert [r["key"] for r in data["rows"]] == [f.key for f in FIGURES]
    assert set(data["runs"]) == {r.key for r in RUNS}
    page = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert published.section(data) in page


def test_every_figures_scenario_validates() -> None:
    for run in RUNS:
        scenario = load_scenario(ROOT / run.path)
        if run.overrides:
            with_overrides(scenario, list(run.overrides))


def test_the_fitted_block_of_the_preset_is_where_the_script_writes() -> None:
    script = _script()
    assert script.FITTED_BLOCK.search(script.HARDWARE.read_text(encoding="utf-8")) is not None


def _figure(key: str) -> Figure:
    return next(f for f in FIGURES if f.key == key)


def test_a_truncated_latency_is_compared_by_its_whole_ms() -> None:
    figure = _figure("kreps_e2e_p50")  # published 2 (ms, truncated by the post's tool)
    key = figure.runs[0].key
    assert evaluate(figure, {key: {"e2e p50": 2.95}}).met  # the tool would print 2
    row = evaluate(figure, {key: {"e2e p50": 1.99}})  # the tool would print 1: 50% off
    assert (row.compared, row.met) == (1.0, False)


def test_throughput_rules_hold_both_ways() -> None:
    figure = _figure("kreps_sync3")  # 421,823 records/s, within 15%
    key = figure.runs[0].key
    assert evaluate(figure, {key: {"throughput": 421_823 * 1.14}}).met
    assert not evaluate(figure, {key: {"throughput": 421_823 * 1.16}}).met
    assert not evaluate(figure, {key: {"throughput": 421_823 * 0.84}}).met
    both = _figure("kreps_both_vs_alone")
    alone, together = (r.key for r in both.runs[1:]), both.runs[0].key
    (alone_key,) = alone
    assert evaluate(both, {together: {"producer-1 throughput": 96.0}, alone_key: {"throughput": 100.0}}).met
    assert not evaluate(both, {together: {"producer-1 throughput": 94.0}, alone_key: {"throughput": 100.0}}).met


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_flush_per_append_costs_one_flush_per_partition_a_request_carries(partitions: int) -> None:
    """The fsync rows' mechanism, on short runs: each partition of a request is appended and flushed."""
    figure = _figure(f"fsync_{partitions}")
    measured = {}
    for run in figure.runs:
        scenario = with_overrides(load_scenario(ROOT / run.path), [*run.overrides, "duration=5s", "warmup=1s"])
        measured[run.key] = published.measure(run_scenario(scenario))
    row = evaluate(figure, measured)
    assert row.met, (row.ours, row.target)
    assert measured[figure.runs[0].key]["partitions per produce"] == pytest.approx(partitions, abs=0.05)
