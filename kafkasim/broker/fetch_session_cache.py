"""Kafka's ``FetchSessionCache`` and what it caches (``FetchSession``, ``CachedPartition``), from Kafka's
``FetchSession.scala``; ``kafkasim.broker.fetch_session`` explains sessions and holds the contexts and
``FetchManager``."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import LogReadResult, PartitionData
from kafkasim.broker.fetch_metadata import (
    INITIAL_EPOCH,
    INT_MAX,
    INVALID_SESSION_ID,
    FetchMetadata,
    next_epoch,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.session_reads.session_state import SessionReads

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
