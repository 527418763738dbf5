"""Exports of a saved run for other tools: HdrHistogram interval logs (`.hlog`) and CSV summary tables.

HdrHistogram interval logs, one file per API (the broker's TotalTimeMs) and one per client (client send
-> receive), in the log format HdrHistogram's own tools read (`HistogramLogProcessor`, `HistogramLogReader`
of every port, HdrHistogram's plotter): values in microseconds recorded with 3 significant digits (the
summary's histogram), one interval per second of simulated time, a request falling into the interval in
which its latency became known (the broker's response send completing for TotalTimeMs, the client
receiving the response for client latency). `#[StartTime: 0 ...]` is the simulated clock's zero. Requests
sent during warm-up are left out, as in the summary, so the intervals of one file add up to its numbers.

CSV: `latency.csv` (one row per latency: per API each of Kafka's RequestMetrics times, produce per acks,
end to end, and per client, producer and consumer) and `counters.csv` (requests, errors and timeouts per
API, then the summary's counters).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from kafkasim.record.output_dir import Layout, OutputDirError, check_output_dir, write_dir
from kafkasim.record.result import RunResult
from kafkasim.record.summary import percentiles
from kafkasim.report.compare import latency_samples
from kafkasim.report.frames import after_warmup, natural_key, warmup_ms
from kafkasim.report.palette import API_ORDER

MARKER = "export.json"
INTERVAL_MS = 1000.0
HIGHEST_US = 3_600_000_000  # the summary's histogram: 1 us to one hour, 3 significant digits
SIGNIFICANT_DIGITS = 3
US_PER_MS = 1000.0
STATS = ("count", "mean", "p50", "p95", "p99", "p99.9", "max")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ExportError(ValueError):
    """An export kafkasim will not write (the directory); the message says why and what is allowed."""


def _foreign(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir()
            if p.is_symlink() or not p.is_file() or not (p.name == MARKER or p.suffix in (".hlog", ".csv"))]


EXPORT_LAYOUT = Layout("a kafkasim export", MARKER, lambda d: (d / MARKER).is_file(), _foreign)


def check_export_dir(out: str | Path, *, label: str | None = None) -> Path:
    try:
        return check_output_dir(out, EXPORT_LAYOUT, label=label)
    except OutputDirError as exc:
        raise ExportError(str(exc)) from None


def _file_name(kind: str, key: str) -> str:
    return f"{kind}-{_UNSAFE.sub('_', key)}.hlog"


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)


def _micros(values_ms: np.ndarray) -> np.ndarray:
    # The summary's rounding (kafkasim.record.summary.percentiles): whole microseconds, clamped to the range.
    return np.clip(np.rint(values_ms * US_PER_MS), 0, HIGHEST_US).astype(np.int64)


def write_hlog(path: Path, done_ms: np.ndarray, latency_ms: np.ndarray, comment: str) -> int:
    """One interval log: latencies binned by the time they became known; returns the values written."""
    keep = np.isfinite(done_ms) & np.isfinite(latency_ms)
    done_ms, micros = done_ms[keep], _micros(latency_ms[keep])
    intervals = np.floor(done_ms / INTERVAL_MS).astype(np.int64)
    with open(path, "w", encoding="utf-8") as handle:
        writer = HistogramLogWriter(handle)
        writer.output_comment(f"[{comment}]")
        writer.output_comment("[values in microseconds; simulated time, interval 1 s]")
        writer.output_log_format_version()
        # hdrh's output_start_time formats the date with a method Python's datetime lacks: written here.
        handle.write("#[StartTime: 0.000 (seconds since epoch), the simulated clock's zero]\n")
        writer.output_legend()
        for interval in np.unique(intervals).tolist():
            histogram = new_histogram()
            values, counts = np.unique(micros[intervals == interval], return_counts=True)
            for value, value_count in zip(values.tolist(), counts.tolist(), strict=True):
                histogram.record_value(value, value_count)
            histogram.set_start_time_stamp(int(interval * INTERVAL_MS))
            histogram.set_end_time_stamp(int((interval + 1) * INTERVAL_MS))
            # Interval_Max in the values' unit (us): hdrh divides it with // and would cut 4.692 ms to 4.
            writer.output_interval_histogram(histogram, max_value_unit_ratio=1.0)
    return int(micros.size)


def hlog_files(result: RunResult) -> dict[str, Callable[[Path], int]]:
    """File name -> writer of that file, per API (TotalTimeMs by end_ms) and per client (client latency
    by client_receive_ms)."""
    requests = after_warmup(result.requests, warmup_ms(result.summary))
    api = requests["api"].astype(str)
    client = requests["client"].astype(str)
    files: dict[str, Callable[[Path], int]] = {}

    def writer(rows: pd.DataFrame, done: str, latency: str, comment: str) -> Callable[[Path], int]:
        return lambda path: write_hlog(path, rows[done].to_numpy(float, na_value=np.nan),
                                       rows[latency].to_numpy(float, na_value=np.nan), comment)

    for name in [a for a in API_ORDER if a in set(api)] + sorted(set(api) - set(API_ORDER)):
        files[_file_name("api", name)] = writer(requests[api == name], "end_ms", "TotalTimeMs",
                                                f"{name}: broker TotalTimeMs (Kafka's RequestMetrics)")
    for name in sorted(set(client), key=natural_key):
        files[_file_name("client", name)] = writer(requests[client == name], "client_receive_ms",
                                                   "client_latency_ms", f"{name}: client send -> receive")
    return files


def _stat_row(kind: str, key: str, measure: str, stats: Mapping[str, Any] | None) -> list[Any]:
    stats = stats or {}
    return [kind, key, measure, *(stats.get(s) for s in STATS)]


def latency_rows(result: RunResult) -> list[list[Any]]:
    """latency.csv's rows: the summary's tables, then per client, producer and consumer."""
    summary = result.summary
    rows: list[list[Any]] = []
    for api, data in (summary.get("apis") or {}).items():
        for measure, stats in data.items():
            if isinstance(stats, Mapping):
                rows.append(_stat_row("api", api, measure, stats))
    for acks, data in (summary.get("produce_latency") or {}).items():
        rows.append(_stat_row("produce", acks, "intended send -> ack", data.get("from_intended")))
        rows.append(_stat_row("produce", acks, "send -> ack", data.get("from_send")))
    if (summary.get("e2e_latency") or {}).get("count"):
        rows.append(_stat_row("end_to_end", "all consumers", "intended send -> first seen", summary["e2e_latency"]))
    for (kind, key, measure), values in latency_samples(result).items():
        if kind != "api":  # the API rows above are the summary's own
            rows.append(_stat_row(kind, key, measure, percentiles(values)))
    return rows


def counter_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for api, data in (summary.get("apis") or {}).items():
        for name in ("count", "errors", "client_timeouts"):
            rows.append([f"{api}.{name}", data.get(name)])
    for name, value in (summary.get("counters") or {}).items():
        if not isinstance(value, Mapping | list):
            rows.append([name, value])
    return rows


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        out.writerows([["" if v is None else v for v in row] for row in rows])


def _write_dir(target: Path, label: str, source: Path, write: Callable[[Path], list[str]]) -> Path:
    def write_with_marker(tmp: Path) -> None:
        files = write(tmp)
        marker = {"from": str(source.resolve()), "files": files}
        (tmp / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")

    try:
        write_dir(target, EXPORT_LAYOUT, write_with_marker, label=label)
    except OutputDirError as exc:
        raise ExportError(str(exc)) from None
    return target


def export_hlog(result: RunResult, source: Path, out: str | Path, label: str | None = None) -> Path:
    """Write one .hlog per API and per client into `out` (new, empty, or an earlier export)."""
    target = check_export_dir(out, label=label)

    def write(directory: Path) -> list[str]:
        files = hlog_files(result)
        for name, writer in files.items():
            writer(directory / name)
        return list(files)

    return _write_dir(target, label or str(out), source, write)


def export_csv(result: RunResult, source: Path, out: str | Path, label: str | None = None) -> Path:
    """Write latency.csv and counters.csv into `out` (new, empty, or an earlier export)."""
    target = check_export_dir(out, label=label)

    def write(directory: Path) -> list[str]:
        _write_csv(directory / "latency.csv", ["kind", "key", "measure", *STATS], latency_rows(result))
        _write_csv(directory / "counters.csv", ["name", "value"], counter_rows(result.summary))
        return ["latency.csv", "counters.csv"]

    return _write_dir(target, label or str(out), source, write)
