"""PurgatoryTimer: what a purgatory needs from its timer, and the choice between the two timers kafkasim has.

* ``timing_wheel``: Kafka's ``SystemTimer`` (the hierarchical timing wheel, Kafka 0.9+, KAFKA-1989). A
  completed operation's ``cancel()`` takes it out of its bucket at once.
* ``delay_queue``: ``DelayQueueTimer``, the single ``java.util.DelayQueue`` of Kafka 0.8's
  ``RequestPurgatory``. A completed operation stays in the queue until its timeout.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

from kafkasim.purgatory.delay_queue_timer import DelayQueueTimer
from kafkasim.timer import SystemTimer, Time, TimerTask

PurgatoryTimerKind = Literal["timing_wheel", "delay_queue"]
PURGATORY_TIMER_KINDS: Final[tuple[PurgatoryTimerKind, ...]] = ("timing_wheel", "delay_queue")


class PurgatoryTimer(Protocol):
    """The part of ``SystemTimer`` that ``DelayedOperationPurgatory`` and its expiration reaper use."""

    @property
    def name(self) -> str: ...

    @property
    def time(self) -> Time: ...

    @property
    def size(self) -> int:
        """Entries the timer holds (the purgatory's NumDelayedOperations)."""
        ...

    @property
    def next_expiration_ms(self) -> int | None:
        """When the reaper must next call ``advance_clock`` (None: nothing is held)."""
        ...

    def add(self, task: TimerTask) -> None: ...

    def advance_clock(self) -> bool: ...

    def close(self) -> None: ...


def new_purgatory_timer(kind: PurgatoryTimerKind, name: str, time: Time) -> PurgatoryTimer:
    """A timer of ``kind`` for the purgatory ``name``; ValueError for an unknown kind."""
    if kind == "timing_wheel":
        return SystemTimer(name, time=time)
    if kind == "delay_queue":
        return DelayQueueTimer(name, time=time)
    raise ValueError(f"purgatory timer {kind!r} is not one of {', '.join(PURGATORY_TIMER_KINDS)}")
