"""``FetchClock``: the time of a fetch session's latest read (not a Kafka class)."""

from __future__ import annotations


class FetchClock:
    """The time of a fetch session's latest read (``fetch_time_ms``; -1 before the first).

    A follower's ``Replica`` of a *quiet* session partition (fully fetched, unchanged, in the ISR) takes it
    as its last fetch and last caught-up times (``Replica.clock``): in Kafka every incremental fetch reads
    every partition of its session and ``Replica.updateFetchStateOrThrow`` then changes nothing for such a
    partition but ``lastFetchTimeMs`` and ``lastCaughtUpTimeMs``, both set to the fetch time. The session
    reads only the partitions that changed (``SessionReader``) and moves this one clock instead of the times
    of every quiet replica; any other update of the replica first leaves the clock
    (``Replica.leave_clock``)."""

    __slots__ = ("fetch_time_ms",)

    def __init__(self) -> None:
        self.fetch_time_ms = -1

    def __repr__(self) -> str:
        return f"FetchClock({self.fetch_time_ms})"
