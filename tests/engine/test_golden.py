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
            {"type": "connection_reset", "target": "one", "at": "1200ms"},
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
    'acks_mix_link_fault': (3834, 1383, '1c4095a98b024e375153cb8158edac154246206021364142eb42fc3037d8f442', '724c56aac8b03fb8a5d90d29b2ccb084eb7649a3f111f5db39ebd115410fe6c4', 'd19b5b73e5db6c8a0d07140fa84349d1c45a95a2d86ebb40b436933fdf85644d', '03b34bc157afc06d69d19252d053f01385e36e9159ea1b2a267a235ffaeccfef'),
    'bench_like': (1972, 494, '3ecc4de4a6376f23f1c9af7791bb16497c078d975f69956a765b2f61dd824906', '60f9848281a607b83410c3d2b7c7d0b1bbc5e795836843cc36c2ff8e9b1bf144', 'f73bea8fa461edef8a286bf4621175a44f19dc6096763239e6414d3433ec3df4', 'f8433873f41d0b59a05616d1e91bbd434a4f5d28475ab4022a439e1054e2f75c'),
    'crash_and_pause': (3946, 1441, 'c2d5b45cab37bd5c823b4f59deeef57ef746304caa999bc16b817f3d33fd3079', '73e622fbe25b5dc562e30308ebcce5b12167ec7f1388c9b6c9884d2d81c0f0ab', 'a46067d46f0421f83c955e42bb8bbb2115eac463b0a760296f69a189bb8ce8d3', 'cfb7de837679e797dc05f0b7b79857e52ff45cc39dea15d58b365b000e472c5e'),
    'small_segments': (735, 553, '375895b543240e47a5d21496cfd8e7c70b56d2da1802d40d415fef6e1141615f', 'ab683e0dd02897fa7c6427a4558299e99d5ff997ac428dfb0349d121c4825907', 'a3a28222117d9f70cfbcb7dd901548fa92f0bcdf4830edd882c2af16d9f059b8', 'b387c2644ca23cd7b31f067be586922027ed833052efb5e471647acfd78f97ce'),
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
