"""Reference for the tests: how sweeps aggregated their Parquet rows before, with Spark SQL.

Sweeps now compute the same statistics exactly with pyarrow and numpy in one Spark task per variant
(kafkasim/sweep/stats.py); tests/sweep/test_aggregate.py checks that both give the same tables on the
same files. This is the Spark SQL that kafkasim.sweep.aggregate ran until then, unchanged but for its
name (`aggregate_sql`) and imports.

Two tables come out, both small enough to collect:

- per_seed: one row per (variant_id, seed, metric, group) with count, error_rate, p50, p95, p99, p999.
- per_variant: one row per (variant_id, metric, group, stat) with n_seeds, the mean over seeds, the sample
  standard deviation, the 95% confidence interval of the mean (Student's t, see confidence.py; null with
  one seed) and `pooled`: the statistic over all seeds' rows together.

Rows sent during the warm-up (`in_warmup`) are left out, and so are NaN values (a request that never got
a response has no latency to rank; it still counts in `count` and `error_rate`). Percentiles use
`percentile_approx` with accuracy PERCENTILE_ACCURACY: rank error <= 1/accuracy. A group
that has no rows in some seed (say, no consumer fetches) simply has fewer seeds; its n_seeds says so.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pandas as pd

from kafkasim.sweep.aggregate import (
    PER_SEED_COLUMNS,
    PER_VARIANT_COLUMNS,
    Aggregates,
    metric_problem,
    ordered,
)
from kafkasim.sweep.confidence import t_quantile_975
from kafkasim.sweep.metrics import ALL_GROUP, PERCENTILES, STATS, MetricSpec

PERCENTILE_ACCURACY = 100_000
"""`accuracy` of `percentile_approx` (Greenwald-Khanna summaries): rank error <= n/accuracy."""

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

def _is_error(column: Column) -> Column:
    text = column.cast("string")
    return column.isNotNull() & ~text.isin("0", "NONE", "")


def _metric_rows(df: DataFrame, metric: MetricSpec, columns: list[str]) -> DataFrame:
    """(variant_id, seed, metric, group, value, is_error) rows of one metric, warm-up excluded."""
    from pyspark.sql import functions as F

    if "in_warmup" in columns:
        df = df.where(~F.col("in_warmup"))
    for key, values in sorted(metric.where.items()):
        df = df.where(F.col(key).isin(values))
    group = F.col(metric.by).cast("string") if metric.by else F.lit(ALL_GROUP)
    if metric.error_column and metric.error_column in columns:
        is_error = F.when(_is_error(F.col(metric.error_column)), 1.0).otherwise(0.0)
    else:
        is_error = F.lit(None).cast("double")
    return df.select(
        "variant_id",
        "seed",
        F.lit(metric.name).alias("metric"),
        F.coalesce(group, F.lit("null")).alias("group"),
        # NaN marks a timestamp the row never reached (a request without a response): no latency to rank.
        F.nanvl(F.col(metric.column).cast("double"), F.lit(None).cast("double")).alias("value"),
        is_error.alias("is_error"),
    )


# Per (variant, seed) and pooled over seeds in one pass: GROUPING SETS, told apart by grouping(seed).
_STATS_SQL = """
SELECT variant_id, seed, metric, `group`, grouping(seed) = 1 AS pooled_row,
       CAST(count(1) AS DOUBLE) AS count,
       avg(is_error) AS error_rate,
       percentile_approx(value, array({quantiles}), {accuracy}) AS q
FROM {rows}
GROUP BY variant_id, metric, `group`, seed
GROUPING SETS ((variant_id, metric, `group`, seed), (variant_id, metric, `group`))
"""

# Mean, sample standard deviation and t-based 95% CI over seeds, joined with the pooled value.
_ACROSS_SQL = """
WITH long AS (
  SELECT variant_id, seed, metric, `group`, pooled_row,
         stack({n_stats}, {stack_pairs}) AS (stat, value)
  FROM {stats}
),
across AS (
  SELECT variant_id, metric, `group`, stat,
         count(value) AS n_seeds, avg(value) AS mean, stddev_samp(value) AS sd
  FROM long WHERE NOT pooled_row
  GROUP BY variant_id, metric, `group`, stat
)
SELECT a.variant_id, a.metric, a.`group`, a.stat, a.n_seeds, a.mean, a.sd,
       a.mean - t.t * a.sd / sqrt(a.n_seeds) AS ci95_low,
       a.mean + t.t * a.sd / sqrt(a.n_seeds) AS ci95_high,
       p.value AS pooled
FROM across a
LEFT JOIN {t_table} t ON t.n_seeds = a.n_seeds
LEFT JOIN (SELECT * FROM long WHERE pooled_row) p
  ON p.variant_id = a.variant_id AND p.metric = a.metric AND p.`group` = a.`group` AND p.stat = a.stat
"""


def aggregate_sql(
    spark: SparkSession,
    table_paths: dict[str, str],
    table_columns: dict[str, list[str]],
    metrics: list[MetricSpec],
    max_seeds: int,
) -> Aggregates:
    """Per-seed and per-variant statistics of every computable metric (see module docstring)."""
    problems: list[str] = []
    parts = []
    for metric in metrics:
        problem = metric_problem(metric, table_columns)
        if problem is not None:
            problems.append(problem)
            continue
        rows = spark.read.parquet(table_paths[metric.table])
        parts.append(_metric_rows(rows, metric, table_columns[metric.table]))
    if not parts:
        empty = Aggregates(pd.DataFrame(columns=PER_SEED_COLUMNS), pd.DataFrame(columns=PER_VARIANT_COLUMNS))
        empty.problems = problems
        return empty

    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    # View names are per call: two sweeps in one session must not see each other's rows.
    suffix = uuid.uuid4().hex[:12]
    rows_view, stats_view, t_view = (f"kafkasim_sweep_{name}_{suffix}" for name in ("rows", "stats", "t"))
    rows.createOrReplaceTempView(rows_view)
    quantiles = ", ".join(repr(q) for q in PERCENTILES.values())
    stats = spark.sql(_STATS_SQL.format(quantiles=quantiles, accuracy=PERCENTILE_ACCURACY, rows=rows_view))
    for i, name in enumerate(PERCENTILES):
        stats = stats.withColumn(name, stats["q"][i])
    stats = stats.drop("q").cache()
    try:
        stats.createOrReplaceTempView(stats_view)
        spark.createDataFrame(
            [(n, t_quantile_975(n - 1)) for n in range(2, max(2, max_seeds) + 1)], "n_seeds long, t double"
        ).createOrReplaceTempView(t_view)
        pairs = ", ".join(f"'{s}', `{s}`" for s in STATS)
        across = spark.sql(
            _ACROSS_SQL.format(n_stats=len(STATS), stack_pairs=pairs, stats=stats_view, t_table=t_view)
        )
        stats_pd = stats.toPandas()
        per_variant_pd = across.select(*PER_VARIANT_COLUMNS).toPandas()
    finally:
        stats.unpersist()
        for view in (rows_view, stats_view, t_view):
            spark.catalog.dropTempView(view)
    per_seed_pd = stats_pd[~stats_pd["pooled_row"].astype(bool)][PER_SEED_COLUMNS]
    per_seed_pd = per_seed_pd.astype({"seed": "int64"})
    return Aggregates(ordered(per_seed_pd, metrics, "seed"), ordered(per_variant_pd, metrics, "stat"), problems)

