"""TimerTaskList: one bucket of a timing wheel (Kafka's `TimerTaskList`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kafkasim.timer.timer_task import TimerTask
from kafkasim.timer.timer_task_entry import TimerTaskEntry


class TaskCounter:
    """The entry count shared by every bucket of one timer (Kafka's `AtomicInteger taskCounter`)."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0) -> None:
        self.value = value

    def get(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"TaskCounter({self.value})"


class _Root(TimerTask):
    """The task of a list's sentinel entry: never added to a timer, never run."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(-1)

    def run(self) -> None:
        raise AssertionError("a bucket's sentinel entry never runs")


def _sentinel() -> TimerTaskEntry:
    return TimerTaskEntry(_Root(), -1)  # links to itself: the empty circular list


class TimerTaskList:
    """A circular doubly linked list of entries with a sentinel root: O(1) add and remove.

    `expiration` is the start of the bucket's time range, or -1 while the bucket is not in the delay queue.
    `level`, `index` and `tick_ms` say where the bucket sits; the timer only uses them for `locate` and
    traces.
    """

    __slots__ = ("_task_counter", "_root", "_expiration", "_size", "level", "index", "tick_ms")

    def __init__(self, task_counter: TaskCounter, *, level: int = 0, index: int = -1, tick_ms: int = 0) -> None:
        self._task_counter = task_counter
        self._root = _sentinel()
        self._expiration = -1
        self._size = 0
        self.level = level
        self.index = index
        self.tick_ms = tick_ms

    @property
    def expiration(self) -> int:
        return self._expiration

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the bucket's expiration; True iff it changed (Kafka's `TimerTaskList.setExpiration`: only then
        is it queued again)."""
        if self._expiration == expiration_ms:
            return False
        self._expiration = expiration_ms
        return True

    def add(self, entry: TimerTaskEntry) -> None:
        """Append `entry` at the tail, first detaching it from whatever list holds it."""
        current = entry.list
        if current is not None:
            current.remove(entry)
        root = self._root
        tail = root.prev
        entry.next = root
        entry.prev = tail
        entry.list = self
        tail.next = entry
        root.prev = entry
        self._size += 1
        self._task_counter.value += 1

    def remove(self, entry: TimerTaskEntry) -> None:
        """Unlink `entry` if it is in this list (otherwise do nothing)."""
        if entry.list is self:
            nxt = entry.next
            prv = entry.prev
            nxt.prev = prv
            prv.next = nxt
            # Kafka nulls the links. Not linked to itself either: a self-link is a reference cycle, which holds
            # the entry, its task and everything the task holds until the cyclic collector walks them; linked
            # to the root it left, the entry is freed by reference counting with its task.
            root = self._root
            entry.next = root
            entry.prev = root
            entry.list = None
            self._size -= 1
            self._task_counter.value -= 1

    def flush(self, f: Callable[[TimerTaskEntry], None]) -> None:
        """Pop every entry (head first) and hand it to `f`; then mark the bucket unqueued (-1)."""
        root = self._root
        head = root.next
        while head is not root:
            self.remove(head)
            f(head)
            head = root.next
        self._expiration = -1

    def foreach(self, f: Callable[[TimerTask], None]) -> None:
        """Call `f(task)` for each live entry; `f` may cancel the task it is given."""
        root = self._root
        entry = root.next
        while entry is not root:
            nxt = entry.next
            if not entry.cancelled:
                f(entry.timer_task)
            entry = nxt

    def entries(self) -> Iterator[TimerTaskEntry]:
        """The entries, head first (a snapshot: safe to modify the list while iterating)."""
        out = []
        root = self._root
        entry = root.next
        while entry is not root:
            out.append(entry)
            entry = entry.next
        return iter(out)

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"TimerTaskList(level={self.level}, index={self.index}, expiration={self._expiration}, size={self._size})"
