"""A preset written before a parameter that stands for what another one was (kafkasim.calibrate.parameters.WAS)
loads as it was fitted: before `broker.costs.handler_wakeup` the request handlers drew `broker.costs.wakeup`, so
such a preset's handlers' spread is its `wakeup_spread`; before `network_spread` the network threads' costs spread
as the handlers' did, so such a preset's network spread is its `service_spread`. In its values and in its draws."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from kafkasim.calibrate.parameters import PARAMETERS, WAS, overrides
from kafkasim.calibrate.predict import parameter_draws
from kafkasim.calibrate.preset import HEADER, PresetError, load_preset
from kafkasim.scenario import load_scenario

COMMITTED = Path(__file__).resolve().parents[2] / "presets" / "this-machine.yaml"
NAMES = [p.name for p in PARAMETERS]


def _written_before(tmp_path: Path, name: str, *, keep_covariance: bool = False) -> Path:
    """The committed preset as a kafkasim without parameter `name` would have written it."""
    data = yaml.safe_load(COMMITTED.read_text(encoding="utf-8"))
    stored = list(data["parameters"])
    assert name in stored, f"the committed preset has no {name}: refit it (docs/make_calibration.py)"
    i = stored.index(name)
    del data["parameters"][name]
    if not keep_covariance:
        data["covariance"] = [[x for j, x in enumerate(row) if j != i]
                              for k, row in enumerate(data["covariance"]) if k != i]
    older = tmp_path / "older.yaml"
    older.write_text(HEADER + "\n" + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return older


def _spread(line: str) -> float:
    """A `--set` line's lognormal p99 over its median."""
    value = yaml.safe_load(line.split("=", 1)[1])
    return float(value["p99"].removesuffix("ms")) / float(value["median"].removesuffix("ms"))


@pytest.mark.parametrize("name", sorted(WAS))
def test_a_preset_from_before_a_parameter_loads_as_it_was_fitted(tmp_path: Path, name: str) -> None:
    preset = load_preset(_written_before(tmp_path, name))
    was = WAS[name]
    assert preset.values[name] == preset.values[was]
    new, old = NAMES.index(name), NAMES.index(was)
    assert preset.covariance[new] == preset.covariance[old]
    assert [row[new] for row in preset.covariance] == [row[old] for row in preset.covariance]
    for draw in parameter_draws(preset, 4, seed=7):
        assert math.isclose(draw[name], draw[was], rel_tol=1e-6)  # eigh of a singular covariance


def test_its_scenario_lines_are_the_old_models(tmp_path: Path) -> None:
    """Without handler_wakeup_spread the handlers get the network threads' wake-up; without network_spread a
    network thread's send and its work after it spread as a handler's request cost."""
    base = load_scenario("scenarios/calibration_base.yaml")
    lines = overrides(load_preset(_written_before(tmp_path, "handler_wakeup_spread")).values, base)
    wakeup = next(line for line in lines if line.startswith("broker.costs.wakeup="))
    assert f"broker.costs.handler_wakeup={wakeup.split('=', 1)[1]}" in lines
    lines = overrides(load_preset(_written_before(tmp_path, "network_spread")).values, base)
    by_key = {line.split("=", 1)[0]: line for line in lines}
    request = _spread(by_key["broker.costs.request"])
    for key in ("broker.costs.network_send", "broker.costs.network_complete"):
        assert math.isclose(_spread(by_key[key]), request, rel_tol=1e-9)


@pytest.mark.parametrize("name", sorted(WAS))
def test_its_covariance_is_read_in_the_order_of_the_kafkasim_that_wrote_it(tmp_path: Path, name: str) -> None:
    n = len(PARAMETERS) - 1
    with pytest.raises(PresetError, match=rf"covariance: must be {n} rows of {n} numbers"):
        load_preset(_written_before(tmp_path, name, keep_covariance=True))
