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
    'acks_mix_link_fault': (3822, 1383, '7f45fa9b12a82009a91b115e0c33df5c3e8830919b5d0c0992e30979172eadbc', '0a227351a06bacb314e24d23fa93e16c1f126fa8c044d0a79168a085a0f3ceef', 'cacc22cf83f8cd644bff16de187803ef96ef9cce52875dddb22ff7134f2acb6b', '27e113cb9521510da5159a6e0fa5aacf34321dde6a6791c74a407a5361abf7f2'),
    'bench_like': (1972, 494, 'ec9f1804dcd1b6b91771f35e20c393eadb365a8b8575bdf285860f667e2acb59', 'b961e6c8be1cf5ccda13a73c57529ffb1c73724c8c9a7ae34aeb463c55af6e38', '488b3ea6f9d0c669b47be092041b482ef0c9d6002b61fcea5e333d7c14f4d8bd', 'f82c3817f6d9daf5296634faffdc03a0ba2926e1881bc166fb486144ad7fc2fb'),
    'crash_and_pause': (3944, 1439, '9334b62310f5bd9a5e647f8a1f82b59417fdc06b34cc81117e10fdb7d3f8b000', '2a3ed4224a95cac7291d73d5cb878e228ea8742131a5a32fb05b84866d3348b5', '10caec6b5e7937f0908a401b75d72285ee74f5c728b200ebffd6f1857608ec3c', '915f6818235e41fb43e36e17ffdb344e8f0d0466958c30407d9f291b015e442e'),
    'small_segments': (735, 553, 'e218ab6b368bdb105c3fa4510c358f38188212abcdb303f02501a47ebf016c36', '996501c31c20b9eec6508e19e2efda4aadbe1e484e12f4d5a034d4c7d92d13e8', '844d3b8b7a610b70b32335867dff56b9476131f174eb180e245d1b19f0192c64', '9934f2591eb932787c704b39c2fc75668c0faa11bbfe0352579ea4b25830dd41'),
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
