"""Fast samplers for the random quantities of a run (inter-arrival times, latencies, sizes).

The scenario layer validates distributions (`kafkasim.scenario.distributions`); the run's build turns each
one into a sampler here with `sampler_from_spec` once, at build time; the components then call `sample(rng)`
per request. Samplers precompute everything they can (e.g. cumulative weights) and hold no state, so one
sampler may serve many components, each passing its own named stream.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import partial
from itertools import accumulate
from typing import Any, Final, Protocol

# Standard normal quantile at 0.99: a lognormal's p99 is exp(mu + Z99 * sigma).
Z99: Final = 2.3263478740408408


class Sampler(Protocol):
    def sample(self, rng: random.Random) -> float: ...

    @property
    def mean(self) -> float: ...


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


class Constant:
    __slots__ = ("value",)

    def __init__(self, value: float) -> None:
        self.value = _finite("constant value", value)

    def sample(self, rng: random.Random) -> float:
        return self.value

    @property
    def mean(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"Constant({self.value})"


class Exponential:
    __slots__ = ("_mean",)

    def __init__(self, mean: float) -> None:
        self._mean = _finite("exponential mean", mean)
        if self._mean <= 0:
            raise ValueError(f"exponential mean must be > 0, got {mean!r}")

    def sample(self, rng: random.Random) -> float:
        # random.expovariate's formula, inlined: one call fewer per draw.
        return -math.log(1.0 - rng.random()) * self._mean

    @property
    def mean(self) -> float:
        return self._mean

    def __repr__(self) -> str:
        return f"Exponential(mean={self._mean})"


class LogNormal:
    """Given by its median and 99th percentile, the way latencies are quoted.

    mu = ln(median), sigma = (ln(p99) - mu) / z_0.99; p99 == median degenerates to a constant.
    """

    __slots__ = ("median", "p99", "mu", "sigma")

    def __init__(self, median: float, p99: float) -> None:
        self.median = _finite("lognormal median", median)
        self.p99 = _finite("lognormal p99", p99)
        if self.median <= 0:
            raise ValueError(f"lognormal median must be > 0, got {median!r}")
        if self.p99 < self.median:
            raise ValueError(f"lognormal p99 ({p99!r}) must be >= median ({median!r})")
        self.mu = math.log(self.median)
        self.sigma = (math.log(self.p99) - self.mu) / Z99

    def sample(self, rng: random.Random) -> float:
        return lognormal_draw(rng, self.mu, self.sigma)

    @property
    def mean(self) -> float:
        return math.exp(self.mu + self.sigma * self.sigma / 2)

    def __repr__(self) -> str:
        return f"LogNormal(median={self.median}, p99={self.p99})"


# random.NV_MAGICCONST, the same expression.
_NV_MAGICCONST: Final = 4 * math.exp(-0.5) / math.sqrt(2.0)


def lognormal_draw(rng: random.Random, mu: float, sigma: float) -> float:
    """``rng.lognormvariate(mu, sigma)``: the same ``random()`` draws and the same arithmetic
    (``random.Random.normalvariate``'s Kinderman-Monahan loop, then ``exp``), written here so that the
    compiled build compiles it -- the stdlib's is interpreted Python, the hottest code left interpreted in a
    compiled run (every link message draws one), and here it saves two frames per draw in the pure one.
    tests/sim/test_distributions.py checks it against the stdlib draw for draw."""
    rand = rng.random
    while True:
        u1 = rand()
        u2 = 1.0 - rand()
        z = _NV_MAGICCONST * (u1 - 0.5) / u2
        zz = z * z / 4.0
        if zz <= -math.log(u2):
            break
    return math.exp(mu + z * sigma)


class Uniform:
    __slots__ = ("low", "high", "_width")

    def __init__(self, low: float, high: float) -> None:
        self.low = _finite("uniform low", low)
        self.high = _finite("uniform high", high)
        if self.low > self.high:
            raise ValueError(f"uniform low ({low!r}) must be <= high ({high!r})")
        self._width = self.high - self.low

    def sample(self, rng: random.Random) -> float:
        return self.low + self._width * rng.random()

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def __repr__(self) -> str:
        return f"Uniform(low={self.low}, high={self.high})"


class WeightedPick:
    """An index drawn with probability proportional to `weights`: what an empirical distribution picks its
    value by, and a mixture its component."""

    __slots__ = ("weights", "_cumulative", "_total", "_last")

    def __init__(self, kind: str, weights: Sequence[float], items: str, count: int) -> None:
        if len(weights) != count:
            raise ValueError(f"{kind} weights has {len(weights)} items but {items} has {count}")
        self.weights = [_finite(f"{kind} weight", w) for w in weights]
        if any(w < 0 for w in self.weights):
            raise ValueError(f"{kind} weights must be >= 0")
        self._cumulative = list(accumulate(self.weights))
        self._total = self._cumulative[-1]
        if self._total <= 0:
            raise ValueError(f"{kind} weights must not all be zero")
        # rng.random() * total can round up to total; never pick a trailing zero-weight item then.
        self._last = max(i for i, w in enumerate(self.weights) if w > 0)

    def pick(self, rng: random.Random) -> int:
        i = bisect_right(self._cumulative, rng.random() * self._total)
        return i if i <= self._last else self._last

    def mean_of(self, values: Sequence[float]) -> float:
        return sum(v * w for v, w in zip(values, self.weights, strict=True)) / self._total


class Empirical:
    """One of `values`, with probability proportional to `weights` (equal weights when None)."""

    __slots__ = ("values", "weights", "_pick")

    def __init__(self, values: Sequence[float], weights: Sequence[float] | None = None) -> None:
        if len(values) == 0:
            raise ValueError("empirical values must not be empty")
        self.values = [_finite("empirical value", v) for v in values]
        self._pick = WeightedPick("empirical", [1.0] * len(self.values) if weights is None else weights, "values",
                                  len(self.values))
        self.weights = self._pick.weights

    def sample(self, rng: random.Random) -> float:
        return self.values[self._pick.pick(rng)]

    @property
    def mean(self) -> float:
        return self._pick.mean_of(self.values)

    def __repr__(self) -> str:
        return f"Empirical({len(self.values)} values)"


class Mixture:
    """A draw of one of `components`, picked with probability proportional to `weights`: a second draw from
    the same stream then gives the value (one uniform picks, the component draws as it alone would)."""

    __slots__ = ("components", "weights", "_pick")

    def __init__(self, components: Sequence[Constant | Exponential | LogNormal | Uniform | Empirical | Mixture],
                 weights: Sequence[float]) -> None:
        if len(components) == 0:
            raise ValueError("mixture components must not be empty")
        self.components = list(components)
        self._pick = WeightedPick("mixture", weights, "components", len(self.components))
        self.weights = self._pick.weights

    def sample(self, rng: random.Random) -> float:
        return self.components[self._pick.pick(rng)].sample(rng)

    @property
    def mean(self) -> float:
        return self._pick.mean_of([c.mean for c in self.components])

    def __repr__(self) -> str:
        return f"Mixture({self.components!r}, weights={self.weights})"


DISTRIBUTION_TYPES: Final = ("constant", "exponential", "lognormal", "uniform", "empirical", "mixture")


def _field(spec: Any, name: str, kind: str) -> Any:
    try:
        return getattr(spec, name)
    except AttributeError:
        raise ValueError(f"a {kind} distribution needs `{name}`; got {spec!r}") from None


def sampler_from_spec(spec: Any) -> Constant | Exponential | LogNormal | Uniform | Empirical | Mixture:
    """The sampler for a distribution spec: any object with `type` and that type's fields.

    `type` is one of constant (value), exponential (mean), lognormal (median, p99), uniform (low, high),
    empirical (values, weights or None), mixture (components: specs, weights). A bare number means a constant.
    """
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return Constant(spec)
    kind = getattr(spec, "type", None)
    if kind == "constant":
        return Constant(_field(spec, "value", kind))
    if kind == "exponential":
        return Exponential(_field(spec, "mean", kind))
    if kind == "lognormal":
        return LogNormal(_field(spec, "median", kind), _field(spec, "p99", kind))
    if kind == "uniform":
        return Uniform(_field(spec, "low", kind), _field(spec, "high", kind))
    if kind == "empirical":
        return Empirical(_field(spec, "values", kind), getattr(spec, "weights", None))
    if kind == "mixture":
        return Mixture([sampler_from_spec(c) for c in _field(spec, "components", kind)], _field(spec, "weights", kind))
    raise ValueError(f"unknown distribution type {kind!r}; allowed: {', '.join(DISTRIBUTION_TYPES)}")


class ConstantSampler:
    """The ``() -> float`` of a constant: ``value`` every time. Hot paths read it once (``constant_value``)
    instead of calling it per request -- the service-time costs are constants unless a scenario says
    otherwise."""

    __slots__ = ("value",)

    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"ConstantSampler({self.value})"


def constant_value(sampler: Callable[[], float]) -> float | None:
    """What ``sampler`` always returns if it is a constant's (``ConstantSampler``), else None: it draws."""
    return sampler.value if isinstance(sampler, ConstantSampler) else None


def zero_arg_sampler(spec: Any, rng: random.Random) -> Callable[[], float]:
    """A ``() -> float`` drawing from ``spec`` with ``rng`` -- the sampler's own formula, one frame fewer
    on the hot path (constants and lognormal latencies are most of the draws of a run)."""
    sampler = sampler_from_spec(spec)
    if isinstance(sampler, Constant):
        return ConstantSampler(sampler.value)
    if isinstance(sampler, LogNormal):
        return partial(lognormal_draw, rng, sampler.mu, sampler.sigma)
    return partial(sampler.sample, rng)
