"""The fit: the parameters (kafkasim.calibrate.parameters) that make a simulated run of the measured run's
scenario reproduce its statistics (kafkasim.calibrate.targets), by nonlinear least squares on the log ratios
(scipy.optimize.least_squares, trust-region reflective, within each parameter's bounds).

Every evaluation simulates the same scenario with the same seed (common random numbers): the objective is
then a deterministic function of the parameters, and so is the fit. With `sim_runs` above 1 an evaluation is
that many runs, at the scenario's seed and seeds derived from it (`run_seeds`), and each statistic is their
median: measured as the real runs are (the median of a few runs of the real run's length), a p99 made by rare
long stalls is the same statistic on both sides, where one long simulated run's p99 is another one. Its
Jacobian is taken by finite differences of 0.15 on the log scale (a factor of 1.16), wide enough to step over
the jumps of percentiles of a finite sample (kafkasim's own step: scipy's relative one would scale with the
size of the log).
The uncertainty of each fitted value is the usual asymptotic one: the covariance (JᵀJ)⁻¹ s² at the solution,
s² the residuals' variance; a parameter that no statistic moves (a zero column of J) is "not determined".
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from kafkasim.calibrate.completion import consumer_completion_ms, follower_update_ms
from kafkasim.calibrate.fetch_read import fetch_read_ms
from kafkasim.calibrate.parameters import PARAMETERS, from_log, min_evaluations, overrides, to_log
from kafkasim.calibrate.targets import CORES_GROUP, Target, measured, residual, targets, with_request_log
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario, shortened, with_overrides
from kafkasim.scenario.broker import HandlerCosts
from kafkasim.scenario.distributions import typical_value
from kafkasim.sim.random_streams import stream_seed

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
    sim_runs: int = 1
    """Simulated runs per evaluation (their statistics' medians), at `run_seeds(seed, sim_runs)`."""
    covariance: list[list[float]] = field(default_factory=list)
    """Of the parameters' natural logs, in PARAMETERS' order (rows of undetermined parameters are 0)."""


def simulate(scenario: Scenario, values: dict[str, float], *, seed: int | None = None) -> dict[str, Any]:
    """The summary of `scenario` run with these parameter values, with its request log's gaps
    (kafkasim.calibrate.targets.with_request_log)."""
    run = with_overrides(scenario, overrides(values, scenario))
    result = Engine(run, seed=run.seed if seed is None else seed).run()
    return with_request_log(result.summary, result.requests)


RUNS_STREAM = "calibration/run"


def run_seeds(seed: int, runs: int) -> list[int]:
    """The seeds of `runs` simulated runs that stand for as many real runs: the scenario's own first, then one
    from each run's own named stream (`calibration/run-<i>` of it)."""
    return [seed] + [stream_seed(seed, f"{RUNS_STREAM}-{i}") % 2**63 for i in range(1, runs)]


def _simulate(job: tuple[Scenario, dict[str, float], int]) -> dict[str, Any]:
    """`simulate` for a worker process (one picklable argument)."""
    scenario, values, seed = job
    return simulate(scenario, values, seed=seed)


def group_weights(wanted: list[Target]) -> np.ndarray:
    """Each statistic's weight: the broker's breakdown and the clients' latencies count the same in all,
    however many statistics each has (the breakdown has ~26, the clients ~4: unweighted, a fit would trade
    the produce latency it is asked to predict for a better queue time). The cores (kafkasim.calibrate.targets)
    each count as one statistic of the largest group: three of them hold the split of the latencies into work
    and waits, not a third of what the fit answers to."""
    sizes = {group: sum(1 for t in wanted if t.group == group) for group in {t.group for t in wanted}}
    largest = max(sizes.values())
    return np.array([1.0 if t.group == CORES_GROUP else math.sqrt(largest / sizes[t.group]) for t in wanted])


def starting_point(measured: dict[str, tuple[str, float, int]],
                   requests: Sequence[pd.DataFrame] = ()) -> dict[str, float]:
    """Where the fit starts: each parameter's default, or a first guess from the statistic that determines it
    most directly (a consumer fetch's LocalTimeMs for the request cost, a produce's and a follower fetch's
    beyond it for the append and follower costs, ResponseSendTimeMs for the send cost, half the client's
    produce latency beyond the broker's for the link, a consumer fetch's RequestQueueTimeMs p50 and p99 for the wake-up and a produce's
    ResponseQueueTimeMs beyond it for the wait per running thread, and from the measured runs' request logs, when given, what
    completing a consumer's fetch adds to a follower fetch for the completion cost and what a parked follower fetch
    takes beyond a parked consumer fetch for the follower cost, kafkasim.calibrate.completion, what finding
    records adds to a consumer fetch for the segment read, kafkasim.calibrate.fetch_read, and how soon a produce
    waiting behind another is read for the network thread's work after a send, kafkasim.calibrate.pipelined)."""
    start = {p.name: p.start for p in PARAMETERS}
    gap = consumer_completion_ms(requests)
    if gap is not None:
        start["complete_fetch_ms"] = gap
    read = fetch_read_ms(requests)
    if read is not None and read > 0:
        start["segment_read_ms"] = read

    def stat(key: str) -> float | None:
        entry = measured.get(key)
        return entry[1] if entry is not None else None

    local = stat("FetchConsumer LocalTimeMs p50") or stat("FetchFollower LocalTimeMs p50")
    if local:
        start["request_ms"] = local
        for parameter, key in (("append_ms", "Produce LocalTimeMs p50"), ("follower_fetch_ms", "FetchFollower LocalTimeMs p50")):
            more = stat(key)
            if more is not None and more > local:
                start[parameter] = more - local
    # A follower fetch's LocalTimeMs p50 mixes those that completed a consumer's fetch with those that did not
    # (about half each here): the request logs tell the follower's own work apart.
    update = follower_update_ms(requests)
    if update is not None and update > 0:
        start["follower_fetch_ms"] = update
    send = stat("Produce ResponseSendTimeMs p50")
    if send:
        start["send_ms"] = send
    # A produce that waited in the socket for the previous one's answer is read once the network thread has done
    # with that answer and read it (broker.costs.network_read, not fitted: its default): kafkasim.calibrate.pipelined.
    pipelined = stat("Produce read after a response p50")
    read = typical_value(HandlerCosts().network_read)
    if pipelined is not None and pipelined > read:
        start["complete_ms"] = pipelined - read
    queue = stat("Produce RequestQueueTimeMs p50")
    if queue:
        start["wakeup_median_ms"] = queue
    # A consumer's fetch mostly arrives when no broker thread runs, and an acks=1 produce's response is queued
    # while its handler goes on (it answers the followers it woke): one thread running (MachineLoad).
    idle, busy = stat("FetchConsumer RequestQueueTimeMs p50"), stat("Produce ResponseQueueTimeMs p50")
    if idle and busy and busy > idle:
        start["wakeup_median_ms"] = idle
        start["wakeup_per_thread_ms"] = busy - idle
    # A woken thread's wait is one lognormal: a consumer fetch's queue time (mostly one woken thread's wait,
    # above) spreads as it does.
    idle_p99 = stat("FetchConsumer RequestQueueTimeMs p99")
    if idle and idle_p99 and idle_p99 > idle:
        start["wakeup_spread"] = start["handler_wakeup_spread"] = idle_p99 / idle
    # Work after idle (kafkasim.sim.cold_start): a produce taken 3 ms or more after the handlers' last work took this
    # much longer than one taken at once, mostly after 3-6 ms, where the default grace and ramp have gone about 0.7 of
    # the way.
    after_idle = stat("Produce after idle p50")
    if after_idle is not None and after_idle > 0:
        start["cold_start_ms"] = after_idle / 0.7
    produce = [v for k, (_, v, _) in measured.items() if k.startswith("produce ") and k.endswith(" p50")]
    total = stat("Produce LocalTimeMs p50")
    if produce and total is not None:
        start["link_median_ms"] = max(produce[0] - total, 0.01) / 4
    return {p.name: p.clipped(start[p.name]) for p in PARAMETERS}


def fit(scenario: Scenario, measured_summary: dict[str, Any] | Sequence[dict[str, Any]], *,
        sim_duration_ms: float | None = None, max_evaluations: int = 200, progress: Progress | None = None,
        start: dict[str, float] | None = None, free: Sequence[str] | None = None, jobs: int = 1,
        requests: Sequence[pd.DataFrame] = (), medians_only: bool = False, sim_runs: int = 1) -> Fit:
    """Fit the parameters so that `scenario` (the measured run's, as its result directory holds it) simulated
    for `sim_duration_ms` (default: its own duration) reproduces `measured_summary`'s statistics (of several
    runs of the scenario: their medians, kafkasim.calibrate.targets.measured). `start`: where the fit begins
    (an earlier fit's values, say); default: first guesses from the measurement. `free`: the parameters
    fitted (default: all); the others stay at `start` and count as not determined. `jobs`: processes that
    simulate a Jacobian's columns at once (each a seeded run: the fit is the same whatever `jobs` is).
    `requests`: the measured runs' request logs, one per run: the gaps between requests they hold are fitted
    too (kafkasim.calibrate.targets.with_request_log), and one first guess only they give (`starting_point`).
    `medians_only`: fit the p50s alone (a body fit on short runs, whose p99s are a few draws' luck).
    `sim_runs`: simulated runs per evaluation, each statistic their median (`run_seeds`)."""
    if jobs < 1:
        raise ValueError(f"jobs {jobs}: at least 1")
    if sim_runs < 1:
        raise ValueError(f"sim_runs {sim_runs}: at least 1")
    if jobs == 1:
        return _fit(scenario, measured_summary, sim_duration_ms, max_evaluations, progress, start, free, None,
                    requests, medians_only, sim_runs)
    # Fresh interpreters (spawn): forking a process whose other threads (a progress bar's) hold locks is unsafe.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            return _fit(scenario, measured_summary, sim_duration_ms, max_evaluations, progress, start, free, pool,
                        requests, medians_only, sim_runs)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _fit(scenario: Scenario, measured_summary: dict[str, Any] | Sequence[dict[str, Any]],
         sim_duration_ms: float | None, max_evaluations: int, progress: Progress | None,
         start: dict[str, float] | None, free: Sequence[str] | None, pool: Executor | None,
         requests: Sequence[pd.DataFrame], medians_only: bool = False, sim_runs: int = 1) -> Fit:
    began = time.monotonic()
    runs = [measured_summary] if isinstance(measured_summary, dict) else list(measured_summary)
    if requests:
        if len(requests) != len(runs):
            raise ValueError(f"{len(requests)} request logs for {len(runs)} measured runs: one per run")
        runs = [with_request_log(summary, log) for summary, log in zip(runs, requests, strict=True)]
    wanted = targets(runs)
    if medians_only:
        wanted = [t for t in wanted if t.key.endswith(" p50")]
    if not wanted:
        raise ValueError("the measured run has no statistic with enough values to fit")
    if sim_duration_ms is not None:
        scenario = shortened(scenario, sim_duration_ms)
    seed = scenario.seed
    seeds = run_seeds(seed, sim_runs)
    weights = group_weights(wanted)
    evaluations = 0
    best = math.inf

    def residuals_of(summaries: Sequence[dict[str, Any]]) -> np.ndarray:
        got = measured(summaries)
        return weights * np.array([residual(got[t.key][1], t.value) if t.key in got else MISSING_RESIDUAL
                                   for t in wanted])

    if start is None:
        start = starting_point(measured(runs), requests)
    else:
        start = {p.name: p.clipped(start[p.name]) for p in PARAMETERS}
    names = [p.name for p in PARAMETERS]
    free_names = names if free is None else [n for n in names if n in set(free)]
    unknown = sorted(set(free or ()) - set(names))
    if unknown or not free_names:
        raise ValueError(f"free parameters {unknown or 'none'}: allowed {', '.join(names)}")
    index = [names.index(n) for n in free_names]
    fewest = min_evaluations(len(index)) * sim_runs
    if max_evaluations < fewest:
        raise ValueError(f"max_evaluations {max_evaluations}: a fit of {len(index)} parameters needs at least "
                         f"{fewest} simulated runs (the start and its Jacobian, a step and the Jacobian there"
                         f"{f', {sim_runs} runs each' if sim_runs > 1 else ''})")
    full = np.array(to_log(start))

    def everything(theta: np.ndarray) -> list[float]:
        x = full.copy()
        x[index] = theta
        return list(x)

    def counted(summaries: Sequence[dict[str, Any]]) -> np.ndarray:
        nonlocal evaluations, best
        r = residuals_of(summaries)
        evaluations += len(summaries)
        best = min(best, float(r @ r))
        if progress is not None:
            progress(evaluations, max_evaluations, best)
        return r

    def evaluate(theta: np.ndarray) -> np.ndarray:
        values = from_log(everything(theta))
        return counted([simulate(scenario, values, seed=s) for s in seeds])

    def evaluate_all(thetas: list[np.ndarray]) -> list[np.ndarray]:
        if pool is None:
            return [evaluate(theta) for theta in thetas]
        jobs = [(scenario, from_log(everything(theta)), s) for theta in thetas for s in seeds]
        summaries = list(pool.map(_simulate, jobs))
        n = len(seeds)
        return [counted(summaries[i:i + n]) for i in range(0, len(summaries), n)]

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
        steps, moved = [], []
        for j in range(len(theta)):
            step = DIFF_STEP if theta[j] + DIFF_STEP <= high[j] else -DIFF_STEP
            point = np.array(theta, dtype=float)
            point[j] += step
            steps.append(step)
            moved.append(point)
        return np.column_stack([(r - r0) / step for r, step in zip(evaluate_all(moved), steps, strict=True)])

    low = np.array([math.log(PARAMETERS[i].low) for i in index])
    high = np.array([math.log(PARAMETERS[i].high) for i in index])
    # Strictly inside the bounds, as least_squares wants its start.
    full[index] = np.clip(full[index], low + 1e-9, high - 1e-9)
    # scipy counts the evaluations of its steps, not those of the finite-difference Jacobian (one per free
    # parameter after each accepted step): its budget is the most steps that stay within max_evaluations.
    steps = max(1, max_evaluations // ((len(index) + 1) * sim_runs))
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
    last_two = [(scenario, v, s) for v in (values, start) for s in seeds]
    summaries = list(pool.map(_simulate, last_two)) if pool else [_simulate(job) for job in last_two]
    got, was = measured(summaries[:len(seeds)]), measured(summaries[len(seeds):])
    return Fit(
        values=values, sd_log=sd, at_bound={p.name: bool(active[i] != 0) for i, p in enumerate(PARAMETERS)},
        targets=wanted, fitted={t.key: got[t.key][1] for t in wanted if t.key in got},
        before={t.key: was[t.key][1] for t in wanted if t.key in was},
        evaluations=evaluations + len(last_two), cost=float(result.cost), seconds=time.monotonic() - began,
        sim_duration_ms=scenario.duration, seed=seed, message=str(result.message),
        covariance=[[float(x) for x in row] for row in cov], sim_runs=sim_runs)


TAILS: tuple[str, ...] = ("service_spread", "network_spread", "append_spread", "wakeup_spread", "handler_wakeup_spread",
                          "wakeup_scale_per_thread",
                          "preempt_every_ms", "preempt_wait_ms",
                          "preempt_wait_spread", "preempt_per_thread", "link_spread",
                          "stall_interval_ms", "stall_median_ms", "stall_spread", "client_stall_interval_ms",
                          "client_stall_median_ms")
"""The parameters that make the tails (the p99s) and leave the body (the p50s) as it is: the spreads of
distributions whose medians other parameters set, the steps' waits for a core, and the stalls."""


def with_tails(body: Fit, tails: Fit) -> Fit:
    """A fit of the body (every parameter, short runs) whose tail parameters (`TAILS`) were fitted again on
    their own (long runs, from the body's values): the tails' values, statistics and uncertainties, the
    body's uncertainties for the rest (the covariance block-diagonal between the two). `before` stays the
    body's: what kafkasim said before any fit, on the body's (shorter) runs."""
    names = [p.name for p in PARAMETERS]
    tail = np.array([n in TAILS for n in names])
    cov = np.array(body.covariance) if body.covariance else np.zeros((len(names), len(names)))
    cov[tail, :] = 0.0
    cov[:, tail] = 0.0
    if tails.covariance:
        cov[np.ix_(tail, tail)] = np.array(tails.covariance)[np.ix_(tail, tail)]
    return Fit(values=dict(tails.values), sd_log={n: tails.sd_log[n] if n in TAILS else body.sd_log[n] for n in names},
               at_bound={n: tails.at_bound[n] if n in TAILS else body.at_bound[n] for n in names},
               targets=tails.targets, fitted=tails.fitted, before=body.before,
               evaluations=body.evaluations + tails.evaluations, cost=tails.cost,
               seconds=body.seconds + tails.seconds, sim_duration_ms=tails.sim_duration_ms, seed=tails.seed,
               sim_runs=tails.sim_runs,
               message=f"body: {body.message}; tails: {tails.message}",
               covariance=[[float(x) for x in row] for row in cov])
