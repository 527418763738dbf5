"""Kafka's StripedReplicaPlacerTest, ported: the same brokers, the same deterministic Random, the same placements.

Kafka's tests use ``org.apache.kafka.server.util.MockRandom`` (a ``java.util.Random`` whose ``next(bits)`` is a
fixed 64-bit LCG starting at 17); every expectation below is Kafka's own. The tests of
``tryGetPreviousBrokerOffset``/``tryGetPreviousRackOffset`` and the "add partitions" halves of
``testPlaceShiftsInitialOffsets*`` are left out: they cover CreatePartitions on an existing topic, which a
run never does (its topics are created once, at the start).
"""

from __future__ import annotations

from collections import Counter

import pytest

from kafkasim.controller.java_random import JavaRandom, shuffle, to_int32
from kafkasim.controller.striped_replica_placer import (
    BrokerList,
    InvalidReplicationFactorError,
    RackList,
    StripedReplicaPlacer,
    UsableBroker,
    hash_map_order,
    java_string_hash,
    rack_hash,
)


class MockRandom(JavaRandom):
    """Kafka's ``MockRandom``: ``state = state * 2862933555777941757 + 3037000493``, the top ``bits`` bits."""

    def __init__(self) -> None:
        super().__init__(0)
        self._state = 17

    def next(self, bits: int) -> int:
        self._state = (self._state * 2862933555777941757 + 3037000493) & (2**64 - 1)
        return to_int32(self._state >> (64 - bits))


def ub(broker_id: int, rack: str | None = None, fenced: bool = False) -> UsableBroker:
    return UsableBroker(broker_id, rack, fenced)


def test_broker_list() -> None:
    assert BrokerList.EMPTY.size() == 0
    assert BrokerList.EMPTY.next(1) == -1
    brokers = BrokerList().add(0).add(1).add(2).add(3)
    assert brokers.size() == 4
    assert [brokers.next(0) for _ in range(6)] == [0, 1, 2, 3, -1, -1]
    assert [brokers.next(1) for _ in range(5)] == [1, 2, 3, 0, -1]


def test_avoid_fenced_replica_if_possible_on_single_rack() -> None:
    rack_list = RackList(MockRandom(), [ub(3), ub(1, fenced=True), ub(0), ub(4), ub(2)])
    assert rack_list.num_total_brokers == 5
    assert rack_list.num_unfenced_brokers == 4
    assert rack_list.rack_names == [None]
    for rf in (0, -1):
        with pytest.raises(InvalidReplicationFactorError):
            rack_list.place(rf)
    assert rack_list.place(4) == [3, 4, 0, 2]
    assert rack_list.place(4) == [4, 0, 2, 3]
    assert rack_list.place(4) == [0, 2, 3, 4]
    assert rack_list.place(4) == [2, 3, 4, 0]
    assert rack_list.place(4) == [0, 4, 3, 2]


def test_multi_partition_topic_placement_on_single_unfenced_broker() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    assert placer.place(3, 1, [ub(0), ub(1, fenced=True)]) == [[0], [0], [0]]


def test_placement_on_fenced_replica_on_single_rack() -> None:
    rack_list = RackList(MockRandom(), [ub(3), ub(1, fenced=True), ub(2)])
    assert (rack_list.num_total_brokers, rack_list.num_unfenced_brokers) == (3, 2)
    assert rack_list.rack_names == [None]
    assert [rack_list.place(3) for _ in range(4)] == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_rack_list_with_multiple_racks() -> None:
    rack_list = RackList(
        MockRandom(), [ub(11, "1"), ub(10, "1"), ub(30, "3"), ub(31, "3"), ub(21, "2"), ub(20, "2", fenced=True)]
    )
    assert (rack_list.num_total_brokers, rack_list.num_unfenced_brokers) == (6, 5)
    assert rack_list.rack_names == ["1", "2", "3"]
    assert rack_list.place(4) == [11, 21, 31, 10]
    assert rack_list.place(4) == [21, 30, 10, 20]
    assert rack_list.place(4) == [31, 11, 21, 30]


def test_place_shifts_initial_offsets_rack_unaware() -> None:
    placements = StripedReplicaPlacer(MockRandom()).place(2, 3, [ub(i) for i in range(12)])
    assert placements == [[7, 8, 9], [8, 9, 10]]


def test_place_shifts_initial_offsets_rack_aware() -> None:
    brokers = [ub(i, str(1 + i // 4)) for i in range(12)]
    assert StripedReplicaPlacer(MockRandom()).place(2, 3, brokers) == [[6, 8, 2], [9, 3, 7]]


def test_place_uses_unused_racks_rack_aware() -> None:
    brokers = [ub(i, str(i + 1)) for i in range(4)]
    assert StripedReplicaPlacer(MockRandom()).place(1, 2, brokers) == [[0, 1]]


def test_rack_list_with_invalid_racks() -> None:
    rack_list = RackList(
        MockRandom(),
        [ub(11, "1"), ub(10, "1"), ub(30, "3", True), ub(31, "3", True), ub(20, "2", True), ub(21, "2", True),
         ub(41, "4"), ub(40, "4", True)],
    )
    assert (rack_list.num_total_brokers, rack_list.num_unfenced_brokers) == (8, 3)
    assert rack_list.rack_names == ["1", "2", "3", "4"]
    assert rack_list.place(4) == [41, 11, 21, 30]
    assert rack_list.place(4) == [10, 20, 31, 41]
    assert rack_list.place(4) == [41, 21, 30, 11]


def test_all_brokers_fenced() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced\.$"):
        placer.place(1, 1, [ub(11, "1", True), ub(10, "1", True)])


def test_not_enough_brokers() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    message = r"^The target replication factor of 3 cannot be reached because only 2 broker\(s\) are registered\.$"
    with pytest.raises(InvalidReplicationFactorError, match=message):
        placer.place(1, 3, [ub(11, "1"), ub(10, "1")])


def test_non_positive_replication_factor() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    message = r"^Invalid replication factor 0: the replication factor must be positive\.$"
    with pytest.raises(InvalidReplicationFactorError, match=message):
        placer.place(1, 0, [ub(11, "1"), ub(10, "1")])


def test_successful_placement() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    assert placer.place(5, 3, [ub(0), ub(3), ub(2), ub(1)]) == [[2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 2, 3], [1, 0, 2]]


def test_even_distribution() -> None:
    placer = StripedReplicaPlacer(MockRandom())
    counts = Counter(tuple(p) for p in placer.place(200, 2, [ub(0), ub(1), ub(2), ub(3)]))
    assert counts == {
        (0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16,
        (2, 0): 13, (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11,
    }


def test_rack_list_all_brokers_fenced() -> None:
    rack_list = RackList(MockRandom(), [ub(0, fenced=True), ub(1, fenced=True), ub(2, fenced=True)])
    assert (rack_list.num_total_brokers, rack_list.num_unfenced_brokers) == (3, 0)
    assert rack_list.rack_names == [None]
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced\.$"):
        rack_list.place(3)


def test_rack_list_not_enough_brokers() -> None:
    rack_list = RackList(MockRandom(), [ub(11, "1"), ub(10, "1")])
    with pytest.raises(InvalidReplicationFactorError, match=r"replication factor of 3 cannot be reached"):
        rack_list.place(3)


def test_rack_list_non_positive_replication_factor() -> None:
    rack_list = RackList(MockRandom(), [ub(11, "1"), ub(10, "1")])
    with pytest.raises(InvalidReplicationFactorError, match=r"^Invalid replication factor -1: "):
        rack_list.place(-1)


# --- the Java pieces the placer depends on -----------------------------------------------------------------


def test_java_random_matches_the_jdk() -> None:
    # Printed by OpenJDK 17: new Random(42).nextInt(), then nextInt(10) three times; new Random(0).nextInt(16)
    # (a power of two); new Random(-7).nextInt(1000000007) five times (the rejection loop's bound).
    r = JavaRandom(42)
    assert r.next(32) == -1170105035
    assert [r.next_int(10) for _ in range(3)] == [3, 8, 4]
    assert JavaRandom(0).next_int(16) == 11
    big = JavaRandom(-7)
    assert [big.next_int(1_000_000_007) for _ in range(5)] == [577934662, 935951290, 445645583, 119890471, 314447087]


def test_collections_shuffle_matches_the_jdk() -> None:
    items = list(range(10))
    shuffle(items, JavaRandom(1))
    assert items == [6, 9, 7, 8, 4, 2, 0, 3, 1, 5]  # Collections.shuffle(0..9, new Random(1)) on OpenJDK 17


def test_java_string_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("rack-1") == -938608965
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("\u00e9t\u00e9") == 227742
    assert rack_hash(None) == 0


def test_hash_map_order_matches_the_jdk() -> None:
    keys = ["zeta", "alpha", "rack-b", "rack-a", "us-east-1c", "us-east-1a", "us-east-1b", "x", "yy", "Aa", "BB"]
    # new HashMap<String, _>() after put(k) for each key in this order, keySet() on OpenJDK 17:
    expected = ["zeta", "yy", "Aa", "BB", "rack-b", "rack-a", "alpha", "x", "us-east-1a", "us-east-1b", "us-east-1c"]
    assert hash_map_order(keys, rack_hash) == expected


def test_hash_map_order_after_a_resize() -> None:
    # 16 and 32 share bucket 0 of 16 (insertion order) until the 13th key doubles the table.
    assert hash_map_order([32, 16, 0], lambda k: k) == [32, 16, 0]
    assert hash_map_order([16, *range(1, 13)], lambda k: k)[:2] == [1, 2]  # 16 moved to bucket 16 of 32
    # 30 rack names put in this order (two resizes), keySet() on OpenJDK 17:
    keys = [f"rack-{i * 7}" for i in range(29, -1, -1)]
    expected = ("rack-84,rack-63,rack-42,rack-21,rack-119,rack-49,rack-28,rack-7,rack-203,rack-126,rack-147,"
                "rack-168,rack-189,rack-140,rack-161,rack-182,rack-98,rack-77,rack-56,rack-35,rack-14,rack-105,"
                "rack-133,rack-154,rack-175,rack-196,rack-112,rack-0,rack-91,rack-70")
    assert hash_map_order(keys, rack_hash) == expected.split(",")
