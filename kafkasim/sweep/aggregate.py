"""Aggregating a sweep's Parquet rows in Spark: per (variant, seed), then across seeds.

Two tables come out, both small enough to collect:

- per_seed: one row per (variant_id, seed, metric, group) with count, error_rate, p50, p95, p99, p999.
- per_variant: one row per (variant_id, metric, group, stat) with n_seeds, the mean over seeds, the sample
  standard deviation, the 95% confidence interval of the mean (Student's t, see confidence.py; null with
  one seed) and `pooled`: the statistic over all seeds' rows together.

Percentiles use `percentile_approx` with accuracy PERCENTILE_ACCURACY: rank error <= 1/accuracy (see
metrics.py). A group that has no rows in some seed (say, no consumer fetches) simply has fewer seeds; its
n_seeds says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from kafkasim.sweep.confidence import t_quantile_975
from kafkasim.sweep.metrics import ALL_GROUP, PERCENTILE_ACCURACY, PERCENTILES, STATS, MetricSpec

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PER_SEED_COLUMNS = ["variant_id", "seed", "metric", "group", *STATS]
PER_VARIANT_COLUMNS = ["variant_id", "metric", "group", "stat", "n_seeds", "mean", "sd", "ci95_low", "ci95_high",
                       "pooled"]


@dataclass
class Aggregates:
    per_seed: pd.DataFrame
    per_variant: pd.DataFrame
    problems: list[str] = field(default_factory=list)
    """Metrics that could not be computed (a column the runs do not have), one line each."""


def metric_problem(metric: MetricSpec, columns: dict[str, list[str]]) -> str | None:
    """Why `metric` cannot be computed from tables with these columns, or None if it can."""
    available = columns.get(metric.table)
    if available is None:
        return f"metric {metric.name!r}: no run produced a {metric.table!r} table"
    needed = [metric.column, *([metric.by] if metric.by else []), *metric.where]
    missing = [c for c in needed if c not in available]
    if missing:
        return (
            f"metric {metric.name!r}: {metric.table} has no column {', '.join(repr(c) for c in missing)} "
            f"(columns: {', '.join(available)})"
        )
    return None


def _is_error(column: Column) -> Column:

    text = column.cast("string")
    return column.isNotNull() & ~text.isin("0", "NONE", "")


def _grouped(df: DataFrame, metric: MetricSpec, keys: list[str], columns: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    for key, values in sorted(metric.where.items()):
        df = df.where(F.col(key).isin(values))
    group = F.col(metric.by).cast("string") if metric.by else F.lit(ALL_GROUP)
    value = F.col(metric.column).cast("double")
    if metric.error_column and metric.error_column in columns:
        error_rate = F.avg(F.when(_is_error(F.col(metric.error_column)), 1.0).otherwise(0.0))
    else:
        error_rate = F.lit(None).cast("double")
    quantiles = F.percentile_approx(value, list(PERCENTILES.values()), PERCENTILE_ACCURACY)
    out = (
        df.withColumn("group", F.coalesce(group, F.lit("null")))
        .groupBy(*keys, "group")
        .agg(F.count(F.lit(1)).cast("double").alias("count"), error_rate.alias("error_rate"), quantiles.alias("q"))
        .withColumn("metric", F.lit(metric.name))
    )
    for i, name in enumerate(PERCENTILES):
        out = out.withColumn(name, F.col("q")[i])
    return out.drop("q")


def _long(df: DataFrame, keys: list[str]) -> DataFrame:
    """(keys..., count, error_rate, p50, ...) -> (keys..., stat, value)."""
    from pyspark.sql import functions as F

    pairs = ", ".join(f"'{s}', `{s}`" for s in STATS)
    return df.select(*[F.col(k) for k in keys], F.expr(f"stack({len(STATS)}, {pairs}) as (stat, value)"))


def aggregate(
    spark: SparkSession,
    table_paths: dict[str, str],
    table_columns: dict[str, list[str]],
    metrics: list[MetricSpec],
) -> Aggregates:
    """Per-seed and per-variant statistics of every computable metric (see module docstring)."""
    from pyspark.sql import functions as F

    problems: list[str] = []
    per_seed_parts = []
    pooled_parts = []
    for metric in metrics:
        problem = metric_problem(metric, table_columns)
        if problem is not None:
            problems.append(problem)
            continue
        rows = spark.read.parquet(table_paths[metric.table])
        per_seed_parts.append(_grouped(rows, metric, ["variant_id", "seed"], table_columns[metric.table]))
        pooled_parts.append(_grouped(rows, metric, ["variant_id"], table_columns[metric.table]))
    if not per_seed_parts:
        return Aggregates(pd.DataFrame(columns=PER_SEED_COLUMNS), pd.DataFrame(columns=PER_VARIANT_COLUMNS),
                          problems)

    per_seed = per_seed_parts[0]
    for part in per_seed_parts[1:]:
        per_seed = per_seed.unionByName(part)
    pooled = pooled_parts[0]
    for part in pooled_parts[1:]:
        pooled = pooled.unionByName(part)
    per_seed = per_seed.select(*PER_SEED_COLUMNS).cache()
    try:
        keys = ["variant_id", "metric", "group"]
        across = (
            _long(per_seed, keys)
            .groupBy(*keys, "stat")
            .agg(F.count("value").alias("n_seeds"), F.avg("value").alias("mean"), F.stddev_samp("value").alias("sd"))
        )
        max_seeds = max(2, int(per_seed.agg(F.countDistinct("seed")).first()[0]))  # type: ignore[index]
        t_table = spark.createDataFrame(
            [(n, t_quantile_975(n - 1)) for n in range(2, max_seeds + 1)], "n_seeds long, t double"
        )
        half = F.col("t") * F.col("sd") / F.sqrt(F.col("n_seeds"))
        across = (
            across.join(F.broadcast(t_table), on="n_seeds", how="left")
            .withColumn("ci95_low", F.col("mean") - half)
            .withColumn("ci95_high", F.col("mean") + half)
            .join(_long(pooled, keys).withColumnRenamed("value", "pooled"), on=[*keys, "stat"], how="left")
        )
        per_seed_pd = per_seed.toPandas()
        per_variant_pd = across.select(*PER_VARIANT_COLUMNS).toPandas()
    finally:
        per_seed.unpersist()
    stat_order = {s: i for i, s in enumerate(STATS)}
    metric_order = {m.name: i for i, m in enumerate(metrics)}
    per_seed_pd = per_seed_pd.sort_values(
        ["variant_id", "metric", "group", "seed"], key=lambda c: c.map(metric_order) if c.name == "metric" else c
    ).reset_index(drop=True)
    per_variant_pd = per_variant_pd.sort_values(
        ["variant_id", "metric", "group", "stat"],
        key=lambda c: c.map(metric_order) if c.name == "metric" else c.map(stat_order) if c.name == "stat" else c,
    ).reset_index(drop=True)
    return Aggregates(per_seed_pd, per_variant_pd, problems)
