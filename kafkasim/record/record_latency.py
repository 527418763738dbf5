"""Produce latency of every record, per acks setting, in HdrHistogram buckets."""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from kafkasim.clients.accumulator import ProducerBatch
from kafkasim.record.summary import (
    PERCENTILES,
    acks_label,
    bucket_shift,
    highest_equivalent_us,
    values_at_percentiles,
)


class RecordLatency:
    """Produce latency of every record (not only a batch's oldest), from its intended send time and from
    the send of the request that carried it, per acks setting. Records intended before the warm-up ends
    are left out.

    Values are counted in HdrHistogram buckets (µs, 3 significant digits, like the summary's) while the run
    goes -- a count per bucket instead of a ``record_value`` call -- and summarised from them at the end.
    The per-record latencies (from the intended time, and end to end) wait in a short list and are bucketed
    ``POUR_EVERY`` at a time, vectorised, into an array of one count per bucket (``bucket_index``; the same
    buckets as ``_bucket``: no Python call per record, and no dict update per bucket, which was most of a
    pour). A batch's latency from its send is one value per batch, counted in a dict. Memory is bounded:
    ``BUCKETS`` counts per histogram and that list.
    """

    HIGHEST_US: Final = 3_600_000_000
    SUB_BUCKET_BITS: Final = 11  # 3 significant digits: values below 2048 µs are exact
    POUR_EVERY = 4096

    def __init__(self, warmup_ms: float = 0.0) -> None:
        self.warmup_ms = warmup_ms
        # acks -> (from-intended counts per bucket index, from-send buckets, [sum from intended, sum from send],
        #          from-intended latencies not bucketed yet)
        self._by_acks: dict[int, tuple[np.ndarray, dict[int, int], list[float], list[float]]] = {}
        # acks -> (end-to-end buckets, [sum], end-to-end latencies not bucketed yet): each record from its
        # intended send to its batch's first consumption (OpenMessaging Benchmark's and Kafka's
        # EndToEndLatency count per message; the records table's e2e_latency_ms is the batch's oldest record's)
        self._e2e_by_acks: dict[int, tuple[np.ndarray, list[float], list[float]]] = {}

    @classmethod
    def _bucket(cls, latency_ms: float) -> int:
        us = int(latency_ms * 1000.0 + 0.5)
        if us <= 0:
            return 0
        if us > cls.HIGHEST_US:
            us = cls.HIGHEST_US
        shift = us.bit_length() - cls.SUB_BUCKET_BITS
        return (us >> shift) << shift if shift > 0 else us

    def add(self, acks: int, batch: ProducerBatch, ack_ms: float) -> None:
        entry = self._by_acks.get(acks)
        if entry is None:
            entry = self._by_acks[acks] = (np.zeros(BUCKETS, dtype=np.int64), {}, [0.0, 0.0], [])
        from_intended, from_send, sums, pending = entry
        warmup = self.warmup_ms
        latencies = [ack_ms - intended for intended in batch.intended_ms if intended >= warmup]
        kept = len(latencies)
        if kept:
            latency = ack_ms - batch.send_ms
            sums[1] += latency * kept
            key = self._bucket(latency)
            from_send[key] = from_send.get(key, 0) + kept
            self._collect(latencies, sums, pending, from_intended)

    def add_e2e(self, acks: int, intended_ms: list[float], consumed_ms: float) -> None:
        """The records of a batch first consumed at ``consumed_ms``, each from its intended send time."""
        entry = self._e2e_by_acks.get(acks)
        if entry is None:
            entry = self._e2e_by_acks[acks] = (np.zeros(BUCKETS, dtype=np.int64), [0.0], [])
        buckets, sums, pending = entry
        warmup = self.warmup_ms
        latencies = [consumed_ms - intended for intended in intended_ms if intended >= warmup]
        if latencies:
            self._collect(latencies, sums, pending, buckets)

    def _collect(self, latencies: list[float], sums: list[float], pending: list[float],
                 buckets: np.ndarray) -> None:
        """Add ``latencies`` to ``sums[0]`` record by record, in order, and queue them for ``buckets``."""
        total = sums[0]
        for latency in latencies:
            total += latency
        sums[0] = total
        pending += latencies
        if len(pending) >= self.POUR_EVERY:
            self._pour(pending, buckets)

    def e2e_summary(self) -> dict[str, Any]:
        """Per acks setting: records consumed and their end-to-end latency from the intended send."""
        out: dict[str, Any] = {}
        for acks in sorted(self._e2e_by_acks):
            buckets, sums, pending = self._e2e_by_acks[acks]
            if pending:
                self._pour(pending, buckets)
            out[acks_label(acks)] = {"records": int(buckets.sum()),
                                     "from_intended": _histogram_summary(*_bucket_arrays(buckets), sums[0])}
        return out

    @classmethod
    def _pour(cls, pending: list[float], counts: np.ndarray) -> None:
        """Count ``pending`` latencies (ms) into ``counts`` at their ``bucket_index`` -- ``_bucket`` of each,
        vectorised -- and empty it."""
        scaled = np.asarray(pending, dtype=np.float64) * 1000.0 + 0.5
        micros = np.clip(np.trunc(scaled), 0, cls.HIGHEST_US).astype(np.int64)  # int(): truncation
        poured = np.bincount(bucket_index(micros))
        counts[:poured.size] += poured
        pending.clear()

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for acks in sorted(self._by_acks):
            from_intended, from_send, sums, pending = self._by_acks[acks]
            if pending:
                self._pour(pending, from_intended)
            out[acks_label(acks)] = {
                "records": int(from_intended.sum()),
                "from_intended": _histogram_summary(*_bucket_arrays(from_intended), sums[0]),
                "from_send": _histogram_summary(*_dict_arrays(from_send), sums[1]),
            }
        return out


def bucket_index(micros: np.ndarray) -> np.ndarray:
    """Each value's bucket as an index from 0 to ``BUCKETS - 1``, in the order of the buckets' lowest
    equivalent values (``lowest_equivalent_us``): a value below 2048 µs is its own index; above, a bucket
    per 2^shift values, 1024 buckets per shift (HdrHistogram's sub-bucket counts with 3 significant digits)."""
    shift = bucket_shift(micros)
    return (micros >> shift) + (shift << (RecordLatency.SUB_BUCKET_BITS - 1))


BUCKETS: Final = int(bucket_index(np.array([RecordLatency.HIGHEST_US], dtype=np.int64))[0]) + 1


def _bucket_arrays(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The buckets holding values, as (ascending lowest equivalent values in µs, their counts)."""
    index = np.flatnonzero(counts)
    half = 1 << (RecordLatency.SUB_BUCKET_BITS - 1)
    shift = np.maximum(index // half - 1, 0)
    return (index - shift * half) << shift, counts[index]


def _dict_arrays(buckets: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(buckets)
    return np.array(keys, dtype=np.int64), np.array([buckets[key] for key in keys], dtype=np.int64)


def _histogram_summary(keys: np.ndarray, counts: np.ndarray, total_ms: float) -> dict[str, Any]:
    """Count, mean, PERCENTILES and max of the histogram of ``counts[i]`` values in the bucket whose lowest
    equivalent value is ``keys[i]`` (ascending, µs)."""
    count = int(counts.sum())
    if count == 0:
        return {"count": 0}
    # The buckets' keys are HdrHistogram's lowest equivalent values: the histogram they make answers its
    # percentiles from one cumulative sum (summary.values_at_percentiles), and its max
    # (HdrHistogram.get_max_value) is the highest value equivalent to the largest key.
    values = values_at_percentiles(keys, counts)
    out: dict[str, Any] = {"count": count, "mean": total_ms / count}
    for (name, _), value_us in zip(PERCENTILES, values, strict=True):
        out[name] = value_us / 1000.0
    last = int(keys[-1])
    out["max"] = (highest_equivalent_us(last) if last else 0) / 1000.0
    return out
