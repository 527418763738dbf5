"""The statistics a calibration reproduces, read from a result's summary.json (a real run's or a simulated
one's: both are computed by kafkasim.record.summary).

Broker side: Kafka's RequestChannel breakdown (RequestMetrics: RequestQueueTimeMs, LocalTimeMs,
RemoteTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs) of Produce, FetchFollower and FetchConsumer, p50, p95
and p99. A fetch's RemoteTimeMs is left out: it is the long poll's wait for data (DelayedFetch), which the
load decides, not a cost. Client side: produce latency from the intended send (per acks) and end-to-end
latency, p50, p95, p99 and p99.9. Request log: what no phase of RequestMetrics holds alone, read off the request log when
its times are finer than a millisecond (`with_request_log`): how much longer a follower fetch that completed a
consumer's takes and how much longer a parked follower fetch that completed none takes than a parked consumer
fetch (kafkasim.calibrate.completion), a follower's turnaround and the queue wait of a produce that arrived during
one (kafkasim.calibrate.turnaround), p50; and, from any request log, how much longer a consumer fetch that found
records takes than one that parked (kafkasim.calibrate.fetch_read). How long after an acks=1 produce's response its followers were answered (`completion_gaps`) is not fitted:
on a real broker of two shared cores it holds the handler's wait for a core, which no cost of kafkasim's
represents, and fitted it pulled every handler cost up to twice Kafka's (docs/calibration.md); docs/make_calibration.py
reports the fitted run's beside the real runs'. Cores: the CPU the brokers' request handlers, network threads and
replica fetchers used after the warm-up, all brokers together (summary per_broker ``cores``: a real run's JVM
threads, kafkasim.real.process_cpu; a simulated run's modelled work, kafkasim.run.cores), in cores, not ms: the
share of the latencies that is work rather than waiting, which no latency tells alone. A real run whose JVMs'
thread names were not read has its request handlers and network threads together only (``data plane cores``).
"""

from __future__ import annotations

import math
import statistics as stats
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.calibrate.after_idle import produces_after_idle
from kafkasim.calibrate.completion import consumer_completions, follower_updates
from kafkasim.calibrate.fetch_read import fetch_reads
from kafkasim.calibrate.pipelined import pipelined_reads
from kafkasim.calibrate.turnaround import follower_turnarounds, produce_queues_in_turnarounds
from kafkasim.record.summary import CORE_KINDS, CORES_DATA_PLANE

PHASES = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs", "ResponseSendTimeMs")
APIS = ("Produce", "FetchFollower", "FetchConsumer")
QUANTILES = ("p50", "p95", "p99")
"""Of each phase of the breakdown and each client latency. The p95 tells how a tail is made -- frequent short
waits or rare long ones, which give the same p99 -- and so how it adds up along a record's way in a
configuration the fit never saw (docs/calibration.md)."""
CLIENT_QUANTILES = (*QUANTILES, "p99.9")
"""A client latency's p99.9 too: the length of the longest stalls, which a p99 alone lets a fit trade for their
frequency (a fit to p50s and p99s settled once on stalls of 64 ms every 2 s, whose run had a produce p99.9 of
63 ms against the real runs' 17-23, and predicted an acks=all p99 of 50 ms against 16.5-20.5)."""
FLOOR_MS = 0.05
"""Added to both sides of a ratio: phases of a few microseconds (a queue that is empty) then count as equal
whether they are 0.001 or 0.01 ms, and a phase that is 0 on one side does not make the ratio infinite."""
MIN_COUNT = 20
"""A statistic is used only when both sides have at least this many values (a p99 of fewer means little)."""
MIN_COUNT_P999 = 2000
"""A p99.9 only with at least this many values (two in a thousand beyond it in each run)."""
CRITERION = (" p50", " p99")
"""The quantiles the issue's check counts: a fitted run's p50 and p99 of each phase within 20% of Kafka's."""


@dataclass(frozen=True)
class Target:
    """One statistic: its key (`Produce LocalTimeMs p99`, `produce acks=1 p50`, `end to end p99`) and the
    measured value in ms."""

    key: str
    group: str
    """What it belongs to: `broker` (the RequestChannel breakdown) or `client` (produce, end to end)."""
    value: float


def statistics(summary: dict[str, Any]) -> dict[str, tuple[str, float, int]]:
    """Every statistic of a summary: key -> (group, value in ms, count)."""
    out: dict[str, tuple[str, float, int]] = {}
    apis = summary.get("apis") or {}
    for api in APIS:
        data = apis.get(api)
        if not isinstance(data, dict):
            continue
        for phase in PHASES:
            if phase == "RemoteTimeMs" and api != "Produce":
                continue
            stats = data.get(phase)
            if isinstance(stats, dict):
                for q in QUANTILES:
                    _put(out, f"{api} {phase} {q}", "broker", stats.get(q), stats.get("count"))
    for acks, data in sorted((summary.get("produce_latency") or {}).items()):
        stats = data.get("from_intended") if isinstance(data, dict) else None
        if isinstance(stats, dict):
            for q in CLIENT_QUANTILES:
                _put(out, f"produce {acks} {q}", "client", stats.get(q), stats.get("count"))
    e2e = summary.get("e2e_latency")
    if isinstance(e2e, dict):
        for q in CLIENT_QUANTILES:
            _put(out, f"end to end {q}", "client", e2e.get(q), e2e.get("count"))
    for name, data in sorted((summary.get(REQUEST_LOG) or {}).items()):
        if isinstance(data, dict):
            _put(out, f"{name} p50", "request log", data.get("p50"), data.get("count"))
    requests = summary.get("requests_after_warmup")
    for kind, cores in _cluster_cores(summary).items():
        _put(out, f"{kind} cores", CORES_GROUP, cores, requests)
    return out


CORES_GROUP = "cores"


def _cluster_cores(summary: dict[str, Any]) -> dict[str, float]:
    """Each kind's cores over every broker: request handlers, network threads and replica fetchers, or, where the
    first two are not apart (a real run whose thread names were not read), ``data plane`` and replica fetchers.
    Empty without any broker's."""
    each = [data["cores"] for data in (summary.get("per_broker") or {}).values()
            if isinstance(data, dict) and isinstance(data.get("cores"), dict)]
    if not each:
        return {}
    apart = all(kind in cores for cores in each for kind in CORE_KINDS[:2])
    kinds = CORE_KINDS if apart else (CORES_DATA_PLANE, CORE_KINDS[2])
    return {kind: float(sum(float(cores.get(kind, 0.0)) for cores in each)) for kind in kinds}


REQUEST_LOG = "request_log"
"""The summary's key for the request log's gaps (`with_request_log`); kafkasim.record.summary writes none."""
GAPS: dict[str, Callable[[pd.DataFrame], np.ndarray]] = {
    "consumer completion": consumer_completions, "fetch read": fetch_reads, "follower update": follower_updates,
    "FetchFollower turnaround": follower_turnarounds, "Produce queue in a turnaround": produce_queues_in_turnarounds,
    "Produce read after a response": pipelined_reads, "Produce after idle": produces_after_idle}
"""The request log's gaps, by name: each one's values in a requests table."""
REQUEST_LOG_STATISTICS = tuple(f"{name} p50" for name in GAPS)


def with_request_log(summary: dict[str, Any], requests: pd.DataFrame) -> dict[str, Any]:
    """`summary` with the request log's gaps (their medians and counts) beside its statistics, for `statistics`:
    a simulated run's and a real one's alike. A log whose times are whole milliseconds has none."""
    gaps = {name: values(requests) for name, values in GAPS.items()}
    return summary | {REQUEST_LOG: {name: {"p50": float(np.median(g)), "count": len(g)}
                                    for name, g in gaps.items() if len(g)}}


def _put(out: dict[str, tuple[str, float, int]], key: str, group: str, value: object, count: object) -> None:
    if isinstance(value, int | float) and math.isfinite(value) and isinstance(count, int):
        out[key] = (group, float(value), count)


def measured(summaries: Sequence[dict[str, Any]]) -> dict[str, tuple[str, float, int]]:
    """The statistics of one or more runs of the same scenario: each one's median over the runs (with the
    fewest values any run had), for the statistics every run has. On a machine where five JVMs share two cores
    one run's p50 can be half again another's: a fit to the median of three inherits no single run's luck."""
    each = [statistics(summary) for summary in summaries]
    if not each:
        return {}
    out: dict[str, tuple[str, float, int]] = {}
    for key, (group, _value, _count) in each[0].items():
        if all(key in s for s in each):
            out[key] = (group, float(stats.median(s[key][1] for s in each)), min(s[key][2] for s in each))
    return out


def targets(summary: dict[str, Any] | Sequence[dict[str, Any]]) -> list[Target]:
    """The statistics of a measured summary (or the median of several runs') a fit can use (enough values),
    in a stable order."""
    runs = [summary] if isinstance(summary, dict) else list(summary)
    return [Target(key, group, value) for key, (group, value, count) in measured(runs).items()
            if count >= (MIN_COUNT_P999 if key.endswith(" p99.9") else MIN_COUNT)]


def residual(simulated: float, measured: float) -> float:
    """How far a simulated statistic is from the measured one: the log of their ratio, each with FLOOR_MS."""
    return math.log((simulated + FLOOR_MS) / (measured + FLOOR_MS))
