"""dump_scenario loads back equal; the JSON Schema file is current; shipped scenarios are well formed."""

from __future__ import annotations

import json

import pytest

from kafkasim.scenario import (
    SCHEMA_FILE,
    dump_scenario,
    load_scenario,
    scenario_json_schema,
    scenario_json_schema_text,
    with_overrides,
)

from .samples import FULL, MINIMAL, ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
MODELINE = "# yaml-language-server: $schema=../kafkasim.schema.json"


@pytest.mark.parametrize("text", [MINIMAL, FULL], ids=["minimal", "full"])
def test_dump_loads_back_equal(text: str) -> None:
    scenario = load_scenario(text)
    dumped = dump_scenario(scenario)
    again = load_scenario(dumped)
    assert again == scenario
    assert dump_scenario(again) == dumped


def test_dump_writes_every_value_in_human_units() -> None:
    dumped = dump_scenario(load_scenario(FULL))
    assert "duration: 2m\n" in dumped
    assert "rate: 5000/s\n" in dumped
    assert "bandwidth: 10Gbit/s\n" in dumped
    assert "acks: all\n" in dumped
    assert "linger.ms: 5\n" in dumped  # a default, written out
    assert "description: |\n  Uses every section.\n" in dumped


def test_dump_keeps_an_overridden_seed() -> None:
    scenario = with_overrides(load_scenario(MINIMAL), ["seed=123"])
    assert load_scenario(dump_scenario(scenario)).seed == 123


def test_schema_file_is_up_to_date() -> None:
    on_disk = (ROOT / SCHEMA_FILE).read_text()
    assert json.loads(on_disk) == scenario_json_schema(), (
        "kafkasim.schema.json is stale: regenerate it with `kafkasim schema` (scenario_json_schema_text())"
    )
    assert on_disk == scenario_json_schema_text()


def test_schema_uses_kafkas_key_names_and_human_units() -> None:
    schema = scenario_json_schema()
    broker = schema["$defs"]["BrokerConfig"]["properties"]
    assert "num.io.threads" in broker and "num_io_threads" not in broker
    assert schema["$defs"]["BrokerConfig"]["additionalProperties"] is False
    assert schema["properties"]["sample_interval"]["default"] == "100ms"
    assert {"duration", "name", "description", "topics"} <= set(schema["required"])
    # the shorthand "50us" for a constant distribution is accepted by the schema too
    request = schema["$defs"]["HandlerCosts"]["properties"]["request"]
    assert request["anyOf"][0]["type"] == "string"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_shipped_scenarios_start_with_the_modeline_and_load(path) -> None:
    assert path.read_text().splitlines()[0] == MODELINE
    scenario = load_scenario(path)
    assert scenario.description.strip()


def test_quickstart_is_what_the_readme_promises() -> None:
    s = load_scenario(ROOT / "scenarios" / "quickstart.yaml")
    assert s.name == "quickstart"
    assert [t.replication_factor for t in s.topics] == [3]
    assert [(p.acks, p.rate) for p in s.producers] == [(-1, 1000.0)]
    assert len(s.consumers) == 1
    assert s.duration == 30_000.0
