"""A small hand-made run that follows Kafka's acks=all produce step by step (DelayedProduce, DelayedFetch), as
the engine's tables would show it.

One partition orders-0, leader broker 0, followers follower-1 / follower-2 (brokers 1 and 2, both in the
ISR), one consumer parked at the HW, producer-1 (acks=all) and, every fourth cycle, producer-2 (acks=1).
Each 10 ms cycle: the produce is appended (Local), the append's tryCompleteActions wakes the parked
follower fetches (they carry the batch), each follower appends and fetches again at the new LEO, the
second follower's fetch moves the HW, which completes the DelayedProduce on that fetch's handler thread
and wakes the consumer's parked fetch. The first cycle has a cold-start request queue of 5 ms, inside the
30 ms warm-up, so figures that drop warm-up must not show it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

WARMUP_MS = 30.0
COLD_QUEUE_MS = 5.0
RECORDS_PER_BATCH = 5
CYCLES = 24
FETCH_MAX_WAIT_MS = 500.0


@dataclass
class Run:
    requests: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    gauges: list[tuple[float, str, str, float]] = field(default_factory=list)
    deltas: list[tuple[float, str, str, int]] = field(default_factory=list)

    def request(self, api: str, client: str, send: float, queue: float, local: float, *,
                acks: int | None = None, net: float = 0.4) -> dict[str, Any]:
        start = send + net
        row = {"request_id": len(self.requests) + 1, "api": api, "client": client, "partitions": 1,
               "request_bytes": 1200 if api == "Produce" else 90, "response_bytes": 60, "acks": acks,
               "error": 0, "error_name": "NONE", "client_timeout": False, "intended_ms": send,
               "client_send_ms": send, "start_ms": start, "dequeue_ms": start + queue,
               "local_complete_ms": start + queue + local, "net": net}
        self.requests.append(row)
        return row

    @staticmethod
    def respond(row: dict[str, Any], at: float) -> None:
        row["response_complete_ms"] = at
        row["response_dequeue_ms"] = at + 0.01
        row["end_ms"] = at + 0.06
        row["client_receive_ms"] = at + 0.06 + row.pop("net")

    def park(self, at: float, purgatory: str) -> None:
        self.deltas.append((at, "PurgatorySize", purgatory, +1))
        self.deltas.append((at, "NumDelayedOperations", purgatory, +1))

    def unpark(self, at: float, purgatory: str) -> None:
        self.deltas.append((at, "PurgatorySize", purgatory, -1))
        self.deltas.append((at, "NumDelayedOperations", purgatory, -1))


def build_run() -> Run:
    rng = np.random.default_rng(7)
    run = Run()
    followers = {"follower-1": 1, "follower-2": 2}
    starts = [("HighWatermark", "orders-0"), *(("LogEndOffset", f"orders-0/replica-{b}") for b in (0, 1, 2))]
    for metric, entity in starts:
        run.gauges.append((0.0, metric, entity, 0.0))
    run.gauges.append((0.0, "IsrSize", "orders-0", 3.0))
    # Everyone starts parked at LEO = HW = 0 (idle followers parked at LEO=N in DelayedFetch).
    parked = {name: run.request("FetchFollower", name, 0.1 * b, 0.02, 0.05) for name, b in followers.items()}
    consumer = run.request("FetchConsumer", "consumer-1", 0.3, 0.02, 0.05)
    for row in [*parked.values(), consumer]:
        run.park(row["local_complete_ms"], "Fetch")
    leo = 0
    for cycle in range(CYCLES):
        acks = 1 if cycle % 4 == 3 else -1
        producer = "producer-2" if acks == 1 else "producer-1"
        queue = COLD_QUEUE_MS if cycle == 0 else float(rng.uniform(0.02, 0.3))
        produce = run.request("Produce", producer, 10.0 * cycle + 1.0, queue, 0.15, acks=acks,
                              net=float(rng.uniform(0.3, 0.6)))
        appended_at = produce["dequeue_ms"] + 0.1
        leo += RECORDS_PER_BATCH
        run.gauges.append((appended_at, "LogEndOffset", "orders-0/replica-0", float(leo)))
        if acks == -1:
            run.park(produce["local_complete_ms"], "Produce")
        else:
            run.respond(produce, produce["local_complete_ms"])  # acks=1: no Remote phase
        # tryCompleteActions at the end of the produce's handle wakes both parked follower fetches.
        confirmed: list[float] = []
        for name, broker in followers.items():
            woken = parked[name]
            run.respond(woken, produce["local_complete_ms"] - 0.02)
            run.unpark(woken["response_complete_ms"], "Fetch")
            append_ms = 0.2 + 0.15 * broker
            nxt = run.request("FetchFollower", name, woken["client_receive_ms"] + append_ms,
                              float(rng.uniform(0.02, 0.1)), 0.1)
            reported = nxt["dequeue_ms"] + 0.05
            run.gauges.append((reported, "LogEndOffset", f"orders-0/replica-{broker}", float(leo)))
            confirmed.append(reported)
            run.park(nxt["local_complete_ms"], "Fetch")
            parked[name] = nxt
        # Partition.maybeIncrementLeaderHW: HW = min LEO over the ISR, so the later follower moves it
        hw_at = max(confirmed)
        run.gauges.append((hw_at, "HighWatermark", "orders-0", float(leo)))
        if acks == -1:
            run.respond(produce, hw_at)
            run.unpark(hw_at, "Produce")
        run.respond(consumer, hw_at + 0.01)
        run.unpark(consumer["response_complete_ms"], "Fetch")
        run.records.append({
            "batch_id": len(run.records) + 1, "producer": producer, "topic": "orders", "partition": 0,
            "offset": leo - RECORDS_PER_BATCH, "record_count": RECORDS_PER_BATCH, "size_bytes": 1100,
            "acks": acks, "first_intended_ms": produce["intended_ms"], "created_ms": produce["intended_ms"],
            "send_ms": produce["client_send_ms"], "ack_ms": produce["client_receive_ms"], "error": 0,
            "request_id": produce["request_id"], "consumed_ms:consumer-1": consumer["client_receive_ms"],
        })
        consumer = run.request("FetchConsumer", "consumer-1", consumer["client_receive_ms"] + 0.1, 0.02, 0.05)
        run.park(consumer["local_complete_ms"], "Fetch")
    # The run ends with everyone parked; their long polls expire after fetch.max.wait.ms.
    for row in [*parked.values(), consumer]:
        run.respond(row, row["local_complete_ms"] + FETCH_MAX_WAIT_MS)
        run.unpark(row["response_complete_ms"], "Fetch")
    run.gauges.append((max(r["end_ms"] for r in run.requests), "IsrSize", "orders-0", 3.0))
    return run


def requests_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows).drop(columns=["net"], errors="ignore")
    frame["acks"] = frame["acks"].astype("Int8")
    # Kafka's RequestMetrics definitions.
    frame["RequestQueueTimeMs"] = frame["dequeue_ms"] - frame["start_ms"]
    frame["LocalTimeMs"] = frame["local_complete_ms"] - frame["dequeue_ms"]
    frame["RemoteTimeMs"] = frame["response_complete_ms"] - frame["local_complete_ms"]
    frame["ResponseQueueTimeMs"] = frame["response_dequeue_ms"] - frame["response_complete_ms"]
    frame["ResponseSendTimeMs"] = frame["end_ms"] - frame["response_dequeue_ms"]
    frame["TotalTimeMs"] = frame["end_ms"] - frame["start_ms"]
    frame["client_latency_ms"] = frame["client_receive_ms"] - frame["intended_ms"]
    return frame


def records_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["acks"] = frame["acks"].astype("Int8")
    frame["produce_latency_ms"] = frame["ack_ms"] - frame["first_intended_ms"]
    frame["first_consumed_ms"] = frame["consumed_ms:consumer-1"]
    frame["e2e_latency_ms"] = frame["first_consumed_ms"] - frame["first_intended_ms"]
    return frame


def timeseries_frame(run: Run) -> pd.DataFrame:
    rows = list(run.gauges)
    counts: dict[tuple[str, str], int] = {}
    for metric in ("PurgatorySize", "NumDelayedOperations"):
        for purgatory in ("Produce", "Fetch"):
            rows.append((0.0, metric, purgatory, 0.0))
    for at, metric, entity, delta in sorted(run.deltas, key=lambda d: d[0]):
        counts[(metric, entity)] = counts.get((metric, entity), 0) + delta
        rows.append((at, metric, entity, float(counts[(metric, entity)])))
    frame = pd.DataFrame(rows, columns=["time_ms", "metric", "entity", "value"])
    return frame.sort_values(["time_ms", "metric", "entity"], kind="stable").reset_index(drop=True)
