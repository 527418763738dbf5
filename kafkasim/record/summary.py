"""The run summary: counts and latency percentiles, computed from the recorded tables (never by hand in
model code).

Percentiles come from an HdrHistogram recording microseconds with 3 significant digits, as Kafka's and
most latency tools report them; `max` and `mean` are exact. Requests and batches sent before the warm-up
ends are left out (by `client_send_ms` / `send_ms`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram

from kafkasim.record.recorder import APIS, BREAKDOWN

PERCENTILES = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p99.9", 99.9))
# One hour in microseconds; longer values are clamped to it (a run's latencies are far below).
_HIGHEST_US = 3_600_000_000
_SIGNIFICANT_DIGITS = 3
# With 3 significant digits a histogram bucket holds 2^11 distinct sub-buckets: values below 2048 us are
# exact, above that a value shares its bucket with others that differ only in the low bits.
_SUB_BUCKET_BITS = 11

ACKS_LABELS = {-1: "all", 0: "0", 1: "1"}


def _lowest_equivalent_us(values: np.ndarray) -> np.ndarray:
    """HdrHistogram's lowest equivalent value, vectorised: recording one value per bucket with a count is
    the same histogram as recording every value, and turns a million calls into a few thousand."""
    _, bit_length = np.frexp(values.astype(np.float64))  # exact for integers below 2^53
    bits = np.maximum(bit_length.astype(np.int64) - _SUB_BUCKET_BITS, 0)
    return (values >> bits) << bits


def percentiles(values_ms: Any) -> dict[str, float | int | None]:
    """count, mean, p50, p95, p99, p99.9 and max of the finite values (ms); None when there are none."""
    array = np.asarray(values_ms, dtype=np.float64)
    array = array[np.isfinite(array)]
    result: dict[str, float | int | None] = {"count": int(array.size)}
    if array.size == 0:
        result.update({"mean": None, **{name: None for name, _ in PERCENTILES}, "max": None})
        return result
    micros = np.clip(np.rint(array * 1000.0), 0, _HIGHEST_US).astype(np.int64)
    histogram = HdrHistogram(1, _HIGHEST_US, _SIGNIFICANT_DIGITS)
    buckets, counts = np.unique(_lowest_equivalent_us(micros), return_counts=True)
    for value, count in zip(buckets.tolist(), counts.tolist(), strict=True):
        histogram.record_value(value, count)
    result["mean"] = float(array.mean())
    largest = float(array.max())
    for name, q in PERCENTILES:
        # HdrHistogram answers with the highest value equivalent to the bucket (<= 0.1% above the true
        # value); never report a percentile above the exact maximum.
        result[name] = min(histogram.get_value_at_percentile(q) / 1000.0, largest)
    result["max"] = largest
    return result


def acks_label(acks: int) -> str:
    return f"acks={ACKS_LABELS.get(acks, str(acks))}"


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


def _api_summary(rows: pd.DataFrame) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "count": int(len(rows)),
        "errors": int((rows["error"].to_numpy() != 0).sum()),
        "client_timeouts": int(rows["client_timeout"].to_numpy(dtype=bool).sum()),
    }
    for name, _, _ in BREAKDOWN:
        summary[name] = percentiles(_floats(rows, name))
    summary["client_latency_ms"] = percentiles(_floats(rows, "client_latency_ms"))
    return summary


def _produce_latency(records: pd.DataFrame) -> dict[str, Any]:
    ok = records[(records["error"].to_numpy() == 0) & np.isfinite(_floats(records, "ack_ms"))]
    out: dict[str, Any] = {}
    acks = ok["acks"].to_numpy(dtype=np.float64, na_value=np.nan)
    for value in sorted({int(a) for a in acks[np.isfinite(acks)]}):
        rows = ok[acks == value]
        out[acks_label(value)] = {
            "batches": int(len(rows)),
            # Open-loop load: from the time the first record was meant to be sent, so queueing in the
            # producer counts (no coordinated omission).
            "from_intended": percentiles(_floats(rows, "ack_ms") - _floats(rows, "first_intended_ms")),
            "from_send": percentiles(_floats(rows, "ack_ms") - _floats(rows, "send_ms")),
        }
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def summarize(
    requests: pd.DataFrame,
    records: pd.DataFrame,
    *,
    seed: int | None,
    simulated_duration_ms: float,
    warmup_ms: float = 0.0,
    events: int | None = None,
    counters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A JSON-able summary of a run: a function of the run's rows alone, so a replay writes the same bytes
    (wall-clock facts go to the result's run-info, never here). `counters` (ISR shrinks/expands, expirations per purgatory, dropped
    messages, ...) are copied as given."""
    kept = requests[_floats(requests, "client_send_ms") >= warmup_ms] if warmup_ms > 0 else requests
    batches = records[_floats(records, "send_ms") >= warmup_ms] if warmup_ms > 0 else records
    summary: dict[str, Any] = {
        "seed": seed,
        "simulated_duration_ms": simulated_duration_ms,
        "warmup_ms": warmup_ms,
        "simulated_requests": int(len(requests)),
        "events": events,
        "requests_after_warmup": int(len(kept)),
        "apis": {},
        "produce_latency": _produce_latency(batches),
        "e2e_latency": percentiles(_floats(batches, "e2e_latency_ms")),
        "counters": dict(counters or {}),
    }
    api_column = kept["api"].astype(str).to_numpy()
    for api in APIS:
        rows = kept[api_column == api]
        if len(rows):
            summary["apis"][api] = _api_summary(rows)
    return _json_value(summary)
