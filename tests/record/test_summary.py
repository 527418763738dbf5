import json
import math

import numpy as np
import pytest

from kafkasim.record.recorder import BatchTrace, Recorder
from kafkasim.record.summary import percentiles, summarize

from .rows import Row


def test_percentiles_match_exact_values_within_three_digits():
    values = np.random.default_rng(3).lognormal(0.0, 1.0, 50_000)
    p = percentiles(values)
    assert p["count"] == 50_000
    for name, q in [("p50", 50), ("p95", 95), ("p99", 99), ("p99.9", 99.9)]:
        assert p[name] == pytest.approx(np.percentile(values, q), rel=2e-3, abs=1e-3)
    assert p["max"] == values.max() and p["mean"] == pytest.approx(values.mean())


def test_percentiles_small_exact_values_and_nan_ignored():
    p = percentiles([1.0, 2.0, 3.0, 4.0, float("nan")])
    assert p["count"] == 4 and p["p50"] == 2.0 and p["p99"] == 4.0 and p["max"] == 4.0


def test_percentiles_of_nothing_are_null():
    p = percentiles([])
    assert p["count"] == 0 and p["p99"] is None and p["max"] is None


def _run_tables():
    rec = Recorder(["c"])
    for i in range(200):
        send = float(i * 10)
        api = "Produce" if i % 2 == 0 else "FetchConsumer"
        tr = Row(i, api, "x", 1, 100, acks=-1 if api == "Produce" else None,
                 intended_ms=send - 1, client_send_ms=send)
        tr.start_ms, tr.dequeue_ms, tr.local_complete_ms = send + 1, send + 2, send + 3
        tr.response_complete_ms = tr.response_dequeue_ms = tr.end_ms = send + (20 if i < 100 else 5)
        tr.client_receive_ms = tr.end_ms + 1
        tr.error = 7 if i == 150 else 0
        rec.finish_request(tr)
        if api == "Produce":
            b = BatchTrace(i, "p", "t", 0, 1, 100, acks=-1 if i % 4 == 0 else 1, first_intended_ms=send - 1,
                           created_ms=send - 1, send_ms=send, ack_ms=send + 6, offset=i, request_id=i)
            rec.finish_batch(b)
            rec.batch_consumed(i, "c", send + 8)
    return rec.tables()


def test_summary_excludes_warmup_and_breaks_down_per_api():
    t = _run_tables()
    s = summarize(t.requests, t.records, seed=5, simulated_duration_ms=2000.0, warmup_ms=1000.0,
                  events=1234, counters={"isr_shrinks": 2, "expirations": {"Produce": 1}})
    json.dumps(s, allow_nan=False)  # JSON-able, no NaN
    assert s["seed"] == 5 and s["warmup_ms"] == 1000.0 and s["simulated_requests"] == 200
    produce = s["apis"]["Produce"]
    assert produce["count"] == 50 and produce["errors"] == 1
    # Only requests sent after the warm-up: all of those have TotalTimeMs 4 (sent at i >= 100).
    assert produce["TotalTimeMs"]["max"] == 4.0 and produce["RemoteTimeMs"]["p50"] == 2.0
    assert produce["client_latency_ms"]["p50"] == pytest.approx(6.0, rel=1e-3)
    assert set(s["apis"]) == {"Produce", "FetchConsumer"}
    assert s["produce_latency"]["acks=all"]["from_intended"]["p50"] == pytest.approx(7.0, rel=1e-3)
    assert s["produce_latency"]["acks=all"]["from_send"]["p50"] == pytest.approx(6.0, rel=1e-3)
    assert s["produce_latency"]["acks=1"]["batches"] == 25
    assert s["e2e_latency"]["p50"] == pytest.approx(9.0, rel=1e-3) and s["e2e_latency"]["count"] == 50
    assert s["counters"] == {"isr_shrinks": 2, "expirations": {"Produce": 1}}


def test_summary_without_warmup_counts_everything():
    t = _run_tables()
    s = summarize(t.requests, t.records, seed=None, simulated_duration_ms=2000.0)
    assert s["apis"]["Produce"]["count"] == 100 and s["apis"]["Produce"]["TotalTimeMs"]["max"] == 19.0
    assert "wall_seconds" not in s and not math.isnan(s["apis"]["Produce"]["TotalTimeMs"]["p50"])
