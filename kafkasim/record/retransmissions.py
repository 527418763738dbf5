"""The retransmissions table (`retransmissions.parquet`, in a result whose run had any): one row per expiry of a
connection's TCP retransmission timer (``kafkasim.network.tcp``; ``Observer.tcp_retransmission``).

Columns: `time_ms` (the timer's expiry: the retransmission), `client` (the connection's client: a producer, a
consumer or a replica fetcher thread), `broker` (the broker it is connected to; -1 before the handshake
reached one), `direction` (`to_broker`: its requests, `from_broker`: the responses), `lost_since_ms` (when
the segment at the head of the loss was sent: the outage as TCP saw it), `outcome` (`got through`: the stream
resumes, in order; `lost again`: the RTO doubles; `gave up (ETIMEDOUT)`: tcp_retries2's time is over, the
connection is broken).

A run whose links never lost a message has no such file (its other files are the same as before it existed).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

RETRANSMISSIONS_FILE = "retransmissions.parquet"

RetransmissionRow = tuple[float, str, int, str, float, str]
"""(time_ms, client, broker, direction, lost_since_ms, outcome): one retransmission timer expiry."""


def retransmissions_frame(rows: Sequence[RetransmissionRow]) -> pd.DataFrame:
    """The retransmissions table from rows, in the order the timers expired."""
    return pd.DataFrame({
        "time_ms": pd.Series([r[0] for r in rows], dtype="float64"),
        "client": pd.Series([r[1] for r in rows], dtype=object),
        "broker": pd.Series([r[2] for r in rows], dtype="int64"),
        "direction": pd.Series([r[3] for r in rows], dtype=object),
        "lost_since_ms": pd.Series([r[4] for r in rows], dtype="float64"),
        "outcome": pd.Series([r[5] for r in rows], dtype=object),
    })
