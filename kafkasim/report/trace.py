"""The story of one request from a saved run: its RequestMetrics stages, and why it waited if it did.

Kafka's RequestMetrics stamps a request at arrival (startTimeNanos), when a handler thread dequeues it
(requestDequeueTimeNanos), when the handler's local work is done (apiLocalCompleteTimeNanos), when the
response is ready (responseCompleteTimeNanos), when the network processor dequeues the response
(responseDequeueTimeNanos) and when it has been sent; kafkasim adds the client's send and receive. Every
time in the story is one of those recorded timestamps.

Why a parked fetch waited and what completed it is inferred from the saved tables, because a run does not
record which of DelayedFetch.tryComplete's cases fired:
- *max wait expired* (DelayedFetch.onExpiration): it was parked for its max wait (`fetch.max.wait.ms`,
  `replica.fetch.wait.max.ms`, from scenario.yaml);
- *min bytes reached* (tryComplete case G): it returned at least its min bytes (record bytes = the
  response's size minus Kafka's fixed overheads as kafkasim counts them) before the max wait;
- *a segment roll* (tryComplete case F): it returned fewer bytes than its min, early and without an error;
  the roll is reconstructed from the records table and `segment.bytes` (LogSegment.shouldRoll's size rule;
  a roll on `segment.ms` cannot be reconstructed and is only named as possible);
- *an error* (cases A-E): the response carries the error.
What woke it is the request a handler thread was working on at that moment: a Produce's append
(ReplicaManager.appendRecords -> checkAndComplete of the fetch purgatory) for a follower fetch, a follower
fetch that moved the high watermark (Partition.maybeIncrementLeaderHW) for a consumer fetch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kafkasim.network.messages import FETCH_RESPONSE_OVERHEAD_BYTES, FETCH_RESPONSE_PARTITION_BYTES
from kafkasim.record.result import RunResult
from kafkasim.report.frames import acks_column, after_warmup, metric, warmup_ms
from kafkasim.report.latency_scale import short_ms
from kafkasim.report.palette import api_colour
from kafkasim.report.swimlane_story import (
    EPSILON_MS,
    PHASE_BOUNDS,
    TIMESTAMPS,
    Lane,
    Span,
    Story,
    build_story,
)

SLOWEST = {"produce": "Produce", "fetch-consumer": "FetchConsumer", "fetch-follower": "FetchFollower"}
# A DelayedFetch expires on the timing wheel's 1 ms tick; the reaper may see it up to a tick later.
EXPIRY_SLACK_MS = 1.0

# (timestamp column, what Kafka calls the moment, what happens there)
STAGES = (
    ("intended_ms", "intended send", "the producer meant to send the first record of the batch (open-loop "
     "load); until the send it waits in the accumulator (linger.ms, batch.size, max.in.flight)"),
    ("client_send_ms", "client send", "the client writes the request to its connection"),
    ("start_ms", "arrival (startTimeNanos)", "the broker's network processor has read the whole request and "
     "put it in the RequestChannel's request queue"),
    ("dequeue_ms", "dequeue (requestDequeueTimeNanos)", "a request handler thread takes it from the queue"),
    ("local_complete_ms", "local complete (apiLocalCompleteTimeNanos)", "the handler has done the local "
     "work (append to the leader's log, or read it); what cannot be answered yet is parked in a purgatory"),
    ("response_complete_ms", "response complete (responseCompleteTimeNanos)", "the response is ready: at once, "
     "or when its delayed operation completed"),
    ("response_dequeue_ms", "response dequeue (responseDequeueTimeNanos)", "the network processor takes the "
     "response from its response queue"),
    ("end_ms", "end (send complete)", "the processor has written the whole response to the socket"),
    ("client_receive_ms", "client receive", "the client has read the whole response"),
)
INTERVALS = {
    ("intended_ms", "client_send_ms"): "waiting in the producer",
    ("client_send_ms", "start_ms"): "network: request on the wire",
    ("start_ms", "dequeue_ms"): "RequestQueueTimeMs",
    ("dequeue_ms", "local_complete_ms"): "LocalTimeMs",
    ("local_complete_ms", "response_complete_ms"): "RemoteTimeMs",
    ("response_complete_ms", "response_dequeue_ms"): "ResponseQueueTimeMs",
    ("response_dequeue_ms", "end_ms"): "ResponseSendTimeMs",
    ("end_ms", "client_receive_ms"): "network: response on the wire",
}


class TraceError(ValueError):
    """A request that cannot be picked (no such id, no such client, nothing at that time)."""


@dataclass(frozen=True)
class Step:
    at_ms: float
    name: str
    meaning: str
    since_previous: str  # "RequestQueueTimeMs 0.012 ms", "" for the first


@dataclass(frozen=True)
class Trace:
    request: pd.Series
    how_picked: str
    steps: tuple[Step, ...]
    waited: tuple[str, ...]  # why it waited and what completed it, one sentence a line (empty: no wait)
    story: Story | None


def _f(row: pd.Series, column: str) -> float:
    value = row.get(column, np.nan)
    return float(value) if pd.notna(value) else float("nan")


def pick_request(result: RunResult, *, request_id: int | None = None, slowest: str | None = None,
                 client: str | None = None, at_ms: float | None = None) -> tuple[pd.Series, str]:
    """The request to trace and how it was picked; TraceError if the choice is empty or ambiguous."""
    requests = result.requests
    chosen = [request_id is not None, slowest is not None, client is not None or at_ms is not None]
    if sum(chosen) != 1:
        raise TraceError("pick one request: --request ID, --slowest API, or --client NAME --at TIME")
    if request_id is not None:
        rows = requests[requests["request_id"] == request_id]
        if rows.empty:
            ids = requests["request_id"]
            span = f"{int(ids.min())}..{int(ids.max())}" if len(ids) else "none"
            raise TraceError(f"--request {request_id}: no such request in this run (ids {span})")
        return rows.iloc[0], f"request #{request_id}"
    if slowest is not None:
        api = SLOWEST.get(slowest)
        if api is None:
            raise TraceError(f"--slowest {slowest!r}: allowed {', '.join(SLOWEST)}")
        pool = after_warmup(requests[requests["api"].astype(str) == api], warmup_ms(result.summary))
        pool = pool[np.isfinite(pool["TotalTimeMs"].to_numpy(float, na_value=np.nan))]
        if pool.empty:
            raise TraceError(f"--slowest {slowest}: the run has no completed {api} request after warm-up")
        order = pool.sort_values(["TotalTimeMs", "client_send_ms"], ascending=[False, True], kind="stable")
        return order.iloc[0], f"the slowest {api} by TotalTimeMs after warm-up"
    if client is None or at_ms is None:
        raise TraceError("--client NAME and --at TIME go together")
    names = sorted(set(requests["client"].astype(str)))
    if client not in names:
        raise TraceError(f"--client {client!r}: no such client in this run; clients: {', '.join(names)}")
    mine = requests[requests["client"].astype(str) == client].sort_values("client_send_ms", kind="stable")
    send = mine["client_send_ms"].to_numpy(float)
    receive = mine["client_receive_ms"].to_numpy(float, na_value=np.inf)
    in_flight = mine[(send <= at_ms) & (receive >= at_ms)]
    if not in_flight.empty:
        return in_flight.iloc[0], f"{client}'s request in flight at {short_ms(at_ms)} ms"
    later = mine[send >= at_ms]
    if later.empty:
        raise TraceError(f"--at {short_ms(at_ms)} ms: {client} sent nothing at or after that time "
                         f"(its last request was sent at {short_ms(float(send.max()))} ms)")
    return later.iloc[0], f"{client}'s first request sent after {short_ms(at_ms)} ms"


def steps(row: pd.Series) -> tuple[Step, ...]:
    out: list[Step] = []
    previous: str | None = None
    for column, name, meaning in STAGES:
        at = _f(row, column)
        if not np.isfinite(at) or (column == "intended_ms" and str(row.get("api")) != "Produce"):
            continue
        since = ""
        if previous is not None:
            label = INTERVALS.get((previous, column), f"after {previous}")
            since = f"{label} {short_ms(at - _f(row, previous))} ms"
        out.append(Step(at, name, meaning, since))
        previous = column
    return tuple(out)


# ---------------------------------------------------------------------------------------------- fetch
def scenario_of(result: RunResult) -> Any:
    if not result.scenario_yaml:
        return None
    from kafkasim.scenario.load import load_scenario

    try:
        return load_scenario(result.scenario_yaml)
    except Exception:  # an older or hand-edited scenario.yaml: the story says what it cannot tell
        return None


def fetch_limits(result: RunResult, row: pd.Series) -> tuple[float, float] | None:
    """(max wait ms, min bytes) of the client that sent this fetch, from scenario.yaml; None if unknown."""
    scenario = scenario_of(result)
    if scenario is None:
        return None
    if str(row["api"]) == "FetchFollower":
        # replica.fetch.* are broker configs: the fetching broker's own (follower-<id> / broker-<id>).
        _, _, digits = str(row["client"]).rpartition("-")
        broker = scenario.broker
        if digits.isdigit() and int(digits) in scenario.broker_ids:
            broker = scenario.broker_for(int(digits))
        return float(broker.replica_fetch_wait_max_ms), float(broker.replica_fetch_min_bytes)
    for consumer in scenario.consumers:
        if consumer.name == str(row["client"]):
            return float(consumer.fetch_max_wait_ms), float(consumer.fetch_min_bytes)
    return None


def record_bytes(row: pd.Series) -> int:
    """Bytes of records a fetch response carried (kafkasim.network.messages.fetch_response_bytes inverted).
    An incremental fetch's response carries other partitions than its request (``response_partitions``;
    results saved before that column had full fetches, whose responses carry the request's ``partitions``)."""
    if "response_partitions" in row.index:
        partitions = int(row["response_partitions"])
    else:
        partitions = int(row.get("partitions", 1) or 1)
    return int(row["response_bytes"]) - FETCH_RESPONSE_OVERHEAD_BYTES - FETCH_RESPONSE_PARTITION_BYTES * partitions


def _busy_at(requests: pd.DataFrame, moment: float, exclude: Any) -> pd.DataFrame:
    """Requests a handler thread was working on (dequeue..local complete) at `moment`."""
    dequeue = requests["dequeue_ms"].to_numpy(float, na_value=np.nan)
    local = requests["local_complete_ms"].to_numpy(float, na_value=np.nan)
    hit = (dequeue <= moment + EPSILON_MS) & (local >= moment - EPSILON_MS) & (requests["request_id"] != exclude)
    return requests[hit]


def segment_rolls(result: RunResult) -> pd.DataFrame | None:
    """Where each partition's log rolled on size, reconstructed from the records table and segment.bytes
    (LogSegment.shouldRoll: size > segment.bytes - incoming bytes of one append); columns topic, partition,
    offset, request_id. None without scenario.yaml or the needed columns."""
    scenario = scenario_of(result)
    records = result.records
    needed = {"topic", "partition", "offset", "size_bytes", "request_id"}
    if scenario is None or records.empty or not needed <= set(records.columns):
        return None
    sizes = {t.name: int(t.segment_bytes) for t in scenario.topics}
    appended = records[records["offset"].to_numpy(float, na_value=np.nan) >= 0]
    appends = (appended.groupby(["topic", "partition", "request_id"], sort=False)
               .agg(offset=("offset", "min"), size=("size_bytes", "sum")).reset_index()
               .sort_values(["topic", "partition", "offset"], kind="stable"))
    rolls: list[tuple[str, int, int, int]] = []
    for _, rows in appends.groupby(["topic", "partition"], sort=False):
        topic, partition = str(rows["topic"].iloc[0]), int(rows["partition"].iloc[0])
        limit, size = sizes.get(topic, 2**31 - 1), 0
        for offset, incoming, request in zip(rows["offset"].tolist(), rows["size"].tolist(),
                                             rows["request_id"].tolist(), strict=True):
            if size > limit - incoming:
                rolls.append((topic, partition, int(offset), int(request)))
                size = 0
            size += int(incoming)
    return pd.DataFrame(rolls, columns=["topic", "partition", "offset", "request_id"])


def _describe(row: pd.Series) -> str:
    return f"{row['api']} #{int(row['request_id'])} from {row['client']}"


def _hw_note(result: RunResult, parked: float, done: float) -> str | None:
    timeseries = result.timeseries
    if timeseries.empty or "metric" not in timeseries.columns:
        return None
    hw = metric(timeseries, "HighWatermark")
    before = hw[hw["time_ms"] <= parked]
    after = hw[hw["time_ms"] >= done]
    if before.empty or after.empty:
        return None
    first, last = before.groupby("entity")["value"].last(), after.groupby("entity")["value"].first()
    moved = [f"{e} {int(first[e])} -> {int(last[e])}" for e in first.index if e in last.index and last[e] != first[e]]
    when = f"between the samples at {short_ms(float(before['time_ms'].max()))} and {short_ms(float(after['time_ms'].min()))} ms"
    return (f"High watermark {when} (sampled, not exact): " + (", ".join(moved) if moved else "unchanged") + ".")


def explain_wait(result: RunResult, row: pd.Series) -> tuple[str, ...]:
    """Why the request waited in a purgatory and what completed it; () when it did not wait."""
    parked, done = _f(row, "local_complete_ms"), _f(row, "response_complete_ms")
    if not (np.isfinite(parked) and np.isfinite(done)):
        return ("It never completed on the broker (a timestamp is missing): the run ended, or the connection "
                "was lost, while it was in flight.",)
    waited = done - parked
    if waited <= EPSILON_MS:
        return ()
    api = str(row["api"])
    if api == "Produce":
        lines = [f"Waited {short_ms(waited)} ms in the Produce purgatory as a DelayedProduce: acks=all is answered "
                 "only when the high watermark passes the batch (DelayedProduce.tryComplete), or with an error when "
                 "it expires after the request's timeout."]
        woken = _busy_at(result.requests, done, row["request_id"])
        if int(row.get("error", 0) or 0) != 0:
            lines.append(f"Completed with {row.get('error_name')}.")
        elif not woken.empty:
            lines.append(f"Completed while a handler thread was working on "
                         f"{', '.join(_describe(r) for _, r in woken.iterrows())}: a follower's fetch reported its "
                         "new log end offset, the high watermark passed the batch (Partition.maybeIncrementLeaderHW) "
                         "and the produce purgatory completed the DelayedProduce.")
        return tuple(lines)
    lines = [f"Waited {short_ms(waited)} ms in the Fetch purgatory as a DelayedFetch (long poll): when it arrived "
             "there were fewer new bytes than its min bytes (ReplicaManager.fetchMessages parks such a fetch)."]
    error = int(row.get("error", 0) or 0)
    limits = fetch_limits(result, row)
    returned = record_bytes(row)
    requests = result.requests
    woken_by = _busy_at(requests, done, row["request_id"])
    if error != 0:
        lines.append(f"Completed by an error: {row.get('error_name')} (DelayedFetch.tryComplete cases A-E).")
        return tuple(lines)
    if limits is None:
        lines.append(f"It returned {returned:,} bytes of records. scenario.yaml is missing or unreadable, so its max "
                     "wait and min bytes are unknown: the cause cannot be told.")
        return tuple(lines)
    max_wait, min_bytes = limits
    setting = ("replica.fetch.wait.max.ms / replica.fetch.min.bytes" if api == "FetchFollower"
               else "fetch.max.wait.ms / fetch.min.bytes")
    lines.append(f"Its limits ({setting}): max wait {short_ms(max_wait)} ms, min bytes {int(min_bytes):,}; "
                 f"it returned {returned:,} bytes of records.")
    if waited >= max_wait - EXPIRY_SLACK_MS:
        lines.append(f"Completed because its max wait expired: the timing wheel ran its timeout after "
                     f"{short_ms(waited)} ms (DelayedFetch.onExpiration), with fewer new bytes than its min bytes.")
        return tuple(lines)
    if returned >= min_bytes:
        lines.append("Completed early because min bytes was reached (DelayedFetch.tryComplete case G: the bytes "
                     "between its fetch offset and the " + ("log end offset" if api == "FetchFollower"
                                                            else "high watermark") + " reached its min bytes).")
    else:
        rolled = _roll_during(result, parked, done)
        if rolled:
            lines.append("Completed early with fewer bytes than its min bytes: the end it reads up to moved to a "
                         f"newer segment (DelayedFetch.tryComplete case F, a segment roll): {rolled}")
        else:
            lines.append("Completed early with fewer bytes than its min bytes and no error: DelayedFetch.tryComplete "
                         "case F (the end it reads up to moved to a newer segment, or the fetch offset is past "
                         "it after a truncation) or case H (a diverging epoch). No size-based roll is reconstructed "
                         "while it waited; a roll on segment.ms or a truncation cannot be seen in the saved tables.")
    if not woken_by.empty:
        what = ("an append to the log (ReplicaManager.appendRecords checks the fetch purgatory)" if api ==
                "FetchFollower" else "a high-watermark move (Partition.maybeIncrementLeaderHW checks the fetch "
                "purgatory)")
        lines.append(f"At that moment a handler thread was working on {', '.join(_describe(r) for _, r in woken_by.iterrows())}"
                     f": the completion came from {what}.")
    if api == "FetchConsumer":
        note = _hw_note(result, parked, done)
        if note:
            lines.append(note)
    return tuple(lines)


def _roll_during(result: RunResult, parked: float, done: float) -> str:
    rolls = segment_rolls(result)
    if rolls is None or rolls.empty:
        return ""
    appended_at = dict(zip(result.requests["request_id"].tolist(),
                           result.requests["local_complete_ms"].to_numpy(float, na_value=np.nan).tolist(), strict=True))
    found = []
    for _, roll in rolls.iterrows():
        request = int(roll["request_id"])
        appended = appended_at.get(request, float("nan"))
        if parked - EPSILON_MS <= appended <= done + EPSILON_MS:
            found.append(f"{roll['topic']}-{int(roll['partition'])} rolled at offset {int(roll['offset'])} with "
                         f"Produce #{request}'s append at {short_ms(appended)} ms (reconstructed from the records "
                         "table and segment.bytes)")
    return "; ".join(found)


def short_cause(waited: tuple[str, ...]) -> str:
    """A few words for the figure: what completed the delayed operation."""
    text = " ".join(waited)
    for needle, short in (("max wait expired", "DelayedFetch: max wait expired"),
                          ("min bytes was reached", "DelayedFetch: min bytes reached"),
                          ("a segment roll):", "DelayedFetch: a segment roll (case F)"),
                          ("Completed by an error", "DelayedFetch: completed by an error"),
                          ("case H", "DelayedFetch: completed early (case F or H)")):
        if needle in text:
            return short
    return "response ready"


# ------------------------------------------------------------------------------------------- swimlane
def _request_lanes(row: pd.Series, origin: float, purgatory_name: str, remote_text: str) -> list[Lane]:
    send, receive = _f(row, "client_send_ms"), _f(row, "client_receive_ms")
    client = Lane(f"{row['client']}\n({row['api']})", api_colour(str(row["api"])))
    client.spans.append(Span(send, receive, "client_wait",
                             f"waits for the response: send \u2192 receive {short_ms(receive - send)} ms"))
    start, end = _f(row, "start_ms"), _f(row, "end_ms")
    network = Lane("network\n(processor)", "black", [Span(send, start, "network", f"request {short_ms(start - send)} ms")])
    handler = Lane("request handler\n(io thread)", "black")
    purgatory = Lane(purgatory_name, "black")
    where = {"RequestQueueTimeMs": (handler, "RequestQueue"), "LocalTimeMs": (handler, "Local"),
             "RemoteTimeMs": (purgatory, remote_text), "ResponseQueueTimeMs": (network, "ResponseQueue"),
             "ResponseSendTimeMs": (network, "ResponseSend")}
    for phase, (begin, finish) in PHASE_BOUNDS.items():
        lane, text = where[phase]
        b, e = _f(row, begin), _f(row, finish)
        lane.spans.append(Span(b, e, phase, f"{text} {short_ms(e - b)} ms"))
    network.spans.append(Span(end, receive, "network", f"response {short_ms(receive - end)} ms"))
    return [client, network, handler, purgatory]


def _other_lane(row: pd.Series, role: str) -> Lane:
    lane = Lane(f"{row['client']}\n({row['api']} #{int(row['request_id'])})", api_colour(str(row["api"])))
    lane.spans.append(Span(_f(row, "client_send_ms"), _f(row, "start_ms"), "network"))
    for phase, (begin, finish) in PHASE_BOUNDS.items():
        lane.spans.append(Span(_f(row, begin), _f(row, finish), phase, role if phase == "LocalTimeMs" else ""))
    lane.spans.append(Span(_f(row, "end_ms"), _f(row, "client_receive_ms"), "network"))
    return lane


def build_trace_story(result: RunResult, row: pd.Series, waited: tuple[str, ...], how: str) -> Story | None:
    """The swimlane of any completed request: the acks=all produce story of swimlane_story, or the
    request's own lanes plus the requests that woke it."""
    values = row[list(TIMESTAMPS)].to_numpy(dtype=float, na_value=np.nan)
    if not np.isfinite(values).all():
        return None
    rid = row["request_id"]
    if str(row["api"]) == "Produce" and (acks_column(row.to_frame().T) == -1).fillna(False).iloc[0]:
        return build_story(result.requests, result.records, result.timeseries, result.summary, rid)
    send, receive = _f(row, "client_send_ms"), _f(row, "client_receive_ms")
    parked, done = _f(row, "local_complete_ms"), _f(row, "response_complete_ms")
    fetch = str(row["api"]).startswith("Fetch")
    lanes = _request_lanes(row, send, "Fetch purgatory\n(DelayedFetch)" if fetch else "Produce purgatory",
                           "Remote: parked" if fetch else "Remote")
    woken = _busy_at(result.requests, done, rid) if done - parked > EPSILON_MS else result.requests.iloc[0:0]
    for _, other in woken.head(3).iterrows():
        lanes.append(_other_lane(other, "completes it"))
    short = short_cause(waited)
    span = max(receive - send, 1e-3)
    lo = min([send, *(float(r["client_send_ms"]) for _, r in woken.head(3).iterrows())])
    hi = max([receive, *(float(r["client_receive_ms"]) for _, r in woken.head(3).iterrows())])
    phases = " + ".join(f"{p.replace('TimeMs', '')} {short_ms(_f(row, e) - _f(row, b))}"
                        for p, (b, e) in PHASE_BOUNDS.items())
    title = f"{row['api']} #{rid} from {row['client']} ({how})"
    subtitle = f"TotalTimeMs {short_ms(float(row['TotalTimeMs']))} ms = {phases} ms"
    return Story(rid, title, subtitle, send, (lo - 0.04 * span, hi + 0.04 * span), lanes, done, short,
                 tuple(_f(row, c) for c in TIMESTAMPS[1:7]), (), "time since the client sent the request (ms)")


def trace_request(result: RunResult, **choice: Any) -> Trace:
    row, how = pick_request(result, **choice)
    waited = explain_wait(result, row)
    return Trace(row, how, steps(row), waited, build_trace_story(result, row, waited, how))


def trace_figure(trace: Trace) -> Figure | None:
    """The swimlane of the traced request (None if it never completed)."""
    if trace.story is None:
        return None
    from kafkasim.report.swimlane import _draw

    figure = _draw(trace.story)
    if str(trace.request["api"]) != "Produce":
        # swimlane's legend names the dashed line for a produce; here it is the moment the response was ready.
        for legend in figure.legends:
            for text in legend.get_texts():
                if text.get_text() in ("high watermark reaches the batch", "produce completes with an error"):
                    text.set_text("response ready (delayed operation completed)")
    return figure


def trace_json(trace: Trace) -> Mapping[str, Any]:
    return {"request_id": int(trace.request["request_id"]), "picked": trace.how_picked,
            "steps": [{"at_ms": s.at_ms, "stage": s.name, "since_previous": s.since_previous} for s in trace.steps],
            "waited": list(trace.waited)}
