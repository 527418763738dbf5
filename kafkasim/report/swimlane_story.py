"""What the produce swimlane shows, worked out from the run's tables before anything is drawn.

Kafka's acks=all path (RF=3, idle followers parked at LEO=N; ``ReplicaManager.appendRecords``,
``DelayedProduce``, ``DelayedFetch``, ``Partition.maybeIncrementLeaderHW``): the produce is appended on the
handler thread (Local), its DelayedProduce waits in the Produce purgatory (Remote) while the append wakes the
followers' parked fetches, which carry the batch; each follower appends and fetches again at N+k, and when the
last ISR follower reports N+k the HW reaches N+k, which completes the DelayedProduce on that fetch's handler
thread. Every span here comes from a recorded timestamp; the roles ("carries the batch", "moves the HW") are
read off the timestamps, never assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.report.frames import acks_column, after_warmup, finite, metric, natural_key, warmup_ms
from kafkasim.report.latency_scale import short_ms
from kafkasim.report.palette import PHASE_LABELS, PHASES, api_colour
from kafkasim.report.skip import SkipFigure

# A request's life in Kafka's RequestMetrics timestamps (``RequestChannel.Request``), client ends included.
TIMESTAMPS = ("client_send_ms", "start_ms", "dequeue_ms", "local_complete_ms", "response_complete_ms",
              "response_dequeue_ms", "end_ms", "client_receive_ms")
PHASE_BOUNDS = dict(zip(PHASES, zip(TIMESTAMPS[1:6], TIMESTAMPS[2:7], strict=True), strict=True))
EPSILON_MS = 1e-6
MAX_CONSUMER_LANES = 3


def duration(ms: float) -> str:
    return f"{short_ms(ms)} ms"


@dataclass(frozen=True)
class Span:
    """A bar in a lane. kind: a RequestMetrics phase name, "network", "client_wait" or "follower_append"."""

    start_ms: float
    end_ms: float
    kind: str
    label: str = ""


@dataclass
class Lane:
    name: str
    colour: str
    spans: list[Span] = field(default_factory=list)


@dataclass(frozen=True)
class Story:
    request_id: Any
    title: str
    subtitle: str
    origin_ms: float
    window_ms: tuple[float, float]
    lanes: list[Lane]
    hw_time_ms: float
    hw_text: str
    instants_ms: tuple[float, ...]
    late_consumers: tuple[str, ...]
    x_label: str


def _complete(frame: pd.DataFrame) -> pd.Series:
    values = frame[list(TIMESTAMPS)].to_numpy(dtype=float, na_value=np.nan)
    return pd.Series(np.isfinite(values).all(axis=1), index=frame.index)


def _acks_all_produces(requests: pd.DataFrame) -> pd.DataFrame:
    produce = requests[requests["api"].astype(str) == "Produce"]
    if "acks" not in produce.columns:
        return produce.iloc[0:0]
    return produce[(acks_column(produce) == -1).fillna(False)]


def choose_produce(requests: pd.DataFrame | None, summary: Mapping[str, Any] | None,
                   request_id: Any = None) -> pd.Series:
    """The acks=all Produce to follow: `request_id` if given, else the one whose TotalTimeMs is closest
    to the median of successful acks=all produces sent after warm-up (earliest on ties).

    Raises ValueError when `request_id` names no drawable acks=all produce (a user mistake), SkipFigure
    when the run has none to choose from.
    """
    needed = {"request_id", "api", "acks", "TotalTimeMs", *TIMESTAMPS}
    if requests is None or requests.empty or not needed <= set(requests.columns):
        raise SkipFigure("no requests with the RequestMetrics timestamps")
    produces = _acks_all_produces(requests)
    if request_id is not None:
        row = requests[requests["request_id"] == request_id]
        if row.empty:
            raise ValueError(f"request_id {request_id!r} is not in the run's requests")
        if row.index[0] not in produces.index:
            api, acks = row["api"].iloc[0], row["acks"].iloc[0]
            raise ValueError(f"request_id {request_id!r} is a {api} request (acks={acks}); the swimlane "
                             "follows an acks=all (acks=-1) Produce request")
        if not _complete(row).iloc[0]:
            raise ValueError(f"request_id {request_id!r} never completed (a timestamp is missing), "
                             "so there is no timeline to draw")
        return row.iloc[0]
    if produces.empty:
        raise SkipFigure("no acks=all Produce requests in the run")
    ok = produces[_complete(produces)]
    if "error" in ok.columns:
        ok = ok[ok["error"].fillna(0).astype(int) == 0]
    if "client_timeout" in ok.columns:
        ok = ok[~ok["client_timeout"].fillna(False).astype(bool)]
    if ok.empty:
        raise SkipFigure("no acks=all Produce request completed without error")
    after = after_warmup(ok, warmup_ms(summary))
    pool = after if not after.empty else ok
    median = float(np.median(pool["TotalTimeMs"].to_numpy(float)))
    distance = (pool["TotalTimeMs"].astype(float) - median).abs()
    order = pd.DataFrame({"d": distance, "t": pool["client_send_ms"].astype(float)}).sort_values(
        ["d", "t"], kind="stable")
    return pool.loc[order.index[0]]


def _t(row: pd.Series, column: str) -> float:
    return float(row[column])


def _fetch_spans(row: pd.Series, role: str = "") -> list[Span]:
    """A fetch drawn in its own lane with its own timestamps: wire, the five phases, wire back. The role
    goes on the phase where it happened: Remote for a parked fetch woken by an event, else Local."""
    parked = _t(row, "response_complete_ms") - _t(row, "local_complete_ms") > EPSILON_MS
    role_phase = "RemoteTimeMs" if parked and not role.startswith("reports") else "LocalTimeMs"
    spans = [Span(_t(row, "client_send_ms"), _t(row, "start_ms"), "network")]
    for phase, (begin, end) in PHASE_BOUNDS.items():
        spans.append(Span(_t(row, begin), _t(row, end), phase, role if phase == role_phase else ""))
    spans.append(Span(_t(row, "end_ms"), _t(row, "client_receive_ms"), "network"))
    return spans


def _batches(records: pd.DataFrame | None, request_id: Any) -> pd.DataFrame:
    """The request's batches that the leader appended (the recorder writes offset -1 for the others)."""
    if records is None or records.empty or "request_id" not in records.columns:
        return pd.DataFrame()
    mine = records[records["request_id"] == request_id]
    if "offset" in mine.columns:
        mine = mine[mine["offset"].to_numpy(dtype=float, na_value=np.nan) >= 0]
    return mine


def _required_offsets(batches: pd.DataFrame) -> dict[str, int]:
    """Per partition, the offset the HW must reach: last offset of the request's batches + 1 (Kafka's
    ``ProducePartitionStatus.requiredOffset``)."""
    needed: dict[str, int] = {}
    if batches.empty or not {"topic", "partition", "offset", "record_count"} <= set(batches.columns):
        return needed
    for _, batch in batches.iterrows():
        key = f"{batch['topic']}-{int(batch['partition'])}"
        needed[key] = max(needed.get(key, 0), int(batch["offset"]) + int(batch["record_count"]))
    return needed


def _hw_instant(timeseries: pd.DataFrame | None, needed: dict[str, int], produce: pd.Series) -> tuple[float, str]:
    """When the HW reached the required offset, from the time series if it resolves the moment."""
    remote_from, remote_to = _t(produce, "local_complete_ms"), _t(produce, "response_complete_ms")
    error = int(produce["error"]) if "error" in produce.index and pd.notna(produce["error"]) else 0
    if error != 0:
        # The DelayedProduce timed out (Kafka's DelayedProduce.onExpiration) or an ISR problem: the
        # DelayedProduce completed without the HW getting there.
        name = produce["error_name"] if "error_name" in produce.index else f"error {error}"
        return remote_to, f"DelayedProduce completed with {name}"
    label = ", ".join(f"{p} HW \u2265 {o}" for p, o in sorted(needed.items())) or "HW \u2265 required offset"
    if timeseries is not None and not timeseries.empty and needed and {"metric", "entity"} <= set(timeseries.columns):
        hw = metric(timeseries, "HighWatermark")
        times = []
        for partition, offset in needed.items():
            reached = hw[(hw["entity"] == partition) & (hw["value"] >= offset)]
            times.append(float(reached["time_ms"].min()) if not reached.empty else np.inf)
        moment = max(times)
        if remote_from - EPSILON_MS <= moment <= remote_to + EPSILON_MS:
            return moment, label.replace("\u2265", "\u2192")
    # Sampled too coarsely (or not at all): DelayedProduce completing is itself the proof
    # (DelayedProduce.tryComplete completes only when the HW reached the required offset).
    return remote_to, f"{label} (implied: DelayedProduce completed)"


def _client_lanes(requests: pd.DataFrame, api: str, window: tuple[float, float]) -> dict[str, pd.DataFrame]:
    rows = requests[(requests["api"].astype(str) == api) & _complete(requests)]
    lo, hi = window
    overlapping = rows[(rows["client_send_ms"].astype(float) <= hi) & (rows["client_receive_ms"].astype(float) >= lo)]
    lanes: dict[str, pd.DataFrame] = {}
    for client in sorted(set(overlapping["client"].astype(str)), key=natural_key):
        lanes[client] = overlapping[overlapping["client"].astype(str) == client].sort_values("client_send_ms")
    return lanes


def _follower_lane(client: str, fetches: pd.DataFrame, produce: pd.Series, offsets_text: str) -> Lane:
    """The follower's fetches; the one that carries the batch and the next one (which reports the new LEO,
    Kafka's ``Partition.updateFollowerFetchState``) are labelled, and the gap between them is the follower
    appending to its own log."""
    appended, completed = _t(produce, "dequeue_ms"), _t(produce, "response_complete_ms")
    lane = Lane(f"{client}\n(FetchFollower)", api_colour("FetchFollower"))
    rows = [fetch for _, fetch in fetches.iterrows()]
    roles = [""] * len(rows)
    carrier = next((i for i, f in enumerate(rows)
                    if appended - EPSILON_MS <= _t(f, "response_complete_ms") <= completed + EPSILON_MS), None)
    if carrier is not None:
        parked = _t(rows[carrier], "response_complete_ms") - _t(rows[carrier], "local_complete_ms") > EPSILON_MS
        roles[carrier] = f"{'parked, woken by the append: ' if parked else ''}returns {offsets_text}"
        received = _t(rows[carrier], "client_receive_ms")
        confirm = next((i for i in range(carrier + 1, len(rows))
                        if _t(rows[i], "client_send_ms") >= received - EPSILON_MS), None)
        if confirm is not None:
            fetch = rows[confirm]
            handled_from, handled_to = _t(fetch, "dequeue_ms"), _t(fetch, "local_complete_ms")
            moved_hw = handled_from - EPSILON_MS <= completed <= handled_to + EPSILON_MS
            roles[confirm] = "reports its new LEO" + (" \u21d2 HW advances, produce completes" if moved_hw else "")
            lane.spans.append(Span(received, _t(fetch, "client_send_ms"), "follower_append", ""))
    for fetch, role in zip(rows, roles, strict=True):
        lane.spans.extend(_fetch_spans(fetch, role))
    return lane


def _consumer_lane(client: str, fetches: pd.DataFrame, seen_ms: float) -> Lane:
    lane = Lane(f"{client}\n(FetchConsumer)", api_colour("FetchConsumer"))
    for _, fetch in fetches.iterrows():
        returned_it = abs(_t(fetch, "client_receive_ms") - seen_ms) <= 1e-3
        role = "parked at the HW, woken when the HW passes the batch: returns it" if returned_it else ""
        lane.spans.extend(_fetch_spans(fetch, role))
    return lane


def _offsets_text(batches: pd.DataFrame, needed: dict[str, int]) -> str:
    if batches.empty or not needed:
        return "the batch"
    first, last = int(batches["offset"].min()), max(needed.values()) - 1
    return f"offsets {first}\u2013{last}" if last > first else f"offset {first}"


def _produce_lanes(produce: pd.Series, origin: float) -> list[Lane]:
    """The produce's own lanes: client, network processor, handler thread, Produce purgatory."""
    intended, send, receive = origin, _t(produce, "client_send_ms"), _t(produce, "client_receive_ms")
    producer = Lane(f"{produce.get('client', 'producer')}\n(producer)", api_colour("Produce"))
    if send - intended > EPSILON_MS:
        producer.spans.append(Span(intended, send, "client_wait", f"waits to send {duration(send - intended)}"))
    # Each label names the span under it: this bar is client_latency_ms (send -> receive); the produce
    # latency from the intended send (intended -> receive) is the bracket the figure draws over both bars.
    producer.spans.append(Span(send, receive, "client_wait",
                               f"waits for the ack: client send \u2192 receive {duration(receive - send)}"))
    start, end = _t(produce, "start_ms"), _t(produce, "end_ms")
    network = Lane("network\n(processor)", "black",
                   [Span(send, start, "network", f"request {duration(start - send)}")])
    handler = Lane("request handler\n(io thread)", "black")
    purgatory = Lane("Produce purgatory\n(DelayedProduce)", "black")
    where = {
        "RequestQueueTimeMs": (handler, "RequestQueue"),
        "LocalTimeMs": (handler, "Local: append to leader log"),
        "RemoteTimeMs": (purgatory, "Remote: waits until the HW reaches the batch end"),
        "ResponseQueueTimeMs": (network, "ResponseQueue"),
        "ResponseSendTimeMs": (network, "ResponseSend"),
    }
    for phase, (begin, finish) in PHASE_BOUNDS.items():
        lane, text = where[phase]
        begin_ms, end_ms = _t(produce, begin), _t(produce, finish)
        lane.spans.append(Span(begin_ms, end_ms, phase, f"{text} {duration(end_ms - begin_ms)}"))
    network.spans.append(Span(end, receive, "network", f"response {duration(receive - end)}"))
    return [producer, network, handler, purgatory]


def _consumer_lanes(requests: pd.DataFrame, batches: pd.DataFrame, receive: float, span: float
                    ) -> tuple[list[Lane], list[str], float]:
    """(lanes, notes on consumers that saw the batch too late to draw, latest time to show)."""
    lanes: list[Lane] = []
    late: list[str] = []
    show_until = receive
    seen_columns = sorted((c for c in batches.columns if c.startswith("consumed_ms:")), key=natural_key)
    for column in seen_columns[:MAX_CONSUMER_LANES]:
        consumer = column.split(":", 1)[1]
        seen = finite(batches[column])
        if seen.size == 0:
            continue
        seen_ms = float(seen.min())
        if seen_ms > receive + 2 * span:
            late.append(f"{consumer} sees it {duration(seen_ms - receive)} after the ack")
            continue
        show_until = max(show_until, seen_ms)
        around = _client_lanes(requests, "FetchConsumer", (seen_ms - EPSILON_MS, seen_ms + EPSILON_MS))
        if consumer in around:
            lanes.append(_consumer_lane(consumer, around[consumer], seen_ms))
    return lanes, late, show_until


def build_story(requests: pd.DataFrame | None, records: pd.DataFrame | None, timeseries: pd.DataFrame | None,
                summary: Mapping[str, Any] | None, request_id: Any = None) -> Story:
    """Everything the swimlane draws for one acks=all produce (see choose_produce for which one)."""
    produce = choose_produce(requests, summary, request_id)
    assert requests is not None  # choose_produce has checked
    rid = produce["request_id"]
    send, receive = _t(produce, "client_send_ms"), _t(produce, "client_receive_ms")
    intended = produce.get("intended_ms", np.nan)
    origin = min(float(intended), send) if pd.notna(intended) else send
    batches = _batches(records, rid)
    needed = _required_offsets(batches)
    offsets_text = _offsets_text(batches, needed)
    hw_time, hw_text = _hw_instant(timeseries, needed, produce)

    lanes = _produce_lanes(produce, origin)
    for name, fetches in _client_lanes(requests, "FetchFollower", (_t(produce, "dequeue_ms"), receive)).items():
        lanes.append(_follower_lane(name, fetches, produce, offsets_text))
    span = max(receive - origin, 1e-3)
    consumers, late, show_until = _consumer_lanes(requests, batches, receive, span)
    lanes.extend(consumers)

    phases = " + ".join(
        f"{PHASE_LABELS[p]} {short_ms(_t(produce, e) - _t(produce, b))}" for p, (b, e) in PHASE_BOUNDS.items())
    chosen = "as requested" if request_id is not None else "the one closest to the median TotalTimeMs"
    where = ", ".join(sorted(needed)) or "its partition"
    outcome = ("acknowledged once the high watermark passes the batch" if "completed with" not in hw_text
               else f"answered with {produce.get('error_name', 'an error')}")
    title = f"One acks=all produce request, #{rid} ({chosen})\n{where}, {offsets_text}: {outcome}"
    subtitle = f"TotalTimeMs {duration(float(produce['TotalTimeMs']))} = {phases} ms"
    x_label = ("time since the producer sent the request (ms)" if origin == send
               else "time since the batch was due to be sent, its intended send time (ms)")
    return Story(rid, title, subtitle, origin, (origin - 0.04 * span, show_until + 0.04 * span), lanes, hw_time,
                 hw_text, tuple(_t(produce, c) for c in TIMESTAMPS[1:7]), tuple(late), x_label)
