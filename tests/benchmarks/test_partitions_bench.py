"""The partitions benchmark runs (not a timing test): only the partition count differs between its rows, so
the same load produces the same number of produce requests whatever the partition count."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import partitions_bench as bench  # noqa: E402


def test_rows_differ_only_in_partitions():
    one = bench.measure(1, "300ms")
    many = bench.measure(20, "300ms")
    assert one["requests"] > 0 and many["requests"] > 0
    assert one["mean_partitions_per_request"] == 1.0
    # A fetch session's full request names every partition; the incremental ones (KIP-227) only the
    # partitions whose fetch offset moved, one or two here.
    assert many["max_partitions_per_request"] == 20
    assert 1.0 < many["mean_partitions_per_request"] < 5
    # Same records at the same rate; the sticky partitioner fills one batch at a time either way.
    assert abs(one["by_api"]["Produce"] - many["by_api"]["Produce"]) <= 2
    assert many["us_per_request"] > 0 and many["peak_rss_mb"] > 0
