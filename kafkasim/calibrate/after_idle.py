"""How much longer a produce's handling takes when the broker's request handlers had been idle before it, read off
a request log: what kafkasim's `machine_cold_start` stands for (kafkasim.sim.cold_start).

A request handler's last work before a produce's dequeue ended at the latest of the broker's earlier local
completions and responses (each is a handler's `RequestChannel.sendResponse`, or the end of its `KafkaApis.handle`).
A produce taken `IDLE_MS` or more after it had the handlers' caches go cold; one taken less than `BUSY_MS` after
had them warm. Each value is a cold produce's LocalTimeMs beyond the median of the warm ones'. On this project's
machine (Kafka 4.3.1, acks=1 at 300 records/s of 1 KiB) the LocalTimeMs p50 was 0.14-0.19 ms warm and 0.24-0.40 ms
cold (docs/calibration.md, "Work after idle").

It needs line times finer than a millisecond, as the completion gaps do (kafkasim.calibrate.completion).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kafkasim.calibrate.completion import beyond_median, whole_millisecond_times

IDLE_MS = 3.0
"""A produce taken this long or longer after the handlers' last work found them cold."""
BUSY_MS = 0.6
"""A produce taken sooner than this after the handlers' last work found them warm."""
NEEDED = ("api", "broker", "dequeue_ms", "local_complete_ms", "response_complete_ms", "end_ms", "LocalTimeMs")


def handler_idle(requests: pd.DataFrame) -> pd.Series:
    """Each request's time from its broker's last handler work before its dequeue (the latest earlier local
    completion or response of that broker) to its dequeue, in ms; NaN where nothing came before."""
    idle = pd.Series(np.nan, index=requests.index)
    for _broker, rows in requests.groupby("broker"):
        ends = np.concatenate([rows["local_complete_ms"].to_numpy(dtype=float),
                               rows["response_complete_ms"].to_numpy(dtype=float)])
        ends = np.sort(ends[np.isfinite(ends)])
        dequeue = rows["dequeue_ms"].to_numpy(dtype=float)
        before = np.searchsorted(ends, dequeue, side="left") - 1
        last = np.where(before >= 0, ends[np.maximum(before, 0)], np.nan)
        idle.loc[rows.index] = dequeue - last
    return idle


def produces_after_idle(requests: pd.DataFrame) -> np.ndarray:
    """Each produce taken `IDLE_MS` or more after its broker's handlers' last work: its LocalTimeMs beyond the
    median of the produces taken less than `BUSY_MS` after, in ms; empty when the log lacks the columns, has
    fewer than kafkasim.calibrate.completion.MIN_GAPS of either, or its times are whole milliseconds."""
    if any(column not in requests.columns for column in NEEDED) or whole_millisecond_times(requests):
        return np.empty(0)
    idle = handler_idle(requests)
    produce = requests["api"] == "Produce"
    local = requests["LocalTimeMs"].to_numpy(dtype=float)
    gap = idle.to_numpy(dtype=float)
    cold = produce.to_numpy() & (gap >= IDLE_MS)
    warm = produce.to_numpy() & (gap < BUSY_MS)
    return beyond_median(local[cold], local[warm])
