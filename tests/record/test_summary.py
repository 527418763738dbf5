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
                  counters={"isr_shrinks": 2, "expirations": {"Produce": 1}})
    json.dumps(s, allow_nan=False)  # JSON-able, no NaN
    # No key that is always null: SimPy's event count depends on how the run was sliced (progress), so a
    # summary, which is a function of the run's rows alone, does not carry it (the benchmark reports it).
    assert None not in (s["seed"], s["simulated_duration_ms"], s["warmup_ms"]) and "events" not in s
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


def _two_producers_two_consumers():
    """Producer "fast" (acks=1) is acknowledged 2 ms after the send, "slow" (acks=all) 10 ms after; consumer
    "near" receives every batch 1 ms after its ack, "far" 50 ms after. One of "slow"'s requests fails."""
    rec = Recorder(["near", "far"])
    for i in range(100):
        send = 1000.0 + i * 10
        name, acks, ack_delay = ("fast", 1, 2.0) if i % 2 == 0 else ("slow", -1, 10.0)
        row = Row(i, "Produce", name, 1, 100, acks=acks, intended_ms=send - 3, client_send_ms=send)
        row.start_ms = row.dequeue_ms = row.local_complete_ms = send + 0.5
        row.response_complete_ms = row.response_dequeue_ms = row.end_ms = send + ack_delay - 0.5
        row.client_receive_ms = send + ack_delay
        failed = i == 99
        row.error = 7 if failed else 0
        row.client_timeout = failed
        rec.finish_request(row)
        batch = BatchTrace(i, name, "t", 0, 2, 100, acks=acks, first_intended_ms=send - 3, created_ms=send - 3,
                           send_ms=send, ack_ms=send + ack_delay, offset=-1 if failed else i, request_id=i,
                           error=7 if failed else 0)
        rec.finish_batch(batch)
        if not failed:
            rec.batch_consumed(i, "near", send + ack_delay + 1)
            rec.batch_consumed(i, "far", send + ack_delay + 50)
    for j, (consumer, remote) in enumerate([("near", 1.0), ("far", 500.0)] * 20):
        row = Row(1000 + j, "FetchConsumer", consumer, 1, 50, intended_ms=1000.0 + j, client_send_ms=1000.0 + j)
        row.start_ms = row.dequeue_ms = row.local_complete_ms = 1000.0 + j
        row.response_complete_ms = row.response_dequeue_ms = row.end_ms = 1000.0 + j + remote
        row.client_receive_ms = row.end_ms
        rec.finish_request(row)
    return rec.tables()


def test_per_client_rows_keep_each_producer_and_consumer_apart():
    t = _two_producers_two_consumers()
    s = summarize(t.requests, t.records, seed=1, simulated_duration_ms=3000.0, warmup_ms=500.0)
    json.dumps(s, allow_nan=False)
    producers, consumers = s["per_client"]["producers"], s["per_client"]["consumers"]
    assert list(producers) == ["fast", "slow"] and list(consumers) == ["near", "far"]
    fast, slow = producers["fast"], producers["slow"]
    assert (fast["acks"], slow["acks"]) == ("acks=1", "acks=all")
    assert (fast["requests"], slow["requests"]) == (50, 50)
    assert (fast["batches"], fast["records"]) == (50, 100)
    # From the intended send (3 ms earlier) and from the send, acknowledged batches only.
    assert fast["from_intended"]["max"] == 5.0 and fast["from_send"]["max"] == 2.0
    assert slow["from_intended"]["p50"] == pytest.approx(13.0, rel=1e-3) and slow["from_send"]["count"] == 49
    # End to end: until the first consumer received it ("near", 1 ms after the ack).
    assert fast["e2e"]["max"] == 6.0 and slow["e2e"]["max"] == 14.0
    assert fast["errors"] == {} and slow["errors"] == {"REQUEST_TIMED_OUT": 1}
    assert (fast["client_timeouts"], slow["client_timeouts"]) == (0, 1)
    assert slow["broker"]["TotalTimeMs"]["max"] == 9.0 and fast["broker"]["client_latency_ms"]["max"] == 2.0
    near, far = consumers["near"], consumers["far"]
    # Each consumer's own receive time: from either producer's intended send / send until it got the batch.
    assert near["batches"] == far["batches"] == 99
    assert near["e2e"]["max"] == 14.0 and far["e2e"]["max"] == 63.0 and far["e2e"]["p50"] == pytest.approx(55.0, rel=1e-3)
    assert near["from_send"]["max"] == 11.0 and far["from_send"]["p50"] == pytest.approx(52.0, rel=1e-3)
    assert near["requests"] == far["requests"] == 20 and near["errors"] == far["errors"] == {}
    assert near["broker"]["RemoteTimeMs"]["max"] == 1.0 and far["broker"]["RemoteTimeMs"]["p50"] == pytest.approx(500.0, rel=1e-3)
    # The per-api view still merges the clients.
    assert s["apis"]["Produce"]["count"] == 100 and s["apis"]["FetchConsumer"]["count"] == 40


def test_per_client_rows_follow_the_given_order_and_list_idle_clients():
    t = _two_producers_two_consumers()
    s = summarize(t.requests, t.records, seed=1, simulated_duration_ms=3000.0, warmup_ms=500.0,
                  producers=["slow", "fast", "idle"], consumers=["far", "near"])
    assert list(s["per_client"]["producers"]) == ["slow", "fast", "idle"]
    assert list(s["per_client"]["consumers"]) == ["far", "near"]
    idle = s["per_client"]["producers"]["idle"]
    assert idle["requests"] == 0 and idle["batches"] == 0 and idle["from_intended"]["count"] == 0


def test_per_client_rows_leave_out_the_warmup():
    t = _two_producers_two_consumers()
    s = summarize(t.requests, t.records, seed=1, simulated_duration_ms=3000.0, warmup_ms=1500.0)
    fast = s["per_client"]["producers"]["fast"]
    assert fast["requests"] == fast["batches"] == 25  # sent at 1500, 1520, ... 1980
    assert s["per_client"]["consumers"]["near"]["requests"] == 0  # every fetch was sent before 1040


def _two_broker_tables():
    """Broker 0 answers in 2 ms, broker 1 in 9 ms; one request to broker 1 fails, one never reaches it."""
    import pandas as pd

    rec = Recorder([])
    for i in range(40):
        send = float(i * 10)
        broker = i % 2
        api = "Produce" if i % 4 < 2 else "FetchFollower"
        row = Row(i, api, "x", 1, 100, acks=-1 if api == "Produce" else None, broker=broker,
                  intended_ms=send, client_send_ms=send)
        if i != 39:  # the last one is lost on the way to broker 1
            row.start_ms = row.dequeue_ms = row.local_complete_ms = row.response_complete_ms = send + 1
            row.response_dequeue_ms = row.end_ms = send + 1 + (2.0 if broker == 0 else 9.0)
            row.client_receive_ms = row.end_ms + 1
        else:
            row.client_timeout = True
            row.error = 7
        row.error = 19 if i == 5 else row.error
        rec.finish_request(row)
    t = rec.tables()
    ts = pd.DataFrame({"time_ms": [0.0, 100.0, 200.0] * 2,
                       "metric": ["RequestQueueSize"] * 3 + ["RequestHandlerAvgIdlePercent"] * 3,
                       "entity": ["broker-1"] * 6, "value": [9.0, 1.0, 3.0, 0.1, 0.5, 0.7]})
    return t, ts


def test_per_broker_summary_splits_requests_by_the_broker_that_handled_them():
    t, ts = _two_broker_tables()
    s = summarize(t.requests, t.records, seed=1, simulated_duration_ms=400.0, warmup_ms=50.0, timeseries=ts)
    per_broker = s["per_broker"]
    assert list(per_broker) == ["broker-0", "broker-1"]
    zero, one = per_broker["broker-0"], per_broker["broker-1"]
    assert zero["requests"] == 17 and one["requests"] == 18  # sent at or after 50 ms
    assert one["errors"] == {"NOT_ENOUGH_REPLICAS": 1, "REQUEST_TIMED_OUT": 1} and zero["errors"] == {}
    assert one["client_timeouts"] == 1
    assert zero["apis"]["Produce"]["TotalTimeMs"]["max"] == 2.0
    assert one["apis"]["Produce"]["TotalTimeMs"]["p50"] == 9.0
    assert one["apis"]["FetchFollower"]["count"] == 9 and one["apis"]["FetchFollower"]["TotalTimeMs"]["count"] == 8
    # Gauges after the warm-up only (the 0 ms sample is left out).
    assert one["RequestQueueSize"] == {"mean": 2.0, "max": 3.0}
    assert one["RequestHandlerAvgIdlePercent"] == pytest.approx({"mean": 0.6, "min": 0.5})
    assert "RequestQueueSize" not in zero


def test_per_broker_tables_print_only_when_several_brokers_handled_requests():
    from rich.console import Console

    from kafkasim.console.summary import per_broker_tables

    t, ts = _two_broker_tables()
    s = summarize(t.requests, t.records, seed=1, simulated_duration_ms=400.0, timeseries=ts)
    console = Console(width=80, record=True)
    for table in per_broker_tables(s):
        console.print(table)
    text = console.export_text()
    assert "broker-1" in text and "FetchFollower" in text and max(len(line) for line in text.splitlines()) <= 80
    one = summarize(t.requests[t.requests["broker"] == 0], t.records, seed=1, simulated_duration_ms=400.0,
                    timeseries=ts)
    assert per_broker_tables(one) == []  # broker-1 has gauges but handled nothing


def test_html_report_has_the_per_broker_tables():
    from kafkasim.report.html import summary_tables

    t, ts = _two_broker_tables()
    html = summary_tables(summarize(t.requests, t.records, seed=1, simulated_duration_ms=400.0, timeseries=ts))
    assert "per_broker: TotalTimeMs" in html and "per_broker: load" in html
    assert html.count("<td>broker-1</td>") == 3  # two APIs and the load row


def test_percentiles_equal_hdrhistograms_own_walk() -> None:
    """values_at_percentiles answers as HdrHistogram.get_value_at_percentile over the same histogram."""
    import numpy as np
    from hdrh.histogram import HdrHistogram

    from kafkasim.record.summary import _HIGHEST_US, PERCENTILES, lowest_equivalent_us, values_at_percentiles

    rng = np.random.default_rng(7)
    cases = [np.array([0]), np.array([1]), np.array([5] * 1000), np.array([_HIGHEST_US]), np.arange(5000)]
    cases += [rng.integers(0, _HIGHEST_US, size=n) for n in (1, 2, 3, 7, 999, 1000, 1001, 20_000)]
    cases += [np.rint(rng.lognormal(8, 2, size=n)).clip(0, _HIGHEST_US).astype(np.int64) for n in (10, 3333)]
    for micros in cases:
        buckets, counts = np.unique(lowest_equivalent_us(micros.astype(np.int64)), return_counts=True)
        histogram = HdrHistogram(1, _HIGHEST_US, 3)
        for value in micros.tolist():
            histogram.record_value(value)
        expected = [histogram.get_value_at_percentile(q) for _, q in PERCENTILES]
        assert values_at_percentiles(buckets, counts) == expected, micros[:10]


def test_buckets_taken_a_chunk_at_a_time_are_numpys_unique_of_the_whole() -> None:
    """lowest_equivalent_us goes _CHUNK values at a time and _bucket_counts sorts in place (to keep a million
    values' temporaries small): the same as the one-pass formula and np.unique."""
    import numpy as np

    from kafkasim.record.summary import (
        _CHUNK,
        _HIGHEST_US,
        _SUB_BUCKET_BITS,
        _bucket_counts,
        lowest_equivalent_us,
    )

    rng = np.random.default_rng(11)
    for n in (0, 1, _CHUNK - 1, _CHUNK, _CHUNK + 1, 3 * _CHUNK + 17):
        micros = rng.integers(0, _HIGHEST_US, size=n)
        _, bit_length = np.frexp(micros.astype(np.float64))
        bits = np.maximum(bit_length.astype(np.int64) - _SUB_BUCKET_BITS, 0)
        np.testing.assert_array_equal(lowest_equivalent_us(micros), (micros >> bits) << bits)
        buckets, counts = _bucket_counts(micros)
        expected_buckets, expected_counts = np.unique(lowest_equivalent_us(micros), return_counts=True)
        np.testing.assert_array_equal(buckets, expected_buckets)
        np.testing.assert_array_equal(counts, expected_counts)
