"""DelayQueue: the timer's queue of buckets, ordered by bucket expiration (Kafka uses `java.util.DelayQueue`).

A heap of `(expiration, seq, bucket)`: the sequence number breaks ties in offer order, so two buckets due at
the same millisecond are flushed in a deterministic order and buckets themselves are never compared.
A bucket is offered only when its expiration changed (Kafka's `TimerTaskList.setExpiration`, as used by
`TimingWheel.add`), i.e. after it was flushed, so it is never in the heap twice and its heap key always equals
its live expiration.
"""

from __future__ import annotations

from heapq import heappop, heappush

from kafkasim.timer.timer_task_list import TimerTaskList


class DelayQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = 0

    def offer(self, bucket: TimerTaskList) -> None:
        self._seq += 1
        heappush(self._heap, (bucket.expiration, self._seq, bucket))

    def poll(self, now_ms: int) -> TimerTaskList | None:
        """The earliest bucket if it is due (expiration <= now), else None. Never blocks."""
        heap = self._heap
        if heap and heap[0][0] <= now_ms:
            return heappop(heap)[2]
        return None

    def peek_expiration(self) -> int | None:
        heap = self._heap
        return heap[0][0] if heap else None

    def __len__(self) -> int:
        return len(self._heap)
