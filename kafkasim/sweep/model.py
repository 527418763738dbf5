"""The sweep file: a base scenario, the parameters to vary, the seeds, the metrics, where results go.

    base: scenarios/acks-all.yaml        # path relative to this file, or an inline scenario mapping
    grid:                                # cartesian product of every listed value
      broker.num.io.threads: [1, 2, 4, 8]
      producers[0].acks: [1, all]
    zip:                                 # each group moves together: (1 ms, 16 KiB), (5 ms, 64 KiB)
      - producers[0].linger.ms: [1, 5]
        producers[0].batch.size: [16KiB, 64KiB]
    seeds: [1, 2, 3]                     # or `replications: 3` (seeds derived from the base seed)
    metrics: [TotalTimeMs, RemoteTimeMs] # optional; default: TotalTimeMs per api, produce and e2e latency
    output: results/acks-sweep           # optional; relative to this file
    duration: 30s                        # optional; overrides the scenario's duration in every variant

Loaded with the scenario's YAML loader (line of every key, duplicate keys refused) and reported with the
scenario's error class, so a sweep file's problems read like a scenario's: `file:line: key: message`.
Whether the key paths exist in the scenario is checked when the sweep is planned (plan.py), where the
base scenario is known.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kafkasim.scenario.errors import Problem, ScenarioError
from kafkasim.scenario.messages import problems_from
from kafkasim.scenario.source_file import names_a_file, read_text
from kafkasim.scenario.yaml_source import Source, load_yaml
from kafkasim.sweep.metrics import DEFAULT_METRICS, MetricSpec

MAX_VARIANTS = 100_000
MAX_SEEDS = 10_000

# `broker.num.io.threads`, `producers[0].acks`, `topics[1].retention.ms`; matched whole (`fullmatch`: a `$`
# would also match before a final newline) with ASCII digits (`\d` takes any script's).
_KEY_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(\[[0-9]+\])?([.][A-Za-z_][A-Za-z0-9_.\-]*(\[[0-9]+\])?)*")


def _key_path(key: str) -> str:
    if not _KEY_PATH.fullmatch(key) or ".." in key:
        raise PydanticCustomError(
            "sweep_key", f"{key!r} is not a scenario key path (write e.g. broker.num.io.threads or producers[0].acks)"
        )
    return key


def _values(values: list[Any]) -> list[Any]:
    if not values:
        raise PydanticCustomError("sweep_values", "the list is empty; give at least one value to try")
    return values


def _zip_group(group: dict[str, list[Any]]) -> dict[str, list[Any]]:
    if not group:
        raise PydanticCustomError("sweep_zip", "an empty zip group; give key paths with equally long value lists")
    lengths = {key: len(values) for key, values in group.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise PydanticCustomError("sweep_zip", f"the lists must have equal length to move together ({shown})")
    return group


def _one_of(kind: str, allowed: tuple[type, ...], hint: str) -> Any:
    def check(value: Any) -> Any:
        if value is None or (isinstance(value, allowed) and not isinstance(value, bool)):
            return value
        raise PydanticCustomError(kind, f"{hint} (got {type(value).__name__})")

    return BeforeValidator(check)


def _metric(value: Any) -> Any:
    """A bare name is a built-in metric, else a requests column split by api (`RemoteTimeMs`)."""
    if isinstance(value, str):
        builtin = {m.name: m for m in DEFAULT_METRICS}
        return builtin.get(value) or MetricSpec(name=value, column=value, by="api")
    if isinstance(value, dict | MetricSpec):
        return value
    raise PydanticCustomError(
        "sweep_metric",
        f"a metric is a name (e.g. TotalTimeMs) or a mapping with name and column (got {type(value).__name__})",
    )


KeyPath = Annotated[str, AfterValidator(_key_path)]
Values = Annotated[list[Any], AfterValidator(_values)]
ZipGroup = Annotated[dict[KeyPath, Values], AfterValidator(_zip_group)]
Metric = Annotated[MetricSpec, BeforeValidator(_metric)]


class SweepFile(BaseModel):
    """A validated sweep file (see the module docstring for an example)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    base: Annotated[
        str | dict[str, Any],
        _one_of("sweep_base", (str, dict), "must be a scenario file path or an inline scenario mapping"),
    ]
    """The scenario every variant starts from: a path relative to the sweep file, or the scenario inline."""
    grid: dict[KeyPath, Values] = Field(default_factory=dict)
    """Scenario key path -> values to try; variants are the cartesian product over all keys."""
    zip: list[ZipGroup] = Field(default_factory=list)
    """Groups of key paths whose equally long value lists move together (one axis per group)."""
    seeds: list[int] | None = None
    """Seeds each variant runs with (the same seeds for every variant)."""
    replications: int | None = Field(None, ge=1, le=MAX_SEEDS)
    """Alternatively: how many seeds, derived from the base scenario's seed."""
    metrics: list[Metric] | None = None
    """Metrics to aggregate: names of built-in metrics or requests columns (split by api), or full specs."""
    output: str | None = Field(None, min_length=1)
    """Output directory, relative to the sweep file (default: `<sweep file name>.out` beside it)."""
    duration: Annotated[
        str | int | float | None, _one_of("sweep_duration", (str, int, float), "must be a duration such as 30s")
    ] = None
    """Overrides the base scenario's `duration` in every variant (e.g. 30s)."""

    @field_validator("base")
    @classmethod
    def _base_not_empty(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(value, str) and not value.strip():
            raise PydanticCustomError("sweep_base", "give a scenario file path or an inline scenario mapping")
        return value

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is None:
            return None
        if not seeds:
            raise PydanticCustomError("sweep_seeds", "the list is empty; give at least one seed")
        if len(seeds) > MAX_SEEDS:
            raise PydanticCustomError("sweep_seeds", f"at most {MAX_SEEDS} seeds")
        repeated = sorted({s for s in seeds if seeds.count(s) > 1})
        if repeated:
            raise PydanticCustomError("sweep_seeds", f"seed {repeated[0]} is listed twice; seeds must differ")
        negative = [s for s in seeds if s < 0 or s > 2**63 - 1]
        if negative:
            raise PydanticCustomError("sweep_seeds", f"seed {negative[0]} is out of range (allowed: 0..2^63-1)")
        return seeds

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, metrics: list[MetricSpec] | None) -> list[MetricSpec] | None:
        if metrics is None:
            return None
        if not metrics:
            raise PydanticCustomError("sweep_metrics", "the list is empty; omit `metrics` for the defaults")
        names = [m.name for m in metrics]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise PydanticCustomError("sweep_metrics", f"metric {repeated[0]!r} is listed twice")
        return metrics

    @model_validator(mode="after")
    def _axes_and_seeds(self) -> SweepFile:
        if (self.seeds is None) == (self.replications is None):
            raise PydanticCustomError(
                "sweep_seeds", "give exactly one of `seeds: [1, 2, 3]` or `replications: 3`"
            )
        seen: dict[str, str] = {}
        for where, keys in [("grid", list(self.grid)), *((f"zip[{i}]", list(g)) for i, g in enumerate(self.zip))]:
            for key in keys:
                if key in seen:
                    raise PydanticCustomError(
                        "sweep_axes", f"key path {key!r} is varied twice ({seen[key]} and {where}); vary it once"
                    )
                seen[key] = where
        if self.variant_count > MAX_VARIANTS:
            raise PydanticCustomError(
                "sweep_axes", f"{self.variant_count} variants is more than the {MAX_VARIANTS} allowed"
            )
        return self

    @property
    def variant_count(self) -> int:
        count = 1
        for values in self.grid.values():
            count *= len(values)
        for group in self.zip:
            count *= len(next(iter(group.values())))
        return count

    @property
    def metric_specs(self) -> list[MetricSpec]:
        """The metrics to aggregate (the defaults when the file names none)."""
        return list(DEFAULT_METRICS) if self.metrics is None else list(self.metrics)


class LoadedSweep(BaseModel):
    """A sweep file with where it came from (relative paths in it are relative to `directory`)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    sweep: SweepFile
    file: str
    directory: Path
    text: str
    source: Source


def is_sweep_file(path: Path) -> bool:
    """True for a readable YAML file whose top-level mapping has `base:`: a sweep file must have it, and a
    scenario cannot (the key is not in the scenario format). Anything else is left to the scenario loader,
    whose messages then say what is wrong."""
    try:
        data = load_yaml(read_text(path, "sweep"), str(path)).data
    except ScenarioError:  # unreadable, not a regular file, too large, not UTF-8, not YAML
        return False
    return isinstance(data, dict) and "base" in data


def load_sweep(path_or_text: str | Path) -> LoadedSweep:
    """Parse and validate a sweep file (a path, or YAML text); raises ScenarioError listing every problem."""
    if isinstance(path_or_text, Path) or names_a_file(path_or_text):
        path = Path(path_or_text)
        text = read_text(path, "sweep")  # a regular file of at most 4 MiB, else refused by name
        file, directory = str(path), path.resolve().parent
    else:
        text, file, directory = str(path_or_text), "<sweep>", Path.cwd()
    source = load_yaml(text, file)
    if not isinstance(source.data, dict):
        got = "an empty document" if source.data is None else f"a {type(source.data).__name__}"
        raise ScenarioError([Problem(file, 1, "", f"a sweep file is a mapping with `base:` and `grid:`, got {got}")])
    try:
        sweep = SweepFile.model_validate(source.data)
    except ValidationError as exc:
        raise ScenarioError(problems_from(exc, SweepFile, source, file)) from None
    return LoadedSweep(sweep=sweep, file=file, directory=directory, text=text, source=source)
