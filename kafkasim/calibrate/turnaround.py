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

A turnaround is also when the followers' JVMs work (`produce_queues_in_turnarounds`): on the project's machine,
where a controller, three brokers and the clients share two cores, a produce that arrived while a follower was in
its turnaround waited to be taken (RequestQueueTimeMs) 0.079-0.116 ms at its p50 and 0.44-0.49 ms at its p90,
one that arrived while none was 0.041-0.064 and 0.14-0.26 (each of three runs, Apache Kafka 4.3.1). kafkasim
counts a follower's replica fetcher among the machine's running threads while it appends
(kafkasim.sim.machine_load): how much of the turnaround that is, against the follower link's trips, is what the
statistic tells a fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kafkasim.calibrate.completion import whole_millisecond_times

LONGEST_MS = 50.0
"""A gap longer than this is no turnaround: the follower stalled, lost its leader or was fenced meanwhile."""
NEEDED = ("api", "client", "broker", "start_ms", "end_ms")
QUEUED = (*NEEDED, "RequestQueueTimeMs")


def follower_turnarounds(requests: pd.DataFrame) -> np.ndarray:
    """Each follower fetch's gap to the same follower's next fetch of the same leader (its response sent to that
    fetch's arrival), in ms; empty when the log lacks the columns or its times are whole milliseconds."""
    if any(column not in requests.columns for column in NEEDED) or whole_millisecond_times(requests):
        return np.empty(0)
    fetches = requests[requests["api"] == "FetchFollower"]
    gaps: list[np.ndarray] = []
    for _, one in fetches.groupby(["client", "broker"]):
        answered, back = between_requests(one, LONGEST_MS)
        gaps.append(back - answered)
    return np.concatenate(gaps) if gaps else np.empty(0)


def between_requests(requests: pd.DataFrame, longest_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """One client's requests of one broker (a follower's fetches of one leader: its turnarounds): when each gap
    began (a response sent) and ended (the next request's arrival), a gap longer than `longest_ms` or a request
    never answered (NaN) left out."""
    requests = requests.sort_values("start_ms")
    answered = requests["end_ms"].to_numpy(dtype=float)[:-1]
    back = requests["start_ms"].to_numpy(dtype=float)[1:]
    gap = back - answered
    kept = (gap >= 0.0) & (gap <= longest_ms)
    return answered[kept], back[kept]


def produce_queues_in_turnarounds(requests: pd.DataFrame) -> np.ndarray:
    """The RequestQueueTimeMs of each produce that arrived at a leader while one of that leader's followers was in
    its turnaround (its fetch answered, its next fetch not yet arrived), in ms; empty when the log lacks the
    columns or its times are whole milliseconds."""
    if any(column not in requests.columns for column in QUEUED) or whole_millisecond_times(requests):
        return np.empty(0)
    queues: list[np.ndarray] = []
    for _, at in requests.groupby("broker"):
        produces = at[at["api"] == "Produce"]
        arrived = produces["start_ms"].to_numpy(dtype=float)
        inside = np.zeros(len(arrived), dtype=bool)
        for _, one in at[at["api"] == "FetchFollower"].groupby("client"):
            answered, back = between_requests(one, LONGEST_MS)
            # One fetch in flight at a time: the turnarounds follow one another, each ends before the next begins.
            last = np.searchsorted(answered, arrived, side="right") - 1
            began = last >= 0
            inside[began] |= arrived[began] < back[last[began]]
        queues.append(produces["RequestQueueTimeMs"].to_numpy(dtype=float)[inside])
    return np.concatenate(queues) if queues else np.empty(0)
