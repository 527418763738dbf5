"""The leader's collector measured from a real run's GC log and request log (kafkasim.calibrate.collector), held by
a preset and given to every broker of a run with it: a pause after so many of the broker's requests; and the
followers', a pause after so many fetch responses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from kafkasim.calibrate.collector import Collector, FollowerCollector, measure
from kafkasim.calibrate.parameters import PARAMETERS
from kafkasim.calibrate.predict import predict
from kafkasim.calibrate.preset import Preset, PresetError, applied, load_preset, with_collector
from kafkasim.record.result import RunResult
from kafkasim.scenario import load_scenario
from tests.calibrate.test_predict import PRESET, SCENARIO

T0 = 1_700_000_000_000.0


def _real_run(directory: Path, pauses: dict[int, list[tuple[float, float]]], requests: dict[int, list[float]],
              *, warmup: float = 1000.0, engine: str = "kafka",
              fetches: dict[str, list[float]] | None = None) -> tuple[Path, RunResult]:
    """A real run's result directory as kafkasim keeps it: the request log's Produce and Fetch requests (`requests`:
    each broker's start times; `fetches`: each replica fetcher's fetches from broker 0, by client name), and each
    broker's GC log (`pauses`: (start ms, length ms) in the run's time)."""
    rows = [{"broker": b, "api": "Produce", "client": "p1", "start_ms": t} for b, times in requests.items()
            for t in times]
    rows += [{"broker": 0, "api": "FetchFollower", "client": client, "start_ms": t}
             for client, times in (fetches or {}).items() for t in times]
    for broker, found in pauses.items():
        logs = directory / "kafka" / f"broker-{broker}"
        logs.mkdir(parents=True)
        (logs / "gc-101.log").write_text("".join(
            f"[{T0 + start + ms:.0f}ms] GC({i}) Pause Young (Allocation Failure) 20M->5M(61M) {ms:.3f}ms\n"
            f"[{T0 + start + ms:.0f}ms] GC({i}) not a pause line\n" for i, (start, ms) in enumerate(found)))
    result = RunResult(pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(),
                       {"warmup_ms": warmup, "simulated_duration_ms": 10_000.0},
                       run_info={"engine": engine, "epoch_ms_at_0": T0})
    return directory, result


def test_the_busiest_broker_s_pauses_after_the_warm_up_per_its_requests(tmp_path: Path) -> None:
    leader = [(500.0, 50.0)] + [(1000.0 + 1000.0 * i, 10.0 + i) for i in range(8)]  # the first before the warm-up's end
    run = _real_run(tmp_path / "a", {0: leader, 1: [(2000.0, 99.0)] * 3},
                    {0: [500.0] * 50 + [1000.0 + i for i in range(8000)], 1: [2000.0] * 100})
    got = measure([run]).collector
    assert got is not None
    assert (got.every_requests, got.pauses, got.requests, got.runs) == (1000, 8, 8000, 1)
    assert got.pause_median_ms == pytest.approx(13.5)
    assert 16.0 < got.pause_p99_ms <= 17.0
    # Two runs pool their requests and pauses.
    other = _real_run(tmp_path / "b", {2: [(3000.0, 20.0)] * 4}, {2: [3000.0] * 1000})
    both = measure([run, other]).collector
    assert both is not None and (both.every_requests, both.pauses, both.runs) == (750, 12, 2)


def test_nothing_is_measured_without_gc_logs_or_with_too_few_pauses(tmp_path: Path) -> None:
    simulated = _real_run(tmp_path / "sim", {}, {0: [2000.0] * 10}, engine="kafkasim")
    nothing = measure([simulated])
    assert nothing.collector is None and "no run kept its brokers' GC logs" in nothing.said
    few = measure([_real_run(tmp_path / "few", {0: [(2000.0, 10.0)] * 4}, {0: [2000.0] * 100})])
    assert few.collector is None and "paused 4 times" in few.said


def test_the_followers_pauses_per_fetch_response_their_fetchers_received(tmp_path: Path) -> None:
    # Broker 0 leads; brokers 1 and 2 follow it (the names a run without and with a cluster gives their fetchers);
    # broker 3 follows but leads too (it reads requests of its own): its pauses are not a follower's alone.
    pauses = {0: [(2000.0 + 100.0 * i, 10.0) for i in range(6)], 1: [(1500.0, 3.0), (5000.0, 4.0), (6000.0, 4.0)],
              2: [(3000.0, 5.0), (4000.0, 6.0), (500.0, 80.0)], 3: [(2000.0, 50.0)] * 9}
    fetches = {"follower-1": [1000.0 + i for i in range(2000)],
               "broker-2/ReplicaFetcherThread-0-0": [1000.0 + i for i in range(2000)],
               "broker-3/ReplicaFetcherThread-0-0": [1000.0] * 500}
    run = _real_run(tmp_path / "a", pauses, {0: [2000.0] * 1000, 3: [2000.0] * 10}, fetches=fetches)
    got = measure([run])
    assert got.collector is not None and got.collector.every_requests == round(5500 / 6)
    # The warm-up's pause (broker 2's at 500 ms) is left out: 5 pauses over 4,000 responses.
    assert got.collector.follower == FollowerCollector(every_fetches=800, pause_median_ms=4.0, pause_p99_ms=5.96,
                                                       pauses=5, fetches=4000)
    assert "a pause every 800 fetch responses" in got.said
    stalls = load_scenario(SCENARIO + f"broker: {{stalls: {got.collector.stalls()}}}\n").broker.stalls
    assert stalls is not None and stalls.counts == {"every_requests": 917, "every_fetches": 800}
    assert stalls.fetch_pause is not None and stalls.fetch_pause.median == 4.0  # type: ignore[union-attr]
    # Too few of the followers' pauses: the leader's collector alone.
    pauses[1] = pauses[1][:1]
    alone = measure([_real_run(tmp_path / "b", pauses, {0: [2000.0] * 1000, 3: [2000.0] * 10}, fetches=fetches)])
    assert alone.collector is not None and alone.collector.follower is None
    assert "the followers paused 3 times, too few to measure" in alone.said


COLLECTOR = Collector(every_requests=40, pause_median_ms=12.0, pause_p99_ms=25.0, pauses=30, requests=1200, runs=2)
FOLLOWING = Collector(every_requests=40, pause_median_ms=12.0, pause_p99_ms=25.0, pauses=30, requests=1200, runs=2,
                      follower=FollowerCollector(every_fetches=70, pause_median_ms=4.0, pause_p99_ms=9.0, pauses=8,
                                                 fetches=560))


def test_a_preset_s_collector_stalls_every_broker_unless_the_scenario_sets_its_own() -> None:
    scenario = load_scenario(SCENARIO)
    run, kept = applied(scenario, PRESET.values, COLLECTOR)
    assert kept == [] and run.broker.stalls.every_requests == 40
    assert run.broker.stalls.pause is not None and run.broker.stalls.pause.median == 12.0  # type: ignore[union-attr]
    own = load_scenario(SCENARIO + "broker: {stalls: {preset: jvm-g1-young}}\n")
    run, kept = applied(own, PRESET.values, COLLECTOR)
    assert kept == ["broker.stalls"] and run.broker.stalls.every_requests is None
    assert with_collector(own, COLLECTOR) is own and with_collector(scenario, None) is scenario
    assert with_collector(scenario, COLLECTOR).broker.stalls.every_requests == 40
    following = with_collector(scenario, FOLLOWING).broker.stalls
    assert following is not None and following.counts == {"every_requests": 40, "every_fetches": 70}
    # A prediction's runs, the draws' too, stall the brokers as the collector says.
    plain = predict(scenario, PRESET, draws=1)
    collecting = predict(scenario, Preset("test", PRESET.values, PRESET.covariance, {}, COLLECTOR), draws=1)
    assert collecting.value != plain.value


def _preset_file(tmp_path: Path, collector: object) -> Path:
    """A preset file as `kafkasim calibrate` writes it, with `collector` as its collector block."""
    data = {"kind": "kafkasim fitted preset",
            "parameters": {p.name: {"value": p.start} for p in PARAMETERS}, "collector": collector}
    path = tmp_path / "preset.yaml"
    path.write_text("# A kafkasim fitted preset, written by `kafkasim calibrate`.\n" + yaml.safe_dump(data))
    return path


def test_a_preset_file_keeps_its_collector_and_a_bad_block_is_named(tmp_path: Path) -> None:
    assert load_preset(_preset_file(tmp_path, COLLECTOR.as_json())).collector == COLLECTOR
    assert load_preset(_preset_file(tmp_path, FOLLOWING.as_json())).collector == FOLLOWING
    bad_follower = FOLLOWING.as_json() | {"follower": FOLLOWING.follower.as_json() | {"every_fetches": 0}}  # type: ignore[union-attr]
    with pytest.raises(PresetError, match=r"collector\.follower\.every_fetches: 0 \(allowed: a positive integer\)"):
        load_preset(_preset_file(tmp_path, bad_follower))
    with pytest.raises(PresetError, match=r"collector\.follower: not a mapping"):
        load_preset(_preset_file(tmp_path, FOLLOWING.as_json() | {"follower": 3}))
    with pytest.raises(PresetError, match=r"collector\.every_requests: 0 \(allowed: a positive integer\)"):
        load_preset(_preset_file(tmp_path, COLLECTOR.as_json() | {"every_requests": 0}))
    with pytest.raises(PresetError, match=r"collector\.pause_p99_ms: 5 \(allowed: above pause_median_ms, 12\)"):
        load_preset(_preset_file(tmp_path, COLLECTOR.as_json() | {"pause_p99_ms": 5.0}))
    with pytest.raises(PresetError, match=r"collector: not a mapping"):
        load_preset(_preset_file(tmp_path, [1, 2]))
    data = yaml.safe_load(_preset_file(tmp_path, None).read_text())
    data.pop("collector")
    (tmp_path / "old.yaml").write_text("# A kafkasim fitted preset, written by `kafkasim calibrate`.\n"
                                       + yaml.safe_dump(data))
    assert load_preset(tmp_path / "old.yaml").collector is None
