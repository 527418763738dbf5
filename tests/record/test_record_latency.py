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


def test_histogram_summary_answers_as_hdrhistogram() -> None:
    """Percentiles and max from the buckets equal HdrHistogram's own over the same buckets."""
    import random

    from hdrh.histogram import HdrHistogram

    from kafkasim.record.record_latency import RecordLatency, _histogram_summary
    from kafkasim.record.summary import PERCENTILES

    rng = random.Random(5)
    cases = [[0.0], [0.0005], [1.0] * 10, [3_600_001.0], [rng.lognormvariate(1, 1.5) for _ in range(5000)],
             [rng.uniform(0, 100) for _ in range(3)]]
    for latencies in cases:
        buckets: dict[int, int] = {}
        for latency in latencies:
            key = RecordLatency._bucket(latency)
            buckets[key] = buckets.get(key, 0) + 1
        histogram = HdrHistogram(1, RecordLatency.HIGHEST_US, 3)
        for value in sorted(buckets):
            histogram.record_value(value, buckets[value])
        out = _histogram_summary(buckets, sum(latencies))
        for name, q in PERCENTILES:
            assert out[name] == histogram.get_value_at_percentile(q) / 1000.0, (name, latencies[:5])
        assert out["max"] == histogram.get_max_value() / 1000.0
