"""A sweep expanded into runs: every variant of the grid, times every seed, in a fixed order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunSpec:
    """One simulator run of a sweep: which variant, its parameter values, the seed, the resolved scenario.

    `scenario_yaml` is the base scenario with this variant's overrides applied and validated on the driver,
    so an executor only parses it back; it never sees the sweep file.
    """

    variant_id: str
    params: dict[str, Any]
    seed: int
    scenario_yaml: str
