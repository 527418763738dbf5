"""TimerTask: something to run once its delay has passed (Kafka's `TimerTask`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

if TYPE_CHECKING:
    from kafkasim.timer.timer_task_entry import TimerTaskEntry


# An extension point, as Kafka's TimerTask is: open to interpreted subclasses when compiled (mypyc).
@mypyc_attr(allow_interpreted_subclasses=True)
class TimerTask(ABC):
    """A task for `SystemTimer`. It sits in at most one bucket at a time, through its current entry.

    Kafka's quirk, kept on purpose (`TimerTask.isCancelled`): `is_cancelled` means "has no current entry", so
    a task that was never added also reports cancelled, and a task that already ran does not.
    """

    __slots__ = ("delay_ms", "_timer_task_entry")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._timer_task_entry: TimerTaskEntry | None = None

    @abstractmethod
    def run(self) -> None:
        """What happens when the task expires (called by the timer's executor)."""
        # Reached only in the compiled build, whose abstract classes are not checked at construction.
        raise NotImplementedError(f"{type(self).__name__} does not implement TimerTask.run")

    def cancel(self) -> None:
        """Take the task out of its bucket at once (O(1)); the timer's `size` drops immediately."""
        entry = self._timer_task_entry
        if entry is not None:
            entry.remove()
            self._timer_task_entry = None

    @property
    def is_cancelled(self) -> bool:
        return self._timer_task_entry is None

    @property
    def timer_task_entry(self) -> TimerTaskEntry | None:
        return self._timer_task_entry

