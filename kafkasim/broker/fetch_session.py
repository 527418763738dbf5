"""Incremental fetch sessions (KIP-227), broker side: Kafka's ``FetchSession.scala``.

A fetcher (a follower's replica fetcher thread, or a consumer, toward one broker) first sends a *full*
request naming every partition with its ``PartitionData``. The broker answers every partition and, if a
cache slot is free (or one can be evicted), creates a session: it caches each partition's request data
and the HW / log start offset it last sent, and returns the session id. Afterwards the fetcher sends
*incremental* requests ``(session id, epoch)`` naming only the partitions whose request data changed (plus
the ones to forget); the broker fetches **every** partition of the session and answers only those whose
response changed.

Worked example (a caught-up follower of 3 partitions, HW 50 everywhere)::

    full    (0, 0)   [p0@50, p1@50, p2@50]  -> response: session 7, p0 p1 p2 (hw 50)
    incr    (7, 1)   []                      -> fetch of p0 p1 p2, parked in DelayedFetch; a produce to p1
                                                completes it -> response: p1 (records), order p0 p2 p1
    incr    (7, 2)   [p1@51]                 -> p1's fetch offset moved; the leader's HW rose to 51 on p1
                                                -> response: p1 (hw 51)

Kafka's classes, in snake_case (``FetchMetadata``, Kafka's ``requests/FetchMetadata.java``, is in
``fetch_metadata``; ``CachedPartition``, ``FetchSession``, ``FetchSessionCacheShard`` and ``FetchSessionCache``
in ``fetch_session_cache``, re-exported here): ``CachedPartition``, ``FetchSession``, the contexts (``SessionErrorContext``, ``SessionlessFetchContext``, ``FullFetchContext``,
``IncrementalFetchContext``), ``FetchSessionCacheShard``, ``FetchSessionCache`` and ``FetchManager``.
Partition data are kafkasim's own shapes: requests carry ``kafkasim.broker.fetch.PartitionData``, responses
are ``(TopicPartition, LogReadResult)`` pairs, exactly what ``ReplicaManager.fetch_messages`` takes and
gives.

Left out, because kafkasim has no such thing: topic ids (so ``FETCH_SESSION_TOPIC_ID_ERROR`` and the
lazy name resolution of ``CachedPartition.maybeResolveUnknownName`` never arise), quotas
(``getThrottledResponse``, ``getResponseSize``), the preferred read replica (KIP-392) and metrics objects
(``evictions`` and ``total_partitions`` are plain counters). Kafka draws session ids from
``ThreadLocalRandom``; here from the ``random.Random`` passed in, so a run is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import LogReadResult, PartitionData
from kafkasim.broker.fetch_metadata import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INITIAL_METADATA,
    INT_MAX,
    INVALID_SESSION_ID,
    LEGACY_METADATA,
    FetchMetadata,
    new_incremental,
    next_epoch,
)
from kafkasim.broker.fetch_session_cache import (
    MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS,
    MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
    NUM_FETCH_SESSION_CACHE_SHARDS,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    FetchSessionCacheShard,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.timer import Time

# The session layer in one place for its callers: FetchMetadata's names and the cache's are re-exported.
__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INITIAL_METADATA",
    "INT_MAX",
    "INVALID_SESSION_ID",
    "LEGACY_METADATA",
    "MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS",
    "MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS",
    "NUM_FETCH_SESSION_CACHE_SHARDS",
    "CachedPartition",
    "FetchContext",
    "FetchManager",
    "FetchMetadata",
    "FetchResponse",
    "FetchSession",
    "FetchSessionCache",
    "FetchSessionCacheShard",
    "FullFetchContext",
    "IncrementalFetchContext",
    "SessionErrorContext",
    "SessionlessFetchContext",
    "new_incremental",
    "next_epoch",
]

class FetchResponse:
    """What a context makes of the read (the session fields of Kafka's ``FetchResponse``): a top-level
    ``error`` (a session error answers no partitions), the ``session_id`` to tell the client (0: none) and
    the partitions actually sent, in read order."""

    __slots__ = ("error", "session_id", "responses")

    def __init__(
        self, error: Errors, session_id: int, responses: list[tuple[TopicPartition, LogReadResult]]
    ) -> None:
        self.error = error
        self.session_id = session_id
        self.responses = responses

    def __repr__(self) -> str:
        return f"FetchResponse({self.error.name}, session={self.session_id}, partitions={len(self.responses)})"


class FetchContext:
    """How one fetch request is served (Kafka's ``FetchContext``).

    ``fetch_infos()`` is Kafka's ``foreachPartition`` as the list ``ReplicaManager.fetch_messages`` takes:
    for an incremental request, every partition of the session, not only those the request named.
    ``update_and_generate_response_data(results)`` takes the read's ``(tp, LogReadResult)`` pairs and
    returns the ``FetchResponse`` to send; ``error`` is the session error (NONE for a usable context).
    """

    __slots__ = ()

    @property
    def error(self) -> Errors:
        return Errors.NONE

    def get_fetch_offset(self, tp: TopicPartition) -> int | None:
        raise NotImplementedError

    def fetch_infos(self) -> list[tuple[TopicPartition, PartitionData]]:
        raise NotImplementedError

    def update_and_generate_response_data(
        self, updates: Sequence[tuple[TopicPartition, LogReadResult]]
    ) -> FetchResponse:
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    """A request whose session could not be used (``SessionErrorContext``): nothing is read, the response
    carries the error and no partitions."""

    __slots__ = ("_error", "req_metadata")

    def __init__(self, error: Errors, req_metadata: FetchMetadata) -> None:
        self._error = error
        self.req_metadata = req_metadata

    @property
    def error(self) -> Errors:
        return self._error

    def get_fetch_offset(self, tp: TopicPartition) -> int | None:
        return None

    def fetch_infos(self) -> list[tuple[TopicPartition, PartitionData]]:
        return []

    def update_and_generate_response_data(
        self, updates: Sequence[tuple[TopicPartition, LogReadResult]]
    ) -> FetchResponse:
        return FetchResponse(self._error, INVALID_SESSION_ID, [])


class _RequestDataContext(FetchContext):
    """A context that reads exactly the partitions its (full) request carries: Kafka's
    ``SessionlessFetchContext`` and ``FullFetchContext`` answer ``getFetchOffset`` and ``foreachPartition``
    alike, from the request's data."""

    __slots__ = ("fetch_data",)

    def __init__(self, fetch_data: Sequence[tuple[TopicPartition, PartitionData]]) -> None:
        self.fetch_data = fetch_data

    def get_fetch_offset(self, tp: TopicPartition) -> int | None:
        for part, data in self.fetch_data:
            if part == tp:
                return data.fetch_offset
        return None

    def fetch_infos(self) -> list[tuple[TopicPartition, PartitionData]]:
        return list(self.fetch_data)


class SessionlessFetchContext(_RequestDataContext):
    """A full request that wants no session (``SessionlessFetchContext``): the request's partitions, all
    answered, session id 0."""

    __slots__ = ()

    def update_and_generate_response_data(
        self, updates: Sequence[tuple[TopicPartition, LogReadResult]]
    ) -> FetchResponse:
        return FetchResponse(Errors.NONE, INVALID_SESSION_ID, list(updates))


class FullFetchContext(_RequestDataContext):
    """A full request (``FullFetchContext``): the request's partitions, all answered; when the response is
    generated the broker tries to create a session in the next shard (round robin) holding every answered
    partition with the HW and log start offset just sent. ``is_from_follower`` makes it privileged."""

    __slots__ = ("time", "cache", "req_metadata", "is_from_follower")

    def __init__(
        self,
        time: Time,
        cache: FetchSessionCache,
        req_metadata: FetchMetadata,
        fetch_data: Sequence[tuple[TopicPartition, PartitionData]],
        is_from_follower: bool,
    ) -> None:
        super().__init__(fetch_data)
        self.time = time
        self.cache = cache
        self.req_metadata = req_metadata
        self.is_from_follower = is_from_follower

    def update_and_generate_response_data(
        self, updates: Sequence[tuple[TopicPartition, LogReadResult]]
    ) -> FetchResponse:
        def create_partitions() -> dict[TopicPartition, CachedPartition]:
            requested = dict(self.fetch_data)
            return {
                tp: CachedPartition(tp, requested[tp], resp.high_watermark, resp.log_start_offset)
                for tp, resp in updates
            }

        shard = self.cache.get_next_cache_shard()
        session_id = shard.maybe_create_session(
            self.time.milliseconds(), self.is_from_follower, len(updates), create_partitions
        )
        return FetchResponse(Errors.NONE, session_id, list(updates))


class IncrementalFetchContext(FetchContext):
    """An incremental request of a live session (``IncrementalFetchContext``): the read covers every cached
    partition; the response keeps only those ``CachedPartition.maybe_update_response_data`` says must be
    sent, and moves the ones that returned records to the end of the session's order, so the next read's
    byte budget goes to the others first (``testDeprioritizesPartitionsWithRecordsOnly``)."""

    __slots__ = ("time", "req_metadata", "session", "named")

    def __init__(
        self,
        time: Time,
        req_metadata: FetchMetadata,
        session: FetchSession,
        named: Sequence[TopicPartition] = (),
    ) -> None:
        self.time = time
        self.req_metadata = req_metadata
        self.session = session
        # The session partitions the request named (added or with new request data).
        self.named = named

    def get_fetch_offset(self, tp: TopicPartition) -> int | None:
        return self.session.get_fetch_offset(tp)

    def fetch_infos(self) -> list[tuple[TopicPartition, PartitionData]]:
        return [(tp, cached.req_data) for tp, cached in self.session.partition_map.items()]

    def update_and_generate_response_data(
        self, updates: Sequence[tuple[TopicPartition, LogReadResult]]
    ) -> FetchResponse:
        session = self.session
        # The session's epoch moved on between this request and its response (a duplicate request, e.g.
        # a retry after a client timeout while this one was parked): answer the error, no partitions.
        if session.epoch != next_epoch(self.req_metadata.epoch):
            return FetchResponse(Errors.INVALID_FETCH_SESSION_EPOCH, session.id, [])
        partition_map = session.partition_map
        selected: list[tuple[TopicPartition, LogReadResult]] = []
        for tp, resp in updates:
            cached = partition_map[tp]
            if cached.maybe_update_response_data(resp, True):
                selected.append((tp, resp))
                if resp.info.size_in_bytes > 0:
                    session.move_to_end(cached)
        session.reads.response_built()  # the lazy reads' bookkeeping (SessionReader)
        return FetchResponse(Errors.NONE, session.id, selected)


class FetchManager:
    """Turns a fetch request's session fields into a ``FetchContext`` (Kafka's ``FetchManager.newContext``)."""

    __slots__ = ("time", "cache")

    def __init__(self, time: Time, cache: FetchSessionCache) -> None:
        self.time = time
        self.cache = cache

    def new_context(
        self,
        req_metadata: FetchMetadata,
        is_follower: bool,
        fetch_data: Sequence[tuple[TopicPartition, PartitionData]],
        to_forget: Sequence[TopicPartition] = (),
    ) -> FetchContext:
        """``newContext``. A full request closes the session it names, then is sessionless (epoch -1) or
        asks for a new session (epoch 0). An incremental request needs a cached session with the same epoch
        (else FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH); its partitions and forgotten
        partitions update the session; a session left empty is closed (sessionless); otherwise it is
        touched and its epoch moves on."""
        if req_metadata.is_full:
            if req_metadata.session_id != INVALID_SESSION_ID:
                self.cache.get_cache_shard(req_metadata.session_id).remove_id(req_metadata.session_id)
            if req_metadata.epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self.time, self.cache, req_metadata, fetch_data, is_follower)
        shard = self.cache.get_cache_shard(req_metadata.session_id)
        session = shard.get(req_metadata.session_id)
        if session is None:
            return SessionErrorContext(Errors.FETCH_SESSION_ID_NOT_FOUND, req_metadata)
        if session.epoch != req_metadata.epoch:
            return SessionErrorContext(Errors.INVALID_FETCH_SESSION_EPOCH, req_metadata)
        added, updated, _removed = session.update(fetch_data, to_forget)
        if session.is_empty:
            shard.remove(session)
            return SessionlessFetchContext(fetch_data)
        shard.touch(session, self.time.milliseconds())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(self.time, req_metadata, session, added + updated if updated else added)
