"""`kafkasim import-request-log`: a real broker's request log as a kafkasim result directory.

The result holds requests.parquet (kafkasim.real.request_log) and summary.json written by the same code as a
simulated run's (``kafkasim.record.summary.summarize``), so `kafkasim report` explains a production broker's
numbers phase by phase with the same figures and captions. records.parquet and timeseries.parquet are
written empty (a broker's request log knows nothing of its producers' records or of gauges), and
run-info.json says where the rows came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kafkasim.real.request_log import RequestLog, parse_lines
from kafkasim.record.recorder import records_frame, timeseries_frame
from kafkasim.record.result import RunResult
from kafkasim.record.summary import summarize

ENGINE = "kafka-request-log"


def import_request_logs(paths: Sequence[Path], broker_ids: Sequence[int] | None = None) -> tuple[RunResult, RequestLog]:
    """The result of the request logs ``paths`` (broker ids ``broker_ids``, by default 0, 1, ... in order)."""
    ids = list(broker_ids) if broker_ids is not None else list(range(len(paths)))
    log = parse_lines(list(zip(ids, paths, strict=True)))
    requests = log.requests
    ends = requests["end_ms"].to_numpy(dtype=float)
    duration = float(ends.max()) if len(ends) else 0.0
    records = records_frame([], [])
    summary = summarize(requests, records, seed=None, simulated_duration_ms=duration, warmup_ms=0.0,
                        timeseries=None)
    summary["source"] = ENGINE
    run_info = {
        "engine": ENGINE,
        "request_logs": [str(p) for p in paths],
        "brokers": ids,
        "epoch_ms_at_0": log.origin_epoch_ms,
        "lines": log.lines,
        "bad_lines": len(log.bad_lines),
        "other_apis": dict(sorted(log.other_apis.items())),
    }
    result = RunResult(requests, records, timeseries_frame([], [], [], []), summary, None, run_info)
    return result, log
