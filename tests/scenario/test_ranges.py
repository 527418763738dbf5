"""Every numeric key has a documented range (in its schema description) that validation enforces, naming it;
the quantities whose work explodes (rates, sample_interval, partitions, durations, counts) are bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kafkasim.scenario import Scenario, ScenarioError, load_scenario, scenario_json_schema, with_overrides
from kafkasim.scenario.ranges import allowed
from kafkasim.scenario.structure import models

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"


NUMERIC: list[tuple[type[BaseModel], str, Any]] = [
    (model, name, info)
    for model in models(Scenario)
    for name, info in model.model_fields.items()
    if allowed(info) is not None
]


def test_there_are_many_numeric_keys() -> None:
    assert len(NUMERIC) > 60


@pytest.mark.parametrize(("model", "name", "info"), NUMERIC, ids=[f"{m.__name__}.{n}" for m, n, _ in NUMERIC])
def test_every_numeric_key_documents_its_range_in_the_schema(model: type[BaseModel], name: str, info: Any) -> None:
    schema = scenario_json_schema()
    target = schema if model is Scenario else schema["$defs"][model.__name__]
    description = target["properties"][info.alias or name]["description"]
    assert description.endswith(f"Allowed: {allowed(info)}."), description


def test_every_numeric_key_has_a_finite_upper_bound() -> None:
    unbounded = [f"{m.__name__}.{n}: {allowed(i)}" for m, n, i in NUMERIC if "at least" in (allowed(i) or "")]
    unbounded += [f"{m.__name__}.{n}: {allowed(i)}" for m, n, i in NUMERIC if "more than" in (allowed(i) or "")
                  and "up to" not in (allowed(i) or "")]
    assert unbounded == []


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("producers[0].rate=1e9/s", "rate '1e9/s' is out of range (allowed: up to 1000000/s per producer)"),
        ("sample_interval=1us", "sample_interval: 1us is out of range (allowed: 1ms to 1d)"),
        ("topics[0].partitions=10001", "topics[0].partitions: 10001 is out of range (allowed: 1 to 10000)"),
        ("broker.num.partitions=50000", "broker.num.partitions: 50000 is out of range (allowed: 1 to 10000)"),
        ("duration=2d", "duration: duration '2d' is out of range (allowed: up to 1d)"),
        ("clock={mode: wallclock, speed: 1e-9}", "clock.speed: 1e-09 is out of range (allowed: 0.001 to 1000000)"),
        ("topics[0].replication.factor=33", "topics[0].replication.factor: 33 is out of range (allowed: 1 to 32)"),
        (
            "broker.default.replication.factor=1000",
            "broker.default.replication.factor: 1000 is out of range (allowed: 1 to 32)",
        ),
        ("producers[0].record_size=2GiB", "size '2GiB' is out of range (allowed: up to 1GiB)"),
        ("broker.num.io.threads=5000", "broker.num.io.threads: 5000 is out of range (allowed: 1 to 1000)"),
        ("topics[0].segment.bytes=3", "topics[0].segment.bytes: 3 is out of range (allowed: 14 to 2147483647 bytes)"),
        ("network.default_link.latency=2d", "duration '2d' is out of range (allowed: up to 1d)"),
        ("producers[0].rate=900000/s", "about 27,000,000 records in 30s; a run keeps every record, and at most"),
        (
            "topics=[{name: orders, partitions: 6000}, {name: b, partitions: 6000}]",
            "topics: 12000 partitions in all is out of range (allowed: up to 10000 over all topics)",
        ),
        (
            "sample_interval=1ms",  # with 1000 partitions of RF 3: 8 gauges each
            "sample_interval: 1ms over 30s is 30,000 samples of",
        ),
    ],
)
def test_quantities_whose_work_explodes_are_refused_with_their_range(override: str, message: str) -> None:
    scenario = load_scenario(QUICKSTART)
    extra = ["topics[0].partitions=1000"] if override == "sample_interval=1ms" else []
    with pytest.raises(ScenarioError) as e:
        with_overrides(scenario, [*extra, override])
    assert message in str(e.value), str(e.value)


def test_the_largest_allowed_values_still_validate() -> None:
    with_overrides(load_scenario(QUICKSTART),
        ["topics[0].partitions=1000", "duration=10s", "producers[0].rate=1000000/s", "clock={mode: wallclock, speed: 0.001}"]
    )
    # A day at 50 records/s: ~4.3 M batches (one or two records each at this rate), each one a produce, a
    # consumer fetch and two follower fetches: ~17 M request rows, under the 20 M a run keeps.
    with_overrides(load_scenario(QUICKSTART), ["duration=1d", "producers[0].rate=50/s", "sample_interval=10s"])
