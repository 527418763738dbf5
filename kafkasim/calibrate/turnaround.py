"""How long a follower takes to come back for more, read off a leader's request log: from the leader's sending one
of its fetch responses to the arrival of its next fetch.

Kafka's `ReplicaFetcherThread` (`AbstractFetcherThread.processFetchRequest`) appends the partitions' data to its
own log, moves its high watermark, and sends its next fetch at once (`replica.fetch.backoff.ms` only after an
error). So the gap is the response's trip to the follower, the follower's own work and the next request's trip back:
what kafkasim's follower link latency (`followers.link.latency`) and the follower's work stand for. A follower that
comes back sooner is parked sooner, and the next append's completion answers it sooner, so the gap shapes how soon
the high watermark moves and a consumer sees a record.

Like the completion gap (kafkasim.calibrate.completion), it is a difference of two requests' absolute times: a log
whose line times are whole milliseconds gives none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kafkasim.calibrate.completion import whole_millisecond_times

LONGEST_MS = 50.0
"""A gap longer than this is no turnaround: the follower stalled, lost its leader or was fenced meanwhile."""
NEEDED = ("api", "client", "broker", "start_ms", "end_ms")


def follower_turnarounds(requests: pd.DataFrame) -> np.ndarray:
    """Each follower fetch's gap to the same follower's next fetch of the same leader (its response sent to that
    fetch's arrival), in ms; empty when the log lacks the columns or its times are whole milliseconds."""
    if any(column not in requests.columns for column in NEEDED) or whole_millisecond_times(requests):
        return np.empty(0)
    fetches = requests[requests["api"] == "FetchFollower"]
    gaps: list[np.ndarray] = []
    for _, one in fetches.groupby(["client", "broker"]):
        one = one.sort_values("start_ms")
        start = one["start_ms"].to_numpy(dtype=float)
        end = one["end_ms"].to_numpy(dtype=float)
        gap = start[1:] - end[:-1]
        gaps.append(gap[(gap >= 0.0) & (gap <= LONGEST_MS)])
    return np.concatenate(gaps) if gaps else np.empty(0)
