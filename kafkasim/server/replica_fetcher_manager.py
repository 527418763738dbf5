"""A broker's replica fetcher threads (Kafka's ``AbstractFetcherManager`` / ``ReplicaFetcherManager``).

Every broker runs up to ``num.replica.fetchers`` fetcher threads *per source broker* (the leader it
fetches from). A followed partition goes to the thread keyed ``(leader id, fetcher id)`` where the fetcher
id is Kafka's ``AbstractFetcherManager.getFetcherId``::

    Utils.abs(31 * topic.hashCode() + partitionId) % numFetchers

with Java's 32-bit ``String.hashCode`` and int overflow, and ``Utils.abs(Integer.MIN_VALUE) == 0``. With
the default of one fetcher, every partition a broker follows from one leader shares one thread, and so one
Fetch request per round trip. Worked example: ``"topic".hashCode() == 110546223``; with 2 fetchers,
partition 0 -> ``31 * 110546223 + 0`` wraps to ``-868034383``, abs ``868034383``, odd -> fetcher 1;
partition 1 -> ``-868034382`` -> fetcher 0.

Threads are created when the first partition needs them (``addFetcherForPartitions``'s
``createFetcherThread``) and started by the broker (``BrokerServer.start_fetchers``) when the run starts,
so that the order of their first events is fixed (a thread created later, by a metadata delta, starts at
once). ``shutdownIdleFetcherThreads`` runs after every metadata delta (``BrokerServer.apply_delta``).
Simplification: no ``resizeThreadPool`` (the config is fixed for a run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from kafkasim.broker.records import TopicPartition

INT_MIN: Final = -(2**31)


def to_int32(n: int) -> int:
    """Java ``int`` arithmetic: wrap ``n`` to a signed 32-bit value."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def java_string_hash_code(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, in int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: the absolute value, except ``Integer.MIN_VALUE`` maps to 0 (not itself)."""
    return 0 if n == INT_MIN else abs(n)


def get_fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """Kafka's ``AbstractFetcherManager.getFetcherId``."""
    return utils_abs(to_int32(31 * java_string_hash_code(topic) + partition)) % num_fetchers


@dataclass(frozen=True, slots=True)
class BrokerIdAndFetcherId:
    """Kafka's ``BrokerIdAndFetcherId``: the key of a fetcher thread."""

    broker_id: int
    fetcher_id: int


@dataclass(frozen=True, slots=True)
class InitialFetchState:
    """Kafka's ``InitialFetchState``: the leader to fetch from, its epoch, and ``init_offset``
    (``ReplicaManager.initialFetchOffset``: the LEO of a log with leader epochs, else its HW, to which a
    log without epochs truncates; None: the thread takes the log's HW). The fetch offset is then the local
    log end, read by the thread itself."""

    leader: int
    current_leader_epoch: int
    init_offset: int | None = None


class FetcherThread(Protocol):
    """What the manager needs of a fetcher thread (``AbstractFetcherThread``)."""

    @property
    def source_broker(self) -> int: ...

    def add_partitions(self, partitions: Mapping[TopicPartition, InitialFetchState]) -> None: ...

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None: ...

    @property
    def partition_count(self) -> int: ...

    def shutdown(self) -> None: ...


T = TypeVar("T", bound=FetcherThread)


class AbstractFetcherManager(Generic[T]):
    """``num_fetchers`` threads per source broker, created by ``create_fetcher_thread(fetcher_id, source)``."""

    def __init__(self, name: str, num_fetchers: int, create_fetcher_thread: Callable[[int, int], T]) -> None:
        if num_fetchers < 1:
            raise ValueError(f"{name}: num.replica.fetchers must be >= 1, got {num_fetchers}")
        self.name = name
        self.num_fetchers = num_fetchers
        self._create_fetcher_thread = create_fetcher_thread
        # Insertion order = creation order: the broker starts its threads in this order.
        self.fetcher_thread_map: dict[BrokerIdAndFetcherId, T] = {}

    def get_fetcher_id(self, tp: TopicPartition) -> int:
        return get_fetcher_id(tp.topic, tp.partition, self.num_fetchers)

    def add_fetcher_for_partitions(self, partitions: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Kafka's ``addFetcherForPartitions``: group by ``(leader, fetcher id)``, create a thread for a new
        key (or replace one whose source broker changed), hand each thread its partitions."""
        grouped: dict[BrokerIdAndFetcherId, dict[TopicPartition, InitialFetchState]] = {}
        for tp, state in partitions.items():
            key = BrokerIdAndFetcherId(state.leader, self.get_fetcher_id(tp))
            grouped.setdefault(key, {})[tp] = state
        for key, states in grouped.items():
            thread = self.fetcher_thread_map.get(key)
            if thread is None or thread.source_broker != key.broker_id:
                thread = self._create_fetcher_thread(key.fetcher_id, key.broker_id)
                self.fetcher_thread_map[key] = thread
            thread.add_partitions(states)

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Kafka's ``removeFetcherForPartitions``: every thread forgets them."""
        tps = set(partitions)
        for thread in self.fetcher_thread_map.values():
            thread.remove_partitions(tps)

    def shutdown_idle_fetcher_threads(self) -> list[T]:
        """Kafka's ``shutdownIdleFetcherThreads`` (end of every ``applyDelta``): threads left without
        partitions stop and leave the map; returns them."""
        idle = [key for key, thread in self.fetcher_thread_map.items() if thread.partition_count == 0]
        stopped = []
        for key in idle:
            thread = self.fetcher_thread_map.pop(key)
            thread.shutdown()
            stopped.append(thread)
        return stopped

    def fetcher_for(self, tp: TopicPartition, leader: int) -> T | None:
        return self.fetcher_thread_map.get(BrokerIdAndFetcherId(leader, self.get_fetcher_id(tp)))

    @property
    def threads(self) -> list[T]:
        return list(self.fetcher_thread_map.values())


class ReplicaFetcherManager(AbstractFetcherManager[T]):
    """Kafka's ``ReplicaFetcherManager`` of broker ``broker_id``."""

    def __init__(self, broker_id: int, num_fetchers: int, create_fetcher_thread: Callable[[int, int], T]) -> None:
        super().__init__(f"ReplicaFetcherManager on broker {broker_id}", num_fetchers, create_fetcher_thread)
        self.broker_id = broker_id


def fetcher_thread_name(broker_id: int, fetcher_id: int, source_broker: int) -> str:
    """Kafka's thread name ``ReplicaFetcherThread-<fetcherId>-<sourceBrokerId>``, on broker ``broker_id``."""
    return f"broker-{broker_id}/ReplicaFetcherThread-{fetcher_id}-{source_broker}"
