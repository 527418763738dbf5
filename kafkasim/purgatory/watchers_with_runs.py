"""WatchersWithRuns: a key's `Watchers` that group watches are placed in (`GroupWatchStrategy`).

Not Kafka's: the simulator's speed machinery beside Kafka's `Watchers`. A group watch reaches a key's list
late (when the key is looked at), so it is inserted at its watch-order place rather than appended, and the
completed group watches between two live operations go in as one `CompletedRun`, which counts as its
`weight` operations in the length and expands into them when the list is read or cancelled. The answers
are Kafka's `Watchers`' (`tests/purgatory/test_group_watch_equivalence.py`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterator

from kafkasim.purgatory.delayed_operation import DelayedOperation
from kafkasim.purgatory.group_watchers import CompletedRun
from kafkasim.purgatory.watchers import Watchers


class WatchersWithRuns(Watchers):
    """Kafka's `Watchers`, plus placing operations in watch order and `CompletedRun`s."""

    __slots__ = ("_runs", "_run_extra")

    def __init__(self, key: Hashable) -> None:
        super().__init__(key)
        self._runs = 0  # CompletedRuns in the deque
        # Sum over the CompletedRuns in the deque of (weight - 1): len(self) counts every operation.
        self._run_extra = 0

    def watch_all(self, operations: list[DelayedOperation]) -> None:
        """Append `operations` (which may hold `CompletedRun`s) in order."""
        self._operations.extend(operations)
        for operation in operations:
            if isinstance(operation, CompletedRun):
                self._runs += 1
                self._run_extra += operation.weight - 1

    def pop_watched_after(self, seq: int) -> list[DelayedOperation]:
        """Remove and return, in order, the operations at the tail watched after `seq` (`_watch_seq`)."""
        ops = self._operations
        later: list[DelayedOperation] = []
        while ops and ops[-1]._watch_seq > seq:
            later.append(ops.pop())
        later.reverse()
        return later

    def watch_in_order(self, operations: list[DelayedOperation]) -> None:
        """Put `operations` (increasing `_watch_seq`, all watched after this list was last reordered by a
        pass) where appending each at its watch time would have put it: before the operations at the tail
        that were watched later. O(len(operations) + that tail)."""
        ops = self._operations
        if not ops or ops[-1]._watch_seq < operations[0]._watch_seq:
            ops.extend(operations)
            return
        ops.extend(merge_in_watch_order(operations, self.pop_watched_after(operations[0]._watch_seq)))

    def __len__(self) -> int:
        return len(self._operations) + self._run_extra

    def __iter__(self) -> Iterator[DelayedOperation]:
        return iter(_expanded(self._operations) if self._runs else tuple(self._operations))

    def try_complete_watched(self) -> int:
        if self._runs:
            return self._try_complete_watched_with_runs()
        return super().try_complete_watched()

    def _try_complete_watched_with_runs(self) -> int:
        operations = self._operations
        completed = 0
        # Kafka's pass visits the entries present when it began: a run spends its weight of them.
        budget = len(self)
        while budget > 0 and operations:
            operation = operations.popleft()
            if operation._completed:
                if isinstance(operation, CompletedRun):
                    self._runs -= 1
                    self._run_extra -= operation.weight - 1
                    if operation.weight > budget:
                        # A nested pass took some of this pass's turns: it ends inside the run, whose
                        # remaining entries stay at the head, as Kafka's list would keep them.
                        rest = operation.without_first(budget)
                        operations.appendleft(rest)
                        self._runs += 1
                        self._run_extra += rest.weight - 1
                        break
                    budget -= operation.weight
                else:
                    budget -= 1
                continue
            budget -= 1
            if operation.safe_try_complete():
                completed += 1
                continue
            operations.append(operation)
        return completed

    def purge_completed(self) -> int:
        # A run is completed: the base drops it as one entry; it stood for `weight` of them.
        run_extra = self._run_extra
        self._runs = self._run_extra = 0
        return super().purge_completed() + run_extra

    def cancel(self) -> list[DelayedOperation]:
        operations = self._operations
        cancelled = _expanded(operations)
        operations.clear()
        self._runs = self._run_extra = 0
        for operation in cancelled:
            operation.cancel()
        return cancelled


def _expanded(operations: deque[DelayedOperation]) -> list[DelayedOperation]:
    expanded: list[DelayedOperation] = []
    for operation in operations:
        if isinstance(operation, CompletedRun):
            expanded.extend(operation.operations())
        else:
            expanded.append(operation)
    return expanded


def merge_in_watch_order(first: list[DelayedOperation], second: list[DelayedOperation]) -> list[DelayedOperation]:
    """Merge two lists sorted by `_watch_seq` (an operation watching a key twice appears twice)."""
    merged: list[DelayedOperation] = []
    i = j = 0
    while i < len(first) and j < len(second):
        if first[i]._watch_seq < second[j]._watch_seq:
            merged.append(first[i])
            i += 1
        else:
            merged.append(second[j])
            j += 1
    merged.extend(first[i:])
    merged.extend(second[j:])
    return merged
