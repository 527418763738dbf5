"""Time as the timer and the purgatory see it: whole milliseconds, passed in, never read from a wall clock.

Kafka's timer reads `Time.hiResClockMs()`; its tests swap in `MockTime`. kafkasim does the same: the run
layer adapts the SimPy clock to `Time`, and unit tests use `ManualTime`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Time(Protocol):
    """A monotonic millisecond clock."""

    def milliseconds(self) -> int: ...


class ManualTime:
    """A clock that moves only when told to (Kafka's `MockTime`). It never goes backwards."""

    __slots__ = ("_now_ms",)

    def __init__(self, start_ms: int = 0) -> None:
        self._now_ms = start_ms

    def milliseconds(self) -> int:
        return self._now_ms

    def sleep(self, ms: int) -> None:
        """Move time forward by `ms` milliseconds."""
        if ms < 0:
            raise ValueError(f"ManualTime.sleep: cannot sleep a negative time ({ms} ms)")
        self._now_ms += ms

    def set(self, ms: int) -> None:
        """Jump to absolute time `ms` (at or after the current time)."""
        if ms < self._now_ms:
            raise ValueError(f"ManualTime.set: time is monotonic, cannot go back from {self._now_ms} ms to {ms} ms")
        self._now_ms = ms

    def __repr__(self) -> str:
        return f"ManualTime({self._now_ms})"
