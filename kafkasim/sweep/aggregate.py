"""Aggregating a sweep's Parquet rows: one Spark task per variant, per (variant, seed), then across seeds.

Two tables come out, both small enough to collect:

- per_seed: one row per (variant_id, seed, metric, group) with count, error_rate, p50, p95, p99, p999.
- per_variant: one row per (variant_id, metric, group, stat) with n_seeds, the mean over seeds, the sample
  standard deviation, the 95% confidence interval of the mean (Student's t, see confidence.py; null with
  one seed) and `pooled`: the statistic over all seeds' rows together.

Each task reads its variant's files with pyarrow and computes exact order statistics with numpy
(stats.py): no Spark SQL, so a new session pays no query planning, code generation or shuffle for it (it
was most of a sweep's fixed cost: benchmarks/README.md, "Sweeps on Spark"). Rows sent during the warm-up
(`in_warmup`) are left out, and so are NaN values (a request that never got a response has no latency to
rank; it still counts in `count` and `error_rate`). A group that has no rows in some seed (say, no consumer
fetches) simply has fewer seeds; its n_seeds says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from kafkasim.sweep.metrics import STATS, MetricSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


def aggregate(
    spark: SparkSession,
    out_uri: str,
    variant_ids: list[str],
    table_columns: dict[str, list[str]],
    metrics: list[MetricSpec],
) -> Aggregates:
    """Per-seed and per-variant statistics of every computable metric (see module docstring).

    `out_uri` is the sweep's output directory (as the tasks wrote it, see task.py), `variant_ids` the
    variants to aggregate (one Spark task each), `table_columns` the stored columns of each table.
    """
    problems: list[str] = []
    computable = []
    for metric in metrics:
        problem = metric_problem(metric, table_columns)
        if problem is None:
            computable.append(metric)
        else:
            problems.append(problem)
    per_seed_rows: list[tuple[object, ...]] = []
    per_variant_rows: list[tuple[object, ...]] = []
    if computable and variant_ids:
        sc = spark.sparkContext

        def stats_of(variant_id: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
            from kafkasim.sweep.stats import variant_stats

            return variant_stats(out_uri, variant_id, table_columns, computable)

        for seed_rows, variant_rows in sc.parallelize(variant_ids, len(variant_ids)).map(stats_of).collect():
            per_seed_rows.extend(seed_rows)
            per_variant_rows.extend(variant_rows)
    per_seed = pd.DataFrame(per_seed_rows, columns=PER_SEED_COLUMNS)
    per_variant = pd.DataFrame(per_variant_rows, columns=PER_VARIANT_COLUMNS)
    if per_seed_rows:
        per_seed = per_seed.astype({"seed": "int64", **{s: "float64" for s in STATS}})
        per_variant = per_variant.astype(
            {"n_seeds": "int64", **{c: "float64" for c in ("mean", "sd", "ci95_low", "ci95_high", "pooled")}}
        )
    return Aggregates(ordered(per_seed, computable, "seed"), ordered(per_variant, computable, "stat"), problems)


def ordered(frame: pd.DataFrame, metrics: list[MetricSpec], last: str) -> pd.DataFrame:
    """Rows in a stable, readable order: variant, metric as listed in the sweep file, group, then `last`."""
    stat_order = {s: i for i, s in enumerate(STATS)}
    metric_order = {m.name: i for i, m in enumerate(metrics)}

    def key(column: pd.Series) -> pd.Series:
        if column.name == "metric":
            return column.map(metric_order)
        if column.name == "stat":
            return column.map(stat_order)
        return column

    return frame.sort_values(["variant_id", "metric", "group", last], key=key).reset_index(drop=True)
