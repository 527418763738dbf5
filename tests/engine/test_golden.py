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
'acks_mix_link_fault': (3822, 1383, '69479f09542292e56b75d244815c0f659c8d191ef06db755f05642655dfd0097', 'a6ae3125619d340d75ac9b32030f2728f51a662d3ba6f44cc5e6ce5e986504c0', 'e7cf13377ed94d2da72dbccc787e3e5c2b9e6807aa73b7c7a27b08fa7a5ead85', 'aee9fc7f7be40d1c788368282f67e03838901da8ecad8dc0f4c5f7896c243d9a'),
    'bench_like': (1972, 494, 'a9f1b7b864be517e0e74a2f356ad1a6039cd8657303f4967e6f22fa56a85067e', '44d086f679e8c0b7ec6916530c958006a47ede692995f345d005af4ce42698c5', '488b3ea6f9d0c669b47be092041b482ef0c9d6002b61fcea5e333d7c14f4d8bd', '72ca0b10f12af506eaf1c078399d47130dbd8f1957ad47ba4eb4b709ecf3410c'),
    'crash_and_pause': (3973, 1443, '19adef620953a09a4f2da016973f2adf204eda7f9237aa812942aee8f5e7fcf9', 'bee58bd051178a2c75663f71c15710cf398ae664070610e870e958eace57c4e6', '27200038fc21f7103a706065807c3a75dfeb801619c9bfde662c0e4a1891bb97', '468ab7c13e73582249dc426ad735b9b384aff4ff5cf8147275a30aac71d9743f'),
    'small_segments': (735, 553, '491764bb760c1439a77d5291ae44439a1a5b533c4a317d150261b71c760f1835', 'b5f8a8021c1292713f21241aa48c9c4d5ca4bb0b57457a97e44a1d4ff832ed32', '844d3b8b7a610b70b32335867dff56b9476131f174eb180e245d1b19f0192c64', 'b30e0bf5f0046a60fa39cb26c577b1c54cceeeaa04848d9a62d429dd081cd744'),
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
