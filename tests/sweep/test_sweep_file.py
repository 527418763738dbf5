"""Sweep files: validation errors (located, named, every problem) and the deterministic expansion into runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.scenario.errors import ScenarioError
from kafkasim.scenario.load import load_scenario
from kafkasim.sweep.model import load_sweep
from kafkasim.sweep.plan import derive_seeds, override_text, plan_sweep


def _write(directory: Path, text: str) -> Path:
    path = directory / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(directory: Path, text: str) -> str:
    path = _write(directory, text)
    with pytest.raises(ScenarioError) as info:
        plan_sweep(load_sweep(path))
    return str(info.value)


def test_unknown_key_path_names_file_line_key_and_suggests(sweep_dir: Path) -> None:
    message = _error(
        sweep_dir,
        "base: base.yaml\ngrid:\n  broker.num.io.thread: [1, 2]\nseeds: [1]\n",
    )
    # Reported once (not once per value), at the grid key's line, with Kafka's spelling suggested.
    assert message.count("\n") == 0, message
    assert message.startswith(f"{sweep_dir / 'sweep.yaml'}:3: grid.broker.num.io.thread: ")
    assert "'num.io.threads'" in message


def test_value_of_wrong_type_names_the_value(sweep_dir: Path) -> None:
    message = _error(
        sweep_dir,
        "base: base.yaml\ngrid:\n  broker.num.io.threads: [2, many]\nseeds: [1]\n",
    )
    assert ":3: grid.broker.num.io.threads: value 'many':" in message
    assert "integer" in message
    assert "value 2" not in message


def test_empty_grid_list_is_refused(sweep_dir: Path) -> None:
    message = _error(sweep_dir, "base: base.yaml\ngrid:\n  broker.num.io.threads: []\nseeds: [1]\n")
    assert message.endswith(":3: grid.broker.num.io.threads: the list is empty; give at least one value to try")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("base: base.yaml\ngrid:\n  broker.num.io.threads: 4\nseeds: [1]\n", ":3: grid.broker.num.io.threads: expected a list"),
        ("base: base.yaml\ngird: {broker.num.io.threads: [1]}\nseeds: [1]\n", ":2: gird: unknown key 'gird', did you mean 'grid'?"),
        ("base: base.yaml\ngrid: {broker.num.io.threads: [1]}\n", "give exactly one of `seeds: [1, 2, 3]` or `replications: 3`"),
        ("base: base.yaml\ngrid: {}\nseeds: [3, 3]\n", ":3: seeds: seed 3 is listed twice"),
        ("base: base.yaml\nreplications: 0\n", ":2: replications: must be >= 1"),
        ("base: 5\nseeds: [1]\n", ":1: base: must be a scenario file path or an inline scenario mapping (got int)"),
        (
            "base: base.yaml\nzip:\n  - producers[0].acks: [1, all]\n    broker.num.io.threads: [1]\nseeds: [1]\n",
            ":3: zip[0]: the lists must have equal length to move together (producers[0].acks: 2, broker.num.io.threads: 1)",
        ),
        (
            "base: base.yaml\ngrid: {broker.num.io.threads: [1]}\nzip:\n  - {broker.num.io.threads: [2]}\nseeds: [1]\n",
            "key path 'broker.num.io.threads' is varied twice (grid and zip[0])",
        ),
        ("base: base.yaml\nseeds: [1]\nmetrics: [{name: x, colum: y}]\n", ":3: metrics[0].colum: unknown key 'colum', did you mean 'column'?"),
        ("base: missing.yaml\nseeds: [1]\n", "missing.yaml: file not found"),
    ],
)
def test_bad_sweep_files_give_a_clear_located_error(sweep_dir: Path, text: str, expected: str) -> None:
    assert expected in _error(sweep_dir, text)


def test_variant_that_breaks_a_cross_check_is_named(sweep_dir: Path) -> None:
    # Each value alone is fine; min.insync.replicas 3 > replication.factor 2 only in combination.
    message = _error(
        sweep_dir,
        "base: base.yaml\ngrid:\n  topics[0].replication.factor: [2, 3]\n  topics[0].min.insync.replicas: [2, 3]\n"
        "seeds: [1]\n",
    )
    assert "variant v001 (topics[0].replication.factor=2, topics[0].min.insync.replicas=3)" in message
    assert "topics[0].min.insync.replicas: 3 > replication.factor 2" in message
    assert "v000" not in message and "v003" not in message


def test_inline_base_errors_point_into_the_sweep_file(tmp_path: Path) -> None:
    message = _error(tmp_path, "base:\n  name: x\n  description: y\n  duration: 1s\n  topics: []\nseeds: [1]\n")
    assert f"{tmp_path / 'sweep.yaml'}:5: base.topics: " in message


def test_plan_is_the_cartesian_product_in_file_order_with_zip_groups(sweep_dir: Path) -> None:
    path = _write(
        sweep_dir,
        "base: base.yaml\n"
        "grid:\n  broker.num.io.threads: [1, 4]\n"
        "zip:\n  - producers[0].acks: [1, all, 0]\n    producers[0].linger.ms: [0, 5, 10]\n"
        "seeds: [11, 12]\nduration: 2s\n",
    )
    plan = plan_sweep(load_sweep(path))
    assert [d.label for d in plan.dimensions] == ["broker.num.io.threads", "producers[0].acks/producers[0].linger.ms"]
    assert [v.variant_id for v in plan.variants] == [f"v00{i}" for i in range(6)]
    assert [v.params for v in plan.variants[:3]] == [
        {"broker.num.io.threads": 1, "producers[0].acks": 1, "producers[0].linger.ms": 0},
        {"broker.num.io.threads": 1, "producers[0].acks": "all", "producers[0].linger.ms": 5},
        {"broker.num.io.threads": 1, "producers[0].acks": 0, "producers[0].linger.ms": 10},
    ]
    assert plan.variants[3].coords == (1, 0)
    # Variants x seeds, seeds innermost; every run carries its resolved, validated scenario.
    assert [(r.variant_id, r.seed) for r in plan.runs[:3]] == [("v000", 11), ("v000", 12), ("v001", 11)]
    scenario = load_scenario(plan.runs[4].scenario_yaml)
    assert scenario.broker.num_io_threads == 1
    assert scenario.producers[0].linger_ms == 10
    assert scenario.duration == 2000.0
    # The same file plans the same runs (no set iteration, no clock).
    assert plan_sweep(load_sweep(path)).runs == plan.runs


def test_replications_start_at_the_base_seed_and_are_shared_by_variants(sweep_dir: Path) -> None:
    path = _write(sweep_dir, "base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 2]\nreplications: 3\n")
    plan = plan_sweep(load_sweep(path))
    assert plan.seeds[0] == 7  # base.yaml's seed
    assert plan.seeds == derive_seeds(7, 3)
    assert len(set(plan.seeds)) == 3
    assert [r.seed for r in plan.runs] == plan.seeds * 2


def test_override_values_round_trip_as_yaml() -> None:
    assert override_text("a.b", 4) == "a.b=4"
    assert override_text("a.b", "all") == "a.b=all"
    assert override_text("a.b", "1") == "a.b='1'"  # a string that looks like a number stays a string
    assert override_text("a.b", {"type": "constant", "value": "1ms"}) == "a.b={type: constant, value: 1ms}"


@pytest.mark.parametrize("key", ['"producers[0].acks\\n"', '"producers[\\u0660].acks"'])
def test_a_key_path_is_matched_whole_and_in_ascii_digits(sweep_dir: Path, key: str) -> None:
    # `$` matched before the final newline, and `\d` any script's digits: both passed as key paths.
    message = _error(sweep_dir, f"base: base.yaml\ngrid:\n  {key}: [1, all]\nseeds: [1]\n")
    assert ":3: grid." in message and "is not a scenario key path" in message, message
