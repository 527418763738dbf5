"""`broker.purgatory: delay_queue` (Kafka 0.8's purgatory) simulates the same broker as the timing wheel:
the same requests, records and gauges, except what the timer holds and how often its reaper wakes."""

from __future__ import annotations

import pandas as pd

from kafkasim.run import run_scenario
from kafkasim.scenario import with_overrides

from .support import consumer, producer, scenario

TIMER_GAUGES = ("NumDelayedOperations", "PurgatorySize")


def test_a_run_on_the_delay_queue_has_the_same_requests_but_holds_more_entries() -> None:
    base = scenario(
        seed=5,
        duration="2s",
        warmup="200ms",
        network={"default_link": {"latency": {"type": "lognormal", "median": "0.5ms", "p99": "3ms"}}},
        producers=[
            producer("all", rate="400/s", arrival="poisson", **{"linger.ms": 1}),
            producer("one", acks=1, rate="100/s", arrival="poisson"),
        ],
        consumers=[consumer("eager"), consumer("batched", **{"fetch.min.bytes": 4096, "fetch.max.wait.ms": 50})],
        faults=[{"type": "pause", "target": "follower-2", "at": "800ms", "duration": "300ms"}],
    )
    wheel = run_scenario(base)
    queue = run_scenario(with_overrides(base, ["broker.purgatory=delay_queue"]))

    pd.testing.assert_frame_equal(wheel.requests, queue.requests)
    pd.testing.assert_frame_equal(wheel.records, queue.records)
    assert len(wheel.requests) > 1_000
    same_gauges = ~wheel.timeseries["metric"].isin(TIMER_GAUGES)
    pd.testing.assert_frame_equal(
        wheel.timeseries[same_gauges].reset_index(drop=True),
        queue.timeseries[~queue.timeseries["metric"].isin(TIMER_GAUGES)].reset_index(drop=True),
    )

    def held(result: pd.DataFrame, purgatory: str) -> float:
        ts = result.timeseries
        return float(ts[(ts["metric"] == "NumDelayedOperations") & (ts["entity"] == f"broker-0/{purgatory}")]["value"].max())

    # acks=all produces complete within milliseconds but wait 30 s (request.timeout.ms) in the heap:
    # the whole run's produces are still held at the end. The wheel holds the few pending ones.
    assert held(wheel, "Produce") <= 5 and held(queue, "Produce") > 300
    assert held(wheel, "Fetch") <= 10 and held(queue, "Fetch") > 50
    # The reaper wakes for the heap's head, mostly operations that completed long ago.
    assert queue.summary["counters"]["reaper_passes"] > 5 * wheel.summary["counters"]["reaper_passes"]
    assert wheel.summary["counters"]["produce_expires"] == queue.summary["counters"]["produce_expires"]
