"""A prediction's band (kafkasim.calibrate.predict): draws of the fitted values from the preset's covariance,
from their own seeded stream; deterministic; stopped between draws when asked."""

from __future__ import annotations

import pytest

from kafkasim.calibrate.parameters import PARAMETERS
from kafkasim.calibrate.predict import parameter_draws, predict
from kafkasim.calibrate.preset import Preset
from kafkasim.scenario import load_scenario

SCENARIO = """
name: tiny
description: acks=1 to a leader and two followers, one consumer
seed: 5
duration: 1500ms
warmup: 300ms
topics: [{name: t, replication.factor: 3, min.insync.replicas: 2}]
producers: [{name: p, topic: t, acks: 1, rate: 200/s}]
consumers: [{name: c, topic: t}]
"""
N = len(PARAMETERS)
# sd 0.3 on the log scale for the link latency, none for the rest.
LINK = [p.name for p in PARAMETERS].index("link_median_ms")
COV = [[0.09 if i == j == LINK else 0.0 for j in range(N)] for i in range(N)]
PRESET = Preset("test", {p.name: p.start for p in PARAMETERS} | {"stall_interval_ms": 600_000.0,
                                                                 "client_stall_interval_ms": 600_000.0},
                COV, {})


def test_draws_vary_only_what_the_fit_left_uncertain_and_are_seeded() -> None:
    draws = parameter_draws(PRESET, 3, seed=5)
    assert draws == parameter_draws(PRESET, 3, seed=5) and draws != parameter_draws(PRESET, 3, seed=6)
    assert len({d["link_median_ms"] for d in draws}) == 3
    assert all(d["request_ms"] == pytest.approx(PRESET.values["request_ms"], rel=1e-12) for d in draws)


def test_the_band_holds_the_fitted_value_and_a_stop_leaves_fewer_draws() -> None:
    scenario = load_scenario(SCENARIO)
    full = predict(scenario, PRESET, draws=2)
    assert full.draws == 2 and full == predict(scenario, PRESET, draws=2)
    key = "produce acks=1 p50"
    assert full.low[key] <= full.value[key] <= full.high[key] and full.low[key] < full.high[key]
    stopped = predict(scenario, PRESET, draws=2, should_stop=lambda: True)
    assert stopped.draws == 0 and stopped.low == stopped.value == stopped.high
    assert stopped.value == full.value
