"""Distribution models: forms in a file and canonical parameters, sampled through the engine's samplers."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from kafkasim.scenario import (
    Constant,
    Empirical,
    Exponential,
    LogNormal,
    ScenarioError,
    Uniform,
    load_scenario,
)
from kafkasim.scenario.distributions import (
    DurationConstant,
    DurationLogNormal,
    DurationMixture,
    SizeUniform,
    typical_value,
)
from kafkasim.sim.distributions import sampler_from_spec

from .samples import MINIMAL


def _costs(request: str):
    return load_scenario(MINIMAL + f"broker:\n  costs:\n    request: {request}\n").broker.costs.request


def test_a_bare_duration_is_a_constant() -> None:
    d = _costs("50us")
    assert isinstance(d, Constant) and d.value == 0.05


@pytest.mark.parametrize(
    ("text", "cls", "mean"),
    [
        ("{type: constant, value: 2ms}", Constant, 2.0),
        ("{type: exponential, mean: 2ms}", Exponential, 2.0),
        ("{type: uniform, low: 1ms, high: 3ms}", Uniform, 2.0),
        ("{type: empirical, values: [1ms, 3ms], weights: [1, 3]}", Empirical, 2.5),
        ("{type: empirical, values: [1ms, 3ms]}", Empirical, 2.0),
    ],
)
def test_mapping_forms(text: str, cls: type, mean: float) -> None:
    d = _costs(text)
    assert isinstance(d, cls)
    assert sampler_from_spec(d).mean == pytest.approx(mean)


def test_lognormal_is_given_by_median_and_p99() -> None:
    d = _costs("{type: lognormal, median: 0.5ms, p99: 2ms}")
    assert isinstance(d, LogNormal)
    sampler = sampler_from_spec(d)
    rng = random.Random(3)
    draws = sorted(sampler.sample(rng) for _ in range(20_000))
    assert draws[10_000] == pytest.approx(0.5, rel=0.05)
    assert draws[19_800] == pytest.approx(2.0, rel=0.1)
    assert sampler.mean == pytest.approx(math.exp(math.log(0.5) + (math.log(4.0) / 2.3263478740408408) ** 2 / 2))


def test_sampling_is_deterministic_per_stream_and_near_the_mean() -> None:
    d = sampler_from_spec(_costs("{type: exponential, mean: 4ms}"))
    a = [d.sample(random.Random(9)) for _ in range(3)]
    b = [d.sample(random.Random(9)) for _ in range(3)]
    assert a == b
    rng = random.Random(1)
    assert statistics.fmean(d.sample(rng) for _ in range(20_000)) == pytest.approx(4.0, rel=0.05)


def test_empirical_weights_bias_the_draws() -> None:
    d = sampler_from_spec(_costs("{type: empirical, values: [1ms, 2ms], weights: [9, 1]}"))
    rng = random.Random(2)
    draws = [d.sample(rng) for _ in range(10_000)]
    assert draws.count(1.0) / len(draws) == pytest.approx(0.9, abs=0.02)


def test_a_mixture_draws_each_component_by_its_weight() -> None:
    """A narrow body and a rare long tail: 97% near 0.1 ms, 3% a constant 5 ms."""
    d = _costs("{type: mixture, weights: [97, 3], components: [{type: uniform, low: 0.05ms, high: 0.15ms}, 5ms]}")
    assert isinstance(d, DurationMixture) and d.weights == [97, 3]
    sampler = sampler_from_spec(d)
    assert sampler.mean == pytest.approx(0.97 * 0.1 + 0.03 * 5.0)
    assert typical_value(d) == pytest.approx(0.97 * 0.1 + 0.03 * 5.0)
    rng = random.Random(4)
    draws = [sampler.sample(rng) for _ in range(20_000)]
    assert draws.count(5.0) / len(draws) == pytest.approx(0.03, abs=0.005)
    assert all(0.05 <= x <= 0.15 for x in draws if x != 5.0)
    dumped = load_scenario(MINIMAL + f"broker:\n  costs:\n    request: {d.model_dump(mode='json')}\n")
    assert dumped.broker.costs.request == d  # a result's scenario.yaml loads back the same mixture


def test_size_distributions_hold_bytes() -> None:
    text = MINIMAL + "producers: [{name: p, topic: t, rate: 1/s, record_size: {type: uniform, low: 1KiB, high: 4KiB}}]\n"
    d = load_scenario(text).producers[0].record_size
    assert isinstance(d, SizeUniform) and (d.low, d.high) == (1024, 4096)


@pytest.mark.parametrize(
    ("text", "path", "fragment"),
    [
        ("{type: lognormal, median: 0ms, p99: 1ms}", "broker.costs.request.median", "0ms is out of range (allowed: more than 0ms, up to 1d)"),
        ("{type: uniform, low: 3ms, high: 1ms}", "broker.costs.request.high", "must be >= low"),
        ("{type: empirical, values: [1ms], weights: [1, 2]}", "broker.costs.request.weights", "has 2 items"),
        ("{type: empirical, values: [1ms], weights: [0]}", "broker.costs.request.weights", "not all be zero"),
        ("{type: empirical, values: []}", "broker.costs.request.values", "at least 1"),
        ("{type: exponential, mean: 1}", "broker.costs.request.mean", "needs a unit"),
        ("{type: exponential, median: 1ms}", "broker.costs.request.median", "unknown key 'median'"),
        ("{type: mixture, components: [1ms, 2ms], weights: [1]}", "broker.costs.request.weights", "has 1 items but components has 2"),
        ("{type: mixture, components: [1ms], weights: [0]}", "broker.costs.request.weights", "not all be zero"),
        ("{type: mixture, components: [], weights: []}", "broker.costs.request.components", "at least 1"),
        ("{type: mixture, components: [{type: mixture, components: [1ms], weights: [1]}], weights: [1]}",
         "broker.costs.request.components[0].type", "unknown type 'mixture' (allowed: constant, exponential"),
        ("{type: mixture, components: [{type: lognormal, median: 2ms, p99: 1ms}], weights: [1]}",
         "broker.costs.request.components[0].p99", "must be >= median"),
    ],
)
def test_invalid_parameters(text: str, path: str, fragment: str) -> None:
    with pytest.raises(ScenarioError) as info:
        _costs(text)
    assert any(p.path == path and fragment in p.message for p in info.value.problems), info.value.problems


def test_code_may_build_models_from_canonical_numbers() -> None:
    assert DurationConstant(value=1.5).value == 1.5
    assert sampler_from_spec(DurationLogNormal(median=0.5, p99=2.0)).sigma > 0
