"""One variant's statistics, computed exactly from its runs' Parquet files with pyarrow and numpy.

A Spark task per variant (aggregate.py) calls `variant_stats`, which reads the variant's files
(`<out>/<table>/variant_id=<id>/part-*.parquet`, only the columns the metrics need) and returns plain
tuples:

- per seed and metric group: count, error_rate, p50, p95, p99, p999 (and the same pooled over the seeds);
- per metric group and statistic: n_seeds, the mean over seeds, the sample standard deviation, the 95%
  confidence interval of the mean (Student's t, confidence.py) and the pooled value.

Rows sent during the warm-up (`in_warmup`) are left out; a null or NaN value has no latency to rank but
still counts in `count` and `error_rate`. Percentile q of n values is the exact order statistic of rank
ceil(q·n) (numpy's method='inverted_cdf'): the definition in metrics.PERCENTILE_DEFINITION. Spark SQL's
`percentile_approx(value, q, 100000)`, which sweeps used before, returns the same value up to ~60,000
rows per group and one within n/100,000 ranks of it beyond (benchmarks/README.md, "Sweeps on Spark").

The rest follows the Spark SQL it replaces, value for value: a group is the `by` column cast to text
the way Spark casts (Java's text for a double, 'true'/'false', 'null' for a null), an error is an error
column whose text is not '0', 'NONE' or ''; the mean over seeds is their sum divided by their number,
the standard deviation Spark's running (Welford) update, null with one seed, as is the interval.

This module runs in Spark's Python workers: it imports pyarrow and numpy, nothing of Spark or pandas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafkasim.sweep.confidence import t_quantile_975
from kafkasim.sweep.metrics import ALL_GROUP, PERCENTILES, STATS, MetricSpec
from kafkasim.sweep.task import filesystem

PerSeedRow = tuple[Any, ...]
"""(variant_id, seed, metric, group, count, error_rate, p50, p95, p99, p999)."""
PerVariantRow = tuple[Any, ...]
"""(variant_id, metric, group, stat, n_seeds, mean, sd, ci95_low, ci95_high, pooled)."""

_NOT_ERRORS = ("0", "NONE", "")


def java_double_text(x: float) -> str:
    """`Double.toString(x)`, which Spark's cast of a double to a string follows (shortest round-trip digits)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)  # positional with at least one decimal, as Java writes this range
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(str(d) for d in digits)
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exponent + len(text) - 1}"


def spark_text(column: pa.ChunkedArray | pa.Array) -> list[str | None]:
    """The values as Spark's `CAST(x AS STRING)` writes them (nulls stay None)."""
    t = column.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return column.to_pylist()
    if pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in column.to_pylist()]
    if pa.types.is_integer(t):
        return pc.cast(column, pa.string()).to_pylist()
    if pa.types.is_floating(t):
        return [None if v is None else java_double_text(v) for v in column.to_pylist()]
    return pc.cast(column, pa.string()).to_pylist()


def _is_in(column: pa.ChunkedArray, values: Sequence[Any]) -> pa.ChunkedArray:
    """Rows whose value is one of `values` (compared in the column's type when they convert to it)."""
    try:
        value_set = pa.array(values).cast(column.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        text = pa.array(spark_text(column), pa.string())
        wanted = pa.array([v if isinstance(v, str) else spark_text(pa.array([v]))[0] for v in values], pa.string())
        return pc.fill_null(pc.is_in(text, value_set=wanted), False)
    return pc.fill_null(pc.is_in(column, value_set=value_set), False)


def order_statistics(values: np.ndarray) -> list[float | None]:
    """p50, p95, p99, p999 of `values` (NaN = no value): the value of rank ceil(q·n) among the n sorted."""
    present = np.sort(values[~np.isnan(values)])
    n = len(present)
    if n == 0:
        return [None] * len(PERCENTILES)
    # As Spark's QuantileSummaries.query computes the target rank: ceil(quantile * count), in doubles.
    return [float(present[max(1, math.ceil(q * n)) - 1]) for q in PERCENTILES.values()]


def _group_stats(values: np.ndarray, errors: np.ndarray | None) -> tuple[float | None, ...]:
    count = float(len(values))
    error_rate = None if errors is None else float(errors.sum()) / len(errors)
    return (count, error_rate, *order_statistics(values))


def _welford_sd(values: Sequence[float]) -> float | None:
    """Sample standard deviation with Spark's CentralMomentAgg update; None below two values."""
    n, avg, m2 = 0.0, 0.0, 0.0
    for x in values:
        n += 1.0
        delta = x - avg
        delta_n = delta / n
        avg += delta_n
        m2 += delta * (delta - delta_n)
    return math.sqrt(m2 / (n - 1.0)) if n >= 2 else None


def _as_text(column: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    t = column.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return column
    return pa.array(spark_text(column), pa.string())


def _group_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Each row's group as a code into the returned names (Spark: coalesce(CAST(by AS STRING), 'null'))."""
    text = _as_text(column)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    encoded = pc.dictionary_encode(text, null_encoding="encode")
    names = ["null" if v is None else v for v in encoded.dictionary.to_pylist()]
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    # A null and the text 'null' are one group, as in Spark: map both entries to one code.
    unique, first_code = np.unique(np.asarray(names, dtype=object), return_inverse=True)
    return first_code[indices] if len(names) else indices, [str(u) for u in unique]


def _metric_rows(table: pa.Table, metric: MetricSpec
                 ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray | None]:
    """(seed, group code, group names, value, is_error) of one metric's rows, warm-up excluded, `where` applied."""
    mask = None
    if "in_warmup" in table.column_names:
        mask = pc.invert(pc.fill_null(table.column("in_warmup"), True))
    for key, values in sorted(metric.where.items()):
        keep = _is_in(table.column(key), values)
        mask = keep if mask is None else pc.and_(mask, keep)
    rows = table if mask is None else table.filter(mask)
    seeds = rows.column("seed").to_numpy()
    if metric.by:
        codes, names = _group_codes(rows.column(metric.by))
    else:
        codes, names = np.zeros(rows.num_rows, dtype=np.int64), [ALL_GROUP]
    # Nulls become NaN, and NaN is "no value" (Spark: nanvl(value, null)).
    value = pc.cast(rows.column(metric.column), pa.float64()).to_numpy(zero_copy_only=False)
    errors = None
    if metric.error_column and metric.error_column in rows.column_names:
        text = _as_text(rows.column(metric.error_column))
        is_error = pc.and_(pc.is_valid(text), pc.invert(pc.is_in(text, value_set=pa.array(_NOT_ERRORS))))
        errors = np.asarray(is_error.to_numpy(zero_copy_only=False), dtype=np.float64)
    return seeds, codes, names, value, errors


def metric_stats(variant_id: str, table: pa.Table, metric: MetricSpec) -> tuple[list[PerSeedRow], list[PerVariantRow]]:
    """Per-seed and per-variant rows of one metric of one variant (`table`: the variant's rows, all seeds)."""
    seeds, codes, names, value, errors = _metric_rows(table, metric)
    # Rows sorted by (group, seed): each group is one slice, each of its seeds a slice within it.
    order = np.lexsort((seeds, codes))
    seeds, codes, value = seeds[order], codes[order], value[order]
    errors = None if errors is None else errors[order]
    per_seed: list[PerSeedRow] = []
    per_variant: list[PerVariantRow] = []
    group_starts = np.flatnonzero(np.diff(codes, prepend=-1)) if len(codes) else np.array([], dtype=np.int64)
    group_bounds = list(zip(group_starts.tolist(), [*group_starts[1:].tolist(), len(codes)], strict=True))
    for g_start, g_end in sorted(group_bounds, key=lambda b: names[codes[b[0]]]):
        group = names[codes[g_start]]
        g_seeds = seeds[g_start:g_end]
        seed_starts = np.flatnonzero(np.diff(g_seeds, prepend=g_seeds[0] - 1))
        by_seed: list[tuple[float | None, ...]] = []
        for s_start, s_end in zip(seed_starts.tolist(), [*seed_starts[1:].tolist(), len(g_seeds)], strict=True):
            lo, hi = g_start + s_start, g_start + s_end
            stats = _group_stats(value[lo:hi], None if errors is None else errors[lo:hi])
            per_seed.append((variant_id, int(seeds[lo]), metric.name, group, *stats))
            by_seed.append(stats)
        pooled = _group_stats(value[g_start:g_end], None if errors is None else errors[g_start:g_end])
        for i, stat in enumerate(STATS):
            present = [v for s in by_seed if (v := s[i]) is not None]
            n = len(present)
            mean = sum(present) / n if n else None
            sd = _welford_sd(present)
            low = high = None
            if mean is not None and sd is not None:  # two seeds or more
                half = t_quantile_975(n - 1) * sd / math.sqrt(n)
                low, high = mean - half, mean + half
            per_variant.append((variant_id, metric.name, group, stat, n, mean, sd, low, high, pooled[i]))
    return per_seed, per_variant


def _needed_columns(metrics: Iterable[MetricSpec], columns: list[str]) -> list[str]:
    needed = {"seed"} | ({"in_warmup"} & set(columns))
    for m in metrics:
        needed |= {m.column, *([m.by] if m.by else []), *m.where}
        if m.error_column and m.error_column in columns:
            needed.add(m.error_column)
    return [c for c in [*columns, "seed"] if c in needed and c in set(columns) | {"seed"}]


def variant_stats(out_uri: str, variant_id: str, table_columns: dict[str, list[str]],
                  metrics: list[MetricSpec]) -> tuple[list[PerSeedRow], list[PerVariantRow]]:
    """Every metric's rows for one variant, read from `<out_uri>/<table>/variant_id=<variant_id>/`.

    `metrics` must be computable from `table_columns` (aggregate.metric_problem); a variant none of whose
    runs produced a table (all failed) has no rows.
    """
    fs, out_dir = filesystem(out_uri)
    per_seed: list[PerSeedRow] = []
    per_variant: list[PerVariantRow] = []
    for name in sorted({m.table for m in metrics}):
        directory = f"{out_dir}/{name}/variant_id={variant_id}"
        if fs.get_file_info(directory).type != pa.fs.FileType.Directory:
            continue
        wanted = [m for m in metrics if m.table == name]
        table = pq.read_table(directory, columns=_needed_columns(wanted, table_columns[name]), filesystem=fs,
                              partitioning=None)
        for metric in wanted:
            seed_rows, variant_rows = metric_stats(variant_id, table, metric)
            per_seed.extend(seed_rows)
            per_variant.extend(variant_rows)
    return per_seed, per_variant
