"""DelayQueueTimer: Kafka 0.8's purgatory timer (one heap, completed operations stay until their timeout),
alone and under DelayedOperationPurgatory, against ManualTime."""

from __future__ import annotations

import pytest

from kafkasim.broker.config import KafkaConfig
from kafkasim.purgatory import (
    DelayedOperation,
    DelayedOperationPurgatory,
    DelayQueueTimer,
    new_purgatory_timer,
)
from kafkasim.timer import ManualTime, SystemTimer, TimerTask


class Task(TimerTask):
    def __init__(self, ident: str, delay_ms: int, time: ManualTime, runs: list[tuple[str, int]]) -> None:
        super().__init__(delay_ms)
        self.ident = ident
        self.time = time
        self.runs = runs

    def run(self) -> None:
        self.runs.append((self.ident, self.time.milliseconds()))


class Op(DelayedOperation):
    def __init__(self, delay_ms: int, time: ManualTime, log: list[tuple[str, int]], ident: str = "op") -> None:
        super().__init__(delay_ms)
        self.completable = False
        self.time = time
        self.log = log
        self.ident = ident

    def try_complete(self) -> bool:
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        self.log.append((f"{self.ident} complete", self.time.milliseconds()))

    def on_expiration(self) -> None:
        self.log.append((f"{self.ident} expire", self.time.milliseconds()))


def test_a_completed_operation_stays_counted_until_its_timeout() -> None:
    time = ManualTime(0)
    log: list[tuple[str, int]] = []
    queue = DelayedOperationPurgatory("Produce", DelayQueueTimer("Produce", time=time))
    wheel = DelayedOperationPurgatory("Produce", SystemTimer("Produce", time=time))
    queued, wheeled = Op(30_000, time, log, "queue"), Op(30_000, time, log, "wheel")
    assert not queue.try_complete_else_watch(queued, ["k"])
    assert not wheel.try_complete_else_watch(wheeled, ["k"])
    assert queue.num_delayed == wheel.num_delayed == 1
    time.set(20)
    assert queued.force_complete() and wheeled.force_complete()
    assert wheel.num_delayed == 0  # the wheel's cancel took it out of its bucket at once
    assert queue.num_delayed == 1  # the heap keeps it
    assert queue.timer.next_expiration_ms == 30_000
    time.set(29_999)
    queue.advance_clock()
    assert queue.num_delayed == 1
    time.set(30_000)
    assert queue.advance_clock() is True  # popped ...
    assert queue.num_delayed == 0 and queue.timer.next_expiration_ms is None
    assert log == [("queue complete", 20), ("wheel complete", 20)]  # ... and dropped: no expiration


def test_expiry_runs_in_expiration_order_ties_in_add_order() -> None:
    time = ManualTime(0)
    runs: list[tuple[str, int]] = []
    timer = DelayQueueTimer("t", time=time)
    for ident, delay in (("c", 30), ("a", 10), ("b", 20), ("a2", 10), ("d", 400)):
        timer.add(Task(ident, delay, time, runs))
    time.set(25)
    assert timer.advance_clock() is True
    assert runs == [("a", 25), ("a2", 25), ("b", 25)]
    assert timer.size == 2 and timer.next_expiration_ms == 30
    assert timer.advance_clock() is False  # nothing due: nothing popped
    time.set(1_000)
    timer.advance_clock()
    assert runs[3:] == [("c", 1_000), ("d", 1_000)]
    assert timer.size == 0


def test_cancel_and_re_add_leave_stale_entries_that_are_skipped() -> None:
    time = ManualTime(0)
    runs: list[tuple[str, int]] = []
    timer = DelayQueueTimer("t", time=time)
    cancelled, moved = Task("cancelled", 10, time, runs), Task("moved", 10, time, runs)
    timer.add(cancelled)
    timer.add(moved)
    cancelled.cancel()
    assert cancelled.is_cancelled
    time.set(5)
    moved.delay_ms = 20
    timer.add(moved)  # its first entry (expiring at 10) is left behind, unbound
    assert timer.size == 3
    time.set(10)
    assert timer.advance_clock() is True
    assert runs == [] and timer.size == 1
    time.set(25)
    timer.advance_clock()
    assert runs == [("moved", 25)]


def test_an_already_expired_task_waits_for_the_next_advance() -> None:
    time = ManualTime(100)
    runs: list[tuple[str, int]] = []
    timer = DelayQueueTimer("t", time=time)
    timer.add(Task("now", 0, time, runs))
    assert runs == [] and timer.size == 1 and timer.next_expiration_ms == 100
    assert timer.advance_clock() is True
    assert runs == [("now", 100)]


def test_close_drops_the_tasks_that_expire_afterwards() -> None:
    time = ManualTime(0)
    log: list[tuple[str, int]] = []
    purgatory = DelayedOperationPurgatory("Fetch", DelayQueueTimer("Fetch", time=time))
    op = Op(10, time, log)
    purgatory.try_complete_else_watch(op, ["k"])
    purgatory.shutdown()
    time.set(10)
    purgatory.advance_clock()
    assert log == [] and not op.is_completed and purgatory.num_delayed == 0


def test_watch_lists_are_purged_every_purge_interval_watched_operations() -> None:
    """Kafka 0.8.1's `RequestPurgatory`: the purge follows `requestCounter` (operations watched since the
    last purge), not today's `estimated total - num_delayed`, which a heap of completed operations would
    hold back for a whole timeout."""
    time = ManualTime(0)
    log: list[tuple[str, int]] = []
    purgatory = DelayedOperationPurgatory("Produce", DelayQueueTimer("Produce", time=time), purge_interval=3)
    ops = [Op(30_000, time, log, str(i)) for i in range(3)]
    for op in ops[:2]:
        purgatory.try_complete_else_watch(op, ["a", "b"])
    time.set(5)
    for op in ops[:2]:
        op.force_complete()
    purgatory.advance_clock()
    assert purgatory.watched == 4  # 2 watched < purge_interval: the completed ones linger
    purgatory.try_complete_else_watch(ops[2], ["a", "b"])
    purgatory.advance_clock()
    assert purgatory.watched == 2  # the third watched operation -> purge: only the live one is left
    assert purgatory.estimated_total_operations == 0
    assert purgatory.num_delayed == 3  # the heap keeps all three until 30 000


def test_the_timer_kind_comes_from_the_broker_config() -> None:
    time = ManualTime(0)
    assert isinstance(new_purgatory_timer("delay_queue", "Fetch", time), DelayQueueTimer)
    wheel = new_purgatory_timer("timing_wheel", "Fetch", time)
    assert isinstance(wheel, SystemTimer) and wheel.time is time
    with pytest.raises(ValueError, match="'heap' is not one of timing_wheel, delay_queue"):
        new_purgatory_timer("heap", "Fetch", time)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="purgatory_timer must be one of timing_wheel, delay_queue"):
        KafkaConfig(purgatory_timer="heap")  # type: ignore[arg-type]
