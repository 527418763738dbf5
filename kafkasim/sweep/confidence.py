"""95% confidence intervals across seeds: Student's t, without scipy.

A sweep repeats each variant with a handful of seeds and reports, for every statistic (p99, error rate, ...),
the mean over seeds and a 95% confidence interval for that mean:

    mean ± t(0.975, n-1) · s / sqrt(n)

where s is the sample standard deviation over the n seeds. scipy is not a dependency, so the t quantile
comes from a table for 1..30 degrees of freedom (the usual published values, 9 digits) and, beyond 30,
from the Cornish-Fisher expansion of t around the normal quantile, which is within 1e-6 of the exact value
there. `tests/sweep/test_confidence.py` checks both against a numerical integration of the t density.
With one seed there is no spread to estimate: the interval is undefined (None / null), never zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95

_Z_975 = 1.959963984540054
"""Standard normal 0.975 quantile."""

# t(0.975, df) for df = 1..30.
_T_975 = (
    12.706204736,
    4.302652730,
    3.182446305,
    2.776445105,
    2.570581836,
    2.446911851,
    2.364624252,
    2.306004135,
    2.262157163,
    2.228138852,
    2.200985160,
    2.178812830,
    2.160368656,
    2.144786688,
    2.131449546,
    2.119905299,
    2.109815578,
    2.100922040,
    2.093024054,
    2.085963447,
    2.079613845,
    2.073873068,
    2.068657610,
    2.063898562,
    2.059538553,
    2.055529439,
    2.051830516,
    2.048407142,
    2.045229642,
    2.042272456,
)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (two-sided 95%)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T_975):
        return _T_975[df - 1]
    # Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5), four terms.
    z = _Z_975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def ci95_half_width(values: Sequence[float]) -> float | None:
    """Half-width of the 95% confidence interval of the mean of `values`; None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return t_quantile_975(n - 1) * math.sqrt(variance) / math.sqrt(n)
