"""``SessionDelayedFetch``: the DelayedFetch of an incremental fetch session (KIP-227) that read only the
partitions that changed (``SessionReader.fetch_session_messages``).

Kafka's ``IncrementalFetchContext.foreachPartition`` hands ``ReplicaManager.fetchMessages`` every partition
of the session, so the DelayedFetch it parks holds a ``FetchPartitionStatus`` for each, watches each one's
key and, on completion, re-reads them all. Most of them are *quiet*: the follower or consumer has already
fetched everything there is (fetch offset = end offset), and nothing changed since the session last read
them. A quiet partition's part in Kafka's DelayedFetch is fixed while it stays unchanged: its status is the
one its last read found (the same fetch offset metadata), its verdict is "no bytes, not complete", and its
re-read on completion answers "nothing past the end" with the HW and log start offset the session has
already sent, so the response leaves it out (``CachedPartition.maybeUpdateResponseData``).

So this fetch holds statuses only for the partitions the read read (``candidates``), watches the session's
partitions as one ``KeyGroup`` (the purgatory behaves exactly as if it watched every key), and makes a quiet
partition's status from the session's cache the first time the partition changes. Checks re-evaluate the
partitions changed since the last check, in the session's order (``DelayedFetch``'s incremental rule); the
completion re-reads the candidates and the quiet partitions that changed, in the session's order.

Worked example: a follower session of 1,000 caught-up partitions. An incremental fetch with nothing new
reads the 3 partitions recorded as changed since the session's previous read, finds nothing past the end
and parks on the session's group. A produce appends to partition 7 (quiet): the purgatory checks key 7; the
fetch sees partition 7 in ``PartitionChanges``, takes its status from the session's cache (fetch offset 120,
the LEO it had) and finds bytes past it (Case G with min bytes 1): it completes, re-reads the 3 candidates
and partition 7, and answers partition 7's records. Kafka's DelayedFetch would have walked 1,000 partitions
at every check and read 1,000 on completion to give the same answer.

If the session's partitions, order or request data change while this fetch waits (only a duplicate
request of the same session can do that), it first copies every quiet partition's status
(``detach_from_session``) and goes on as a plain DelayedFetch would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkasim.broker.delayed_fetch import DelayedFetch, FetchResponseCallback
from kafkasim.broker.fetch import (
    FetchParams,
    FetchPartitionStatus,
    LogReadResult,
    PartitionData,
    nothing_past_end,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.reread_from_log import reread_from_log

if TYPE_CHECKING:
    from kafkasim.broker.fetch_session import CachedPartition, FetchSession
    from kafkasim.broker.replica_manager import ReplicaManager


class SessionDelayedFetch(DelayedFetch):
    """A DelayedFetch over an incremental session's partitions; ``fetch_partition_status`` holds the read
    partitions and, as they change, the quiet ones (each with its session order stamp in ``_order``)."""

    __slots__ = ("session", "_order", "_status_of", "_bytes_of", "_prior_of")

    def __init__(
        self,
        params: FetchParams,
        session: FetchSession,
        candidates: Sequence[CachedPartition],
        read_results: Sequence[tuple[TopicPartition, LogReadResult]],
        replica_manager: ReplicaManager,
        response_callback: FetchResponseCallback,
        *,
        read_at: int,
    ) -> None:
        statuses = [
            (cached.tp, FetchPartitionStatus(result.info.fetch_offset_metadata, cached.req_data))
            for cached, (_, result) in zip(candidates, read_results, strict=True)
        ]
        super().__init__(
            params, statuses, replica_manager, response_callback, read_results=read_results, read_at=read_at
        )
        self.session: FetchSession | None = session
        # Every partition this fetch holds a status for: its order stamp, status, bytes at the last check
        # and the read it starts from on completion (None: read it).
        self._order: dict[TopicPartition, int] = {cached.tp: cached.pos for cached in candidates}
        self._status_of: dict[TopicPartition, FetchPartitionStatus] = dict(statuses)
        self._bytes_of: dict[TopicPartition, int] = {}
        self._prior_of: dict[TopicPartition, LogReadResult | None] = {tp: result for tp, result in read_results}
        reads = session.reads
        reads.before_change()  # a fetch still parked on the session (a duplicate request) detaches first
        reads.parked = self

    # --- the session's quiet partitions ---------------------------------------------------------------

    def _adopt(self, cached: CachedPartition) -> None:
        """Hold a status for a quiet partition: the one its last read found (it has not changed since)."""
        last_read = cached.last_read
        assert last_read is not None, f"{cached.tp}: a session partition not read is quiet"
        tp = cached.tp
        status = FetchPartitionStatus(last_read.info.fetch_offset_metadata, cached.req_data)
        self._order[tp] = cached.pos
        self._status_of[tp] = status
        self._prior_of[tp] = last_read
        self._bytes_of[tp] = 0

    def detach_from_session(self) -> None:
        """Copy every quiet partition's status: the session is about to change under this fetch."""
        session = self.session
        if session is None:
            return
        self.session = None
        if self._completed:
            return
        order = self._order
        for tp, cached in session.partition_map.items():
            if tp not in order:
                self._adopt(cached)

    def _release(self) -> None:
        session = self.session
        if session is not None:
            if session.reads.parked is self:
                session.reads.parked = None
            self.session = None

    # --- checks ---------------------------------------------------------------------------------------

    def try_complete(self) -> bool:
        """``DelayedFetch.tryComplete`` over the session's partitions, re-evaluating the changed ones only
        (see ``DelayedFetch.try_complete``)."""
        if self._completed:
            return False
        checked_at = self._checked_at
        if checked_at < 0:
            checked_at = self._begin()
        changes = self._changes
        pending = self._pending
        sequence = changes.sequence
        if sequence == checked_at and not pending:
            return False
        changed = changes.since(checked_at)
        if changed is None:
            self.detach_from_session()
            changed = list(self._order)  # every partition, as Kafka's walk
        return self._evaluate(changed, sequence)

    def _begin(self) -> int:
        """The read as the first check (``DelayedFetch._begin_at_read``): read partitions with something past
        the end are evaluated at the first check; quiet and nothing-past-the-end ones keep "no bytes"."""
        isolation = self.params.isolation
        bytes_of = self._bytes_of
        pending = []
        for tp, status in self.fetch_partition_status:
            bytes_of[tp] = 0
            prior = self._prior_of[tp]
            assert prior is not None
            if not nothing_past_end(prior, status.fetch_info.fetch_offset, isolation, exactly=True):
                pending.append(self._order[tp])
        self._pending = pending
        self._accumulated_size = 0
        self._checked_at = self._read_at
        return self._read_at

    def _evaluate(self, changed: Sequence[TopicPartition], sequence: int) -> bool:
        order = self._order
        session = self.session
        session_map = session.partition_map if session is not None else None
        by_order: dict[int, TopicPartition] = {}
        if self._pending:
            order_to_tp = {position: tp for tp, position in order.items()}
            for position in self._pending:
                by_order[position] = order_to_tp[position]
        for tp in changed:
            held = order.get(tp)
            if held is None:
                if session_map is None:
                    continue
                cached = session_map.get(tp)
                if cached is None:
                    continue
                self._adopt(cached)
                held = cached.pos
            by_order[held] = tp
        if by_order:
            status_of = self._status_of
            bytes_of = self._bytes_of
            bytes_or_complete = self._bytes_or_complete
            for position in sorted(by_order):
                tp = by_order[position]
                size = bytes_or_complete(tp, status_of[tp])
                if size < 0:
                    return self.force_complete()
                self._accumulated_size += size - bytes_of[tp]
                bytes_of[tp] = size
            self._pending = []
            if self._accumulated_size >= self.params.min_bytes:
                return self.force_complete()  # Case G
        self._checked_at = sequence
        return False

    # --- completion -----------------------------------------------------------------------------------

    def on_complete(self) -> None:
        """``DelayedFetch.onComplete``: re-read, with the original fetch offsets, the partitions this fetch
        holds (the read ones and the quiet ones that changed) plus any quiet one that changed since the read,
        in the session's order; the quiet ones that did not change answer what the session already sent."""
        changes = self._changes
        changed = changes.since(self._read_at)
        if changed is None:
            self.detach_from_session()
            changed = list(self._order)
        session = self.session
        if session is not None:
            session_map = session.partition_map
            order = self._order
            for tp in changed:
                if tp not in order:
                    cached = session_map.get(tp)
                    if cached is not None:
                        self._adopt(cached)
        self._release()
        order = self._order
        items = sorted(order, key=order.__getitem__)
        status_of = self._status_of
        fetch_infos: list[tuple[TopicPartition, PartitionData]] = [(tp, status_of[tp].fetch_info) for tp in items]
        priors = self._prior_of
        rm = self.replica_manager
        results = reread_from_log(rm.read_from_log, rm.time.milliseconds(), self.params, fetch_infos,
                                  [priors[tp] for tp in items], frozenset(changed))
        self._read_results = None
        self.fetch_partition_status = ()
        self._order = {}
        self._status_of = {}
        self._bytes_of = {}
        self._prior_of = {}
        self._pending = []
        self.response_callback(results)

    def on_expiration(self) -> None:
        self.replica_manager.metrics.record_fetch_expiration(self.params.is_from_follower)

    def __repr__(self) -> str:
        return (
            f"SessionDelayedFetch(replicaId={self.params.replica_id}, minBytes={self.params.min_bytes}, "
            f"holds={len(self._order)}, completed={self.is_completed})"
        )
