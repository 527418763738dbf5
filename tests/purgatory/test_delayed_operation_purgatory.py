"""DelayedOperationPurgatory: Kafka's DelayedOperationTest cases, tryCompleteElseWatch, checkAndComplete,
Watchers and the purge in advanceClock."""

from __future__ import annotations

import pytest

from kafkasim.purgatory import DelayedOperation, DelayedOperationPurgatory, TopicPartitionOperationKey
from kafkasim.timer import ManualTime, SystemTimer


class Op(DelayedOperation):
    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.completable = False
        self.completions = 0
        self.expired = False
        self.checks = 0

    def try_complete(self) -> bool:
        self.checks += 1
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        self.completions += 1

    def on_expiration(self) -> None:
        self.expired = True


class CompletesOnSecondCheck(Op):
    def try_complete(self) -> bool:
        self.checks += 1
        return self.force_complete() if self.checks == 2 else False


def reap(purgatory: DelayedOperationPurgatory, time: ManualTime, until_ms: int) -> None:
    while (t := purgatory.timer.next_expiration_ms) is not None and t <= until_ms:
        time.set(max(t, time.milliseconds()))
        purgatory.advance_clock()
    time.set(until_ms)
    purgatory.advance_clock()


@pytest.fixture
def time() -> ManualTime:
    return ManualTime(0)


@pytest.fixture
def purgatory(time: ManualTime) -> DelayedOperationPurgatory:
    return DelayedOperationPurgatory("mock", time=time)


# ---- Kafka's DelayedOperationTest ----


def test_kafka_request_satisfaction(purgatory: DelayedOperationPurgatory) -> None:
    r1, r2 = Op(100000), Op(100000)
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.try_complete_else_watch(r1, ["test1"]) is False
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.try_complete_else_watch(r2, ["test2"]) is False
    assert purgatory.check_and_complete("test2") == 0
    r1.completable = True
    assert purgatory.check_and_complete("test1") == 1
    assert purgatory.check_and_complete("test1") == 0
    r2.completable = True
    assert purgatory.check_and_complete("test2") == 1
    assert purgatory.check_and_complete("test2") == 0


def test_kafka_request_expiry(purgatory: DelayedOperationPurgatory, time: ManualTime) -> None:
    r1, r2 = Op(20), Op(200)
    assert purgatory.try_complete_else_watch(r1, ["test1"]) is False
    assert purgatory.try_complete_else_watch(r2, ["test1", "test2"]) is False
    reap(purgatory, time, 19)
    assert not r1.is_completed
    reap(purgatory, time, 20)
    assert r1.is_completed and r1.expired and r1.completions == 1
    assert not r2.is_completed
    reap(purgatory, time, 200)
    assert r2.is_completed and r2.expired and r2.completions == 1
    assert purgatory.num_delayed == 0


def test_kafka_request_purge(purgatory: DelayedOperationPurgatory) -> None:
    r1, r2, r3 = Op(100000), Op(100000), Op(100000)
    purgatory.try_complete_else_watch(r1, ["test1"])
    purgatory.try_complete_else_watch(r2, ["test1", "test2"])
    purgatory.try_complete_else_watch(r3, ["test1", "test2", "test3"])
    assert (purgatory.num_delayed, purgatory.watched) == (3, 6)
    # Completing removes the op from the timer at once ...
    r2.completable = True
    r2.try_complete()
    assert purgatory.num_delayed == 2
    r3.completable = True
    r3.try_complete()
    assert purgatory.num_delayed == 1
    # ... but from a watch list only when that key is checked (Watchers.tryCompleteWatched).
    assert purgatory.watched == 6
    purgatory.check_and_complete("test1")
    assert purgatory.watched == 4
    purgatory.check_and_complete("test2")
    assert purgatory.watched == 2
    purgatory.check_and_complete("test3")
    assert purgatory.watched == 1


def test_kafka_cancel_for_key_returns_cancelled_operations(purgatory: DelayedOperationPurgatory) -> None:
    ops = [Op(10000), Op(10000), Op(10000)]
    purgatory.try_complete_else_watch(ops[0], ["key"])
    purgatory.try_complete_else_watch(ops[1], ["key"])
    purgatory.try_complete_else_watch(ops[2], ["key2"])
    cancelled = purgatory.cancel_for_key("key")
    assert cancelled == ops[:2]
    assert (purgatory.num_delayed, purgatory.watched) == (1, 1)
    assert all(op.completions == 0 and not op.is_completed for op in cancelled)  # no callbacks


def test_kafka_cancel_for_unknown_key_returns_nothing(purgatory: DelayedOperationPurgatory) -> None:
    assert purgatory.cancel_for_key("key") == []


# ---- two-phase try_complete_else_watch (Kafka's tryCompleteElseWatch) ----


def test_completed_by_the_first_check_is_neither_watched_nor_delayed(purgatory: DelayedOperationPurgatory) -> None:
    op = Op(100)
    op.completable = True
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert (purgatory.watched, purgatory.num_delayed, purgatory.estimated_total_operations) == (0, 0, 0)
    assert op.checks == 1


def test_completed_by_the_second_check_stays_watched_but_never_enters_the_timer(
    purgatory: DelayedOperationPurgatory,
) -> None:
    op = CompletesOnSecondCheck(100)
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert op.is_completed and op.completions == 1
    assert (purgatory.watched, purgatory.num_delayed, purgatory.estimated_total_operations) == (2, 0, 1)
    assert purgatory.timer.locate(op) is None
    # Lazily dropped when a key is checked, without counting it as completed by that check.
    assert purgatory.check_and_complete("a") == 0
    assert purgatory.watched == 1


def test_estimated_total_grows_once_per_operation_not_per_key(purgatory: DelayedOperationPurgatory) -> None:
    purgatory.try_complete_else_watch(Op(100), ["a", "b", "c"])
    purgatory.try_complete_else_watch(Op(100), ["a"])
    assert purgatory.estimated_total_operations == 2
    assert (purgatory.watched, purgatory.num_delayed) == (4, 2)


def test_keys_must_be_a_non_empty_sequence(purgatory: DelayedOperationPurgatory) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        purgatory.try_complete_else_watch(Op(1), [])
    with pytest.raises(ValueError, match="non-empty"):
        purgatory.try_complete_else_watch(Op(1), "key")  # a str would silently watch each character


def test_already_expired_operation_runs_at_once_and_leaves_no_timer_entry(
    purgatory: DelayedOperationPurgatory,
) -> None:
    op = Op(0)
    assert purgatory.try_complete_else_watch(op, ["a"]) is False
    assert op.is_completed and op.expired and op.completions == 1
    assert purgatory.num_delayed == 0 and purgatory.watched == 1


def test_timer_disabled_operations_never_expire(time: ManualTime) -> None:
    purgatory = DelayedOperationPurgatory("no-timer", time=time, timer_enabled=False)
    op = Op(10)
    purgatory.try_complete_else_watch(op, ["a"])
    assert purgatory.num_delayed == 0
    reap(purgatory, time, 1000)
    assert not op.is_completed
    op.completable = True
    assert purgatory.check_and_complete("a") == 1


# ---- completion and liveness (checkAndComplete, Watchers) ----


def test_check_and_complete_counts_only_what_it_completed(purgatory: DelayedOperationPurgatory) -> None:
    a, b, c = Op(1000), Op(1000), Op(1000)
    for op in (a, b, c):
        purgatory.try_complete_else_watch(op, ["k1", "k2"])
    a.completable = b.completable = True
    assert purgatory.check_and_complete("k1") == 2
    # On k2 they are completed elsewhere: dropped, not counted.
    assert purgatory.watchers("k2") == (a, b, c)
    assert purgatory.check_and_complete("k2") == 0
    assert purgatory.watchers("k2") == (c,)
    assert a.completions == b.completions == 1


def test_expired_operation_lingers_on_its_keys_until_checked(
    purgatory: DelayedOperationPurgatory, time: ManualTime
) -> None:
    op = Op(50)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    reap(purgatory, time, 50)
    assert op.expired and purgatory.num_delayed == 0 and purgatory.watched == 2
    assert purgatory.check_and_complete("a") == 0 and purgatory.watched == 1


def test_emptied_keys_disappear(purgatory: DelayedOperationPurgatory) -> None:
    op = Op(1000)
    purgatory.try_complete_else_watch(op, ["a"])
    op.completable = True
    purgatory.check_and_complete("a")
    assert purgatory.watchers("a") == () and purgatory.watched == 0
    assert purgatory.cancel_for_key("a") == []


def test_cancel_for_key_leaves_other_keys_watching_but_the_op_never_expires(
    purgatory: DelayedOperationPurgatory, time: ManualTime
) -> None:
    op = Op(100)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    assert purgatory.cancel_for_key("a") == [op]
    assert purgatory.num_delayed == 0 and purgatory.watchers("b") == (op,)
    reap(purgatory, time, 500)
    assert not op.is_completed
    op.completable = True
    assert purgatory.check_and_complete("b") == 1


def test_purge_runs_in_advance_clock_when_estimated_minus_delayed_exceeds_interval(time: ManualTime) -> None:
    purgatory = DelayedOperationPurgatory("p", time=time, purge_interval=2)
    done = [Op(1000) for _ in range(3)]
    waiting = Op(1000)
    for op in [*done, waiting]:
        purgatory.try_complete_else_watch(op, ["a", "b"])
    for op in done:
        op.completable = True
        op.try_complete()
    assert (purgatory.estimated_total_operations, purgatory.num_delayed, purgatory.watched) == (4, 1, 8)
    # Completing does not purge: only the reaper's advance_clock checks, and 4 - 1 > 2.
    assert purgatory.advance_clock() is False
    assert (purgatory.estimated_total_operations, purgatory.watched) == (1, 2)
    assert purgatory.watchers("a") == (waiting,)


def test_no_purge_at_exactly_the_interval(time: ManualTime) -> None:
    purgatory = DelayedOperationPurgatory("p", time=time, purge_interval=2)
    ops = [Op(1000) for _ in range(3)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["a"])
    for op in ops[:2]:
        op.completable = True
        op.try_complete()
    purgatory.advance_clock()  # 3 - 1 == 2: not greater
    assert purgatory.watched == 3 and purgatory.estimated_total_operations == 3


def test_reentrant_watch_from_on_complete_keeps_every_operation(purgatory: DelayedOperationPurgatory) -> None:
    class Chains(Op):
        def on_complete(self) -> None:
            super().on_complete()
            purgatory.try_complete_else_watch(follow_up, ["k"])

    first, follow_up, other = Chains(1000), Op(1000), Op(1000)
    purgatory.try_complete_else_watch(first, ["k"])
    purgatory.try_complete_else_watch(other, ["k"])
    first.completable = True
    assert purgatory.check_and_complete("k") == 1
    assert set(purgatory.watchers("k")) == {follow_up, other}
    assert purgatory.num_delayed == 2


def test_topic_partition_keys_are_equal_by_value(purgatory: DelayedOperationPurgatory) -> None:
    op = Op(1000)
    purgatory.try_complete_else_watch(op, [TopicPartitionOperationKey("t", 0)])
    op.completable = True
    assert purgatory.check_and_complete(TopicPartitionOperationKey("t", 0)) == 1
    assert TopicPartitionOperationKey("t", 0).key_label == "t-0"


def test_a_given_timer_and_a_different_time_are_refused(time: ManualTime) -> None:
    timer = SystemTimer("t", time=time)
    assert DelayedOperationPurgatory("ok", timer, time=time).timer is timer
    with pytest.raises(ValueError, match="timer"):
        DelayedOperationPurgatory("bad", timer, time=ManualTime(0))


def test_shutdown_stops_expiry(purgatory: DelayedOperationPurgatory, time: ManualTime) -> None:
    op = Op(10)
    purgatory.try_complete_else_watch(op, ["a"])
    purgatory.shutdown()
    reap(purgatory, time, 100)
    assert not op.is_completed
