"""Small builders shared by the broker tests."""

from __future__ import annotations

from kafkasim.broker.records import RecordBatch

_next_id = [0]


def batch(size: int = 100, records: int = 10, ts: int = 0, producer: str = "p") -> RecordBatch:
    """A producer batch (no offsets yet) with a fresh batch id."""
    _next_id[0] += 1
    return RecordBatch(records, size, ts, _next_id[0], producer)


def follower_batches(leader_batches, start: int = 0):
    """The batches as a follower receives them (already stamped by the leader)."""
    return [b for b in leader_batches if b.base_offset >= start]
