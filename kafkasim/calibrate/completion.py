"""How long a broker takes to answer a parked fetch that another request completed, read off a request log: a
follower fetch that a produce's append woke (`completion_gaps`), and a consumer fetch that a follower's
high-watermark advance woke (`consumer_completions`).

Kafka's `KafkaApis.handle` runs `ReplicaManager.tryCompleteActions` in its `finally`: the followers' parked
`DelayedFetch` that an append satisfies are read and answered on the producer's handler thread, after an acks=1
produce's own response was sent (`RequestChannel.sendResponse`). So in a broker's request log the first parked
FetchFollower answered after an acks=1 produce's response is answered a little later: by the work of one completion
(kafkasim's `broker.costs.complete_fetch`, plus a read of the batch) -- and, on a machine whose cores are
shared, by the handler's wait for one, which no cost of kafkasim's represents: the gap is a diagnostic, not
fitted (docs/calibration.md). The fit starts `complete_fetch_ms` from the second context's difference
(`consumer_completion_ms`, kafkasim.calibrate.fit.starting_point) and reproduces its median
(kafkasim.calibrate.targets.with_request_log). On this project's machine (Kafka 4.3.1, acks=1 at 300 records/s
of 1 KiB) each run's median gap was 0.35-0.37 ms on 2026-11-30 and 0.28-0.29 ms in that night's quieter runs,
where the second follower was answered only 0.07-0.1 ms after the first.

The second context: Kafka's `Partition.updateFollowerFetchState` moves the high watermark inside a follower
fetch's handling (`maybeIncrementLeaderHW`, then `tryCompleteDelayedRequests`), and the consumers' parked fetches
it satisfies are read and answered right there, before the follower's own response: that follower fetch's
LocalTimeMs holds one completion more than one that completed nothing. On this project's machine the median
difference was 0.13-0.2 ms in each run, against the 0.28-0.37 ms gap after a produce's response: the first
answer after a response comes later than one completion's work alone (a thread woken by the response takes a
core of the two), which one `complete_fetch` cannot tell apart;
the fit reproduces the second only (docs/calibration.md).

The gap is a difference of two requests' absolute times, so it needs a log whose line times are finer than a
millisecond: kafkasim's real runs write epoch microseconds (kafkasim/real/log4j2.properties). A log written with
whole milliseconds (Kafka's usual ``%d{UNIX_MILLIS}``) gives no gap (`whole_millisecond_times`): each time is then
off by up to 1 ms, and the first answer after a response is often one that came later (an earlier one rounds to
before it): on a simulated run with a 0.30 ms gap, rounding its times so gave 0.60 ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

WINDOW_MS = 5.0
"""A follower answered later than this after a produce's response was woken by something else (a later produce)."""
MIN_GAPS = 20
NEEDED = ("api", "broker", "acks", "local_complete_ms", "response_complete_ms", "end_ms", "RemoteTimeMs")
CONSUMER_NEEDED = ("api", "broker", "partitions", "dequeue_ms", "local_complete_ms", "response_complete_ms",
                   "end_ms", "RemoteTimeMs")
WHOLE_MS_SHARE = 0.9
"""A log is taken as written in whole milliseconds when at least this share of its rows ends on one."""
ROUNDING_MS = 0.005
"""How far a row's end from a whole-millisecond line time may lie: the rounding of the broker's breakdown, whose
parts it adds (kafkasim.real.request_log)."""


def whole_millisecond_times(requests: pd.DataFrame) -> bool:
    """Whether a request log's line times are whole milliseconds: a real log's ``end_ms`` is its line time, so
    nearly every row's then lies on a whole millisecond (a simulated run's or a microsecond log's, about 1%)."""
    end = requests["end_ms"].to_numpy(dtype=float)
    end = end[np.isfinite(end)]
    if len(end) == 0:
        return False
    return bool(np.mean(np.abs(end - np.round(end)) <= ROUNDING_MS) >= WHOLE_MS_SHARE)


def completion_gaps(requests: pd.DataFrame) -> np.ndarray:
    """For each acks=1 produce, the time from its response to the first parked follower fetch the same broker
    answered after it (within `WINDOW_MS`), in ms; empty when the log lacks the columns or such requests, or
    when its times are whole milliseconds (`whole_millisecond_times`)."""
    if any(column not in requests.columns for column in NEEDED) or whole_millisecond_times(requests):
        return np.empty(0)
    acks = pd.to_numeric(requests["acks"], errors="coerce")
    produce = requests[(requests["api"] == "Produce") & (acks == 1)]
    parked = requests[(requests["api"] == "FetchFollower") & (requests["RemoteTimeMs"] > 0)]
    gaps: list[np.ndarray] = []
    for broker, produced in produce.groupby("broker"):
        answered = np.sort(parked.loc[parked["broker"] == broker, "response_complete_ms"].to_numpy(dtype=float))
        sent = produced["local_complete_ms"].to_numpy(dtype=float)
        sent = sent[np.isfinite(sent)]
        after = np.searchsorted(answered, sent, side="right")
        has = after < len(answered)
        gap = answered[after[has]] - sent[has]
        gaps.append(gap[gap <= WINDOW_MS])
    return np.concatenate(gaps) if gaps else np.empty(0)


def median_of_medians(values: Callable[[pd.DataFrame], np.ndarray], logs: Iterable[pd.DataFrame]) -> float | None:
    """The median of each log's median of `values(log)`, over the logs that give any; None when none does."""
    medians = [float(np.median(v)) for v in map(values, logs) if len(v)]
    return float(np.median(medians)) if medians else None


def beyond_median(values: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Each finite one of `values` less the median of the finite `others`; empty when either has fewer than
    `MIN_GAPS` (too few to say)."""
    values, others = values[np.isfinite(values)], others[np.isfinite(others)]
    if len(values) < MIN_GAPS or len(others) < MIN_GAPS:
        return np.empty(0)
    return values - float(np.median(others))


def _followers_by_completion(requests: pd.DataFrame, parked: bool) -> tuple[np.ndarray, np.ndarray]:
    """The LocalTimeMs of each follower fetch that named a partition and parked (`parked`) or was answered at
    once, split into those that completed a parked consumer fetch of its broker (the consumer's response was
    sent between the follower's dequeue and the end of its local phase) and those that completed none."""
    at_once = requests["RemoteTimeMs"] <= ROUNDING_MS
    kind = ~at_once if parked else at_once
    followers = requests[(requests["api"] == "FetchFollower") & kind & (requests["partitions"] > 0)]
    consumers = requests[(requests["api"] == "FetchConsumer") & ~at_once]
    completing: list[np.ndarray] = []
    idle: list[np.ndarray] = []
    for broker, fetches in followers.groupby("broker"):
        answered = np.sort(consumers.loc[consumers["broker"] == broker, "response_complete_ms"].to_numpy(dtype=float))
        dequeued = fetches["dequeue_ms"].to_numpy(dtype=float)
        local_end = fetches["local_complete_ms"].to_numpy(dtype=float)
        # The first consumer answer at or after the follower's dequeue, and whether it came by its local end.
        first = np.searchsorted(answered, dequeued - ROUNDING_MS, side="left")
        hit = first < len(answered)
        hit[hit] = answered[first[hit]] <= local_end[hit] + ROUNDING_MS
        local = local_end - dequeued
        completing.append(local[hit])
        idle.append(local[~hit])
    return (np.concatenate(completing) if completing else np.empty(0),
            np.concatenate(idle) if idle else np.empty(0))


def _fine(requests: pd.DataFrame) -> bool:
    """Whether the log has what telling a follower fetch's completions apart needs: the columns, and line times
    finer than a millisecond."""
    return all(column in requests.columns for column in CONSUMER_NEEDED) and not whole_millisecond_times(requests)


def consumer_completions(requests: pd.DataFrame) -> np.ndarray:
    """For each follower fetch answered at once (no RemoteTimeMs) that named a partition and completed a parked
    consumer fetch of its broker, its LocalTimeMs beyond the median of those that completed none, in ms; empty
    when the log lacks the columns, has fewer than `MIN_GAPS` of either kind, or its times are whole
    milliseconds."""
    if not _fine(requests):
        return np.empty(0)
    return beyond_median(*_followers_by_completion(requests, parked=False))


def follower_updates(requests: pd.DataFrame) -> np.ndarray:
    """For each follower fetch that named a partition, completed no consumer's fetch and parked (it found no
    records), its LocalTimeMs beyond the median of the consumer fetches that parked, in ms: what a follower's
    fetch does that a consumer's does not (`Partition.updateFollowerFetchState`: the follower's log end offset,
    `maybeExpandIsr`, `maybeIncrementLeaderHW`), kafkasim's `broker.costs.follower_fetch`. Empty when the log
    lacks the columns, has fewer than `MIN_GAPS` of either kind, or its times are whole milliseconds (which of
    them completed a consumer's is then unknown, and one that did takes a completion longer)."""
    if not _fine(requests):
        return np.empty(0)
    _completing, idle = _followers_by_completion(requests, parked=True)
    consumers = requests[(requests["api"] == "FetchConsumer") & (requests["RemoteTimeMs"] > ROUNDING_MS)]
    return beyond_median(idle, consumers["LocalTimeMs"].to_numpy(dtype=float))


def consumer_completion_ms(logs: Iterable[pd.DataFrame]) -> float | None:
    """The median of each log's median `consumer_completions`, or None when no log has any."""
    return median_of_medians(consumer_completions, logs)


def follower_update_ms(logs: Iterable[pd.DataFrame]) -> float | None:
    """The median of each log's median `follower_updates`, or None when no log has any."""
    return median_of_medians(follower_updates, logs)
