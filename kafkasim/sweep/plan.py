"""A sweep expanded into runs: every variant of the grid, times every seed, in a fixed order.

Every variant is validated here, on the driver, before Spark starts: a key path that does not exist, a
value the scenario refuses, or a combination that breaks a cross-check (say, min.insync.replicas above the
replication factor) is a ScenarioError naming the sweep file's line, the key and the variant.

Seeds are the same for every variant (common random numbers: differences between variants are not
blurred by different draws). `replications: n` uses the base scenario's seed for the first replication,
so a one-replication sweep reproduces a single run, and derives the others by hashing (base seed, i).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kafkasim.scenario.errors import Loc, Problem, ScenarioError, format_path
from kafkasim.scenario.load import dump_scenario, load_scenario, validate_source
from kafkasim.scenario.overrides import with_overrides
from kafkasim.scenario.scenario import Scenario
from kafkasim.scenario.yaml_source import Source
from kafkasim.sweep.dimensions import Dimension, product
from kafkasim.sweep.model import LoadedSweep


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


@dataclass(frozen=True)
class Variant:
    variant_id: str
    params: dict[str, Any]
    coords: tuple[int, ...]
    """Position along each dimension."""


@dataclass(frozen=True)
class SweepPlan:
    dimensions: list[Dimension]
    variants: list[Variant]
    seeds: list[int]
    runs: list[RunSpec]
    base_yaml: str

    @property
    def variant_coords(self) -> dict[str, tuple[int, ...]]:
        return {v.variant_id: v.coords for v in self.variants}


def override_text(key: str, value: Any) -> str:
    """`key=value` with the value as one line of YAML (what with_overrides parses back)."""
    rendered = yaml.safe_dump(value, default_flow_style=True, width=10**9, allow_unicode=True)
    return f"{key}={rendered.removesuffix(chr(10)).removesuffix('...').strip()}"


def derive_seeds(base_seed: int, replications: int) -> list[int]:
    seeds = [base_seed]
    for i in range(1, replications):
        digest = hashlib.sha256(f"kafkasim-sweep:{base_seed}:{i}".encode()).digest()
        seeds.append(int.from_bytes(digest[:8], "big") >> 1)  # 63 bits: the scenario's seed range
    if len(set(seeds)) != len(seeds):  # pragma: no cover - a 63-bit hash collision
        raise ValueError("derived seeds collide; list the seeds explicitly")
    return seeds


def dimensions_of(loaded: LoadedSweep) -> list[Dimension]:
    """Grid keys (each one dimension) then zip groups (one dimension each), in file order."""
    sweep = loaded.sweep
    dims = [Dimension((key,), tuple((v,) for v in values)) for key, values in sweep.grid.items()]
    for group in sweep.zip:
        keys = tuple(group)
        dims.append(Dimension(keys, tuple(zip(*(group[k] for k in keys), strict=True))))
    return dims


def load_base(loaded: LoadedSweep) -> Scenario:
    """The base scenario: a file relative to the sweep file, or the inline mapping (errors on sweep lines)."""
    base = loaded.sweep.base
    if isinstance(base, str):
        path = Path(base)
        return load_scenario(path if path.is_absolute() else loaded.directory / path)
    lines = {loc[1:]: line for loc, line in loaded.source.lines.items() if loc[:1] == ("base",)}
    try:
        return validate_source(Source(base, loaded.file, lines))
    except ScenarioError as exc:
        raise ScenarioError(
            [Problem(p.file, p.line, f"base.{p.path}" if p.path else "base", p.message) for p in exc.problems]
        ) from None


def _key_loc(loaded: LoadedSweep, key: str) -> Loc:
    if key in loaded.sweep.grid:
        return ("grid", key)
    for i, group in enumerate(loaded.sweep.zip):
        if key in group:
            return ("zip", i, key)
    return ()


def _problem(loaded: LoadedSweep, loc: Loc, message: str) -> Problem:
    return Problem(loaded.file, loaded.source.line_of(loc), format_path(loc), message)


def _reason(exc: ScenarioError) -> str:
    return "; ".join(f"{p.path}: {p.message}" if p.path else p.message for p in exc.problems)


def _check_values(loaded: LoadedSweep, base: Scenario, dims: list[Dimension], fixed: list[str]) -> list[Problem]:
    """Each key with each of its values alone: an unknown key is reported once, a bad value by value."""
    problems = []
    for dim in dims:
        for k, key in enumerate(dim.keys):
            failures: dict[str, list[Any]] = {}
            values = [v[k] for v in dim.values]
            for value in values:
                try:
                    with_overrides(base, [*fixed, override_text(key, value)])
                except ScenarioError as exc:
                    failures.setdefault(_reason(exc), []).append(value)
            loc = _key_loc(loaded, key)
            for text, bad in failures.items():
                reason = text.removeprefix(f"{key}: ")  # the location already names the key
                if len(bad) == len(values) and len(values) > 1:
                    problems.append(_problem(loaded, loc, reason))
                else:
                    shown = ", ".join(repr(v) for v in bad)
                    problems.append(_problem(loaded, loc, f"value {shown}: {reason}"))
    return problems


def plan_sweep(loaded: LoadedSweep) -> SweepPlan:
    """Expand and validate a loaded sweep into its runs (variants x seeds); ScenarioError on any problem."""
    sweep = loaded.sweep
    base = load_base(loaded)
    fixed = [] if sweep.duration is None else [override_text("duration", sweep.duration)]
    if fixed:
        try:
            base = with_overrides(base, fixed)
        except ScenarioError as exc:
            raise ScenarioError([_problem(loaded, ("duration",), _reason(exc))]) from None
    dims = dimensions_of(loaded)
    problems = _check_values(loaded, base, dims, [])
    if problems:
        raise ScenarioError(problems)

    width = max(3, len(str(sweep.variant_count - 1)))
    variants: list[Variant] = []
    yamls: dict[str, str] = {}
    for n, coords in enumerate(product(dims)):
        params: dict[str, Any] = {}
        for dim, index in zip(dims, coords, strict=True):
            params.update(dim.params(index))
        variant_id = f"v{n:0{width}d}"
        try:
            scenario = with_overrides(base, [override_text(k, v) for k, v in params.items()])
        except ScenarioError as exc:
            shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
            loc = _key_loc(loaded, next(iter(params))) if params else ()
            problems.append(_problem(loaded, loc, f"variant {variant_id} ({shown}): {_reason(exc)}"))
            continue
        variants.append(Variant(variant_id, params, tuple(coords)))
        yamls[variant_id] = dump_scenario(scenario)
    if problems:
        raise ScenarioError(problems)

    seeds = list(sweep.seeds) if sweep.seeds is not None else derive_seeds(base.seed, sweep.replications or 1)
    runs = [RunSpec(v.variant_id, v.params, seed, yamls[v.variant_id]) for v in variants for seed in seeds]
    return SweepPlan(dims, variants, seeds, runs, dump_scenario(base))
