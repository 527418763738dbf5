"""A preset written before a parameter that stands for what another one was (kafkasim.calibrate.parameters.WAS)
loads as it was fitted: before `broker.costs.handler_wakeup` the request handlers drew `broker.costs.wakeup`, so
such a preset's handlers' spread is its `wakeup_spread`, in its values and in its draws."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from kafkasim.calibrate.parameters import PARAMETERS, overrides
from kafkasim.calibrate.predict import parameter_draws
from kafkasim.calibrate.preset import HEADER, PresetError, load_preset
from kafkasim.scenario import load_scenario

COMMITTED = Path(__file__).resolve().parents[2] / "presets" / "this-machine.yaml"
NAMES = [p.name for p in PARAMETERS]


def _written_before(tmp_path: Path, *, keep_covariance: bool = False) -> Path:
    """The committed preset as a kafkasim without handler_wakeup_spread would have written it."""
    data = yaml.safe_load(COMMITTED.read_text(encoding="utf-8"))
    i = NAMES.index("handler_wakeup_spread")
    del data["parameters"]["handler_wakeup_spread"]
    if not keep_covariance:
        data["covariance"] = [[x for j, x in enumerate(row) if j != i]
                              for k, row in enumerate(data["covariance"]) if k != i]
    older = tmp_path / "older.yaml"
    older.write_text(HEADER + "\n" + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return older


def test_a_preset_from_before_the_handlers_own_wakeup_loads_as_it_was_fitted(tmp_path: Path) -> None:
    preset = load_preset(_written_before(tmp_path))
    assert preset.values["handler_wakeup_spread"] == preset.values["wakeup_spread"]
    handler, network = NAMES.index("handler_wakeup_spread"), NAMES.index("wakeup_spread")
    assert preset.covariance[handler] == preset.covariance[network]
    assert [row[handler] for row in preset.covariance] == [row[network] for row in preset.covariance]
    # Its scenario lines give the handlers the network threads' wake-up, as the old model drew one for both.
    lines = overrides(preset.values, load_scenario("scenarios/calibration_base.yaml"))
    wakeup = next(line for line in lines if line.startswith("broker.costs.wakeup="))
    assert f"broker.costs.handler_wakeup={wakeup.split('=', 1)[1]}" in lines
    for draw in parameter_draws(preset, 4, seed=7):
        assert math.isclose(draw["handler_wakeup_spread"], draw["wakeup_spread"], rel_tol=1e-6)  # eigh of a singular covariance


def test_its_covariance_is_read_in_the_order_of_the_kafkasim_that_wrote_it(tmp_path: Path) -> None:
    n = len(PARAMETERS) - 1
    with pytest.raises(PresetError, match=rf"covariance: must be {n} rows of {n} numbers"):
        load_preset(_written_before(tmp_path, keep_covariance=True))
