"""RecordLatency buckets per-record latencies in batches (vectorised); the buckets must be ``_bucket``'s."""

from __future__ import annotations

import random

import numpy as np

from kafkasim.record.record_latency import BUCKETS, RecordLatency, _bucket_arrays, bucket_index
from kafkasim.record.summary import lowest_equivalent_us


def _as_dict(counts: np.ndarray) -> dict[int, int]:
    keys, values = _bucket_arrays(counts)
    return dict(zip(keys.tolist(), values.tolist(), strict=True))


def test_poured_buckets_are_those_of_bucket_per_value() -> None:
    rng = random.Random(5)
    values = [0.0, -0.0004, 0.0004, 0.0005, 2.047, 2.0475, 2.048, 2.0485, 4.095, 4.0965, 1e7, 3.6e6, 3.6e6 + 1]
    values += [rng.lognormvariate(0.0, 2.0) for _ in range(5000)]
    expected: dict[int, int] = {}
    for value in values:
        key = RecordLatency._bucket(value)
        expected[key] = expected.get(key, 0) + 1
    poured = np.zeros(BUCKETS, dtype=np.int64)
    pending = list(values)
    RecordLatency._pour(pending, poured)
    assert _as_dict(poured) == expected
    assert pending == []
    RecordLatency._pour(list(values), poured)  # a second pour adds to the counts
    assert _as_dict(poured) == {key: 2 * count for key, count in expected.items()}


def test_bucket_indexes_follow_the_lowest_equivalent_values() -> None:
    # Every bucket edge up to the highest value: a bucket's index maps back to its lowest equivalent value,
    # and the indexes ascend with the values, so the counts array is the histogram in order.
    edges = [0, 1, 2047, 2048, 2049, 2050, 4095, 4096, 4100, RecordLatency.HIGHEST_US]
    edges += [(1 << bits) + delta for bits in range(11, 32) for delta in (-1, 0, 1)]
    rng = np.random.default_rng(5)
    micros = np.unique(np.concatenate([np.array(edges, dtype=np.int64),
                                       rng.integers(0, RecordLatency.HIGHEST_US, 20_000)]))
    index = bucket_index(micros)
    assert index.min() == 0 and index.max() == BUCKETS - 1 == 23_220  # HIGHEST_US: (3.6e9 >> 21) + 21 * 1024
    assert np.all(np.diff(index) >= 0)
    counts = np.bincount(index, minlength=BUCKETS)
    keys, _ = _bucket_arrays(counts)
    assert keys.tolist() == np.unique(lowest_equivalent_us(micros)).tolist()


def test_histogram_summary_answers_as_hdrhistogram() -> None:
    """Percentiles and max from the buckets equal HdrHistogram's own over the same buckets."""
    import random

    from hdrh.histogram import HdrHistogram

    from kafkasim.record.record_latency import RecordLatency, _dict_arrays, _histogram_summary
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
        out = _histogram_summary(*_dict_arrays(buckets), sum(latencies))
        for name, q in PERCENTILES:
            assert out[name] == histogram.get_value_at_percentile(q) / 1000.0, (name, latencies[:5])
        assert out["max"] == histogram.get_max_value() / 1000.0
