"""Golden runs: fixed scenarios and seeds whose requests/records/timeseries tables must not change.

These pin the engine's behaviour while its hot path is optimised (benchmarks/README.md, "Engine"): a
speed-up must give bit-identical tables. The scenarios are written inline (not read from scenarios/*.yaml,
which are edited for teaching) and cover the paths a performance change could disturb: the benchmark's
load shortened (RF 3, acks=all, Poisson, one consumer, linger), an acks mix with two partitions and a
link fault, follower crash + restart (truncation, DelayedFetch.tryComplete's case H) with a pause, and tiny
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
    'acks_mix_link_fault': (3803, 1398, '70ec86c5ac46cda631cac1204a9413a8e5d66553a323e897e6be79a41bb6306d', '57c71445e618e04d25fd393b897ccda67f28d229f1133139583621c0d65697d8', 'ace05c1c00c777777d8c1f34b8204469e6c60009a7baf2a3079ad85e8c4c9fe6', '9217f651c114805c449cbda8943ddfb4d9f75884e00755652b0eb070f9c199b4'),
    'bench_like': (1972, 494, '3eef6511a232e39885cdfa271e6ac286d6304d935244350f1892865e026fdc54', 'f2f886cae9d5379db5dc51c2ceb43af1728147b74b770595692e15d3921e9c11', '8af4f8f09ed3acb6c3760a5f6846cd7baf3eb9da81a94007ee52b8f7500c2e42', 'd1f2956742fbec7e9e5b428a7452f9d05e80ce784f1df210e97cdb5e56488d21'),
    'crash_and_pause': (5295, 1617, '49a7747c54abc6a8d3bd18781107a3b40ab825a31d11fa0a374c4b58bef5ddc5', '2cd4513ba4d85405b9a76bd207d5000a7eb8662dd1b36ac49c87cb2b7fb74eda', '4fc47b80889f4d435638d03cde85fd6e09ee6c88028e80f3c60074e4e43f6be7', 'fa25664274f2f10fee80c08a415a30a2484ce887a348cde5010c63651fe50af5'),
    'small_segments': (735, 553, 'ad5bb4987facc9fab87025ae580c670332c12d1f114678ed81405861bc6f7ab9', '7a9bf11812b314acfec2ade83f1fe0fa6773b5c0f28e15a5557e646811e4163c', '7b163fecf30d5659a5142bf029e24a709eaa5cebdd37baf6f7dfdbe62f8b5f6d', '0ba91fe1843bf797a0d12e18d30216b1e143992e115b664424ae5db4082c6af4'),
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


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden_tables_unchanged(name: str) -> None:
    assert _digest(name) == GOLDEN[name]


if __name__ == "__main__":
    for scenario_name in sorted(SCENARIOS):
        print(f"    {scenario_name!r}: {_digest(scenario_name)!r},")
