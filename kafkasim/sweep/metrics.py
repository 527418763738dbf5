"""Which per-row values a sweep aggregates, and the statistics it computes for each.

A metric names one numeric column of one table of the run results (`requests` or `records`), optionally
split by another column (`by`, e.g. `api`) and filtered (`where`). For each (variant, seed, group) the sweep
computes the row count, the error rate (share of rows whose `error_column` is set and not NONE/0) and the
percentiles p50, p95, p99 and p99.9; then, across seeds, their mean and 95% confidence interval.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PERCENTILES: dict[str, float] = {"p50": 0.50, "p95": 0.95, "p99": 0.99, "p999": 0.999}
"""Column name -> quantile. `p999` is displayed as p99.9."""

STATS: tuple[str, ...] = ("count", "error_rate", *PERCENTILES)
"""Every statistic computed per (variant, seed, metric, group), in output order."""

STAT_LABELS: dict[str, str] = {"count": "count", "error_rate": "error rate", "p50": "p50", "p95": "p95",
                               "p99": "p99", "p999": "p99.9"}

PERCENTILE_RANK_ERROR = 0.0
"""Rank error of a sweep's percentiles: none, they are exact order statistics (kafkasim.sweep.stats).

Sweeps before computed them with Spark SQL's `percentile_approx` at accuracy 100,000 (rank error up to
n/100,000), which gave the same values up to ~60,000 rows per group."""

PERCENTILE_DEFINITION = (
    "percentile q = the smallest value v such that at least q of the rows are <= v, i.e. the value of "
    "rank ceil(q*n) among the n sorted values (numpy method='inverted_cdf')"
)

ALL_GROUP = "all"
"""Group value of a metric without `by`."""


class MetricSpec(BaseModel):
    """One metric of a sweep file's `metrics:` list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Name in tables and plots, e.g. 'TotalTimeMs'.")
    table: Literal["requests", "records"] = Field(default="requests", description="Which per-row table of the runs.")
    column: str = Field(min_length=1, description="The numeric column to aggregate.")
    by: str | None = Field(default="api", description="Column whose values split the metric into groups; null: none.")
    where: dict[str, list[str | int | float | bool]] = Field(
        default_factory=dict, description="Keep only rows whose column has one of the listed values."
    )
    error_column: str | None = Field(
        default="error", description="Column whose value marks a failed row (anything but null, 0, 'NONE')."
    )


DEFAULT_METRICS: tuple[MetricSpec, ...] = (
    # Kafka's RequestMetrics TotalTimeMs (end - start, broker side), per api.
    MetricSpec(name="TotalTimeMs", table="requests", column="TotalTimeMs", by="api"),
    # What a producer waits for a batch, from the intended send time of its open-loop schedule (no
    # coordinated omission); one row per produced batch.
    MetricSpec(name="produce_latency_ms", table="records", column="produce_latency_ms", by=None),
    # Produce intended send -> first seen by a consumer.
    MetricSpec(name="e2e_latency_ms", table="records", column="e2e_latency_ms", by=None, error_column=None),
)

WARMUP_TIME_COLUMNS: dict[str, str] = {"requests": "client_send_ms", "records": "send_ms"}
"""Per table, the send time that decides whether a row belongs to the warm-up (excluded from every
statistic, as in a single run's summary). Rows are stored all the same, with an `in_warmup` column."""
