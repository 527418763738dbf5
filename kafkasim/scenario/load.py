"""Reading, validating, dumping a scenario, and its JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from kafkasim.scenario.errors import Problem, ScenarioError
from kafkasim.scenario.messages import problems_from, show
from kafkasim.scenario.ranges import allowed
from kafkasim.scenario.scenario import Scenario
from kafkasim.scenario.source_file import names_a_file, read_text
from kafkasim.scenario.structure import models
from kafkasim.scenario.units import (
    BANDWIDTH_PATTERN,
    DURATION_PATTERN,
    RATE_PATTERN,
    SIZE_PATTERN,
    YAML_CONTEXT,
    format_bandwidth,
    format_duration,
    format_rate,
    format_size,
)
from kafkasim.scenario.yaml_source import Source, load_yaml

STRING_LABEL = "<string>"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def load_scenario(path_or_text: str | Path) -> Scenario:
    """A Path, or a one-line string naming an existing path, is read as a file (a regular file of at most
    4 MiB: anything else is refused by name, see kafkasim.scenario.source_file); any other string is YAML
    text ("<string>")."""
    text, label = _read(path_or_text)
    return validate_source(load_yaml(text, label))


def _read(path_or_text: str | Path) -> tuple[str, str]:
    if isinstance(path_or_text, str) and not names_a_file(path_or_text):
        return path_or_text, STRING_LABEL
    path = Path(path_or_text)
    return read_text(path, "scenario"), str(path)


def validate_source(source: Source) -> Scenario:
    """Validate parsed YAML (data + line numbers) into a Scenario, or raise ScenarioError."""
    if not isinstance(source.data, dict):
        what = "the file is empty" if source.data is None else f"the top level is {show(source.data)}"
        message = f"{what}; a scenario is a mapping with name, description, duration, topics, ..."
        raise ScenarioError([Problem(source.file, 1, "", message)])
    return validate_data(source.data, source=source, file=source.file)


def validate_data(data: dict[str, Any], *, source: Source | None = None, file: str = "<data>") -> Scenario:
    """Validate plain data as if it came from a file (units required); ScenarioError on any problem."""
    try:
        return Scenario.model_validate(data, context=YAML_CONTEXT, by_alias=True, by_name=False)
    except ValidationError as e:
        raise ScenarioError(problems_from(e, Scenario, source, file)) from None
    except RecursionError:
        raise ScenarioError([Problem(file, None, "", "the scenario is nested too deeply")]) from None


# --- dumping ---------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Multi-line text (descriptions) as literal blocks, readable in the saved scenario.yaml."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# Producer keys whose effective value depends on whether the author set them (Kafka's ProducerConfig: an
# explicit enable.idempotence=true conflicting with acks=1 is an error, a defaulted one is turned off; an
# explicit delivery.timeout.ms below linger.ms + request.timeout.ms is an error, a defaulted one is raised).
# Written out, a defaulted one would become explicit: the dump would load back equal, but a later override
# (a sweep's `producers[0].acks: [1, all]` on a dumped base) would then be refused where Kafka would not.
_PRODUCER_KEYS_ONLY_IF_SET = {"enable_idempotence": "enable.idempotence", "delivery_timeout_ms": "delivery.timeout.ms"}


def dump_scenario(scenario: Scenario) -> str:
    """The resolved scenario (every default and inherited value written out, except the producer keys Kafka
    derives when left out) as YAML that loads back equal."""
    # None only ever means "not given" (a default), so leaving it out loads back the same.
    data = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    for producer, dumped in zip(scenario.producers, data.get("producers", []), strict=True):
        for field, key in _PRODUCER_KEYS_ONLY_IF_SET.items():
            if field not in producer.model_fields_set:
                dumped.pop(key, None)
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100_000)
    return "# Resolved kafkasim scenario: every value explicit.\n" + body


# --- JSON Schema -----------------------------------------------------------------------------------------

# Defaults of unit-typed fields are shown as the author would write them ("100ms", not 100.0).
_DEFAULT_FORMATTERS: dict[str, Any] = {
    DURATION_PATTERN: format_duration,
    SIZE_PATTERN: format_size,
    RATE_PATTERN: format_rate,
    BANDWIDTH_PATTERN: format_bandwidth,
}


class _SchemaGenerator(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False  # titles like "Linger.Ms" add noise; descriptions carry the meaning

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        js = super().default_schema(schema)
        factory = schema.get("default_factory")
        if factory is not None and "default" not in js and not schema.get("default_factory_takes_data"):
            # A default built by a factory (a cost distribution, an empty list) is shown when it is one value
            # an author could write; whole sections (`costs`) list the defaults of their own keys instead.
            value = factory()  # type: ignore[call-arg]
            if isinstance(value, BaseModel):
                value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
            if isinstance(value, str | int | float) or value == []:
                js["default"] = value
        formatter = _DEFAULT_FORMATTERS.get(js.get("pattern", ""))
        if formatter is not None and isinstance(js.get("default"), int | float):
            js["default"] = formatter(js["default"])
        return js


SCHEMA_FILE = "kafkasim.schema.json"
"""Where the schema lives at the repository root; shipped scenarios point at it with their modeline."""


def scenario_json_schema_text() -> str:
    """The schema file's exact text (what `kafkasim schema` writes), so every writer produces the same bytes."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema of scenario files (Kafka keys by their dotted names), for editors and `kafkasim schema`."""
    schema = Scenario.model_json_schema(by_alias=True, mode="validation", schema_generator=_SchemaGenerator)
    _describe_ranges(schema)
    return {"$schema": SCHEMA_DIALECT, "title": "kafkasim scenario", **{k: v for k, v in schema.items() if k != "title"}}


def _describe_ranges(schema: dict[str, Any]) -> None:
    """Every numeric key's description ends with its allowed range, as the error messages state it."""
    for model in models(Scenario):
        target = schema if model is Scenario else schema["$defs"].get(model.__name__)
        for name, info in model.model_fields.items():
            text = allowed(info)
            prop = (target or {}).get("properties", {}).get(info.alias or name)
            if text is None or prop is None:
                continue
            description = prop.get("description", "").rstrip()
            prop["description"] = f"{description} Allowed: {text}.".lstrip()
