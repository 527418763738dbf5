"""``DelayedFetch``: a fetch waiting for ``min_bytes`` of new data, a segment roll, an error or its max
wait (Kafka's ``DelayedFetch``, with the 3.8+ offset comparison of KAFKA-16452)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import FetchParams, FetchPartitionStatus, LogReadResult, nothing_past_end
from kafkasim.broker.log import FetchIsolation
from kafkasim.broker.log_offset_metadata import UNKNOWN_OFFSET_METADATA
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.reread_from_log import reread_from_log
from kafkasim.purgatory import DelayedOperation

if TYPE_CHECKING:
    from kafkasim.broker.replica_manager import ReplicaManager

FetchResponseCallback = Callable[[list[tuple[TopicPartition, LogReadResult]]], None]

_NOT_CHECKED: Final = -1
_ALWAYS_WALK: Final = -2

# The errors DelayedFetch turns into an immediate completion (cases A-E); others escape, as in Kafka.
_COMPLETING_ERRORS: Final = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.FENCED_LEADER_EPOCH,
    }
)


class DelayedFetch(DelayedOperation):
    """A parked fetch. Its ``start_offset_metadata`` per partition is frozen at arrival, as Kafka's
    ``ReplicaManager.fetchMessages`` builds ``FetchPartitionStatus`` once.

    Worked example of the 3.8+ segment-roll rule: a follower parked at LEO ``(40, 0, 400)``. The leader
    rolls and appends: LEO ``(50, 40, 100)``. 40 < 50 and segment 0 is older than 40, so Case F completes
    it. Had nothing been appended after the roll, the LEO would be ``(40, 40, 0)``: equal offsets, so
    nothing happens, although the segments differ.

    Checks re-evaluate only the partitions that changed. Kafka's ``tryComplete`` walks every partition on
    every check; a partition's verdict (complete now, or the bytes it adds towards ``min_bytes``) depends only
    on that partition's state and the request, so this fetch keeps each partition's last verdict and, on a
    check, re-evaluates the partitions the broker's ``PartitionChanges`` recorded since its last check, in
    request order (the first completing partition in request order is the one Kafka's walk would stop at,
    and an unchanged partition cannot be it: its last verdict was "not complete"). The first check, and any
    check whose last one is older than what ``PartitionChanges`` keeps, walks them all, as Kafka does. The
    answer is Kafka's as long as every change of a partition's state is recorded when it happens (see
    ``kafkasim.broker.session_reads.partition_changes``); tests/broker/test_delayed_fetch_incremental.py compares the two
    on random histories.
    """

    __slots__ = (
        "params",
        "fetch_partition_status",
        "replica_manager",
        "response_callback",
        "_changes",
        "_checked_at",
        "_positions",
        "_partition_bytes",
        "_accumulated_size",
        "_pending",
        "_read_results",
        "_read_at",
    )

    def __init__(
        self,
        params: FetchParams,
        fetch_partition_status: Sequence[tuple[TopicPartition, FetchPartitionStatus]],
        replica_manager: ReplicaManager,
        response_callback: FetchResponseCallback,
        *,
        read_results: Sequence[tuple[TopicPartition, LogReadResult]] | None = None,
        read_at: int = -1,
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.params = params
        self.fetch_partition_status = fetch_partition_status
        self.replica_manager = replica_manager
        self.response_callback = response_callback
        self._changes = replica_manager.partition_changes
        # The PartitionChanges sequence number at the last check that ran to its end, or _NOT_CHECKED, or
        # _ALWAYS_WALK (a partition appears twice in the request).
        self._checked_at = _NOT_CHECKED
        # Request position of each partition (built on the first check that needs it); None: a partition
        # appears twice, so every check walks them all.
        self._positions: dict[TopicPartition, int] | None = None
        # Each partition's bytes towards min_bytes at its last evaluation, and their sum (Case G).
        self._partition_bytes: list[int] = []
        self._accumulated_size = 0
        # Request positions to evaluate at the next check whatever changed (see _begin_at_read).
        self._pending: list[int] = []
        # The read that parked this fetch, begun at PartitionChanges sequence read_at: on completion, the
        # partitions that had nothing to read then and did not change since are not read again.
        self._read_results = read_results
        self._read_at = read_at

    def try_complete(self) -> bool:
        """Kafka's ``DelayedFetch.tryComplete``, in request order; its cases (Kafka's own letters, which label
        the comments in ``_bytes_or_complete``) complete the fetch when: A/B this broker is no longer the leader
        or the replica is gone, C the partition is unknown, D its log is offline, E the requested leader epoch
        is fenced, F the fetch offset is beyond the end or the end moved to a newer segment (truncation,
        segment roll), G the bytes accumulated over all partitions reach ``min_bytes`` (after the loop), H a
        follower's last fetched epoch diverged from the log.

        This runs for every parked fetch on every append and HW move (several times per request), so only the
        partitions changed since the last check are evaluated again (see the class comment)."""
        if self._completed:
            return False  # what forceComplete answers; its partitions are released (on_complete)
        checked_at = self._checked_at
        if checked_at == _NOT_CHECKED and self._read_results is not None:
            checked_at = self._begin_at_read()
        if checked_at >= 0:
            changes = self._changes
            pending = self._pending
            if changes.sequence == checked_at and not pending:
                return False  # nothing changed since a check that did not complete
            changed = changes.since(checked_at)
            if changed is not None:
                return self._try_complete_changed(changed, pending, changes.sequence)
        return self._try_complete_all()

    def _begin_at_read(self) -> int:
        """Take the read that parked this fetch as its first check. A partition whose read found nothing past
        the end (fetch offset = end offset, no error, no diverging epoch) has Kafka's verdict "no bytes, not
        complete" while it does not change: equal offsets count nothing (not Case F); the read validated it as
        Cases A-E do (the same partition lookup and ``localLogWithEpochOrThrow``) and checked the follower's
        last fetched epoch as Case H does (``last_fetched_epoch_end``: an error, an undefined or a diverging
        epoch would have answered the fetch at once). Every other partition is evaluated at the first check,
        with those changed since the read."""
        results = self._read_results
        assert results is not None
        statuses = self.fetch_partition_status
        positions = {tp: position for position, (tp, _) in enumerate(statuses)}
        if len(positions) != len(statuses):
            self._checked_at = _ALWAYS_WALK
            return _ALWAYS_WALK
        isolation = self.params.isolation
        self._positions = positions
        self._partition_bytes = [0] * len(statuses)
        self._accumulated_size = 0
        self._pending = [
            position
            for position, ((_, status), (_, result)) in enumerate(zip(statuses, results, strict=True))
            if not nothing_past_end(result, status.fetch_info.fetch_offset, isolation, exactly=True)
        ]
        self._checked_at = self._read_at
        return self._read_at

    def _try_complete_all(self) -> bool:
        """Kafka's walk over every partition."""
        sequence = self._changes.sequence
        statuses = self.fetch_partition_status
        partition_bytes = [0] * len(statuses)
        accumulated_size = 0
        bytes_or_complete = self._bytes_or_complete
        for position, (topic_partition, status) in enumerate(statuses):
            size = bytes_or_complete(topic_partition, status)
            if size < 0:
                return self.force_complete()
            partition_bytes[position] = size
            accumulated_size += size
        self._partition_bytes = partition_bytes
        self._accumulated_size = accumulated_size
        self._pending = []
        if accumulated_size >= self.params.min_bytes:
            return self.force_complete()  # Case G
        if self._checked_at != _ALWAYS_WALK:
            if self._positions is None:
                positions = {tp: position for position, (tp, _) in enumerate(statuses)}
                if len(positions) != len(statuses):
                    self._checked_at = _ALWAYS_WALK
                    return False
                self._positions = positions
            self._checked_at = sequence
        return False

    def _try_complete_changed(self, changed: Sequence[TopicPartition], pending: list[int], sequence: int) -> bool:
        """The walk over the partitions in ``changed`` and ``pending`` only, in request order."""
        positions = self._positions
        assert positions is not None  # set whenever _checked_at is
        changed_positions = list(pending)
        for key in changed:
            position = positions.get(key)
            if position is not None:
                changed_positions.append(position)
        if changed_positions:
            if len(changed_positions) > 1:
                changed_positions = sorted(set(changed_positions))
            statuses = self.fetch_partition_status
            partition_bytes = self._partition_bytes
            bytes_or_complete = self._bytes_or_complete
            for position in changed_positions:
                topic_partition, status = statuses[position]
                size = bytes_or_complete(topic_partition, status)
                if size < 0:
                    return self.force_complete()
                # Kept consistent partition by partition: an escaping error leaves _checked_at and _pending
                # where they were, and the next check evaluates these partitions again.
                self._accumulated_size += size - partition_bytes[position]
                partition_bytes[position] = size
            self._pending = []
            if self._accumulated_size >= self.params.min_bytes:
                return self.force_complete()  # Case G
        self._checked_at = sequence
        return False

    def _bytes_or_complete(self, topic_partition: TopicPartition, status: FetchPartitionStatus) -> int:
        """One partition's step of Kafka's walk: -1 if it completes the fetch (cases A-F, H), else the bytes it
        adds towards ``min_bytes`` (Case G). The common paths are inlined; each shortcut is noted where it is
        taken and gives Kafka's answer."""
        fetch_offset = status.start_offset_metadata
        fetch_info = status.fetch_info
        fetch_message_offset = fetch_offset.message_offset
        params = self.params
        try:
            if fetch_message_offset == -1 and fetch_offset == UNKNOWN_OFFSET_METADATA:
                return 0  # e.g. a preferred-read-replica answer: the partition is ignored
            partition = self.replica_manager.get_partition_or_exception(topic_partition)  # Cases A, B, C, D
            # Case E: Partition.fetch_offset_snapshot's validation, without building the snapshot tuple.
            log = partition.local_log_with_epoch_or_throw(fetch_info.current_leader_epoch, params.fetch_only_leader)
            # Materialised on every check, as Log.fetch_offset_snapshot does (it caches full metadata).
            high_watermark = log.fetch_high_watermark_metadata()
            if params.isolation is FetchIsolation.LOG_END:
                end_offset = log.log_end_offset_metadata
            else:
                end_offset = high_watermark  # HIGH_WATERMARK, and TXN_COMMITTED (LSO = HW here)
            end_message_offset = end_offset.message_offset
            size = 0
            # DelayedFetch.tryComplete (3.8+): equal message offsets fall through -- never Case F, even when the
            # two describe the same offset on different segments after a roll. Followers (LOG_END) thus ignore
            # HW moves: only the LEO matters to them.
            if fetch_message_offset > end_message_offset:
                # Case F: the leader truncated, or a consumer fetched beyond the HW.
                return -1
            if fetch_message_offset < end_message_offset:
                if fetch_offset.on_older_segment(end_offset):
                    # Case F: the end moved to a newer segment (roll) -- respond now with what there is.
                    return -1
                if fetch_offset.on_same_segment(end_offset):
                    # Case G's accumulation, capped by the partition's max bytes.
                    size = min(end_offset.position_diff(fetch_offset), fetch_info.max_bytes)
                # Either side message-only: counts for nothing.
            last_fetched_epoch = fetch_info.last_fetched_epoch
            if last_fetched_epoch >= 0:
                # Case H: the log diverged from the follower while it waited (truncation). The partition owns
                # the lookup and its shortcut (Case E above did the epoch validation it relies on).
                error, epoch, epoch_end_offset = partition.last_fetched_epoch_end(
                    fetch_info.current_leader_epoch, last_fetched_epoch
                )
                if error is not Errors.NONE or epoch_end_offset == -1 or epoch == -1:
                    return -1
                if epoch < last_fetched_epoch or epoch_end_offset < fetch_info.fetch_offset:
                    return -1  # diverging epoch: the follower must truncate
            return size
        except KafkaError as e:
            if e.error in _COMPLETING_ERRORS:
                return -1
            raise

    def on_expiration(self) -> None:
        self.replica_manager.metrics.record_fetch_expiration(self.params.is_from_follower)

    def on_complete(self) -> None:
        """Kafka's ``DelayedFetch.onComplete``: re-read with the original fetch offsets: the response holds
        what was appended while parked and the offsets current now; a follower's fetch state is not updated a
        second time."""
        fetch_infos = [(tp, status.fetch_info) for tp, status in self.fetch_partition_status]
        # The read that parked this fetch answers again for a partition that found nothing past the end then
        # and has not changed since (reread_from_log, not Kafka's), unless PartitionChanges no longer
        # reaches back to it.
        previous = self._read_results
        self._read_results = None
        changed = self._changes.since(self._read_at) if previous is not None else None
        if previous is not None and changed is not None:
            rm = self.replica_manager
            results = reread_from_log(rm.read_from_log, rm.time.milliseconds(), self.params, fetch_infos,
                                      [prior for _, prior in previous], frozenset(changed))
        else:
            results = self.replica_manager.read_from_log(self.params, fetch_infos, True)
        # A completed fetch stays in the watch lists of its other partitions until they are checked or purged
        # (up to fetch.purgatory.purge.interval.requests of them): it keeps nothing per partition meanwhile.
        self.fetch_partition_status = ()
        self._positions = None
        self._partition_bytes = []
        self._pending = []
        self.response_callback(results)

    def __repr__(self) -> str:
        return (
            f"DelayedFetch(replicaId={self.params.replica_id}, minBytes={self.params.min_bytes}, "
            f"{list(self.fetch_partition_status)!r}, completed={self.is_completed})"
        )
