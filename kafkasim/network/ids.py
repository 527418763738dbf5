"""Run-wide request and batch ids, shared by every client (producers, consumers, replica fetchers).

In Kafka each ``NetworkClient`` numbers its own requests (the correlation id); the simulator numbers
requests and batches across the whole run so that every row of the recorder's tables has one key.
"""

from __future__ import annotations


class IdSource:
    """Run-wide counters for request and batch ids (one per run; deterministic, single-threaded)."""

    __slots__ = ("next_request_id", "next_batch_id")

    def __init__(self) -> None:
        self.next_request_id = 0
        self.next_batch_id = 0

    def request_id(self) -> int:
        i = self.next_request_id
        self.next_request_id = i + 1
        return i

    def batch_id(self) -> int:
        i = self.next_batch_id
        self.next_batch_id = i + 1
        return i
