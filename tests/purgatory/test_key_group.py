"""KeyGroup's validation, and what a purgatory keeps for a group: watch order on a key, PurgatorySize,
`release_group`, and memory that does not grow with the watches."""

from __future__ import annotations

import pytest

import kafkasim.purgatory
from kafkasim.purgatory import DelayedOperation, DelayedOperationPurgatory, GroupWatchStrategy, KeyGroup
from kafkasim.timer import ManualTime


class Op(DelayedOperation):
    def __init__(self, name: str, delay_ms: int = 30_000) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.completable = False

    def try_complete(self) -> bool:
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        pass


def names(ops: tuple[DelayedOperation, ...] | list[DelayedOperation]) -> list[str]:
    return [op.name for op in ops if isinstance(op, Op)]


@pytest.fixture
def purgatory() -> DelayedOperationPurgatory:
    return DelayedOperationPurgatory("test", time=ManualTime(0), group_watch_strategy=GroupWatchStrategy())


def groups(purgatory: DelayedOperationPurgatory) -> GroupWatchStrategy:
    strategy = purgatory.group_watch_strategy
    assert strategy is not None
    return strategy


# ---- KeyGroup ----


def test_a_group_keeps_its_keys_in_order() -> None:
    group = KeyGroup(iter(["p2", "p0", "p1"]))
    assert list(group) == ["p2", "p0", "p1"] and group.keys == ("p2", "p0", "p1")
    assert len(group) == 3
    assert "p0" in group and "p3" not in group
    assert kafkasim.purgatory.KeyGroup is KeyGroup


def test_a_group_is_equal_only_to_itself() -> None:
    a, b = KeyGroup(["p0", "p1"]), KeyGroup(["p0", "p1"])
    assert a != b and a == a
    assert len({a, b}) == 2


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([], "at least one key"),
        (["p0", "p1", "p0"], "'p0' appears more than once"),
        ("p0", "not the single string 'p0'"),
        (b"p0", "not the single string"),
    ],
)
def test_a_group_rejects_what_is_not_a_set_of_keys(keys: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KeyGroup(keys)  # type: ignore[arg-type]


# ---- a group in a purgatory ----


def test_a_key_tries_group_and_explicit_operations_in_watch_order(purgatory: DelayedOperationPurgatory) -> None:
    # group_watchers' module comment's example: A and C watch the group [p0, p1], B watches [p1] between them.
    group = KeyGroup(["p0", "p1"])
    a, b, c = Op("A"), Op("B"), Op("C")
    purgatory.try_complete_else_watch(a, group)
    purgatory.try_complete_else_watch(b, ["p1"])
    purgatory.try_complete_else_watch(c, group)
    assert purgatory.watched == 5  # A and C on two keys each, B on one
    assert names(purgatory.watchers("p1")) == ["A", "B", "C"]
    assert names(purgatory.watchers("p0")) == ["A", "C"]
    b.completable = c.completable = True
    assert purgatory.check_and_complete("p1") == 2
    assert purgatory.watched == 3  # A on both keys, C still on p0 until p0 is checked or purged
    assert purgatory.check_and_complete("p0") == 0
    assert purgatory.watched == 2


def test_a_group_watch_touches_no_key(purgatory: DelayedOperationPurgatory) -> None:
    group = KeyGroup(range(1000))
    purgatory.try_complete_else_watch(Op("A"), group)
    assert purgatory.watched == 1000
    assert not purgatory._watchers_for_key  # nothing per key until a key is looked at
    assert purgatory.check_and_complete(7) == 0
    assert list(purgatory._watchers_for_key) == [7]


def test_an_operation_complete_at_once_leaves_no_index(purgatory: DelayedOperationPurgatory) -> None:
    op = Op("A")
    op.completable = True
    assert purgatory.try_complete_else_watch(op, KeyGroup(["p0"])) is True
    assert groups(purgatory).indexed_groups == 0 and purgatory.watched == 0


def test_release_forgets_a_group_once_no_operation_references_it(purgatory: DelayedOperationPurgatory) -> None:
    group = KeyGroup(["p0", "p1"])
    op = Op("A")
    purgatory.try_complete_else_watch(op, group)
    groups(purgatory).release_group(group)
    assert groups(purgatory).indexed_groups == 1  # A still waits on both keys
    op.completable = True
    assert purgatory.check_and_complete("p0") == 1
    assert groups(purgatory).indexed_groups == 1  # completed, but still on p1's list until p1 is checked or purged
    assert purgatory.watched == 1
    assert purgatory.purge_completed() == 1
    assert groups(purgatory).indexed_groups == 0 and purgatory.watched == 0
    assert purgatory.check_and_complete("p1") == 0


def test_release_forgets_at_once_a_group_whose_watches_are_all_placed(
    purgatory: DelayedOperationPurgatory,
) -> None:
    group = KeyGroup(["p0", "p1"])
    op = Op("A")
    purgatory.try_complete_else_watch(op, group)
    assert names(purgatory.cancel_for_key("p0")) == ["A"]
    assert names(purgatory.watchers("p1")) == ["A"]  # A is now on every key's list: the group holds nothing
    assert groups(purgatory).indexed_groups == 1  # not released: stays indexed
    groups(purgatory).release_group(group)
    assert groups(purgatory).indexed_groups == 0
    groups(purgatory).release_group(group)  # again, and a group never watched: nothing to do
    groups(purgatory).release_group(KeyGroup(["p9"]))
    assert groups(purgatory).indexed_groups == 0
    op.completable = True
    assert purgatory.check_and_complete("p1") == 1


def test_a_released_group_whose_operations_completed_is_forgotten_by_the_purge(
    purgatory: DelayedOperationPurgatory,
) -> None:
    group = KeyGroup(["p0", "p1"])
    op = Op("A")
    purgatory.try_complete_else_watch(op, group)
    op.completable = True
    purgatory.check_and_complete("p0")
    purgatory.check_and_complete("p1")
    assert purgatory.watched == 0
    groups(purgatory).release_group(group)
    assert groups(purgatory).indexed_groups == 1  # A's completed watch is kept until the purge
    assert purgatory.purge_completed() == 0
    assert groups(purgatory).indexed_groups == 0


def test_a_group_watched_after_its_release_is_indexed_again(purgatory: DelayedOperationPurgatory) -> None:
    group = KeyGroup(["p0", "p1"])
    purgatory.try_complete_else_watch(Op("A"), group)
    purgatory.cancel_for_key("p0")
    purgatory.cancel_for_key("p1")
    groups(purgatory).release_group(group)
    assert groups(purgatory).indexed_groups == 0
    b = Op("B")
    purgatory.try_complete_else_watch(b, group)
    assert groups(purgatory).indexed_groups == 1
    assert names(purgatory.watchers("p1")) == ["B"]


def test_memory_stays_flat_while_a_group_is_parked_on_and_completed(purgatory: DelayedOperationPurgatory) -> None:
    # A session's fetch parks on its group and a produce to one partition completes it, over and over; the
    # reaper's purge (advance_clock) drops the completed fetches, from the group as from the lists.
    group = KeyGroup(range(100))
    for i in range(5_000):
        op = Op(str(i))
        purgatory.try_complete_else_watch(op, group)
        op.completable = True
        assert purgatory.check_and_complete(i % 7) == 1
        purgatory.advance_clock()
    assert len(groups(purgatory)._group_watchers[group].watches) <= purgatory.purge_interval + 1
    assert purgatory.watched <= 100 * (purgatory.purge_interval + 1)
    assert sum(len(w) for w in purgatory._watchers_for_key.values()) <= 7 * (purgatory.purge_interval + 1)


def test_without_a_strategy_a_group_is_watched_on_each_of_its_keys() -> None:
    # Kafka's purgatory as it is: a KeyGroup is a list of keys like any other.
    purgatory = DelayedOperationPurgatory("plain", time=ManualTime(0))
    assert purgatory.group_watch_strategy is None
    op = Op("A")
    purgatory.try_complete_else_watch(op, KeyGroup(["p0", "p1"]))
    assert list(purgatory._watchers_for_key) == ["p0", "p1"] and purgatory.watched == 2
    op.completable = True
    assert purgatory.check_and_complete("p1") == 1


def test_a_strategy_serves_one_purgatory() -> None:
    strategy = GroupWatchStrategy()
    DelayedOperationPurgatory("one", time=ManualTime(0), group_watch_strategy=strategy)
    with pytest.raises(ValueError, match="one strategy per purgatory"):
        DelayedOperationPurgatory("two", time=ManualTime(0), group_watch_strategy=strategy)
