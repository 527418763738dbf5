"""``SessionReader``: an incremental session's fetch that reads only the session partitions that changed, in
place of Kafka's ``ReplicaManager.fetchMessages`` over every partition (``IncrementalFetchContext.
foreachPartition``). Not Kafka's algorithm: the simulator's shortcut, proven to answer the same
(tests/broker/test_session_reads.py, tests/engine/test_session_reads_whole_runs.py)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from kafkasim.broker.delayed_fetch import FetchResponseCallback
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, nothing_past_end
from kafkasim.broker.fetch_session import CachedPartition, FetchSession, IncrementalFetchContext
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.session_reads.session_delayed_fetch import SessionDelayedFetch
from kafkasim.purgatory import KeyGroup

if TYPE_CHECKING:
    from kafkasim.broker.replica_manager import ReplicaManager

LAZY_FETCH_SESSIONS = True
"""Whether an incremental session fetch reads only the session partitions that changed
(``SessionReader.fetch_session_messages``; ``KafkaApis`` builds a ``SessionReader``). False: every partition,
as Kafka's ``IncrementalFetchContext.foreachPartition`` hands them to ``fetchMessages`` -- the reference the
tests compare the fast path with (same answers)."""

SESSION_GROUP_MIN_KEYS = 32
"""From this many partitions on, a fetch parked on a session watches them as one ``KeyGroup``."""

# A session partition's place in the session's order (CachedPartition.pos); a C key, no frame per element.
_session_order = attrgetter("pos")


class SessionReader:
    """The lazy reads of incremental fetch sessions over one broker's ``ReplicaManager``."""

    __slots__ = ("replica_manager",)

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager

    def fetch_session_messages(
        self, params: FetchParams, context: IncrementalFetchContext, response_callback: FetchResponseCallback
    ) -> None:
        """``fetchMessages`` over an incremental session's partitions (Kafka's
        ``IncrementalFetchContext.foreachPartition``), reading only the partitions that may answer
        differently from the session's previous read: those the request named, those recorded in
        ``PartitionChanges`` since that read, and those that read was not quiet for. A *quiet* partition --
        its last read found nothing past the end, without error or diverging epoch, and for a follower its
        replica is in the ISR (or an ISR change is in flight), so ``Partition.maybeExpandIsr`` has nothing to
        do -- answers the same as long as it does not change: nothing to send (the session already sent its
        HW and log start offset), no bytes towards ``min_bytes``, and for a follower a fetch state that only
        moves its last fetch and caught-up times to now, which its ``Replica`` reads from the session's
        ``FetchClock``. The read partitions are read in the session's order with the request's byte limits,
        as Kafka reads them (a quiet partition adds 0 bytes, so the others' limits are the same). A fetch that
        must wait parks a ``SessionDelayedFetch`` watching the session's partitions as one group.

        The first incremental read of a session, one whose changes are older than ``PartitionChanges`` keeps,
        or one with other fetch parameters than the previous read, reads every partition."""
        replica_manager = self.replica_manager
        session = context.session
        reads = session.reads
        reads.before_change()  # a fetch still parked on the session (a duplicate request) detaches first
        partition_map = session.partition_map
        changes = replica_manager.partition_changes
        read_at = changes.sequence
        read_key = (params.replica_id, params.replica_epoch, params.isolation)
        changed = changes.since(reads.read_at) if reads.read_at >= 0 and reads.read_key == read_key else None
        if changed is None:
            candidates = list(partition_map.values())
        else:
            wanted = reads.eager
            for tp in context.named:
                wanted.add(tp)
            for tp in changed:
                if tp in partition_map:
                    wanted.add(tp)
            candidates = [partition_map[tp] for tp in wanted if tp in partition_map]
            candidates.sort(key=_session_order)
        is_follower = params.is_from_follower
        fetch_time_ms = replica_manager.time.milliseconds()
        if is_follower:
            clock = reads.clock
            for cached in candidates:
                rider = cached.rider
                if rider is not None:
                    if rider.clock is clock:
                        rider.leave_clock()  # its state as of the session's previous read, before the clock moves
                    cached.rider = None
            clock.fetch_time_ms = fetch_time_ms
        # readFromLog over the partitions to read, in the session's order, with the request's byte limits.
        results = replica_manager.read_from_log(params, [(cached.tp, cached.req_data) for cached in candidates], False)
        # Until the response is built, every partition read is read again next time (eager); the response
        # drops the quiet ones (SessionReads.response_built).
        reads.read_at = read_at
        reads.read_key = read_key
        reads.eager = {cached.tp for cached in candidates}
        reads.pending = candidates
        bytes_readable = 0
        error_or_diverging = False
        isolation = params.isolation
        for cached, (tp, result) in zip(candidates, results, strict=True):
            size = result.info.size_in_bytes
            bytes_readable += size
            if result.error is not Errors.NONE or result.diverging_epoch is not None:
                error_or_diverging = True
                cached.last_read = None
            elif size == 0 and nothing_past_end(result, cached.req_data.fetch_offset, isolation, exactly=True):
                cached.last_read = result
                if is_follower and not self._ride(session, cached, tp, params.replica_id):
                    cached.last_read = None
            else:
                cached.last_read = None
        if params.max_wait_ms <= 0 or bytes_readable >= params.min_bytes or error_or_diverging:
            response_callback(results)
            return
        operation = SessionDelayedFetch(
            params, session, candidates, results, replica_manager, response_callback, read_at=read_at
        )
        replica_manager.fetch_purgatory.try_complete_else_watch(operation, self._session_key_group(session))

    def _ride(self, session: FetchSession, cached: CachedPartition, tp: TopicPartition, replica_id: int) -> bool:
        """Let the follower's replica of a quiet partition take its times from the session's clock, if its
        next updates would change nothing else: this broker leads, and the follower is in the ISR or an ISR
        change is in flight (``Partition.maybeExpandIsr`` does nothing then; an ISR change is recorded as a
        change)."""
        partition = self.replica_manager.partitions.get(tp)
        if partition is None or not partition.is_leader:
            return False
        replica = partition.remote_replica(replica_id)
        if replica is None:
            return False
        state = partition.partition_state
        if replica_id not in state.isr and not state.is_inflight:
            return False
        replica.clock = session.reads.clock
        cached.rider = replica
        return True

    def _session_key_group(self, session: FetchSession) -> Sequence[Hashable] | KeyGroup:
        """What a fetch parked on the session watches: its partitions' keys, as one ``KeyGroup`` (O(1) per
        park) from ``SESSION_GROUP_MIN_KEYS`` partitions on, a plain list below (cheaper for a few keys:
        benchmarks/README.md, "Group watches"). The purgatory answers the same either way."""
        reads = session.reads
        group = reads.key_group
        if group is None:
            operation_key = self.replica_manager.operation_key
            keys = [operation_key(tp) for tp in session.partition_map]
            strategy = self.replica_manager.fetch_purgatory.group_watch_strategy
            if len(keys) >= SESSION_GROUP_MIN_KEYS and strategy is not None:
                group = reads.key_group = KeyGroup(keys)
                reads.release_group = strategy.release_group
            else:
                group = reads.key_group = tuple(keys)
        return group
