"""The base of every scenario model: strict keys, immutable, Kafka's dotted names as aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema


class ScenarioModel(BaseModel):
    """Frozen, `extra="forbid"`; Kafka keys are aliases (`linger.ms`) of snake_case attributes (`linger_ms`).

    Python code may construct models by attribute name; files are validated with `by_name=False`, so a
    file has one way to write each key: Kafka's.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
        use_attribute_docstrings=True,
        hide_input_in_errors=False,
        # Validation resolves inherited values into nested models; copying instances handed in by code
        # keeps one Scenario's resolution from leaking into another that shares them.
        revalidate_instances="always",
        # No lax coercion: `true` is not 1, "42" not 42, 4.0 not 4, 1 not true. Unit types parse their own
        # strings in BeforeValidators and hand over exact ints and floats.
        strict=True,
    )


@dataclass(frozen=True, eq=False)  # eq=False keeps it hashable, as Annotated metadata must be
class OrShorthand:
    """Annotated marker: the JSON Schema also accepts the shorthand a BeforeValidator expands

    ("50us" for a constant distribution, "poisson" for an arrival process), so editors do not flag it.
    """

    shorthand: dict[str, Any]

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"anyOf": [self.shorthand, handler(schema)]}
