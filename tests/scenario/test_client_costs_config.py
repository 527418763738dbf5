"""The consumers' `costs:` block: absent by default, distributions, errors with their path."""

from __future__ import annotations

import pytest

from kafkasim.scenario import ScenarioError, load_scenario
from kafkasim.scenario.distributions import DurationConstant, DurationExponential

BASE = """\
name: s
description: client costs
duration: 2s
topics:
  - name: t
producers:
  - {name: p, topic: t, rate: 10/s}
consumers:
  - name: c
    topic: t
"""


def test_costs_are_absent_by_default() -> None:
    assert load_scenario(BASE).consumers[0].costs is None


def test_costs_take_durations_and_distributions() -> None:
    costs = load_scenario(BASE + "    costs: {per_poll: {type: exponential, mean: 1ms}, per_record: 5us}\n").consumers[0].costs
    assert costs is not None
    assert costs.per_poll == DurationExponential(mean=1.0)
    assert costs.per_record == DurationConstant(value=0.005)
    left_out = load_scenario(BASE + "    costs: {per_record: 1ms}\n").consumers[0].costs
    assert left_out is not None and left_out.per_poll == DurationConstant(value=0.0)


@pytest.mark.parametrize(("block", "path"), [
    ("{per_record: -1ms}", "consumers[0].costs.per_record"),
    ("{per_batch: 1ms}", "consumers[0].costs.per_batch"),
    ("{per_poll: lots}", "consumers[0].costs.per_poll"),
])
def test_bad_costs_are_reported_with_their_path(block: str, path: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(BASE + f"    costs: {block}\n")
    problems = info.value.problems
    assert len(problems) == 1, problems
    assert problems[0].path.startswith(path) and problems[0].line == 11, problems


def test_producer_costs_take_durations_and_are_absent_by_default() -> None:
    assert load_scenario(BASE).producers[0].costs is None
    text = BASE.replace("rate: 10/s}", "rate: 10/s, costs: {per_request: 50us}}")
    costs = load_scenario(text).producers[0].costs
    assert costs is not None and costs.per_request == DurationConstant(value=0.05)
    assert costs.per_batch == DurationConstant(value=0.0)
    with pytest.raises(ScenarioError) as info:
        load_scenario(BASE.replace("rate: 10/s}", "rate: 10/s, costs: {per_record: 1ms}}"))
    assert info.value.problems[0].path == "producers[0].costs.per_record"
