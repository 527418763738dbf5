"""Student-t 95% quantiles without scipy: the table and the large-df expansion against a numerical CDF."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kafkasim.sweep.confidence import ci95_half_width, t_quantile_975


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) by integrating Student's t density from 0 to t (trapezoid, fine grid)."""
    x = np.linspace(0.0, t, 200_001)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    density = np.exp(log_c - (df + 1) / 2 * np.log1p(x * x / df))
    return 0.5 + float(np.trapezoid(density, x))


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 17, 29, 30, 31, 45, 100, 1000])
def test_t_quantile_is_the_0975_quantile(df: int) -> None:
    assert _t_cdf(t_quantile_975(df), df) == pytest.approx(0.975, abs=1e-8)


def test_ci_half_width_of_two_seeds() -> None:
    # mean 3, sample sd sqrt(2): 12.706 * sqrt(2) / sqrt(2)
    assert ci95_half_width([2.0, 4.0]) == pytest.approx(12.706204736)


def test_one_seed_has_no_interval() -> None:
    assert ci95_half_width([5.0]) is None
    with pytest.raises(ValueError):
        t_quantile_975(0)
