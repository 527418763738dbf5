"""Sweep statistics computed exactly per variant (kafkasim.sweep.stats) equal the Spark SQL ones they replace.

The Spark SQL aggregation (`percentile_approx` at accuracy 100,000, GROUPING SETS, avg/stddev_samp, a t
table join) is kept in spark_reference.py. Both run here on the same Parquet files, written in a sweep's
layout: several variants and seeds, warm-up rows, null and NaN values, text, integer, boolean and double
`by` and error columns, a `where` filter, a group present in one seed only, a variant with one seed. Counts,
error rates, percentiles, n_seeds and pooled values must be equal; means, standard deviations and
intervals equal up to the order of floating-point additions (Spark sums in its own order).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkasim.sweep.aggregate import aggregate
from kafkasim.sweep.metrics import PERCENTILES, MetricSpec
from kafkasim.sweep.stats import java_double_text, order_statistics

from .spark_reference import aggregate_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

VARIANT_SEEDS = {"v000": [1, 2, 3], "v001": [1, 2, 3], "v002": [7]}
METRICS = [
    MetricSpec(name="TotalTimeMs", table="requests", column="TotalTimeMs", by="api"),
    MetricSpec(name="by_size", table="requests", column="TotalTimeMs", by="size", error_column="code"),
    MetricSpec(name="by_partition", table="requests", column="TotalTimeMs", by="partition", error_column="failed",
               where={"api": ["Produce", "Fetch"]}),
    MetricSpec(name="all_int", table="requests", column="bytes", by=None, where={"partition": [0, 2]}),
    MetricSpec(name="e2e", table="records", column="e2e_latency_ms", by=None, error_column=None),
]


def _requests(rng: np.random.Generator, seed: int, n: int) -> pa.Table:
    api = rng.choice(["Produce", "Fetch", "Metadata"], n).astype(object)
    if seed == 2:
        api[-5:] = "OnlyInSeed2"  # after the warm-up (rows are in send order)
    total = rng.lognormal(1.0, 1.0, n)
    total[rng.random(n) < 0.02] = np.nan  # a request without a response
    total_list: list[float | None] = total.tolist()
    for i in rng.choice(n, 5, replace=False):
        total_list[i] = None
    size = rng.choice([1.0, 1e-4, 2.5e7, 1024.5], n)
    size_list: list[float | None] = size.tolist()
    size_list[-1] = None
    return pa.table({
        "api": pa.array(api.tolist(), pa.string()),
        "TotalTimeMs": pa.array(total_list, pa.float64()),
        "size": pa.array(size_list, pa.float64()),
        "partition": pa.array(rng.integers(0, 4, n), pa.int64()),
        "bytes": pa.array(rng.integers(0, 10_000, n), pa.int64()),
        "error": pa.array(rng.choice(["NONE", "NONE", "NONE", "REQUEST_TIMED_OUT", ""], n).tolist(), pa.string()),
        "code": pa.array(rng.choice([0.0, 0.0, 3.0], n), pa.float64()),
        "failed": pa.array(rng.random(n) < 0.1, pa.bool_()),
        "client_send_ms": pa.array(np.sort(rng.uniform(0, 1000, n))),
    })


def _write_sweep_files(out: Path) -> dict[str, list[str]]:
    """Files as sweep tasks write them (task.py layout, `in_warmup` and `seed` last); the stored columns."""
    columns: dict[str, list[str]] = {}
    index = 0
    for variant_id, seeds in VARIANT_SEEDS.items():
        for seed in seeds:
            rng = np.random.default_rng([seed, int(variant_id[1:])])
            requests = _requests(rng, seed, 4000 + 500 * seed)
            records = pa.table({"send_ms": pa.array(rng.uniform(0, 1000, 900)),
                                "e2e_latency_ms": pa.array(rng.exponential(3.0, 900))})
            for name, table, sent in (("requests", requests, "client_send_ms"), ("records", records, "send_ms")):
                table = table.append_column("in_warmup", pa.compute.less(table.column(sent), 100.0))
                table = table.append_column("seed", pa.array([seed] * table.num_rows, pa.int64()))
                directory = out / name / f"variant_id={variant_id}"
                directory.mkdir(parents=True, exist_ok=True)
                pq.write_table(table, directory / f"part-{index:05d}.parquet")
                columns[name] = [c for c in table.column_names if c != "seed"]
            index += 1
    return columns


def test_exact_statistics_equal_spark_sqls_on_the_same_files(spark: SparkSession, tmp_path: Path) -> None:
    columns = _write_sweep_files(tmp_path)
    paths = {name: str(tmp_path / name) for name in columns}
    old = aggregate_sql(spark, paths, columns, METRICS, 3)
    new = aggregate(spark, tmp_path.as_uri(), list(VARIANT_SEEDS), columns, METRICS)
    assert old.problems == new.problems == []
    assert len(new.per_seed) > 80 and "OnlyInSeed2" in set(new.per_seed["group"])
    assert {"1.0E-4", "2.5E7", "1024.5", "null"} <= set(new.per_seed["group"])  # Spark's text of doubles
    pd.testing.assert_frame_equal(new.per_seed, old.per_seed, check_exact=True)
    exact = ["variant_id", "metric", "group", "stat", "n_seeds", "pooled"]
    pd.testing.assert_frame_equal(new.per_variant[exact], old.per_variant[exact], check_exact=True)
    rounded = ["mean", "sd", "ci95_low", "ci95_high"]
    pd.testing.assert_frame_equal(new.per_variant[rounded], old.per_variant[rounded], check_exact=False, rtol=1e-12)
    one_seed = new.per_variant[new.per_variant["variant_id"] == "v002"]
    assert one_seed["sd"].isna().all() and one_seed["ci95_low"].isna().all()


def test_percentiles_are_the_exact_order_statistics() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 100, 1001, 150_000):
        values = rng.lognormal(0.0, 2.0, n)
        expected = [float(np.quantile(values, q, method="inverted_cdf")) for q in PERCENTILES.values()]
        with_nan = np.concatenate([values, [np.nan, np.nan]])
        assert order_statistics(with_nan) == expected, n
    assert order_statistics(np.array([np.nan])) == [None] * len(PERCENTILES)


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1.0"), (0.001, "0.001"), (1e-4, "1.0E-4"), (1.5e-5, "1.5E-5"), (9999999.0, "9999999.0"),
    (1e7, "1.0E7"), (12345678.0, "1.2345678E7"), (-3.5e-9, "-3.5E-9"), (0.0, "0.0"), (-0.0, "-0.0"),
    (math.inf, "Infinity"), (1.2345e20, "1.2345E20"),
])
def test_doubles_are_written_as_java_and_spark_write_them(value: float, text: str) -> None:
    assert java_double_text(value) == text
