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

A follower reads no requests but allocates for every fetch response its replica fetchers receive: its collector is
measured too, as fetch responses per pause (the followers' FetchFollower requests in the leader's request log, the
pauses their own GC logs began) and its pauses' median and p99 (shorter than the leader's: fewer live objects to
copy), and the preset gives every broker `every_fetches` and `fetch_pause` beside `every_requests`.

Simplified: the count is of the Produce and Fetch requests the run's request log keeps (kafkasim.real.assemble),
where a simulated broker counts every request its channel takes (a few Metadata requests at a client's start
besides).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a preset is read (kafkasim.calibrate.preset) without pandas or the result's modules
    import pandas as pd

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
    follower: FollowerCollector | None = None
    """The followers' collector, when their pauses were enough to measure it (a preset written before kafkasim
    measured it has none: its followers never collect)."""

    def stalls(self) -> str:
        """The `broker.stalls` value (a `--set` line's right-hand side) that has a broker collect as measured."""
        follower = self.follower
        fetches = "" if follower is None else (
            f", every_fetches: {follower.every_fetches}, "
            f"fetch_pause: {_lognormal(follower.pause_median_ms, follower.pause_p99_ms)}")
        pause = _lognormal(self.pause_median_ms, self.pause_p99_ms)
        return f"{{every_requests: {self.every_requests}, pause: {pause}{fetches}}}"

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "every_requests": self.every_requests, "pause_median_ms": self.pause_median_ms,
            "pause_p99_ms": self.pause_p99_ms, "pauses": self.pauses, "requests": self.requests, "runs": self.runs}
        if self.follower is not None:
            data["follower"] = self.follower.as_json()
        return data


@dataclass(frozen=True)
class FollowerCollector:
    every_fetches: int
    """Fetch responses a follower's fetchers received per pause: all the followers' over all their pauses."""
    pause_median_ms: float
    pause_p99_ms: float
    pauses: int
    fetches: int

    def as_json(self) -> dict[str, int | float]:
        return {"every_fetches": self.every_fetches, "pause_median_ms": self.pause_median_ms,
                "pause_p99_ms": self.pause_p99_ms, "pauses": self.pauses, "fetches": self.fetches}


def _lognormal(median_ms: float, p99_ms: float) -> str:
    return f"{{type: lognormal, median: {median_ms!r}ms, p99: {p99_ms!r}ms}}"


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


def _spread(median: float, p99: float) -> None:
    """A lognormal's p99 lies above its median."""
    if not p99 > median:
        raise CollectorError(f"pause_p99_ms: {p99:g} (allowed: above pause_median_ms, {median:g})")


def _follower(data: object) -> FollowerCollector:
    if not isinstance(data, Mapping):
        raise CollectorError("follower: not a mapping (every_fetches, pause_median_ms, pause_p99_ms, pauses, fetches)")
    try:
        follower = FollowerCollector(every_fetches=_count(data, "every_fetches"),
                                     pause_median_ms=_ms(data, "pause_median_ms"), pause_p99_ms=_ms(data, "pause_p99_ms"),
                                     pauses=_count(data, "pauses"), fetches=_count(data, "fetches"))
        _spread(follower.pause_median_ms, follower.pause_p99_ms)
    except CollectorError as e:
        raise CollectorError(f"follower.{e}") from None
    return follower


def from_json(data: Mapping[str, object]) -> Collector:
    """The collector a preset's `collector` block holds, or CollectorError naming the key."""
    collector = Collector(every_requests=_count(data, "every_requests"), pause_median_ms=_ms(data, "pause_median_ms"),
                          pause_p99_ms=_ms(data, "pause_p99_ms"), pauses=_count(data, "pauses"),
                          requests=_count(data, "requests"), runs=_count(data, "runs"),
                          follower=_follower(data["follower"]) if "follower" in data else None)
    _spread(collector.pause_median_ms, collector.pause_p99_ms)
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
    from kafkasim.report.pauses import run_pauses, window_of

    durations: list[float] = []
    requests = 0
    measured_runs = 0
    follower_durations: list[float] = []
    fetches = 0
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
        pauses = {h.host: h for h in run_pauses(result, directory) or ()}
        leader = pauses.get(f"broker-{int(counts.index[0])}")
        if leader is None:
            continue
        durations += [float(ms) for ms in leader.durations_ms]
        requests += int(counts.iloc[0])
        measured_runs += 1
        # The followers that read no requests (a broker that leads too collects for both): the fetch responses
        # their fetchers received, as the leaders' request logs answered them, and their own pauses.
        for broker, received in _fetches_by_broker(inside).items():
            own = pauses.get(f"broker-{broker}")
            if broker not in counts.index and own is not None:
                follower_durations += [float(ms) for ms in own.durations_ms]
                fetches += received
    if measured_runs == 0:
        return Measured(None, "no run kept its brokers' GC logs (a real run of kafkasim's does): the preset's brokers "
                              "stall by the fitted machine stalls alone")
    if len(durations) < MIN_PAUSES:
        return Measured(None, f"the leaders paused {len(durations)} times in {measured_runs} runs, too few to measure "
                              f"(at least {MIN_PAUSES}): the preset's brokers stall by the fitted machine stalls alone")
    median, p99 = _median_p99(durations)
    follower: FollowerCollector | None = None
    if len(follower_durations) >= MIN_PAUSES:
        f_median, f_p99 = _median_p99(follower_durations)
        follower = FollowerCollector(every_fetches=max(1, round(fetches / len(follower_durations))),
                                     pause_median_ms=f_median, pause_p99_ms=f_p99, pauses=len(follower_durations),
                                     fetches=fetches)
        followers = (f"; the followers': a pause every {follower.every_fetches} fetch responses "
                     f"({follower.pauses} pauses, {fetches} responses), median {f_median:g} ms, p99 {f_p99:g} ms")
    else:
        followers = (f"; the followers paused {len(follower_durations)} times, too few to measure (at least "
                     f"{MIN_PAUSES}): they never collect")
    collector = Collector(every_requests=max(1, round(requests / len(durations))), pause_median_ms=median,
                          pause_p99_ms=p99, pauses=len(durations), requests=requests, runs=measured_runs,
                          follower=follower)
    return Measured(collector, f"the leader's collector, from {measured_runs} runs' GC logs: a pause every "
                               f"{collector.every_requests} requests ({len(durations)} pauses, {requests} requests), "
                               f"median {median:g} ms, p99 {p99:g} ms{followers}")


def _median_p99(durations: Sequence[float]) -> tuple[float, float]:
    """The pauses' median and p99 (ms, rounded to the µs)."""
    import numpy as np

    ms = np.array(durations, dtype=float)
    median = float(np.median(ms))
    # A lognormal needs its p99 above its median; pauses all of one length (not seen) get the narrowest spread.
    p99 = max(float(np.percentile(ms, 99)), median * 1.01)
    return round(median, 3), round(p99, 3)


FETCHER = re.compile(r"(?:follower|broker)-(\d+)")
"""A replica fetcher's client name in a result (``follower-<id>``, or ``broker-<id>/ReplicaFetcherThread-...``,
kafkasim.run.cluster.fetcher_name): the broker it fetches for."""


def _fetches_by_broker(requests: pd.DataFrame) -> dict[int, int]:
    """The FetchFollower requests of `requests` by the broker whose fetcher sent them."""
    fetched: dict[int, int] = {}
    for client, n in requests.loc[requests["api"] == "FetchFollower", "client"].value_counts().items():
        match = FETCHER.match(str(client))
        if match is not None:
            fetched[int(match.group(1))] = fetched.get(int(match.group(1)), 0) + int(n)
    return fetched
