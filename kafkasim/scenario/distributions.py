"""Random quantities: service times, latencies, record sizes.

In a file a bare quantity ("50us", "1KiB") is a constant; otherwise a mapping with a `type`:

    {type: exponential, mean: 2ms}
    {type: lognormal, median: 0.5ms, p99: 2ms}     # by median and 99th percentile, how latencies are quoted
    {type: uniform, low: 1KiB, high: 4KiB}
    {type: empirical, values: [1ms, 2ms, 10ms], weights: [90, 9, 1]}
    {type: mixture, weights: [97, 3], components: [{type: lognormal, median: 0.1ms, p99: 0.3ms},
                                                    {type: lognormal, median: 2ms, p99: 6ms}]}   # durations only

Duration distributions hold float milliseconds, size distributions int bytes. These models only describe
and validate; drawing values (and the analytical mean) is `kafkasim.sim.distributions.sampler_from_spec`'s
job, so the maths of each distribution lives in one place.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from kafkasim.scenario.base import OrShorthand, ScenarioModel
from kafkasim.scenario.errors import fail, fail_at
from kafkasim.scenario.units import DURATION_PATTERN, SIZE_PATTERN, Duration, Size, from_file


class Distribution(ScenarioModel):
    """Common base; the concrete classes below add their parameters (the `type` field names which)."""


class Constant(Distribution):
    type: Literal["constant"] = "constant"
    value: float

    @model_serializer(mode="wrap")
    def _as_shorthand(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        # In files a constant is written as its bare quantity ("50us"), so that is how it is dumped.
        data = handler(self)
        return data["value"] if info.mode_is_json() else data


class Exponential(Distribution):
    type: Literal["exponential"] = "exponential"
    mean: float = Field(gt=0)


class LogNormal(Distribution):
    type: Literal["lognormal"] = "lognormal"
    median: float = Field(gt=0)
    p99: float

    @model_validator(mode="after")
    def _p99_at_least_median(self) -> LogNormal:
        if self.p99 < self.median:
            fail_at([(("p99",), f"must be >= median ({self.median!r})")])
        return self


class Uniform(Distribution):
    type: Literal["uniform"] = "uniform"
    low: float
    high: float

    @model_validator(mode="after")
    def _low_at_most_high(self) -> Uniform:
        if self.low > self.high:
            fail_at([(("high",), f"must be >= low ({self.low!r})")])
        return self


class Empirical(Distribution):
    type: Literal["empirical"] = "empirical"
    values: list[float] = Field(min_length=1, max_length=100_000)
    weights: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = None
    """Relative weights, one per value; equal weights when absent."""

    @model_validator(mode="after")
    def _weights_match(self) -> Empirical:
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                fail_at([(("weights",), f"has {len(self.weights)} items but values has {len(self.values)}")])
            if sum(self.weights) <= 0:
                fail_at([(("weights",), "must not all be zero")])
        return self


# --- durations (float milliseconds) ---


class DurationConstant(Constant):
    value: Duration


class DurationExponential(Exponential):
    mean: Duration = Field(gt=0)


class DurationLogNormal(LogNormal):
    median: Duration = Field(gt=0)
    p99: Duration


class DurationUniform(Uniform):
    low: Duration
    high: Duration


class DurationEmpirical(Empirical):
    values: list[Duration] = Field(min_length=1, max_length=100_000)


# --- sizes (int bytes) ---


class SizeConstant(Constant):
    value: Size


class SizeExponential(Exponential):
    mean: Size = Field(gt=0)


class SizeLogNormal(LogNormal):
    median: Size = Field(gt=0)
    p99: Size


class SizeUniform(Uniform):
    low: Size
    high: Size


class SizeEmpirical(Empirical):
    values: list[Size] = Field(min_length=1, max_length=100_000)  # type: ignore[assignment]


def _shorthand(unit: str) -> Any:
    def expand(value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            return {"type": "constant", "value": value}
        if isinstance(value, int | float) and not isinstance(value, bool):
            if from_file(info):
                fail(f"{value!r} needs a unit, e.g. '{value!r}{unit}', or a mapping with a type")
            return {"type": "constant", "value": value}
        return value

    return BeforeValidator(expand)


DurationComponent = Annotated[
    DurationConstant | DurationExponential | DurationLogNormal | DurationUniform | DurationEmpirical,
    Field(discriminator="type"),
    _shorthand("ms"),
    OrShorthand({"type": "string", "pattern": DURATION_PATTERN, "examples": ["50us"]}),
]
"""A component of a mixture: any duration distribution but a mixture."""


class DurationMixture(Distribution):
    """A draw from one of `components`, picked with probability proportional to `weights`. What it is for: a
    step that is mostly quick and now and then much slower -- a thread that usually finds a free core at once
    and sometimes waits for another's time slice -- has a narrow body and a rare long tail. One lognormal with
    the same p99 needs a wide spread, which also slows the draws around its median; many such steps in a row
    (a record's way from its producer to its consumer) then add up to a slower median than the real chain's
    (docs/calibration.md)."""

    type: Literal["mixture"] = "mixture"
    components: list[DurationComponent] = Field(min_length=1, max_length=16)
    weights: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]]
    """Relative weights, one per component."""

    @model_validator(mode="after")
    def _weights_match(self) -> DurationMixture:
        if len(self.weights) != len(self.components):
            fail_at([(("weights",), f"has {len(self.weights)} items but components has {len(self.components)}")])
        if sum(self.weights) <= 0:
            fail_at([(("weights",), "must not all be zero")])
        return self


DurationDistribution = Annotated[
    DurationConstant | DurationExponential | DurationLogNormal | DurationUniform | DurationEmpirical
    | DurationMixture,
    Field(discriminator="type"),
    _shorthand("ms"),
    OrShorthand({"type": "string", "pattern": DURATION_PATTERN, "examples": ["50us"]}),
]
"""A random duration in float milliseconds; "5ms" in a file means a constant."""

SizeDistribution = Annotated[
    SizeConstant | SizeExponential | SizeLogNormal | SizeUniform | SizeEmpirical,
    Field(discriminator="type"),
    _shorthand("B"),
    OrShorthand({"type": "string", "pattern": SIZE_PATTERN, "examples": ["1KiB"]}),
]
"""A random size in int bytes (draws are floats; round them); "1KiB" in a file means a constant."""


def typical_value(d: Distribution) -> float:
    """A draw's typical size: the mean (the median of a lognormal, which is at most its mean); for checks
    of how much simulated time a busy loop of draws covers."""
    if isinstance(d, Constant):
        return d.value
    if isinstance(d, Exponential):
        return d.mean
    if isinstance(d, LogNormal):
        return d.median
    if isinstance(d, Uniform):
        return (d.low + d.high) / 2
    if isinstance(d, Empirical):
        weights = d.weights or [1.0] * len(d.values)
        return sum(v * w for v, w in zip(d.values, weights, strict=True)) / sum(weights)
    if isinstance(d, DurationMixture):
        return sum(typical_value(c) * w for c, w in zip(d.components, d.weights, strict=True)) / sum(d.weights)
    raise TypeError(d)  # pragma: no cover - every distribution is one of the above


def constant_ms(ms: float) -> DurationConstant:
    """A constant duration distribution (for defaults and for code that builds scenarios)."""
    return DurationConstant(value=ms)
