"""``machine_cold_start`` (kafkasim.sim.cold_start): the work a broker's request handlers, a network thread or a
replica fetcher starts after being idle costs ``cost * (1 - exp(-idle / ramp))`` more, on a core like the rest of
its work, so the cores the threads use count it. Absent (the default), nothing changes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from kafkasim.calibrate.after_idle import handler_idle, produces_after_idle
from kafkasim.run import run_scenario
from kafkasim.run.engine import Engine
from kafkasim.scenario import ScenarioError, load_scenario, with_overrides

from .support import after_warmup, producer, scenario

COLD = "machine_cold_start={cost: 0.3ms, ramp: 1ms}"


def _scenario(*sets: str, rate: str = "20/s") -> Any:
    return with_overrides(scenario(duration="3s", producers=[producer("p1", acks=1, rate=rate)]), list(sets))


def test_a_produce_taken_long_after_the_handlers_last_work_costs_the_whole_extra() -> None:
    """Produces 50 ms apart find the handlers idle for most of that (the followers' fetches come right after each
    produce): with a ramp of 1 ms each pays the whole 0.3 ms; with a ramp of 1 s, 1 - e^-(idle/1000) of it."""
    warm = after_warmup(run_scenario(_scenario()), "Produce")
    cold = run_scenario(_scenario(COLD))
    produced = after_warmup(cold, "Produce")
    assert np.median(produced["LocalTimeMs"]) - np.median(warm["LocalTimeMs"]) == pytest.approx(0.3, abs=0.005)
    idle = float(np.median(handler_idle(cold.requests)[produced.index]))
    assert idle > 40.0
    slow = after_warmup(run_scenario(_scenario("machine_cold_start={cost: 0.3ms, ramp: 1s}")), "Produce")
    assert np.median(slow["LocalTimeMs"]) - np.median(warm["LocalTimeMs"]) == pytest.approx(
        0.3 * (1 - math.exp(-idle / 1000.0)), abs=0.005)


def test_the_network_threads_and_the_fetchers_pay_it_as_cpu_work() -> None:
    """Every broker thread pays it, and the cores the run says its threads used count it: the followers' fetchers
    one extra per append (each fetch brings one batch, 50 ms after the last)."""
    meters = {}
    appends = {}
    for name, sets in (("warm", ()), ("cold", (COLD,))):
        engine = Engine(_scenario(*sets))
        result = engine.run()
        meters[name] = {b.broker_id: b.cpu_meter.totals() for b in engine.components.brokers}
        fetches = result.requests[(result.requests["api"] == "FetchFollower")
                                  & (result.requests["response_bytes"] > 0)]
        appends[name] = fetches.groupby("client").size()
    for broker in (1, 2):
        extra = meters["cold"][broker][2] - meters["warm"][broker][2]
        assert extra == pytest.approx(0.3 * appends["cold"][f"follower-{broker}"], rel=0.05)
    handlers, network = (meters["cold"][0][i] - meters["warm"][0][i] for i in (0, 1))
    assert handlers > 0.3 * 40 and network > 0.3 * 40  # at least each produce's (60 over the 3 s)


def test_the_request_log_reads_the_extra_back() -> None:
    """kafkasim.calibrate.after_idle: produces taken 3 ms or more after the handlers' last work against those taken
    within 0.6 ms: at 400/s arriving at random both kinds come, and without a cold start the two take the same."""
    at_random = ["producers[0].arrival=poisson"]
    none = produces_after_idle(run_scenario(_scenario(*at_random, rate="400/s")).requests)
    cold = produces_after_idle(run_scenario(_scenario(*at_random, "machine_cold_start={cost: 0.3ms, ramp: 2ms}",
                                                      rate="400/s")).requests)
    assert len(none) and len(cold)
    assert abs(float(np.median(none))) < 0.02
    # 3 ms or more idle: at least 1 - e^-1.5 of the cost, at most all of it, less the little the warm ones paid.
    assert 0.3 * (1 - math.exp(-1.5)) - 0.05 < float(np.median(cold)) < 0.3


@pytest.mark.parametrize(("block", "path"), [("{cost: 0.2ms}", "machine_cold_start.ramp"),
                                             ("{cost: -1ms, ramp: 4ms}", "machine_cold_start.cost"),
                                             ("{cost: 0.2ms, ramp: 0ms}", "machine_cold_start.ramp"),
                                             ("{cost: 0.2ms, ramp: 4ms, grace: -1ms}", "machine_cold_start.grace"),
                                             ("{cost: 0.2ms, ramp: 4ms, slope: 2}", "machine_cold_start.slope")])
def test_a_bad_cold_start_is_reported_with_its_path(block: str, path: str) -> None:
    text = ("name: x\ndescription: x\nduration: 1s\ntopics: [{name: t}]\nproducers: [{name: p, topic: t, rate: 10/s}]\n"
            f"machine_cold_start: {block}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(text)
    problems = info.value.problems
    assert problems and problems[0].path.startswith(path) and problems[0].line == 6, problems
