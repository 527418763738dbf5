"""``ActionQueue``: work deferred to the end of request handling (Kafka's ``ActionQueue``, drained by
``ReplicaManager.tryCompleteActions``; Kafka 2.7+, KAFKA-8334)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class ActionQueue:
    """Post-append purgatory checks wait here until the request handler finishes the request
    (``KafkaApis.handle``'s ``finally: replicaManager.tryCompleteActions()``), so a produce's own
    DelayedProduce is already watched when the parked follower fetches are woken."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: deque[Callable[[], None]] = deque()

    def add(self, action: Callable[[], None]) -> None:
        self._queue.append(action)

    def try_complete_actions(self) -> int:
        """Run at most the actions present when called (ones they add wait for the next call); returns
        how many ran."""
        queue = self._queue
        to_run = len(queue)
        ran = 0
        while ran < to_run and queue:
            queue.popleft()()
            ran += 1
        return ran

    def __len__(self) -> int:
        return len(self._queue)
