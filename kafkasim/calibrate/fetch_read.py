"""How much longer a consumer fetch that found records takes than one that found none, read off a request log.

Kafka's `LocalLog.read` returns at once for a fetch at the log's end (`startOffset ==
maxOffsetMetadata.messageOffset`: nothing to read, and the fetch parks in the purgatory); below it, it finds the
fetch offset in the segment (`LogSegment.read` -> `translateOffset`: the offset index, then
`FileRecords.searchForOffsetWithSize` reading batch headers from the file) and slices the records. A consumer's
fetch (fetch.min.bytes 1) is answered at once exactly when it found records, so the difference of the two kinds'
LocalTimeMs is that read: kafkasim's `broker.costs.segment_read` (with `read_per_kib` for the bytes). On this
project's machine (Kafka 4.3.1, acks=1 at 300 records/s of 1 KiB) each run's median difference was 0.03-0.04 ms
(LocalTimeMs p50 0.08-0.10 ms against 0.05-0.06 ms).

Unlike the completion gaps (kafkasim.calibrate.completion) it needs no line times: each value is a phase of the
broker's own breakdown, so a log written in whole milliseconds gives it too.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from kafkasim.calibrate.completion import ROUNDING_MS, beyond_median, median_of_medians

NEEDED = ("api", "RemoteTimeMs", "LocalTimeMs")


def fetch_reads(requests: pd.DataFrame) -> np.ndarray:
    """Each consumer fetch answered at once (no RemoteTimeMs: it found records): its LocalTimeMs beyond the median
    of those that parked (found none), in ms; empty when the log lacks the columns or has too few of either kind
    (kafkasim.calibrate.completion.beyond_median)."""
    if any(column not in requests.columns for column in NEEDED):
        return np.empty(0)
    fetches = requests[requests["api"] == "FetchConsumer"]
    remote = fetches["RemoteTimeMs"].to_numpy(dtype=float)
    local = fetches["LocalTimeMs"].to_numpy(dtype=float)
    known = np.isfinite(remote)
    return beyond_median(local[known & (remote <= ROUNDING_MS)], local[known & (remote > ROUNDING_MS)])


def fetch_read_ms(logs: Iterable[pd.DataFrame]) -> float | None:
    """The median of each log's median `fetch_reads`, or None when no log has any."""
    return median_of_medians(fetch_reads, logs)
