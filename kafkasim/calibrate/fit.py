"""The fit: the parameters (kafkasim.calibrate.parameters) that make a simulated run of the measured run's
scenario reproduce its statistics (kafkasim.calibrate.targets), by nonlinear least squares on the log ratios
(scipy.optimize.least_squares, trust-region reflective, within each parameter's bounds).

Every evaluation simulates the same scenario with the same seed (common random numbers): the objective is
then a deterministic function of the parameters, and so is the fit. Its Jacobian is taken by finite
differences of 0.15 on the log scale (a factor of 1.16), wide enough to step over the jumps of percentiles of
a finite sample (kafkasim's own step: scipy's relative one would scale with the size of the log).
The uncertainty of each fitted value is the usual asymptotic one: the covariance (JᵀJ)⁻¹ s² at the solution,
s² the residuals' variance; a parameter that no statistic moves (a zero column of J) is "not determined".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from kafkasim.calibrate.parameters import PARAMETERS, from_log, overrides, to_log
from kafkasim.calibrate.targets import Target, residual, statistics, targets
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario, with_overrides
from kafkasim.scenario.units import format_duration

DIFF_STEP = 0.15
MISSING_RESIDUAL = 5.0
"""A statistic the simulated run does not have at all (no such request): as far off as a factor of ~150."""
UNDETERMINED = 1e-9
"""A Jacobian column below this norm: no statistic moves with that parameter."""
LOOSEST_SD_LOG = 2.0
"""A standard deviation of a parameter's log above this (a factor of 7.4 either way) says the data barely
determine it: it is reported as not determined, and a prediction's band holds it at its fitted value."""

Progress = Callable[[int, int, float], None]
"""(evaluations done, the most allowed, the current sum of squared residuals)."""


@dataclass
class Fit:
    values: dict[str, float]
    """Each parameter's fitted value."""
    sd_log: dict[str, float | None]
    """Each parameter's standard deviation on the natural-log scale (0.1: about ±10%); None: not determined."""
    at_bound: dict[str, bool]
    targets: list[Target]
    fitted: dict[str, float]
    """Each target's simulated value at the fitted parameters."""
    before: dict[str, float]
    """Each target's simulated value at the starting point (what kafkasim said before the fit)."""
    evaluations: int
    cost: float
    seconds: float
    sim_duration_ms: float
    seed: int
    message: str
    covariance: list[list[float]] = field(default_factory=list)
    """Of the parameters' natural logs, in PARAMETERS' order (rows of undetermined parameters are 0)."""


def simulate(scenario: Scenario, values: dict[str, float], *, seed: int | None = None) -> dict[str, Any]:
    """The summary of `scenario` run with these parameter values."""
    run = with_overrides(scenario, overrides(values, scenario))
    return Engine(run, seed=run.seed if seed is None else seed).run().summary


def group_weights(wanted: list[Target]) -> np.ndarray:
    """Each statistic's weight: the broker's breakdown and the clients' latencies count the same in all,
    however many statistics each has (the breakdown has ~26, the clients ~4: unweighted, a fit would trade
    the produce latency it is asked to predict for a better queue time)."""
    sizes = {group: sum(1 for t in wanted if t.group == group) for group in {t.group for t in wanted}}
    largest = max(sizes.values())
    return np.array([math.sqrt(largest / sizes[t.group]) for t in wanted])


def starting_point(measured: dict[str, tuple[str, float, int]]) -> dict[str, float]:
    """Where the fit starts: each parameter's default, or a first guess from the statistic that determines it
    most directly (a fetch's LocalTimeMs for the request cost, ResponseSendTimeMs for the send cost, half the
    client's produce latency beyond the broker's for the link)."""
    start = {p.name: p.start for p in PARAMETERS}

    def stat(key: str) -> float | None:
        entry = measured.get(key)
        return entry[1] if entry is not None else None

    local = stat("FetchConsumer LocalTimeMs p50") or stat("FetchFollower LocalTimeMs p50")
    if local:
        start["request_ms"] = local
    send = stat("Produce ResponseSendTimeMs p50")
    if send:
        start["send_ms"] = send
    queue = stat("Produce RequestQueueTimeMs p50")
    if queue:
        start["wakeup_median_ms"] = queue
    produce = [v for k, (_, v, _) in measured.items() if k.startswith("produce ") and k.endswith(" p50")]
    total = stat("Produce LocalTimeMs p50")
    if produce and total is not None:
        start["link_median_ms"] = max(produce[0] - total, 0.01) / 4
    return {p.name: p.clipped(start[p.name]) for p in PARAMETERS}


def fit(scenario: Scenario, measured_summary: dict[str, Any], *, sim_duration_ms: float | None = None,
        max_evaluations: int = 200, progress: Progress | None = None, start: dict[str, float] | None = None,
        free: Sequence[str] | None = None) -> Fit:
    """Fit the parameters so that `scenario` (the measured run's, as its result directory holds it) simulated
    for `sim_duration_ms` (default: its own duration) reproduces `measured_summary`'s statistics. `start`: where
    the fit begins (an earlier fit's values, say); default: first guesses from the measurement. `free`: the
    parameters fitted (default: all); the others stay at `start` and count as not determined."""
    began = time.monotonic()
    wanted = targets(measured_summary)
    if not wanted:
        raise ValueError("the measured run has no statistic with enough values to fit")
    if sim_duration_ms is not None:
        warmup = min(scenario.warmup, sim_duration_ms / 2)
        scenario = with_overrides(scenario, [f"duration={format_duration(sim_duration_ms)}",
                                             f"warmup={format_duration(warmup)}"])
    seed = scenario.seed
    weights = group_weights(wanted)
    evaluations = 0
    best = math.inf

    def residuals_of(summary: dict[str, Any]) -> np.ndarray:
        got = statistics(summary)
        return weights * np.array([residual(got[t.key][1], t.value) if t.key in got else MISSING_RESIDUAL
                                   for t in wanted])

    if start is None:
        start = starting_point(statistics(measured_summary))
    else:
        start = {p.name: p.clipped(start[p.name]) for p in PARAMETERS}
    names = [p.name for p in PARAMETERS]
    free_names = names if free is None else [n for n in names if n in set(free)]
    unknown = sorted(set(free or ()) - set(names))
    if unknown or not free_names:
        raise ValueError(f"free parameters {unknown or 'none'}: allowed {', '.join(names)}")
    index = [names.index(n) for n in free_names]
    full = np.array(to_log(start))

    def everything(theta: np.ndarray) -> list[float]:
        x = full.copy()
        x[index] = theta
        return list(x)

    def evaluate(theta: np.ndarray) -> np.ndarray:
        nonlocal evaluations, best
        r = residuals_of(simulate(scenario, from_log(everything(theta)), seed=seed))
        evaluations += 1
        best = min(best, float(r @ r))
        if progress is not None:
            progress(evaluations, max_evaluations, best)
        return r

    last: list[tuple[bytes, np.ndarray]] = []

    def objective(theta: np.ndarray) -> np.ndarray:
        """The residuals at `theta`; the last point's are kept, since the Jacobian is asked for there next."""
        key = np.asarray(theta, dtype=float).tobytes()
        if last and last[0][0] == key:
            return last[0][1]
        r = evaluate(theta)
        last[:] = [(key, r)]
        return r

    def jacobian(theta: np.ndarray) -> np.ndarray:
        """Forward differences of DIFF_STEP on the log scale (backward at an upper bound). scipy's own
        relative step would scale with |log value|: 0 at a value of 1, a factor of 2 at 300 000."""
        r0 = objective(theta)
        columns = []
        for j in range(len(theta)):
            step = DIFF_STEP if theta[j] + DIFF_STEP <= high[j] else -DIFF_STEP
            moved = np.array(theta, dtype=float)
            moved[j] += step
            columns.append((evaluate(moved) - r0) / step)
        return np.column_stack(columns)

    low = np.array([math.log(PARAMETERS[i].low) for i in index])
    high = np.array([math.log(PARAMETERS[i].high) for i in index])
    # Strictly inside the bounds, as least_squares wants its start.
    full[index] = np.clip(full[index], low + 1e-9, high - 1e-9)
    # scipy counts the evaluations of its steps, not those of the finite-difference Jacobian (one per free
    # parameter after each accepted step): its budget is the most steps that stay within max_evaluations.
    steps = max(1, max_evaluations // (len(index) + 1))
    result = least_squares(objective, full[index], jac=jacobian, bounds=(low, high), max_nfev=steps,
                           method="trf")
    values = from_log(everything(result.x))
    jac = np.asarray(result.jac)
    m, k = jac.shape
    s2 = 2 * float(result.cost) / max(m - k, 1)
    n = len(PARAMETERS)
    determined = np.zeros(n, dtype=bool)
    determined[index] = np.linalg.norm(jac, axis=0) > UNDETERMINED
    cov = np.zeros((n, n))
    if determined.any():
        columns = [j for j, i in enumerate(index) if determined[i]]
        rows = [index[j] for j in columns]
        j = jac[:, columns]
        cov[np.ix_(rows, rows)] = np.linalg.pinv(j.T @ j) * s2
    loose = ~determined | (np.sqrt(np.maximum(np.diag(cov), 0.0)) > LOOSEST_SD_LOG)
    cov[loose, :] = 0.0
    cov[:, loose] = 0.0
    sd: dict[str, float | None] = {
        p.name: (None if loose[i] else math.sqrt(max(cov[i, i], 0.0))) for i, p in enumerate(PARAMETERS)}
    active = np.zeros(n)
    active[index] = np.asarray(result.active_mask)
    fitted_summary = simulate(scenario, values, seed=seed)
    before_summary = simulate(scenario, start, seed=seed)
    got, was = statistics(fitted_summary), statistics(before_summary)
    return Fit(
        values=values, sd_log=sd, at_bound={p.name: bool(active[i] != 0) for i, p in enumerate(PARAMETERS)},
        targets=wanted, fitted={t.key: got[t.key][1] for t in wanted if t.key in got},
        before={t.key: was[t.key][1] for t in wanted if t.key in was},
        evaluations=evaluations + 2, cost=float(result.cost), seconds=time.monotonic() - began,
        sim_duration_ms=scenario.duration, seed=seed, message=str(result.message),
        covariance=[[float(x) for x in row] for row in cov])
