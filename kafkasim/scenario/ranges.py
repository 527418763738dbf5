"""The allowed range of every numeric key, in one place for the schema descriptions and the error messages.

A key's range is its type's own (a `Quantity` marker: a simulator duration is 0..1d, a Kafka `.ms` key
0..1e12 ms, ...) narrowed by the field's ge/gt/le/lt. `allowed(field)` writes it as the author would
("1ms to 1d", "1 to 1000", "-1 (no limit), or 0 to ...").
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
from pydantic.fields import FieldInfo

from kafkasim.scenario.structure import members
from kafkasim.scenario.units import Quantity


def plain(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _metadata(field: FieldInfo) -> tuple[list[Any], list[Any]]:
    """The field's constraints and markers (those of a union's non-literal member too), and its literals."""
    metadata = list(field.metadata)
    literals: list[Any] = []
    annotation = field.annotation
    for member in members(annotation):
        if get_origin(member) is Literal:
            literals += list(get_args(member))
    args = get_args(annotation)
    for arg in args:
        if get_origin(arg) is not Literal:
            metadata += [m for m in getattr(arg, "__metadata__", ()) if m not in metadata]
    return metadata, literals


def quantity(field: FieldInfo) -> Quantity | None:
    return next((m for m in _metadata(field)[0] if isinstance(m, Quantity)), None)


def allowed(field: FieldInfo) -> str | None:
    """`1 to 1000`, `more than 0ms, up to 1d`, ... or None for a key that is not a number."""
    metadata, literals = _metadata(field)
    q = quantity(field)
    base = field.annotation
    numeric = q is not None or base in (int, float)
    if not numeric:
        return None
    # Kept as written (ints stay ints: a seed's bound 2**63 - 1 is not a float).
    low: Any = q.low if q is not None else -math.inf
    low_open = q.low_open if q is not None else False
    high: Any = q.high if q is not None else math.inf
    show = q.show if q is not None else plain
    for m in metadata:
        if isinstance(m, at.Ge) and m.ge >= low:
            low, low_open = m.ge, False
        elif isinstance(m, at.Gt) and m.gt >= low:
            low, low_open = m.gt, True
        elif isinstance(m, at.Le) and m.le < high:
            high = m.le
        elif isinstance(m, at.Lt) and m.lt < high:
            high = m.lt
    if low == -math.inf and high == math.inf:
        return None
    if low == -math.inf:
        text = f"up to {show(high)}"
    elif high == math.inf:
        text = f"more than {show(low)}" if low_open else f"at least {show(low)}"
    elif low_open:
        text = f"more than {show(low)}, up to {show(high)}"
    else:
        text = f"{show(low)} to {show(high)}"
    if q is not None and q.suffix:
        text += f" {q.suffix}"
    if literals:
        text = ", or ".join([*(f"{v} (no limit)" if v == -1 else str(v) for v in literals), text])
    return text
