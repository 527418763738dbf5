"""A real broker's request log read into kafkasim's requests table.

With ``kafka.request.logger`` at DEBUG, Kafka's ``RequestChannel.updateRequestMetrics`` writes one line per
completed request: ``<epoch time> Completed request:{json}``, the time taken when the response has been sent:
epoch microseconds with kafkasim's log pattern ``%d{UNIX}%d{SSSSSS} %m%n`` (kafkasim/real/log4j2.properties), or
epoch milliseconds with Kafka's usual ``%d{UNIX_MILLIS} %m%n``. The JSON holds the request header
(``requestApiKeyName``, ``clientId``, ``correlationId``), the request and response bodies, and the broker's
own RequestMetrics breakdown in ms: ``requestQueueTimeMs``, ``localTimeMs``, ``remoteTimeMs``,
``throttleTimeMs``, ``responseQueueTimeMs``, ``sendTimeMs`` and ``totalTimeMs``.

Each line becomes one row of the simulated run's requests table. The broker's timestamps are rebuilt from
the breakdown: ``start_ms`` (read off the socket) is the line's time minus ``totalTimeMs``, and each later
stage adds its part, so every RequestMetrics column equals what the broker measured (the durations are the
broker's own, to the microsecond; the absolute times are as precise as the line's time: with whole milliseconds
the time between two requests is off by up to 1 ms, see kafkasim.calibrate.completion). A broker knows nothing
of its clients' clocks: ``intended_ms``, ``client_send_ms``, ``client_receive_ms`` and ``client_latency_ms``
are NaN, ``client_timeout`` is False. Request and response sizes are the record bytes the log gives
(``recordsSizeInBytes``), without headers.

PRODUCE is ``Produce``; FETCH is ``FetchFollower`` when it names a replica (``replicaId`` or
``replicaState.replicaId`` >= 0: a follower's replica fetcher) and ``FetchConsumer`` otherwise. Other APIs
(Metadata, ApiVersions, heartbeats, ...) are not in the simulated table: they are counted, not kept.

A line that is not a completed request (cut off, not JSON, another logger's) is counted and named
(``BadLine``: file, line number, why), never a traceback.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.record.recorder import requests_frame

_LINE = re.compile(r"^\[?(?P<ts>\d{10,16})\]?\s+(?:\S+\s+)?Completed request:\s*(?P<json>\{.*)$")
NAN = math.nan
KEPT_APIS = {"PRODUCE": "Produce", "FETCH": "Fetch"}


@dataclass(frozen=True)
class BadLine:
    file: str
    line: int
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.why}"


@dataclass
class ProducedBatch:
    """One partition of a PRODUCE request the broker answered: where its batch went in the log."""

    client: str
    topic: str
    partition: int
    base_offset: int
    error: int
    records_bytes: int
    request_id: int
    correlation_id: int
    broker: int
    start_ms: float
    end_ms: float
    acks: int


@dataclass
class _Row:
    """One request as the recorder's RequestRow protocol reads it."""

    request_id: int
    api: str
    client: str
    broker: int
    partitions: int
    response_partitions: int
    request_bytes: int
    response_bytes: int
    acks: int | None
    error: int
    client_timeout: bool
    intended_ms: float
    client_send_ms: float
    start_ms: float
    dequeue_ms: float
    local_complete_ms: float
    response_complete_ms: float
    response_dequeue_ms: float
    end_ms: float
    client_receive_ms: float


@dataclass
class RequestLog:
    """What the request logs held: the requests table, the produced batches, the other APIs by count,
    heartbeats (the controller's log: broker id -> arrival times, ms) and the lines that could not be read."""

    requests: pd.DataFrame
    batches: list[ProducedBatch]
    other_apis: Counter[str]
    bad_lines: list[BadLine]
    origin_epoch_ms: float
    """The epoch ms that time 0 of the table is."""
    heartbeats: dict[int, list[float]] = field(default_factory=dict)
    lines: int = 0

    def bad_summary(self, limit: int = 3) -> str | None:
        """One line naming the unreadable lines (the first ``limit``), None if there were none."""
        if not self.bad_lines:
            return None
        shown = "; ".join(str(b) for b in self.bad_lines[:limit])
        more = f"; and {len(self.bad_lines) - limit} more" if len(self.bad_lines) > limit else ""
        return f"{len(self.bad_lines)} line(s) of {self.lines} were not completed requests and were skipped: {shown}{more}"


FollowerName = Callable[[int, int, int], str]
"""(fetching broker id, fetcher id, source broker id) -> the client name of that replica fetcher thread."""


def default_follower_name(replica_id: int, fetcher_id: int, source: int) -> str:
    """Kafka's thread name, as kafkasim names a cluster's fetcher threads."""
    return f"ReplicaFetcherThread-{fetcher_id}-{source}"


_FETCHER_CLIENT = re.compile(r"fetcher-(\d+)$")


def parse_lines(
    sources: Sequence[tuple[int, Path]],
    *,
    origin_epoch_ms: float | None = None,
    topic_names: Mapping[str, str] | None = None,
    follower_name: FollowerName = default_follower_name,
    heartbeat_sources: Sequence[Path] = (),
) -> RequestLog:
    """Read the request logs ``sources`` ((broker id, path) each) into a ``RequestLog``. Times are ms since
    ``origin_epoch_ms`` (default: the first request's arrival). ``topic_names`` maps topic ids to names
    (without one, the METADATA and CREATE_TOPICS responses in the logs tell them; else the id stays).
    ``heartbeat_sources``: controller request logs whose BROKER_HEARTBEAT arrivals are collected."""
    parsed: list[tuple[int, float, dict[str, Any]]] = []
    bad: list[BadLine] = []
    other: Counter[str] = Counter()
    names: dict[str, str] = dict(topic_names or {})
    heartbeats: dict[int, list[float]] = {}
    total = 0
    for broker, path in sources:
        for number, line in _lines(path, bad):
            total += 1
            entry = _entry(line, str(path), number, bad)
            if entry is None:
                continue
            ts, body = entry
            api = str(body.get("requestHeader", {}).get("requestApiKeyName", ""))
            if api in KEPT_APIS:
                parsed.append((broker, ts, body))
            else:
                other[api or "UNKNOWN"] += 1
                if topic_names is None:
                    _learn_topic_names(body, names)
    heartbeat_epoch: list[tuple[int, float]] = []
    for path in heartbeat_sources:
        for number, line in _lines(path, bad):
            total += 1
            entry = _entry(line, str(path), number, bad)
            if entry is None:
                continue
            ts, body = entry
            if body.get("requestHeader", {}).get("requestApiKeyName") == "BROKER_HEARTBEAT":
                broker_id = body.get("request", {}).get("brokerId")
                if isinstance(broker_id, int):
                    heartbeat_epoch.append((broker_id, ts - _float(body.get("totalTimeMs"))))
    if origin_epoch_ms is None:
        starts = [ts - _float(body.get("totalTimeMs")) for _, ts, body in parsed]
        origin_epoch_ms = float(math.floor(min(starts))) if starts else 0.0
    for broker_id, at in heartbeat_epoch:
        heartbeats.setdefault(broker_id, []).append(at - origin_epoch_ms)
    parsed.sort(key=lambda item: item[1] - _float(item[2].get("totalTimeMs")))
    rows: list[_Row] = []
    batches: list[ProducedBatch] = []
    for request_id, (broker, ts, body) in enumerate(parsed):
        try:
            row = _row(request_id, broker, ts - origin_epoch_ms, body, names, follower_name, batches)
        except (KeyError, TypeError, ValueError) as exc:
            bad.append(BadLine(f"broker {broker}", 0, f"{body.get('requestHeader')}: unexpected fields ({exc})"))
            continue
        rows.append(row)
    frame = requests_frame(rows) if rows else _empty_requests()
    frame["client_latency_ms"] = np.nan
    return RequestLog(frame, batches, other, bad, origin_epoch_ms, {b: sorted(t) for b, t in heartbeats.items()},
                      total)


def _empty_requests() -> pd.DataFrame:
    return requests_frame([])


def _lines(path: Path, bad: list[BadLine]) -> Iterable[tuple[int, str]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield number, line
    except OSError as exc:
        bad.append(BadLine(str(path), 0, f"cannot be read ({exc.strerror or exc})"))


def _entry(line: str, file: str, number: int, bad: list[BadLine]) -> tuple[float, dict[str, Any]] | None:
    match = _LINE.match(line)
    if match is None:
        what = "no 'Completed request:' JSON" if "Completed request" not in line else "not '<epoch ms or us> Completed request:{...}'"
        bad.append(BadLine(file, number, what))
        return None
    try:
        body = json.loads(match.group("json"))
    except json.JSONDecodeError as exc:
        bad.append(BadLine(file, number, f"the JSON is cut off or malformed ({exc.msg} at column {exc.colno})"))
        return None
    if not isinstance(body, dict) or not isinstance(body.get("requestHeader"), dict):
        bad.append(BadLine(file, number, "the JSON has no requestHeader"))
        return None
    ts = float(match.group("ts"))
    if ts > 1e14:  # microseconds
        ts /= 1000.0
    return ts, body


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _learn_topic_names(body: dict[str, Any], names: dict[str, str]) -> None:
    response = body.get("response") or {}
    for topic in response.get("topics", []) or []:
        if isinstance(topic, dict) and topic.get("topicId") and topic.get("name"):
            names[str(topic["topicId"])] = str(topic["name"])


def _topic(entry: dict[str, Any], names: Mapping[str, str]) -> str:
    name = entry.get("name") or entry.get("topic")
    if name:
        return str(name)
    topic_id = str(entry.get("topicId", ""))
    return names.get(topic_id, topic_id)


def _row(request_id: int, broker: int, sent: float, body: dict[str, Any], names: Mapping[str, str],
         follower_name: FollowerName, batches: list[ProducedBatch]) -> _Row:
    header = body["requestHeader"]
    request = body.get("request") or {}
    response = body.get("response") or {}
    client = str(header.get("clientId", ""))
    total = _float(body.get("totalTimeMs"))
    start = sent - total
    dequeue = start + _float(body.get("requestQueueTimeMs"))
    local = dequeue + _float(body.get("localTimeMs"))
    remote = local + _float(body.get("remoteTimeMs")) + _float(body.get("throttleTimeMs"))
    response_dequeue = remote + _float(body.get("responseQueueTimeMs"))
    end = response_dequeue + _float(body.get("sendTimeMs"))
    error = int(response.get("errorCode", 0) or 0)
    acks: int | None = None
    if header["requestApiKeyName"] == "PRODUCE":
        api = "Produce"
        acks = int(request.get("acks", -1))
        partitions = [p for t in request.get("topicData", []) for p in t.get("partitionData", [])]
        request_bytes = sum(int(p.get("recordsSizeInBytes", 0) or 0) for p in partitions)
        sizes = {(_topic(t, names), int(p["index"])): int(p.get("recordsSizeInBytes", 0) or 0)
                 for t in request.get("topicData", []) for p in t.get("partitionData", [])}
        answered = 0
        for t in response.get("responses", []):
            topic = _topic(t, names)
            for p in t.get("partitionResponses", []):
                answered += 1
                code = int(p.get("errorCode", 0) or 0)
                error = error or code
                batches.append(ProducedBatch(client, topic, int(p["index"]), int(p.get("baseOffset", -1)), code,
                                             sizes.get((topic, int(p["index"])), 0), request_id,
                                             int(header.get("correlationId", -1)), broker, start, end, acks))
        response_partitions, response_bytes = answered, 0
    else:
        replica = request.get("replicaState", {}).get("replicaId", request.get("replicaId", -1))
        replica_id = int(replica) if isinstance(replica, int) else -1
        if replica_id >= 0:
            api = "FetchFollower"
            fetcher = _FETCHER_CLIENT.search(client)
            client = follower_name(replica_id, int(fetcher.group(1)) if fetcher else 0, broker)
        else:
            api = "FetchConsumer"
        partitions = [p for t in request.get("topics", []) for p in t.get("partitions", [])]
        request_bytes = 0
        results = [p for t in response.get("responses", []) for p in t.get("partitions", [])]
        response_partitions = len(results)
        response_bytes = sum(int(p.get("recordsSizeInBytes", 0) or 0) for p in results)
        for p in results:
            error = error or int(p.get("errorCode", 0) or 0)
    return _Row(request_id, api, client, broker, len(partitions), response_partitions, request_bytes,
                response_bytes, acks, error, False, NAN, NAN, start, dequeue, local, remote, response_dequeue,
                end, NAN)
