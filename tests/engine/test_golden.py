"""Golden runs: fixed scenarios and seeds whose requests/records/timeseries tables must not change.

These pin the engine's behaviour while its hot path is optimised (benchmarks/README.md, "Engine"): a
speed-up must give bit-identical tables. The scenarios are written inline (not read from scenarios/*.yaml,
which are edited for teaching) and cover the paths a performance change could disturb: the benchmark's
load shortened (RF 3, acks=all, Poisson, one consumer, linger), an acks mix with two partitions and a
link fault, follower crash + restart (fetching again from its LEO with its last epoch, DelayedFetch.tryComplete's case H) with a pause, and tiny
segments (rolls waking parked fetches, DelayedFetch.tryComplete's case F).

If a change legitimately alters results, regenerate with ``python -m tests.engine.test_golden`` and say
why in the commit message.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from kafkasim.run import run_scenario
from kafkasim.scenario import Scenario

from .support import consumer, producer, scenario
from .test_determinism import table_hash


def _bench_like() -> Scenario:
    return scenario(
        seed=42,
        duration="1500ms",
        warmup="200ms",
        sample_interval="100ms",
        network={"default_link": {"latency": {"type": "lognormal", "median": "0.3ms", "p99": "2ms"}}},
        producers=[producer("p1", rate="5000/s", arrival="poisson", record_size="1KiB", **{"linger.ms": 5})],
        consumers=[consumer("c1")],
    )


def _acks_mix_link_fault() -> Scenario:
    return scenario(
        seed=7,
        duration="1500ms",
        network={"default_link": {"latency": {"type": "lognormal", "median": "0.5ms", "p99": "3ms"}}},
        producers=[
            producer("all", rate="600/s", arrival="poisson", record_size={"type": "uniform", "low": "100B",
                     "high": "2KiB"}, **{"linger.ms": 2}),
            producer("one", acks=1, rate="400/s", arrival="poisson", partitioner="random"),
            producer("zero", acks=0, rate="300/s", arrival="poisson"),
        ],
        consumers=[consumer("c1"), consumer("c2", **{"fetch.min.bytes": 4096})],
        topic={"partitions": 2},
        faults=[
            {"type": "link_delay", "target": "follower-1", "at": "500ms", "duration": "300ms",
             "extra": {"type": "exponential", "mean": "3ms"}},
            {"type": "link_drop", "target": "c2", "at": "900ms", "duration": "100ms"},
        ],
    )


def _crash_and_pause() -> Scenario:
    return scenario(
        seed=3,
        duration="2500ms",
        network={"default_link": {"latency": {"type": "lognormal", "median": "0.4ms", "p99": "2ms"}}},
        producers=[
            producer("all", rate="800/s", arrival="poisson", record_size="512B",
                     **{"linger.ms": 1, "request.timeout.ms": 400}),
            producer("one", acks=1, rate="300/s", arrival="poisson"),
        ],
        consumers=[consumer("c1")],
        # A short lag time: the crashed follower leaves the ISR and rejoins after its restart
        # (Partition.maybeShrinkIsr / maybeExpandIsr).
        broker={"replica.lag.time.max.ms": 300, "replica.fetch.wait.max.ms": 100},
        faults=[
            {"type": "crash", "target": "follower-2", "at": "600ms", "restart_after": "400ms"},
            {"type": "pause", "target": "follower-1", "at": "1500ms", "duration": "500ms"},
            {"type": "slow_disk", "target": "follower-2", "at": "2100ms", "duration": "200ms", "factor": 20},
        ],
    )


def _small_segments() -> Scenario:
    return scenario(
        seed=13,
        duration="2000ms",
        topic={"segment.bytes": "16KiB"},
        broker={"replica.fetch.min.bytes": 65536, "replica.fetch.wait.max.ms": 100},
        producers=[producer("one", acks=1, rate="1500/s", arrival="poisson", record_size="300B",
                            **{"linger.ms": 3})],
        consumers=[consumer("c1", **{"fetch.min.bytes": 32768, "fetch.max.wait.ms": 200})],
    )


SCENARIOS = {
    "bench_like": _bench_like,
    "acks_mix_link_fault": _acks_mix_link_fault,
    "crash_and_pause": _crash_and_pause,
    "small_segments": _small_segments,
}

# name -> (requests rows, records rows, sha256 of requests, records, timeseries, summary)
GOLDEN: dict[str, tuple[int, int, str, str, str, str]] = {
    'acks_mix_link_fault': (3803, 1398, '7143b848508e737e306ccac461e1963de48ceeec54e9fb21931265aab18c0879', '4b2bd7fa0166845d816a46bb5001f1d8058a666e3c495eb60bfd0e506f8d1c8f', '15a8f2d2a5503271c521b62ff65f54a372b193e599659aedbc350d9e360d7949', '7a34d663068dcb38cfcd4d8753b79c983223f353a49d16a589a0c251f55f94fe'),
    'bench_like': (1972, 494, '6e4af74e8392ef8457852e4b62c7bb1d5b74dad3a583463bea59c21768553cfa', '6b69f0436fa01e67791bf369879496ff12eec6310961161e148add67135ec7ea', '66bfa6efbf19b42d7611551898a9da456ff95209a9c8c6a17e547020ff953a8e', '376ea7a96b330166edae2142c1eba96c1546c47f733899b417b518f34682b880'),
    'crash_and_pause': (5268, 1605, '0cf411d668858799cbfe90ba5e598a2f269cc607f138b6d18816cc9db77e76a1', 'ab337bc3f3d2cc26da6a985ee01847b808b62224899356118034ce64694871f3', '63235baf15f5fee2e3b8814cce13a7265214a7ce5b1e0f55176379b32ccaa8f0', '545b5d7205c7898c55db34130aa1fde46583278fa757cc7da9d5962de561301a'),
    'small_segments': (735, 553, 'f4e6059e199ab7140b3d0422abc6af0421b616f4b87b561612e92b158905c254', '6947e521cca18de564d2a11dcc2ec8af2d5b27d928cc3be2c3cdcd7b826bc083', 'f96c56bdb5b716c13b95e33f5e903a19f8a8a6c2431777447b02984de3dea4e0', 'a42e5ec2e7930ff575e876082cfaa93b371e5283f8cb503b8004856e3d8e2ae3'),
}


def _digest(name: str) -> tuple[int, int, str, str, str, str]:
    result = run_scenario(SCENARIOS[name]())
    # Wall time is not in the summary: it is in result.run_info, written to run-info.json.
    summary = result.summary
    return (
        len(result.requests),
        len(result.records),
        table_hash(result.requests),
        table_hash(result.records),
        table_hash(result.timeseries),
        hashlib.sha256(json.dumps(summary, sort_keys=True, default=str).encode()).hexdigest(),
    )


@pytest.mark.both_builds
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden_tables_unchanged(name: str) -> None:
    assert _digest(name) == GOLDEN[name]


if __name__ == "__main__":
    for scenario_name in sorted(SCENARIOS):
        print(f"    {scenario_name!r}: {_digest(scenario_name)!r},")
