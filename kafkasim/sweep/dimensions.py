"""The axes of a sweep: each grid key is one dimension; each zip group is one dimension of several keys.

Variants are the cartesian product of the dimensions, in file order (grid keys first, then zip groups), the
last dimension varying fastest. Plots and tables use the dimensions, so keys that move together in a zip
group stay on one axis ("acks/linger.ms = all/5") instead of pretending to be two independent ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dimension:
    keys: tuple[str, ...]
    """Scenario key paths set by this dimension: one for a grid key, several for a zip group."""
    values: tuple[tuple[Any, ...], ...]
    """One tuple per position, with one value per key."""

    @property
    def label(self) -> str:
        return "/".join(self.keys)

    def value_label(self, index: int) -> str:
        return "/".join(format_value(v) for v in self.values[index])

    @property
    def numeric(self) -> bool:
        """True when this is a single key whose values are all numbers (a quantitative x axis)."""
        return len(self.keys) == 1 and all(
            isinstance(v[0], int | float) and not isinstance(v[0], bool) for v in self.values
        )

    def params(self, index: int) -> dict[str, Any]:
        return dict(zip(self.keys, self.values[index], strict=True))


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else str(value)
    return str(value)


def product(dimensions: list[Dimension]) -> Iterator[tuple[int, ...]]:
    """Coordinates of every variant (one index per dimension), last dimension fastest."""
    return itertools.product(*(range(len(d.values)) for d in dimensions))
