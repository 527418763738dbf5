"""DelayedOperation: forceComplete and run (exactly-once, cancel before on_complete, expiry order)."""

from __future__ import annotations

from collections.abc import Callable

from kafkasim.purgatory import DelayedOperation
from kafkasim.timer import ManualTime, SystemTimer


class Op(DelayedOperation):
    def __init__(self, delay_ms: int, timer: SystemTimer | None = None) -> None:
        super().__init__(delay_ms)
        self.completable = False
        self.calls: list[str] = []
        self.timer = timer
        self.size_at_complete: int | None = None

    def try_complete(self) -> bool:
        self.calls.append("try")
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        self.calls.append("complete")
        if self.timer is not None:
            self.size_at_complete = self.timer.size

    def on_expiration(self) -> None:
        self.calls.append("expire")


def test_force_complete_is_exactly_once() -> None:
    op = Op(100)
    assert not op.is_completed
    assert op.force_complete() is True
    assert op.force_complete() is False
    assert op.is_completed and op.calls == ["complete"]


def test_force_complete_cancels_the_timer_entry_before_on_complete() -> None:
    timer = SystemTimer("t", time=ManualTime(0))
    op = Op(100, timer)
    timer.add(op)
    assert timer.size == 1
    op.force_complete()
    assert op.size_at_complete == 0  # num_delayed has already dropped when the response is built
    assert timer.locate(op) is None


def test_expiry_runs_on_complete_then_on_expiration() -> None:
    time = ManualTime(0)
    timer = SystemTimer("t", time=time)
    op = Op(30, timer)
    timer.add(op)
    time.set(30)
    while timer.advance_clock():
        pass
    assert op.calls == ["complete", "expire"] and op.is_completed


def test_expiry_after_completion_does_nothing() -> None:
    op = Op(30)
    op.force_complete()
    op.run()
    assert op.calls == ["complete"]


def test_safe_try_complete_or_else_checks_runs_the_action_and_checks_again() -> None:
    op = Op(10)
    order: list[str] = []

    def watch() -> None:
        order.extend(op.calls)
        op.completable = True  # something changed while the keys were being watched

    assert op.safe_try_complete_or_else(watch) is True
    assert order == ["try"] and op.calls == ["try", "try", "complete"]


def test_safe_try_complete_or_else_skips_the_action_when_the_first_check_completes() -> None:
    op = Op(10)
    op.completable = True
    ran: list[Callable[[], None]] = []
    assert op.safe_try_complete_or_else(lambda: ran.append(lambda: None)) is True
    assert ran == [] and op.calls == ["try", "complete"]


def test_safe_try_complete_delegates_to_try_complete() -> None:
    op = Op(10)
    assert op.safe_try_complete() is False
    op.completable = True
    assert op.safe_try_complete() is True
    assert op.calls == ["try", "try", "complete"]
