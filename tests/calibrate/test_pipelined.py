"""How soon a broker reads a producer's next request once it has answered the last (kafkasim.calibrate.pipelined)."""

from __future__ import annotations

import pytest

from kafkasim.calibrate.pipelined import CLOSEST_MS, pipelined_reads

from .test_turnaround import _log


def test_the_gap_is_from_a_produces_response_to_the_next_produce_of_the_same_producer_at_the_same_broker() -> None:
    log = _log([
        ("Produce", "producer-1", 0, 1.0, 2.0),
        ("Produce", "producer-1", 0, 2.125, 3.0),  # 0.125 ms after the response before it
        ("Produce", "producer-1", 0, 3.25, 4.0),  # 0.25 ms
        ("Produce", "producer-1", 0, 4.0 + CLOSEST_MS + 0.25, 6.0),  # came on its own: left out
        ("Produce", "producer-1", 1, 2.5, 3.5),  # another broker's: its own sequence
        ("Produce", "producer-1", 1, 3.625, 4.0),  # 0.125 ms
        ("Produce", "producer-2", 0, 2.0625, 5.0),  # another producer's: 0.0625 after producer-1's is no gap
        ("Produce", "producer-2", 0, 5.5, float("nan")),  # 0.5 ms
        ("Produce", "producer-2", 0, 6.0, 7.0),  # the one before was never answered: no gap
        ("FetchConsumer", "consumer-1", 0, 2.0, 2.5),
        ("FetchConsumer", "consumer-1", 0, 2.75, 3.125),
    ])
    assert sorted(pipelined_reads(log).tolist()) == pytest.approx([0.125, 0.125, 0.25, 0.5])
    assert pipelined_reads(log.drop(columns=["client"])).size == 0
    assert pipelined_reads(_log([])).size == 0


def test_a_whole_millisecond_log_has_none() -> None:
    """A gap of a tenth of a millisecond between two lines is lost when each line's time is floored to one."""
    log = _log([("Produce", "p", 0, 1.0 + i, 1.5 + i) for i in range(20)]).assign(start_ms=lambda d: d["end_ms"] - 0.3)
    assert pipelined_reads(log).size == 0  # 0.7 ms apart: came on their own
    fine = log.assign(start_ms=[1.2 + 0.6 * i for i in range(20)], end_ms=[1.5 + 0.6 * i for i in range(20)])
    assert pipelined_reads(fine).tolist() == pytest.approx([0.3] * 19)
    whole = fine.assign(start_ms=fine["start_ms"] - (fine["end_ms"] - fine["end_ms"].apply(int)),
                        end_ms=fine["end_ms"].apply(int).astype(float))
    assert pipelined_reads(whole).size == 0
