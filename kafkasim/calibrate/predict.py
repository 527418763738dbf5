"""A prediction with its uncertainty: a scenario run with a fitted preset's values, and again with a few draws
of the values from the fit's covariance, so that each statistic comes with a band (the draws' least and
greatest value, the fitted run's value included; a draw whose runs lack a statistic leaves it out of that
statistic's band only).

The draws come from their own named stream, `calibration/draws` of the scenario's seed, and every run uses
the scenario's seed: the same scenario and preset give the same prediction, band included. With `runs` above 1
each set of values is that many runs (kafkasim.calibrate.fit.run_seeds) and each statistic their median, as
the real runs beside which docs/make_calibration.py sets the prediction are measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kafkasim.calibrate.fit import run_seeds
from kafkasim.calibrate.parameters import PARAMETERS, from_log, to_log
from kafkasim.calibrate.preset import Preset, applied
from kafkasim.calibrate.targets import measured
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario
from kafkasim.sim.random_streams import stream_seed

DRAWS_STREAM = "calibration/draws"


@dataclass(frozen=True)
class Prediction:
    value: dict[str, float]
    """Each statistic (kafkasim.calibrate.targets keys) at the fitted values."""
    low: dict[str, float]
    high: dict[str, float]
    draws: int


def parameter_draws(preset: Preset, draws: int, seed: int) -> list[dict[str, float]]:
    """`draws` sets of parameter values drawn from the fit's normal distribution of their logs."""
    if draws <= 0:
        return []
    rng = np.random.default_rng(stream_seed(seed, DRAWS_STREAM) % 2**64)
    mean = np.array(to_log(preset.values))
    cov = np.array(preset.covariance)
    samples = rng.multivariate_normal(mean, cov, size=draws, method="eigh")
    low = np.array([math.log(p.low) for p in PARAMETERS])
    high = np.array([math.log(p.high) for p in PARAMETERS])
    return [from_log(list(np.clip(s, low, high))) for s in samples]


def predict(scenario: Scenario, preset: Preset, *, draws: int = 4, seed: int | None = None,
            fitted_summary: dict[str, Any] | None = None,
            progress: Callable[[int, int], None] | None = None,
            should_stop: Callable[[], bool] | None = None, runs: int = 1) -> Prediction:
    """`scenario` predicted with `preset` (its values where the scenario sets none), with a band from `draws`
    further runs. `fitted_summary`: the summary of the run at the fitted values when it was run already
    (`kafkasim run --preset`), else it is run here. `should_stop` (Ctrl-C, say) is asked before each draw's
    run: the band is then over the draws run so far, and `draws` says how many. `runs`: simulated runs of each
    set of values, each statistic their median (`fitted_summary` is the first run of the fitted values')."""
    if runs < 1:
        raise ValueError(f"runs {runs}: at least 1")
    seed = scenario.seed if seed is None else seed
    seeds = run_seeds(seed, runs)
    sets = [preset.values, *parameter_draws(preset, draws, seed)]
    results: list[dict[str, float]] = []
    for i, values in enumerate(sets):
        if i > 0 and should_stop is not None and should_stop():
            break
        run, _kept = applied(scenario, values, preset.collector)
        summaries = [fitted_summary if i == 0 and j == 0 and fitted_summary is not None
                     else Engine(run, seed=s).run().summary for j, s in enumerate(seeds)]
        results.append({k: v for k, (_g, v, _n) in measured(summaries).items()})
        if progress is not None:
            progress(i + 1, len(sets))
    # Every statistic of the fitted values' runs, its band over the draws that have it: a draw whose runs lack one
    # (too few values, kafkasim.calibrate.targets) narrows its band rather than dropping it from the prediction
    # (a held-out table then silently lost its row).
    fitted = results[0]
    return Prediction(value=dict(fitted), low={k: min(r[k] for r in results if k in r) for k in fitted},
                      high={k: max(r[k] for r in results if k in r) for k in fitted}, draws=len(results) - 1)


def as_run_info(prediction: Prediction, preset: Preset) -> dict[str, Any]:
    """What a predicted run's run-info.json says of its band (`prediction`), for `kafkasim compare`."""
    return {"preset": preset.path, "fitted": preset.fitted.get("when"), "draws": prediction.draws,
            "statistics": {k: {"value": prediction.value[k], "low": prediction.low[k], "high": prediction.high[k]}
                           for k in prediction.value}}
