"""A real run's records table (kafkasim.real.assemble): the load driver's per-record rows grouped into the
batches the brokers' request logs name."""

from __future__ import annotations

import numpy as np

from kafkasim.real.assemble import ProducerRows, records_table
from kafkasim.real.request_log import ProducedBatch


def _batch(base: int, request_id: int, broker: int, end_ms: float) -> ProducedBatch:
    return ProducedBatch(client="p", topic="t", partition=0, base_offset=base, error=0, records_bytes=100,
                         request_id=request_id, correlation_id=request_id, broker=broker, start_ms=end_ms - 1.0,
                         end_ms=end_ms, acks=1)


def test_offsets_handed_out_again_after_an_unclean_election_name_different_batches() -> None:
    """Found by the differential suite (unclean_acks1_crashes): broker 0 alone acknowledged offsets 2-3 at 5 s,
    then crashed; broker 2, elected uncleanly without them, handed out offsets 2-3 again at 25 s. Grouped by
    base offset alone, the records of both batches became one batch acknowledged at 25 s, and the 5 s
    acknowledgements (the records an unclean election loses) vanished from the records table."""
    acks = np.array([1000.0, 1000.0, 5000.0, 5000.0, 25000.0, 25000.0])
    offsets = np.array([0, 1, 2, 3, 2, 3], dtype=np.int64)
    rows = ProducerRows(index=0, name="p", topic="t", acks=1, intended=acks - 5.0, send=acks - 3.0, ack=acks,
                        partition=np.zeros(6, dtype=np.int64), offset=offsets, error=[""] * 6,
                        size=np.full(6, 100, dtype=np.int64))
    logged = [_batch(0, 1, 0, 999.0), _batch(2, 2, 0, 4999.5), _batch(2, 3, 2, 24999.0)]
    table, batch_of = records_table([rows], {}, logged, {}, 30_000.0)
    assert len(table) == 3
    assert sorted(zip(table["offset"], table["ack_ms"], strict=True)) == [(0, 1000.0), (2, 5000.0), (2, 25000.0)]
    assert batch_of[(0, 2)] == batch_of[(0, 3)] != batch_of[(0, 4)] == batch_of[(0, 5)]
