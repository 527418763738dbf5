"""TimerTaskEntry: one placement of a task in a bucket, with the links of the bucket's list."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkasim.timer.timer_task import TimerTask
    from kafkasim.timer.timer_task_list import TimerTaskList


class TimerTaskEntry:
    """`(timer_task, expiration_ms)` plus the bucket it is in and its neighbours there.

    Constructing an entry binds it to its task, which evicts the task's previous entry (Kafka's
    `TimerTaskEntry` constructor calls `TimerTask.setTimerTaskEntry`).
    """

    __slots__ = ("timer_task", "expiration_ms", "list", "next", "prev")

    def __init__(self, timer_task: TimerTask, expiration_ms: int) -> None:
        self.timer_task = timer_task
        self.expiration_ms = expiration_ms
        self.list: TimerTaskList | None = None
        # An entry in no list links to itself until it is first added, then to the root of the list it last
        # left (Kafka's links are null): the links stay plain entries, which the list code follows without a
        # None check and the compiled build keeps unboxed. An entry the wheel refuses (already expired: a
        # delay under one tick) is never added and stays self-linked: a cycle, left to the cyclic collector.
        self.next: TimerTaskEntry = self
        self.prev: TimerTaskEntry = self
        # Kafka's TimerTask.setTimerTaskEntry, inlined for the hot path: evict the task's previous entry.
        previous = timer_task._timer_task_entry
        if previous is not None:
            previous.remove()
        timer_task._timer_task_entry = self

    @property
    def cancelled(self) -> bool:
        """True once the task was cancelled or re-added with a newer entry."""
        return self.timer_task._timer_task_entry is not self

    def remove(self) -> None:
        """Leave the current bucket, if any. (Kafka loops because another thread may move the entry
        concurrently; in a single-threaded simulator one removal is enough.)"""
        current = self.list
        if current is not None:
            current.remove(self)

    def __repr__(self) -> str:
        return f"TimerTaskEntry({self.timer_task!r}, expiration_ms={self.expiration_ms})"
