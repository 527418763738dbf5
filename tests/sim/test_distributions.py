import math
import random
import statistics
from types import SimpleNamespace

import pytest

from kafkasim.scenario import distributions as scenario_distributions
from kafkasim.sim.distributions import (
    Z99,
    Constant,
    Empirical,
    Exponential,
    LogNormal,
    Mixture,
    Uniform,
    lognormal_draw,
    sampler_from_spec,
)

N = 20_000


def _draws(sampler, n=N, seed=1):
    rng = random.Random(seed)
    return [sampler.sample(rng) for _ in range(n)]


def test_constant():
    assert _draws(Constant(2.5), 5) == [2.5] * 5
    assert Constant(2.5).mean == 2.5


def test_exponential_mean_and_memoryless_shape():
    draws = _draws(Exponential(4.0))
    assert Exponential(4.0).mean == 4.0
    assert statistics.fmean(draws) == pytest.approx(4.0, rel=0.05)
    # P(X > mean) = 1/e for an exponential
    assert sum(d > 4.0 for d in draws) / N == pytest.approx(math.exp(-1), abs=0.02)
    assert min(draws) >= 0


def test_lognormal_median_and_p99():
    sampler = LogNormal(median=0.5, p99=2.0)
    assert sampler.mu == pytest.approx(math.log(0.5))
    assert sampler.sigma == pytest.approx((math.log(2.0) - math.log(0.5)) / 2.326348, rel=1e-6)
    draws = sorted(_draws(sampler))
    assert draws[N // 2] == pytest.approx(0.5, rel=0.05)
    assert draws[int(N * 0.99)] == pytest.approx(2.0, rel=0.1)
    assert sampler.mean == pytest.approx(math.exp(sampler.mu + sampler.sigma**2 / 2))
    assert statistics.fmean(draws) == pytest.approx(sampler.mean, rel=0.05)


def test_lognormal_with_p99_equal_to_median_is_constant():
    assert _draws(LogNormal(3.0, 3.0), 100) == [pytest.approx(3.0)] * 100


def test_uniform_bounds_and_mean():
    draws = _draws(Uniform(1.0, 3.0))
    assert min(draws) >= 1.0 and max(draws) < 3.0
    assert statistics.fmean(draws) == pytest.approx(2.0, rel=0.02)
    assert Uniform(1.0, 3.0).mean == 2.0


def test_empirical_follows_weights_and_never_picks_zero_weight():
    sampler = Empirical([1.0, 2.0, 10.0, 99.0], weights=[90, 9, 1, 0])
    draws = _draws(sampler)
    assert 99.0 not in draws
    assert draws.count(1.0) / N == pytest.approx(0.90, abs=0.01)
    assert draws.count(10.0) / N == pytest.approx(0.01, abs=0.005)
    assert sampler.mean == pytest.approx((90 * 1 + 9 * 2 + 10) / 100)


def test_mixture_picks_a_component_by_weight_then_draws_from_it():
    sampler = Mixture([Constant(1.0), Uniform(10.0, 20.0), Constant(99.0)], [90, 10, 0])
    draws = _draws(sampler)
    assert 99.0 not in draws
    assert draws.count(1.0) / N == pytest.approx(0.90, abs=0.01)
    assert all(10.0 <= d <= 20.0 for d in draws if d != 1.0)
    assert sampler.mean == pytest.approx(0.9 * 1.0 + 0.1 * 15.0)
    # One uniform picks, the component's own draw follows from the same stream.
    rng, picked = random.Random(5), random.Random(5)
    picked.random()
    assert Mixture([Uniform(10.0, 20.0)], [1]).sample(rng) == Uniform(10.0, 20.0).sample(picked)


def test_empirical_equal_weights_by_default():
    draws = _draws(Empirical([5.0, 6.0]))
    assert draws.count(5.0) / N == pytest.approx(0.5, abs=0.02)


def test_empirical_guards_against_rounding_to_the_total():
    class Top(random.Random):
        def random(self):
            return math.nextafter(1.0, 0.0)

    assert Empirical([1.0, 2.0, 3.0], [1, 1, 0]).sample(Top()) == 2.0


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Exponential(0), "mean must be > 0"),
        (lambda: LogNormal(0, 1), "median must be > 0"),
        (lambda: LogNormal(2, 1), "p99 .* must be >= median"),
        (lambda: Uniform(3, 1), "low .* must be <= high"),
        (lambda: Empirical([]), "must not be empty"),
        (lambda: Empirical([1, 2], [1]), "weights has 1 items but values has 2"),
        (lambda: Empirical([1, 2], [0, 0]), "must not all be zero"),
        (lambda: Empirical([1, 2], [1, -1]), "must be >= 0"),
        (lambda: Constant(float("nan")), "finite number"),
        (lambda: Mixture([], []), "must not be empty"),
        (lambda: Mixture([Constant(1)], [1, 2]), "weights has 2 items but components has 1"),
        (lambda: Mixture([Constant(1)], [0]), "must not all be zero"),
        (lambda: Mixture([Constant(1), Constant(2)], [1, -1]), "must be >= 0"),
    ],
)
def test_invalid_parameters_are_clear_errors(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_same_rng_seed_same_draws():
    assert _draws(LogNormal(1, 5), 50, seed=9) == _draws(LogNormal(1, 5), 50, seed=9)


def test_sampler_from_duck_typed_specs():
    assert isinstance(sampler_from_spec(SimpleNamespace(type="constant", value=3)), Constant)
    exp = sampler_from_spec(SimpleNamespace(type="exponential", mean=2.0))
    assert isinstance(exp, Exponential) and exp.mean == 2.0
    ln = sampler_from_spec(SimpleNamespace(type="lognormal", median=1.0, p99=4.0))
    assert isinstance(ln, LogNormal) and ln.sigma == pytest.approx(math.log(4.0) / Z99)
    uni = sampler_from_spec(SimpleNamespace(type="uniform", low=1, high=2))
    assert isinstance(uni, Uniform) and uni.mean == 1.5
    emp = sampler_from_spec(SimpleNamespace(type="empirical", values=[1, 3], weights=None))
    assert isinstance(emp, Empirical) and emp.mean == 2.0
    assert sampler_from_spec(0.25).sample(random.Random(0)) == 0.25


def test_sampler_from_spec_errors():
    with pytest.raises(ValueError, match="unknown distribution type 'pareto'; allowed: constant"):
        sampler_from_spec(SimpleNamespace(type="pareto"))
    with pytest.raises(ValueError, match="lognormal distribution needs `p99`"):
        sampler_from_spec(SimpleNamespace(type="lognormal", median=1.0))


def test_sampler_from_the_scenario_models():
    lognormal_mean = math.exp(math.log(0.5) + ((math.log(2.0) - math.log(0.5)) / 2.3263478740408408) ** 2 / 2)
    specs_and_means = [
        (scenario_distributions.DurationConstant(value=1.5), 1.5),
        (scenario_distributions.DurationExponential(mean=2.0), 2.0),
        (scenario_distributions.DurationLogNormal(median=0.5, p99=2.0), lognormal_mean),
        (scenario_distributions.DurationUniform(low=1.0, high=3.0), 2.0),
        (scenario_distributions.DurationEmpirical(values=[1.0, 2.0], weights=[3, 1]), 1.25),
        (scenario_distributions.DurationMixture(components=[scenario_distributions.DurationConstant(value=1.0),
                                                            scenario_distributions.DurationConstant(value=3.0)],
                                                weights=[1, 1]), 2.0),
    ]
    for spec, mean in specs_and_means:
        sampler = sampler_from_spec(spec)
        assert type(sampler).__name__.lower() == spec.type
        assert sampler.mean == pytest.approx(mean)


def test_lognormal_draw_is_the_stdlib_lognormvariate_draw_for_draw() -> None:
    for seed, mu, sigma in ((1, 0.0, 1.0), (7, -1.2, 0.8), (42, 0.3, 0.0), (3, 5.0, 3.0)):
        ours, theirs = random.Random(seed), random.Random(seed)
        for _ in range(20_000):
            assert lognormal_draw(ours, mu, sigma) == theirs.lognormvariate(mu, sigma)
        assert ours.getstate() == theirs.getstate()
