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
``fetch_metadata``): ``CachedPartition``, ``FetchSession``, the contexts (``SessionErrorContext``, ``SessionlessFetchContext``, ``FullFetchContext``,
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

import random
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import LogReadResult, PartitionData
from kafkasim.broker.fetch_metadata import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INT_MAX,
    INVALID_SESSION_ID,
    FetchMetadata,
    next_epoch,
)
from kafkasim.broker.fetch_metadata import INITIAL_METADATA as INITIAL_METADATA  # re-exported for the clients
from kafkasim.broker.fetch_metadata import LEGACY_METADATA as LEGACY_METADATA  # re-exported
from kafkasim.broker.fetch_metadata import new_incremental as new_incremental  # re-exported
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.session_reads.session_state import SessionReads
from kafkasim.timer import Time

if TYPE_CHECKING:
    from kafkasim.broker.replica import Replica

NUM_FETCH_SESSION_CACHE_SHARDS: Final = 8
"""``KafkaBroker.NumFetchSessionCacheShards``."""
MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS: Final = 1000
"""Default of ``max.incremental.fetch.session.cache.slots`` (``ServerConfigs``)."""
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: Final = 120_000
"""``KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``: how long a session must be unused to be stale."""


class CachedPartition:
    """One partition of a session (Kafka's ``CachedPartition``): the request data last received for it and
    the HW and log start offset last *sent* for it, against which the next response is compared.

    Kafka keeps the request fields one by one; the frozen ``PartitionData`` holds the same fields.
    """

    __slots__ = ("tp", "req_data", "high_watermark", "local_log_start_offset", "pos", "last_read", "rider")

    def __init__(
        self,
        tp: TopicPartition,
        req_data: PartitionData,
        high_watermark: int = -1,
        local_log_start_offset: int = -1,
    ) -> None:
        self.tp = tp
        self.req_data = req_data
        self.high_watermark = high_watermark
        self.local_log_start_offset = local_log_start_offset
        # The simulator's own bookkeeping (not Kafka's), for reads of the changed partitions only
        # (``kafkasim.broker.session_reads``): the place in the session's order (grows as partitions
        # join or move to the end), the last read if it found nothing past the end (the partition is then
        # "quiet" until it changes), and the follower replica riding the session's clock for it.
        self.pos = 0
        self.last_read: LogReadResult | None = None
        self.rider: Replica | None = None

    @property
    def fetch_offset(self) -> int:
        return self.req_data.fetch_offset

    def update_request_params(self, req_data: PartitionData) -> None:
        self.req_data = req_data
        self.last_read = None

    def maybe_update_response_data(self, resp: LogReadResult, update_response_data: bool) -> bool:
        """``CachedPartition.maybeUpdateResponseData``: must this partition be in the response? Yes iff it has
        records, its HW or log start offset changed since last sent, it has an error (then the cached HW
        becomes -1, so the partition is sent again once the error clears) or a diverging epoch. The last
        stable offset and the log end offset alone do not count. With ``update_response_data`` the cached
        HW and log start offset take the response's values."""
        must_respond = False
        if resp.info.size_in_bytes > 0:
            must_respond = True
        if self.high_watermark != resp.high_watermark:
            must_respond = True
            if update_response_data:
                self.high_watermark = resp.high_watermark
        if self.local_log_start_offset != resp.log_start_offset:
            must_respond = True
            if update_response_data:
                self.local_log_start_offset = resp.log_start_offset
        if resp.error != Errors.NONE:
            if update_response_data:
                self.high_watermark = -1
            must_respond = True
        if resp.diverging_epoch is not None:
            must_respond = True
        return must_respond

    def __repr__(self) -> str:
        return (
            f"CachedPartition({self.tp}, fetchOffset={self.req_data.fetch_offset}, "
            f"highWatermark={self.high_watermark}, localLogStartOffset={self.local_log_start_offset})"
        )


class FetchSession:
    """One session (Kafka's ``FetchSession``). ``partition_map`` keeps the session's partition order: the
    order the broker reads them in, new partitions at the end, partitions that just returned records moved
    to the end (``IncrementalFetchContext``). ``cached_size`` is the size the cache last saw (-1: not in a
    cache)."""

    __slots__ = (
        "id",
        "privileged",
        "partition_map",
        "creation_ms",
        "last_used_ms",
        "epoch",
        "cached_size",
        "reads",
    )

    def __init__(
        self,
        session_id: int,
        privileged: bool,
        partition_map: dict[TopicPartition, CachedPartition],
        creation_ms: int,
        last_used_ms: int,
        epoch: int,
    ) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partition_map = partition_map
        self.creation_ms = creation_ms
        self.last_used_ms = last_used_ms
        self.epoch = epoch
        self.cached_size = -1
        # The lazy reads' state (kafkasim.broker.session_reads), not Kafka's.
        self.reads = SessionReads(partition_map.values())

    def move_to_end(self, cached: CachedPartition) -> None:
        """Move a partition to the end of the session's order (it returned records)."""
        self.reads.before_change()
        partition_map = self.partition_map
        del partition_map[cached.tp]
        partition_map[cached.tp] = cached
        self.reads.stamp(cached)

    def close(self) -> None:
        """The session left the cache: nothing will fetch through it again."""
        self.reads.drop_key_group()

    @property
    def size(self) -> int:
        return len(self.partition_map)

    @property
    def is_empty(self) -> bool:
        return not self.partition_map

    @property
    def last_used_key(self) -> tuple[int, int]:
        """``LastUsedKey(lastUsedMs, id)``."""
        return (self.last_used_ms, self.id)

    @property
    def evictable_key(self) -> tuple[bool, int, int]:
        """``EvictableKey(privileged, size, id)``: the smallest is evicted first."""
        return (self.privileged, self.cached_size, self.id)

    @property
    def metadata(self) -> FetchMetadata:
        return FetchMetadata(self.id, self.epoch)

    def get_fetch_offset(self, tp: TopicPartition) -> int | None:
        cached = self.partition_map.get(tp)
        return cached.fetch_offset if cached is not None else None

    def update(
        self, fetch_data: Iterable[tuple[TopicPartition, PartitionData]], to_forget: Iterable[TopicPartition]
    ) -> tuple[list[TopicPartition], list[TopicPartition], list[TopicPartition]]:
        """``FetchSession.update``: add the new partitions at the end, update the others' request data, drop
        the forgotten ones. Returns (added, updated, removed)."""
        added: list[TopicPartition] = []
        updated: list[TopicPartition] = []
        removed: list[TopicPartition] = []
        if not fetch_data and not to_forget:
            return added, updated, removed
        reads = self.reads
        reads.before_change()
        partition_map = self.partition_map
        for tp, req_data in fetch_data:
            cached = partition_map.get(tp)
            if cached is None:
                cached = partition_map[tp] = CachedPartition(tp, req_data)
                reads.stamp(cached)
                added.append(tp)
            else:
                cached.update_request_params(req_data)
                updated.append(tp)
        for tp in to_forget:
            cached = partition_map.pop(tp, None)
            if cached is not None:
                removed.append(tp)
                reads.forget(cached)
        if added or removed:
            reads.drop_key_group()
        return added, updated, removed

    def __repr__(self) -> str:
        return (
            f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partition_map)}, "
            f"creationMs={self.creation_ms}, lastUsedMs={self.last_used_ms}, epoch={self.epoch})"
        )


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


class FetchSessionCacheShard:
    """One shard of the session cache (Kafka's ``FetchSessionCacheShard``): at most ``max_entries``
    sessions, with ids in ``[max(1, shard_num * session_id_range), (shard_num + 1) * session_id_range)``.

    A new session that finds the shard full may evict (``tryEvict``), in this order: the least recently
    used session if it has been unused for more than ``eviction_ms``; else the smallest evictable session by
    ``(privileged, size, id)`` if the new session's key ``(privileged, size, 0)`` is not smaller. A session
    is evictable by privileged (follower) sessions if it is unprivileged or older than ``eviction_ms``, and
    by anyone only once older than ``eviction_ms``. Since ``privileged`` is the key's first field, a new
    follower session evicts any consumer session, or a follower session older than ``eviction_ms`` with
    fewer partitions; a new consumer session evicts only a consumer session older than ``eviction_ms`` with
    fewer partitions -- never a follower's, unless that one sat unused for ``eviction_ms``.

    Kafka keeps the candidates in TreeMaps; a shard holds 125 sessions and eviction is rare, so here a scan
    at eviction time does the same job and ``touch`` (every incremental request) stays O(1).
    """

    __slots__ = (
        "max_entries",
        "eviction_ms",
        "session_id_range",
        "shard_num",
        "rng",
        "sessions",
        "evictable_by_all",
        "evictable_by_privileged",
        "num_partitions",
        "evictions",
    )

    def __init__(
        self,
        max_entries: int,
        eviction_ms: int,
        session_id_range: int = INT_MAX,
        shard_num: int = 0,
        *,
        rng: random.Random,
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.session_id_range = session_id_range
        self.shard_num = shard_num
        self.rng = rng
        self.sessions: dict[int, FetchSession] = {}
        self.evictable_by_all: dict[int, FetchSession] = {}
        self.evictable_by_privileged: dict[int, FetchSession] = {}
        self.num_partitions = 0
        self.evictions = 0
        """Sessions evicted (Kafka's ``IncrementalFetchSessionEvictionsPerSec`` meter, as a count)."""

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    @property
    def size(self) -> int:
        return len(self.sessions)

    @property
    def total_partitions(self) -> int:
        """Partitions cached over all sessions, as of their last touch
        (``NumIncrementalFetchPartitionsCached``)."""
        return self.num_partitions

    def new_session_id(self) -> int:
        """A random id in this shard's range, not 0 and not in use."""
        low = max(1, self.shard_num * self.session_id_range)
        high = (self.shard_num + 1) * self.session_id_range
        while True:
            session_id = self.rng.randrange(low, high)
            if session_id not in self.sessions and session_id != INVALID_SESSION_ID:
                return session_id

    def maybe_create_session(
        self,
        now: int,
        privileged: bool,
        size: int,
        create_partitions: Callable[[], dict[TopicPartition, CachedPartition]],
    ) -> int:
        """``maybeCreateSession``: the new session's id (epoch 1 next), or INVALID_SESSION_ID if the shard is
        full and nothing could be evicted."""
        if len(self.sessions) < self.max_entries or self._try_evict(privileged, (privileged, size, 0), now):
            session = FetchSession(
                self.new_session_id(), privileged, create_partitions(), now, now, next_epoch(INITIAL_EPOCH)
            )
            self.sessions[session.id] = session
            self.touch(session, now)
            return session.id
        return INVALID_SESSION_ID

    def _try_evict(self, privileged: bool, key: tuple[bool, int, int], now: int) -> bool:
        """``tryEvict``."""
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=_last_used_key)
        if now - stale.last_used_ms > self.eviction_ms:
            self.remove(stale)
            self.evictions += 1
            return True
        candidates = self.evictable_by_privileged if privileged else self.evictable_by_all
        if not candidates:
            return False
        victim = min(candidates.values(), key=_evictable_key)
        if key < victim.evictable_key:
            return False
        self.remove(victim)
        self.evictions += 1
        return True

    def remove_id(self, session_id: int) -> FetchSession | None:
        """``remove(sessionId)``."""
        session = self.sessions.get(session_id)
        return self.remove(session) if session is not None else None

    def remove(self, session: FetchSession) -> FetchSession | None:
        """``remove(session)``: the removed session, or None if it was not cached here."""
        self.evictable_by_all.pop(session.id, None)
        self.evictable_by_privileged.pop(session.id, None)
        removed = self.sessions.pop(session.id, None)
        if removed is not None:
            self.num_partitions -= session.cached_size
            session.close()
        return removed

    def touch(self, session: FetchSession, now: int) -> None:
        """``touch``: mark the session used now and re-file it for eviction: evictable by privileged sessions
        if it is unprivileged or older than ``eviction_ms``, by all if older than ``eviction_ms``."""
        session.last_used_ms = now
        session_id = session.id
        if session.cached_size != -1:
            self.evictable_by_privileged.pop(session_id, None)
            self.evictable_by_all.pop(session_id, None)
            self.num_partitions -= session.cached_size
        session.cached_size = len(session.partition_map)
        old = now - session.creation_ms > self.eviction_ms
        if not session.privileged or old:
            self.evictable_by_privileged[session_id] = session
        if old:
            self.evictable_by_all[session_id] = session
        self.num_partitions += session.cached_size

    def __repr__(self) -> str:
        return f"FetchSessionCacheShard({self.shard_num}, sessions={len(self.sessions)}/{self.max_entries})"


def _last_used_key(session: FetchSession) -> tuple[int, int]:
    return session.last_used_key


def _evictable_key(session: FetchSession) -> tuple[bool, int, int]:
    return session.evictable_key


class FetchSessionCache:
    """The broker's session cache (Kafka's ``FetchSessionCache``): shards sorted by number, a session id
    names its shard (``id // session_id_range``), new sessions go to the shards in turn."""

    __slots__ = ("cache_shards", "_counter")

    def __init__(self, cache_shards: Sequence[FetchSessionCacheShard], counter: int = 0) -> None:
        if not cache_shards:
            raise ValueError("FetchSessionCache needs at least one shard")
        self.cache_shards = list(cache_shards)
        # Kafka's is a JVM-wide static AtomicInteger; one broker per JVM makes it this broker's own.
        self._counter = counter

    @classmethod
    def create(
        cls,
        rng: random.Random,
        max_entries: int = MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS,
        eviction_ms: int = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
        num_shards: int = NUM_FETCH_SESSION_CACHE_SHARDS,
    ) -> FetchSessionCache:
        """A broker's cache as ``BrokerServer.startup`` builds it: ``max_entries // num_shards`` slots per
        shard, ids split evenly over the int range; all shards draw ids from ``rng``."""
        session_id_range = INT_MAX // num_shards
        return cls(
            [
                FetchSessionCacheShard(max_entries // num_shards, eviction_ms, session_id_range, shard, rng=rng)
                for shard in range(num_shards)
            ]
        )

    def get_cache_shard(self, session_id: int) -> FetchSessionCacheShard:
        """``getCacheShard``: the shard whose id range holds ``session_id`` (IndexError beyond the last)."""
        shard = session_id // self.cache_shards[0].session_id_range
        if shard < 0 or shard >= len(self.cache_shards):
            raise IndexError(f"session id {session_id} is outside every shard's range")
        return self.cache_shards[shard]

    def get_next_cache_shard(self) -> FetchSessionCacheShard:
        """``getNextCacheShard``: round robin; ``Utils.toPositive`` keeps it right when the int counter
        wraps."""
        shard_num = (self._counter & INT_MAX) % len(self.cache_shards)
        self._counter = (self._counter + 1) & 0xFFFFFFFF
        return self.cache_shards[shard_num]

    @property
    def size(self) -> int:
        """Sessions over all shards (``NumIncrementalFetchSessions``)."""
        return sum(shard.size for shard in self.cache_shards)

    @property
    def total_partitions(self) -> int:
        return sum(shard.num_partitions for shard in self.cache_shards)

    @property
    def evictions(self) -> int:
        return sum(shard.evictions for shard in self.cache_shards)


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
