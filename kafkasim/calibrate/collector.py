"""The leader's garbage collector, measured rather than fitted: how many requests the busiest broker of a real run
reads between two of its collector's pauses, and how long a pause lasts, from the broker's own GC log
(kafkasim.real.gc_log) and its request log.

A broker's young collections come when the allocations of the requests it handles have filled its young
generation, so they follow its load, not the clock: on this project's machine the leader paused once per 430-650
requests it read in each of four configurations, its pauses per second from 0.65 (acks=all, 200 records/s) to
2.35 (6 partitions) (docs/calibration.md). A preset that holds the measurement gives every broker
`broker.stalls: {every_requests: N, pause: lognormal}` (kafkasim.scenario.stalls): each broker stalls after its
own requests, so a configuration with more requests collects more often, as Kafka's does, where a fitted stall
rate would be the fitted configuration's.

Simplified: the count is of the Produce and Fetch requests the run's request log keeps (kafkasim.real.assemble),
where a simulated broker counts every request its channel takes (a few Metadata requests at a client's start
besides); a follower, which reads no requests in kafkasim (its replica fetcher sends them), never collects, where
Kafka's followers paused about a seventh as often as the leader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a preset is read (kafkasim.calibrate.preset) without pandas or the result's modules
    from kafkasim.record.result import RunResult

MIN_PAUSES = 5
"""The fewest pauses of the leaders, over all the runs, that the measurement takes a median and a p99 from."""


@dataclass(frozen=True)
class Collector:
    every_requests: int
    """Requests the leader read per pause: all the runs' requests over all their pauses, rounded."""
    pause_median_ms: float
    pause_p99_ms: float
    pauses: int
    """The leader's pauses it was measured from (every run's, after the warm-up)."""
    requests: int
    runs: int

    def stalls(self) -> str:
        """The `broker.stalls` value (a `--set` line's right-hand side) that has a broker collect as measured."""
        return (f"{{every_requests: {self.every_requests}, pause: {{type: lognormal, "
                f"median: {self.pause_median_ms!r}ms, p99: {self.pause_p99_ms!r}ms}}}}")

    def as_json(self) -> dict[str, int | float]:
        return {"every_requests": self.every_requests, "pause_median_ms": self.pause_median_ms,
                "pause_p99_ms": self.pause_p99_ms, "pauses": self.pauses, "requests": self.requests,
                "runs": self.runs}


class CollectorError(ValueError):
    """A preset's `collector` block that kafkasim cannot use: the message says which key and what is allowed."""


def _count(data: Mapping[str, object], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CollectorError(f"{key}: {value!r} (allowed: a positive integer)")
    return value


def _ms(data: Mapping[str, object], key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise CollectorError(f"{key}: {value!r} (allowed: a positive number of ms)")
    return float(value)


def from_json(data: Mapping[str, object]) -> Collector:
    """The collector a preset's `collector` block holds, or CollectorError naming the key."""
    collector = Collector(every_requests=_count(data, "every_requests"), pause_median_ms=_ms(data, "pause_median_ms"),
                          pause_p99_ms=_ms(data, "pause_p99_ms"), pauses=_count(data, "pauses"),
                          requests=_count(data, "requests"), runs=_count(data, "runs"))
    if not collector.pause_p99_ms > collector.pause_median_ms:
        raise CollectorError(f"pause_p99_ms: {collector.pause_p99_ms:g} (allowed: above pause_median_ms, "
                             f"{collector.pause_median_ms:g})")
    return collector


@dataclass(frozen=True)
class Measured:
    collector: Collector | None
    said: str
    """What was measured, or why nothing was (for the calibration's output)."""


def measure(runs: Sequence[tuple[Path, RunResult]]) -> Measured:
    """The leader's collector over `runs` (each a real run's result directory and its result): in each run the broker
    that read the most requests in the run's window (from the warm-up's end), its requests there and the pauses its
    GC log has begun there. None, and why, when no run kept GC logs (a simulated run, an imported request log, a
    real run made before kafkasim kept them) or the leaders paused fewer than MIN_PAUSES times."""
    import numpy as np

    from kafkasim.report.pauses import run_pauses, window_of

    durations: list[float] = []
    requests = 0
    measured_runs = 0
    for directory, result in runs:
        if result.run_info.get("engine") != "kafka":
            continue
        start, end = window_of(result)
        frame = result.requests
        inside = frame[(frame["start_ms"] >= start) & (frame["start_ms"] < end)]
        if inside.empty:
            continue
        counts = inside["broker"].value_counts()
        # Each JVM's pauses begun in the same window, as `kafkasim compare` counts them.
        leader = [h for h in run_pauses(result, directory) or () if h.host == f"broker-{int(counts.index[0])}"]
        if not leader:
            continue
        durations += [float(ms) for ms in leader[0].durations_ms]
        requests += int(counts.iloc[0])
        measured_runs += 1
    if measured_runs == 0:
        return Measured(None, "no run kept its brokers' GC logs (a real run of kafkasim's does): the preset's brokers "
                              "stall by the fitted machine stalls alone")
    if len(durations) < MIN_PAUSES:
        return Measured(None, f"the leaders paused {len(durations)} times in {measured_runs} runs, too few to measure "
                              f"(at least {MIN_PAUSES}): the preset's brokers stall by the fitted machine stalls alone")
    ms = np.array(durations, dtype=float)
    median = float(np.median(ms))
    # A lognormal needs its p99 above its median; pauses all of one length (not seen) get the narrowest spread.
    p99 = max(float(np.percentile(ms, 99)), median * 1.01)
    collector = Collector(every_requests=max(1, round(requests / len(ms))), pause_median_ms=round(median, 3),
                          pause_p99_ms=round(p99, 3), pauses=len(ms), requests=requests, runs=measured_runs)
    return Measured(collector, f"the leader's collector, from {measured_runs} runs' GC logs: a pause every "
                               f"{collector.every_requests} requests ({len(ms)} pauses, {requests} requests), "
                               f"median {collector.pause_median_ms:g} ms, p99 {collector.pause_p99_ms:g} ms")
