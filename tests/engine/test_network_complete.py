"""A network thread's work once a response is written (``broker.costs.network_complete``: Kafka's
``Processor.processCompletedSends``, whose ``updateRequestMetrics`` writes the request log's line before
``tryUnmuteChannel``): the response has ended and travels meanwhile; the connection's next request is read after
it. 0 (the default) changes nothing."""

from __future__ import annotations

import numpy as np

from kafkasim.calibrate.pipelined import pipelined_reads
from kafkasim.run import run_scenario
from kafkasim.run.engine import Engine
from kafkasim.scenario import with_overrides

from .support import consumer, producer, scenario
from .test_determinism import table_hash


def _scenario(*lines: str):  # type: ignore[no-untyped-def]
    # 2,000 records/s with linger.ms=0: a produce often waits in the socket behind the one in process.
    s = scenario(duration="2s", producers=[producer("p1", acks=1, rate="2000/s", arrival="poisson")],
                 consumers=[consumer("c1")])
    return with_overrides(s, ["broker.costs.network_read=0.01ms", "broker.costs.network_read_per_kib=0ms", *lines])


def test_no_network_complete_is_todays_timing_exactly() -> None:
    base, zero = run_scenario(_scenario()), run_scenario(_scenario("broker.costs.network_complete=0ms"))
    assert table_hash(base.requests) == table_hash(zero.requests)
    assert table_hash(base.records) == table_hash(zero.records)


def test_a_connections_next_request_is_read_after_the_threads_work_on_the_last_response() -> None:
    base = run_scenario(_scenario())
    # Longer than the link back: the producer has the response, and its row is written, before the broker's
    # network thread has done with it (the row drops the envelope's connection; the thread unmutes it all the same).
    engine = Engine(_scenario("broker.costs.network_complete=2ms"), check_invariants=True)
    done = engine.run()
    before, after = pipelined_reads(base.requests), pipelined_reads(done.requests)
    assert len(before) > 20 and np.min(before) < 0.02
    # The gaps the statistic keeps end at 0.5 ms: a queued produce is now read 2.01 ms or more after, none in it.
    gaps = []
    for _, one in done.requests[done.requests["api"] == "Produce"].groupby(["client", "broker"]):
        one = one.sort_values("start_ms")
        gaps.append(one["start_ms"].to_numpy()[1:] - one["end_ms"].to_numpy()[:-1])
    gap = np.concatenate(gaps)
    gap = gap[~np.isnan(gap)]  # the last produces, unanswered when the run ended
    assert len(after) == 0 and np.min(gap) >= 2.01 - 1e-9
    # Here every produce waited behind another, and the consumer's fetch response, queued by the produce's handler
    # after the produce's (its one network thread serves both connections), came in the thread's next iteration of
    # Processor.run: the thread's work on the produce's response, then the poll that writes the fetch response and
    # reads the next produce, before the fetch response's own completion (until 2026-12-03 the read came after that
    # too: 4.01-4.03 ms).
    assert len(gap) > 400 and np.all((gap > 2.01) & (gap < 2.03))
