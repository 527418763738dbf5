"""``Replica``: the leader's view of one follower (Kafka's ``kafka.cluster.Replica``)."""

from __future__ import annotations

from typing import Final

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.log_offset_metadata import UNKNOWN_OFFSET_METADATA, LogOffsetMetadata
from kafkasim.broker.session_reads.fetch_clock import FetchClock

UNKNOWN_OFFSET: Final = -1

NEVER_MS: Final = -(1 << 62)
"""A time that never was: Kafka writes 0 for a replica that never fetched or never caught up
(``ReplicaState.EMPTY``, ``resetReplicaState``), which on its clock (ms since 1970) is decades ago. The simulated
clock starts at 0, where a literal 0 would be "just now": a replica that never caught up would count as caught
up (``isCaughtUp``) for the run's first ``replica.lag.time.max.ms``."""


class Replica:
    """What the leader knows about follower ``broker_id``: its LEO, log start and fetch/caught-up times.

    Kafka keeps this as an immutable snapshot swapped atomically; one thread at a time touches it here, so
    the fields are updated in place.

    Worked example of the caught-up rule (Kafka's ``Replica.updateFetchStateOrThrow``): at t=100 a follower
    fetches at 5 while the leader's LEO is 8: not caught up at 100, but the leader remembers LEO 8. At t=200
    it fetches at 8 while the LEO has moved to 9: it has reached what the leader had at its *previous* fetch,
    so ``last_caught_up_time_ms`` becomes 100 (that previous fetch time), not 200.
    """

    __slots__ = (
        "broker_id",
        "_log_end_offset_metadata",
        "_log_start_offset",
        "_last_fetch_leader_log_end_offset",
        "_last_fetch_time_ms",
        "_last_caught_up_time_ms",
        "_broker_epoch",
        "clock",
    )

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        # Kafka's ReplicaState.EMPTY.
        self._log_end_offset_metadata = UNKNOWN_OFFSET_METADATA
        self._log_start_offset = UNKNOWN_OFFSET
        self._last_fetch_leader_log_end_offset = 0
        self._last_fetch_time_ms = NEVER_MS  # Kafka's 0 (see NEVER_MS)
        self._last_caught_up_time_ms = NEVER_MS
        self._broker_epoch: int | None = None
        # The simulator's one hook (not Kafka's): while set, the last fetch and last caught-up times are the
        # clock's, a fetch session's latest read (kafkasim.broker.session_reads.fetch_clock).
        self.clock: FetchClock | None = None

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset_metadata.message_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._log_end_offset_metadata

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def last_caught_up_time_ms(self) -> int:
        clock = self.clock
        return clock.fetch_time_ms if clock is not None else self._last_caught_up_time_ms

    @property
    def last_fetch_leader_log_end_offset(self) -> int:
        return self._last_fetch_leader_log_end_offset

    @property
    def last_fetch_time_ms(self) -> int:
        clock = self.clock
        return clock.fetch_time_ms if clock is not None else self._last_fetch_time_ms

    def leave_clock(self) -> None:
        """Stop taking the times from ``clock``: keep its latest read's time as this replica's own."""
        clock = self.clock
        if clock is not None:
            self._last_caught_up_time_ms = self._last_fetch_time_ms = clock.fetch_time_ms
            self.clock = None

    @property
    def broker_epoch(self) -> int | None:
        return self._broker_epoch

    def update_fetch_state(
        self,
        fetch_offset_metadata: LogOffsetMetadata,
        follower_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
        broker_epoch: int = -1,
    ) -> None:
        """Record a follower fetch that read successfully (Kafka's ``updateFetchStateOrThrow``).

        ``leader_end_offset`` is the leader's LEO captured *before* the read, so appends racing the fetch
        do not keep the follower out of sync."""
        if broker_epoch != -1 and self._broker_epoch is not None and self._broker_epoch > broker_epoch:
            # A fetch from an older incarnation of the follower broker (KRaft).
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"replica {self.broker_id} fetched with stale broker epoch {broker_epoch} "
                f"(known {self._broker_epoch})",
            )
        if self.clock is not None:
            self.leave_clock()
        fetch_offset = fetch_offset_metadata.message_offset
        if fetch_offset >= leader_end_offset:
            self._last_caught_up_time_ms = max(self._last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self._last_fetch_leader_log_end_offset:
            # Replica.updateFetchStateOrThrow: reached the LEO seen at the previous fetch => caught up as of
            # *that* fetch.
            self._last_caught_up_time_ms = max(self._last_caught_up_time_ms, self._last_fetch_time_ms)
        self._log_start_offset = follower_start_offset
        self._log_end_offset_metadata = fetch_offset_metadata
        self._last_fetch_leader_log_end_offset = max(leader_end_offset, self._last_fetch_leader_log_end_offset)
        self._last_fetch_time_ms = fetch_time_ms
        self._broker_epoch = broker_epoch

    def is_caught_up(self, leader_end_offset: int, current_time_ms: int, replica_max_lag_ms: int) -> bool:
        """At the leader's LEO, or caught up within the last ``replica.lag.time.max.ms``."""
        return (
            leader_end_offset == self._log_end_offset_metadata.message_offset
            or current_time_ms - self.last_caught_up_time_ms <= replica_max_lag_ms
        )

    def reset_replica_state(
        self, current_time_ms: int, leader_end_offset: int, is_new_leader: bool, is_follower_in_sync: bool
    ) -> None:
        """Reset on a new leader epoch (Kafka's ``Replica.resetReplicaState``): an ISR member counts as caught
        up now; a broker that just became leader forgets everything it knew about the follower."""
        if self.clock is not None:
            self.leave_clock()
        self._last_caught_up_time_ms = current_time_ms if is_follower_in_sync else NEVER_MS
        if is_new_leader:
            self._log_start_offset = UNKNOWN_OFFSET
            self._log_end_offset_metadata = UNKNOWN_OFFSET_METADATA
            self._last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self._last_fetch_time_ms = NEVER_MS
            self._broker_epoch = None
        else:
            self._last_fetch_leader_log_end_offset = leader_end_offset
            self._last_fetch_time_ms = current_time_ms if is_follower_in_sync else NEVER_MS

    def __repr__(self) -> str:
        return (
            f"Replica(brokerId={self.broker_id}, leo={self.log_end_offset}, logStart={self._log_start_offset}, "
            f"lastCaughtUp={self.last_caught_up_time_ms}, lastFetchLeaderLeo="
            f"{self._last_fetch_leader_log_end_offset}, lastFetch={self.last_fetch_time_ms})"
        )
