"""RecordLatency buckets per-record latencies in batches (vectorised); the buckets must be ``_bucket``'s."""

from __future__ import annotations

import random

from kafkasim.record.record_latency import RecordLatency


def test_poured_buckets_are_those_of_bucket_per_value() -> None:
    rng = random.Random(5)
    values = [0.0, -0.0004, 0.0004, 0.0005, 2.047, 2.0475, 2.048, 2.0485, 4.095, 4.0965, 1e7, 3.6e6, 3.6e6 + 1]
    values += [rng.lognormvariate(0.0, 2.0) for _ in range(5000)]
    expected: dict[int, int] = {}
    for value in values:
        key = RecordLatency._bucket(value)
        expected[key] = expected.get(key, 0) + 1
    poured: dict[int, int] = {}
    pending = list(values)
    RecordLatency._pour(pending, poured)
    assert poured == expected
    assert pending == []
