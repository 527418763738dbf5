"""How soon a broker reads a connection's next request once it has answered the last one, read off its request log:
from a produce's response sent to the start of the next produce of the same producer at the same broker, when that
came within `CLOSEST_MS` (it was waiting in the socket, or arrived meanwhile).

Kafka's `Processor` reads one request of a connection at a time: reading it mutes the connection (`Selector.mute`),
and the next request waits in the socket until the response has been written and the thread, in
`processCompletedSends`, has run `updateRequestMetrics` (with `kafka.request.logger` at DEBUG: built and written the
request log's line) and unmuted it (`tryUnmuteChannel`); its next `poll` reads it. A producer with requests in
flight is served so. On the project's machine (Apache Kafka 4.3.1, every request logged) the gap of such a produce
was never under 0.05 ms and 0.14-0.20 ms at its median (each of three runs); kafkasim, whose network thread read
the next request as soon as it had written the response, put a fifth of its produces 0.011 ms (`network_read`)
after the previous response. What the thread does between is `broker.costs.network_complete`, which the statistic
tells a fit.

Like the other gaps between two requests (kafkasim.calibrate.completion), it needs the log's times to the
microsecond: a log whose line times are whole milliseconds gives none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kafkasim.calibrate.completion import whole_millisecond_times
from kafkasim.calibrate.turnaround import NEEDED, between_requests

CLOSEST_MS = 0.5
"""A produce that started later than this after the previous one's response was sent came on its own, not queued
behind it: its gap is the producer's, not the broker's."""


def pipelined_reads(requests: pd.DataFrame) -> np.ndarray:
    """Each produce's gap from the previous produce's response of the same producer at the same broker (sent) to
    its own start (read), in ms, for the gaps from 0 to `CLOSEST_MS`; empty when the log lacks the columns or its
    times are whole milliseconds."""
    if any(column not in requests.columns for column in NEEDED) or whole_millisecond_times(requests):
        return np.empty(0)
    produces = requests[requests["api"] == "Produce"]
    gaps: list[np.ndarray] = []
    for _, one in produces.groupby(["client", "broker"]):
        answered, back = between_requests(one, CLOSEST_MS)
        gaps.append(back - answered)
    return np.concatenate(gaps) if gaps else np.empty(0)
