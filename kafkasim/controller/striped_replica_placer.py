"""Kafka's ``StripedReplicaPlacer``: where the replicas of a new topic's partitions go (KRaft controller).

Racks are sorted by name (brokers without a rack form one rack, sorted first); each rack keeps its
unfenced and its fenced brokers in two lists sorted by id, each with a random start offset, and the rack
list has its own. ``place`` runs once per partition, in partition order: the first replica (the preferred
leader) is the next unfenced broker of rack ``racks[offset]`` (or of the next rack that still has one in
this epoch), the others come round-robin from the following racks, unfenced brokers before fenced ones.
Every partition advances the rack offset by one and starts a new epoch, in which each broker list moves its
own offset on by one; after as many partitions as there are unfenced brokers, the rack list and every
broker list are shuffled (``Collections.shuffle``) and the epochs start over.

The worked example, one rack, brokers 0..3, start offset 2, RF 3: partitions get [2, 3, 0], [3, 0, 1],
[0, 1, 2], [1, 2, 3] (consecutive ids, each partition one further on: every broker leads one and follows
two), and the fifth partition starts a shuffled cycle (Kafka's ``testSuccessfulPlacement``).

SimPy-free and synchronous: the controller places a topic's replicas once, when it creates the topic.
Ported from ``metadata/.../placement/StripedReplicaPlacer.java`` (``BrokerList``, ``Rack``, ``RackList``,
``place``), with Kafka's ``InvalidReplicationFactorException`` messages.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from kafkasim.controller.java_random import JavaRandom, shuffle, to_int32

K = TypeVar("K", bound=Hashable)

# java.util.HashMap: the default table, the resize threshold (load factor 0.75), a bin's length at which
# putVal calls treeifyBin, and the table size below which treeifyBin resizes instead of building a tree.
_HASH_MAP_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


class InvalidReplicationFactorError(Exception):
    """Kafka's ``InvalidReplicationFactorException`` (error INVALID_REPLICATION_FACTOR)."""


@dataclass(frozen=True, slots=True)
class UsableBroker:
    """Kafka's ``UsableBroker``: a registered broker not in controlled shutdown, with its rack (or None)."""

    id: int
    rack: str | None
    fenced: bool = False


def java_string_hash(text: str) -> int:
    """``String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units, in 32-bit arithmetic."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def rack_hash(rack: str | None) -> int:
    """``Optional<String>.hashCode``: the string's hash, 0 for an empty Optional."""
    return 0 if rack is None else java_string_hash(rack)


def hash_map_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of a ``java.util.HashMap`` after putting ``keys`` (distinct) in this order.

    Buckets in index order (``HashMap.hash``: h ^ (h >>> 16), masked by the table size), each bucket in
    insertion order (``resize`` splits a bucket keeping its order). A bin that reaches 9 entries makes
    ``treeifyBin`` double a table smaller than 64; a tree bin in a larger table (9 rack names colliding
    in one bucket of 64 or more) is not reproduced.
    """
    capacity = _HASH_MAP_CAPACITY
    spread = [(h ^ ((h & 0xFFFFFFFF) >> 16)) & 0xFFFFFFFF for h in map(hash_of, keys)]
    for size in range(1, len(keys) + 1):
        index = spread[size - 1] & (capacity - 1)
        in_bin = sum(1 for s in spread[:size] if s & (capacity - 1) == index)
        if in_bin > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
        if size > capacity * 3 // 4:
            capacity *= 2
    order = sorted(range(len(keys)), key=lambda i: (spread[i] & (capacity - 1), i))
    return [keys[i] for i in order]


def _rack_sort_key(rack: str | None) -> tuple[bool, str]:
    # OptionalStringComparator: the empty Optional first, then String.compareTo (UTF-16 code units; the same
    # as Python's order for the rack names a scenario allows).
    return (rack is not None, rack or "")


class BrokerList:
    """Kafka's ``BrokerList``: brokers sorted by id, iterated from a start offset once per epoch."""

    EMPTY: ClassVar[BrokerList]

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self._index = 0  # brokers returned in the current epoch
        self._offset = 0  # added to the index, modulo the size
        self._epoch = 0

    def add(self, broker: int) -> BrokerList:
        self.brokers.append(broker)
        return self

    def initialize(self, random: JavaRandom) -> None:
        """Sort by id and draw the start offset (``random.nextInt(size)``)."""
        if self.brokers:
            self.brokers.sort()
            self._offset = random.next_int(len(self.brokers))

    def shuffle(self, random: JavaRandom) -> None:
        shuffle(self.brokers, random)

    def size(self) -> int:
        return len(self.brokers)

    def next(self, epoch: int) -> int:
        """The next broker of this epoch, or -1 when every broker was returned in it.

        A new epoch restarts the iteration one position further on (``offset + 1``), so consecutive
        partitions start at consecutive brokers.
        """
        n = len(self.brokers)
        if n == 0:
            return -1
        if self._epoch != epoch:
            self._epoch = epoch
            self._index = 0
            self._offset = (self._offset + 1) % n
        if self._index >= n:
            return -1
        broker = self.brokers[(self._index + self._offset) % n]
        self._index += 1
        return broker


BrokerList.EMPTY = BrokerList()


class Rack:
    """Kafka's ``Rack``: its unfenced brokers, used first, and its fenced ones."""

    def __init__(self) -> None:
        self.fenced = BrokerList()
        self.unfenced = BrokerList()

    def initialize(self, random: JavaRandom) -> None:
        self.fenced.initialize(random)
        self.unfenced.initialize(random)

    def shuffle(self, random: JavaRandom) -> None:
        self.fenced.shuffle(random)
        self.unfenced.shuffle(random)

    def next_unfenced(self, epoch: int) -> int:
        return self.unfenced.next(epoch)

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


class RackList:
    """Kafka's ``RackList``: the racks sorted by name, a start offset, and the iteration epoch."""

    def __init__(self, random: JavaRandom, brokers: Iterable[UsableBroker]) -> None:
        self._random = random
        self._racks: dict[str | None, Rack] = {}
        names: list[str | None] = []
        total = unfenced = 0
        for broker in brokers:
            rack = self._racks.get(broker.rack)
            if rack is None:
                names.append(broker.rack)
                rack = self._racks[broker.rack] = Rack()
            if broker.fenced:
                rack.fenced.add(broker.id)
            else:
                unfenced += 1
                rack.unfenced.add(broker.id)
            total += 1
        # Kafka keeps the racks in a HashMap: they draw their offsets (and later shuffle) in its order.
        self._hash_order = hash_map_order(names, rack_hash)
        for name in self._hash_order:
            self._racks[name].initialize(random)
        self.rack_names = sorted(names, key=_rack_sort_key)
        self.num_total_brokers = total
        self.num_unfenced_brokers = unfenced
        self._epoch = 0
        self._offset = random.next_int(len(self.rack_names)) if self.rack_names else 0

    def place(self, replication_factor: int) -> list[int]:
        """The replicas of the next partition, preferred leader first (``RackList.place``)."""
        _check_positive(replication_factor)
        _check_enough_brokers(replication_factor, self.num_total_brokers)
        _check_some_unfenced(self.num_unfenced_brokers)
        # As many partitions placed as there are unfenced brokers: shuffle so the next ones do not repeat
        # the same assignments (never with one unfenced broker, which would loop forever).
        if self._epoch == self.num_unfenced_brokers and self.num_unfenced_brokers > 1:
            self._shuffle()
            self._epoch = 0
        if self._offset == len(self.rack_names):
            self._offset = 0
        names = self.rack_names
        brokers: list[int] = []
        first_rack = self._offset
        while True:  # the leader: the first rack from the offset on with an unfenced broker left
            result = self._racks[names[first_rack]].next_unfenced(self._epoch)
            if result >= 0:
                brokers.append(result)
                break
            first_rack = (first_rack + 1) % len(names)
        rack_index = self._offset
        for _ in range(1, replication_factor):
            result = -1
            while result < 0:  # round robin over the racks, skipping the leader's rack once
                if rack_index == first_rack:
                    first_rack = -1
                else:
                    result = self._racks[names[rack_index]].next(self._epoch)
                rack_index = (rack_index + 1) % len(names)
            brokers.append(result)
        self._epoch += 1
        self._offset += 1
        return brokers

    def _shuffle(self) -> None:
        shuffle(self.rack_names, self._random)
        for name in self._hash_order:
            self._racks[name].shuffle(self._random)


class StripedReplicaPlacer:
    """Places every partition of a new topic with one ``RackList`` built from the usable brokers.

    One placer (one ``Random``) serves the whole controller, so each topic's offsets are fresh draws.
    """

    def __init__(self, random: JavaRandom) -> None:
        self._random = random

    def place(self, num_partitions: int, replication_factor: int, brokers: Iterable[UsableBroker]) -> list[list[int]]:
        """One replica list per partition, preferred leader first; ``InvalidReplicationFactorError`` when a
        constraint cannot be met (checked in ``StripedReplicaPlacer.place``'s order)."""
        rack_list = RackList(self._random, brokers)
        _check_positive(replication_factor)
        _check_some_unfenced(rack_list.num_unfenced_brokers)
        _check_enough_brokers(replication_factor, rack_list.num_total_brokers)
        return [rack_list.place(replication_factor) for _ in range(num_partitions)]


def _check_positive(replication_factor: int) -> None:
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive."
        )


def _check_some_unfenced(num_unfenced: int) -> None:
    if num_unfenced == 0:
        raise InvalidReplicationFactorError("All brokers are currently fenced.")


def _check_enough_brokers(replication_factor: int, num_total: int) -> None:
    if replication_factor > num_total:
        raise InvalidReplicationFactorError(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{num_total} broker(s) are registered."
        )
