"""``SessionReads``: what a ``FetchSession`` keeps for the lazy reads of its partitions (not Kafka's fields;
``FetchSession.reads`` is its one reference to it)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Protocol

from kafkasim.broker.records import TopicPartition
from kafkasim.broker.session_reads.fetch_clock import FetchClock
from kafkasim.purgatory import KeyGroup

if TYPE_CHECKING:
    from kafkasim.broker.fetch_session_cache import CachedPartition


class ParkedOnSession(Protocol):
    """A fetch parked on the session (``SessionDelayedFetch``)."""

    def detach_from_session(self) -> None: ...


class SessionReads:
    """One session's state for ``SessionReader.fetch_session_messages``: the next order stamp
    (``CachedPartition.pos``); the clock quiet followers' replicas take their times from; the
    ``PartitionChanges`` sequence of the last read (-1: none yet, the next read walks every partition) and
    that read's (replica id, broker epoch, isolation); the partitions to read at the next fetch whatever
    changed (``eager``); the partitions the last read read, until its response is built (``pending``); the
    fetch parked on the session; and the group of operation keys it watches (with the purgatory's release
    callback)."""

    __slots__ = ("next_pos", "clock", "read_at", "read_key", "eager", "pending", "parked", "key_group",
                 "release_group")

    def __init__(self, partitions: Iterable[CachedPartition]) -> None:
        self.next_pos = 0
        for cached in partitions:
            cached.pos = self.next_pos
            self.next_pos += 1
        self.clock = FetchClock()
        self.read_at = -1
        self.read_key: tuple[int, int, object] | None = None
        self.eager: set[TopicPartition] = set()
        self.pending: list[CachedPartition] = []
        self.parked: ParkedOnSession | None = None
        self.key_group: KeyGroup | tuple[Hashable, ...] | None = None
        self.release_group: Callable[[KeyGroup], None] | None = None

    def stamp(self, cached: CachedPartition) -> None:
        """A partition joined the session or moved to the end of its order."""
        cached.pos = self.next_pos
        self.next_pos += 1

    def before_change(self) -> None:
        """The session's partitions, their order or their request data are about to change: a fetch parked
        on the session takes its own copy of what it needs first."""
        parked = self.parked
        if parked is not None:
            self.parked = None
            parked.detach_from_session()

    def forget(self, cached: CachedPartition) -> None:
        """A partition left the session: its follower replica no longer takes the session's clock."""
        rider = cached.rider
        if rider is not None and rider.clock is self.clock:
            rider.leave_clock()

    def drop_key_group(self) -> None:
        """The partitions changed (or the session closed): the next parked fetch watches a new group; the
        purgatory may forget this one once nothing watches it."""
        group = self.key_group
        if group is not None:
            self.key_group = None
            if self.release_group is not None and isinstance(group, KeyGroup):
                self.release_group(group)

    def response_built(self) -> None:
        """The response of the last read is built: the partitions it found quiet need no read next time
        unless they change (the others stay in ``eager``)."""
        pending = self.pending
        if pending:
            self.pending = []
            eager = self.eager
            for cached in pending:
                if cached.last_read is not None:
                    eager.discard(cached.tp)
