"""The producer in full runs: linger, batch.size, max.in.flight, acks=0, partitioners, per-record latency."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import kafkasim.clients.producer as producer_module
from kafkasim.run import run_scenario

from .support import consumer, gauge, producer, scenario


def test_a_batch_waits_linger_ms_unless_it_fills() -> None:
    result = run_scenario(scenario(producers=[producer("p1", rate="50/s", **{"linger.ms": 7})]))
    records = result.records.dropna(subset=["send_ms"]).sort_values("created_ms")
    # 50 records/s, 100 B each: no batch fills, so every one leaves linger.ms after it was created -- the first
    # one also waits for the connection the Sender starts then (NetworkClient.ready: a TCP handshake, one
    # round trip of the producer's link, 2 x 0.5 ms by default).
    waited = (records["send_ms"] - records["created_ms"]).to_numpy()
    assert waited[0] == pytest.approx(7.0 + 1.0)
    assert waited[1:] == pytest.approx(np.full(len(waited) - 1, 7.0))
    assert (records["record_count"] == 1).all()


def test_full_batches_leave_at_once_and_respect_batch_size() -> None:
    result = run_scenario(
        scenario(producers=[producer("p1", rate="5000/s", record_size="1KiB", **{"linger.ms": 50, "batch.size": 8192})])
    )
    records = result.records.dropna(subset=["send_ms"])
    assert (records["size_bytes"] <= 8192).all()
    full = records[records["record_count"] == 7]  # 61 + 7 * 1024 <= 8192 < 61 + 8 * 1024
    assert len(full) > 0.9 * len(records)
    # A full batch does not wait for linger.ms (50 ms); 7 records at 5000/s take ~1.4 ms to arrive.
    assert (full["send_ms"] - full["created_ms"]).median() < 5.0


def test_in_flight_requests_never_exceed_the_limit() -> None:
    result = run_scenario(
        scenario(
            followers={"link": {"latency": "20ms"}},
            producers=[producer("p1", rate="2000/s", **{"max.in.flight.requests.per.connection": 2})],
        )
    )
    in_flight = gauge(result, "InFlightRequests", "p1")["value"]
    assert in_flight.max() == 2.0
    produce = result.requests[result.requests["api"] == "Produce"]
    sends = np.sort(produce["client_send_ms"].to_numpy())
    receives = np.sort(produce["client_receive_ms"].dropna().to_numpy())
    # At any send, at most one other request is still waiting for its response.
    outstanding = np.searchsorted(sends, sends, side="right") - np.searchsorted(receives, sends, side="right")
    assert outstanding.max() <= 2


def test_acks_0_completes_on_send_and_the_consumer_tells_the_offsets() -> None:
    result = run_scenario(scenario(producers=[producer("p1", acks=0)], consumers=[consumer("c1")]))
    produce = result.requests[result.requests["api"] == "Produce"]
    # No response: the broker's NoOp ends the request at the processor; nothing travels back.
    assert produce["client_receive_ms"].isna().all()
    assert produce["end_ms"].notna().mean() > 0.9
    records = result.records.dropna(subset=["send_ms"])
    assert (records["ack_ms"] == records["send_ms"]).all()
    consumed = records[records["consumed_ms:c1"].notna()]
    assert len(consumed) >= 40
    assert (consumed["offset"] >= 0).all() and consumed["offset"].is_monotonic_increasing


def test_round_robin_spreads_records_evenly_and_sticky_fills_a_batch_first() -> None:
    def by_partition(partitioner: str) -> tuple[np.ndarray, float]:
        result = run_scenario(
            scenario(
                topic={"partitions": 4},
                producers=[producer("p1", rate="2000/s", partitioner=partitioner, **{"linger.ms": 5})],
            )
        )
        records = result.records.dropna(subset=["send_ms"])
        counts = records.groupby("partition")["record_count"].sum().to_numpy()
        return counts, float(records["record_count"].mean())

    robin, robin_batch = by_partition("round_robin")
    assert robin.max() - robin.min() <= 1
    sticky, sticky_batch = by_partition("sticky")
    assert len(sticky) == 4
    # Round robin spreads 5 ms of records over 4 partitions; sticky sends them to one.
    assert sticky_batch > 2.5 * robin_batch


def test_per_record_latency_counts_each_record_from_its_intended_time() -> None:
    result = run_scenario(scenario(producers=[producer("p1", rate="500/s", arrival="poisson", **{"linger.ms": 5})]))
    per_record = result.summary["produce_record_latency"]["acks=all"]
    per_batch = result.summary["produce_latency"]["acks=all"]
    records = result.records
    kept = records[records["send_ms"] >= 500]
    assert per_record["records"] >= kept["record_count"].sum() - 5
    # A batch's row carries its oldest record; the other records waited less of the linger.
    assert per_record["from_intended"]["p50"] < per_batch["from_intended"]["p50"] - 1.0
    assert per_record["from_send"]["p50"] == pytest.approx(per_batch["from_send"]["p50"], abs=0.01)


def test_per_record_latencies_leave_out_the_records_intended_during_the_warm_up() -> None:
    """RecordLatency always left the warm-up out, but nothing gave it the run's warm-up: every record of the
    first 500 ms was counted."""
    result = run_scenario(scenario(producers=[producer("p1", rate="500/s", arrival="poisson", **{"linger.ms": 5})],
                                   consumers=[consumer("c1")]))
    records = result.records
    for key, done in (("produce_record_latency", "ack_ms"), ("e2e_record_latency", "first_consumed_ms")):
        finished = records[np.isfinite(records[done].to_numpy(dtype=float))]
        after = finished[finished["first_intended_ms"] >= 500]
        straddling = finished[(finished["first_intended_ms"] < 500) & (finished["created_ms"] >= 490)]
        counted = result.summary[key]["acks=all"]["records"]
        assert after["record_count"].sum() <= counted <= after["record_count"].sum() + straddling["record_count"].sum()
        assert counted < finished["record_count"].sum() - 100


def test_per_record_end_to_end_latency_counts_each_record_from_its_intended_time_to_its_batchs_first_read() -> None:
    """OpenMessaging Benchmark and Kafka's EndToEndLatency report one latency per message; the records table's
    e2e_latency_ms is a batch's oldest record's, up to linger.ms more than its youngest's."""
    result = run_scenario(scenario(producers=[producer("p1", rate="500/s", arrival="poisson", **{"linger.ms": 20})],
                                   consumers=[consumer("c1")]))
    per_record = result.summary["e2e_record_latency"]["acks=all"]
    per_batch = result.summary["e2e_latency"]
    produce = result.summary["produce_record_latency"]["acks=all"]
    assert per_record["records"] == produce["records"]  # every acknowledged record was consumed
    assert per_record["from_intended"]["p50"] < per_batch["p50"] - 2.0
    assert per_record["from_intended"]["p50"] >= produce["from_intended"]["p50"]
    # The worst record is the oldest of the worst batch (to HdrHistogram's 3 significant digits).
    assert per_record["from_intended"]["max"] == pytest.approx(per_batch["max"], rel=2e-3)


def test_on_off_arrivals_send_only_during_on_periods() -> None:
    result = run_scenario(
        scenario(
            producers=[
                producer("p1", rate="1000/s", arrival={"type": "on_off", "on": "200ms", "off": "300ms"},
                         **{"linger.ms": 0, "batch.size": 0})
            ]
        )
    )
    intended = result.records["first_intended_ms"].to_numpy()
    phase = np.mod(intended, 500.0)
    assert (phase < 200.0).all()
    # 1000/s while on: ~200 records per 500 ms period, six periods in 3 s.
    assert 1000 <= len(intended) <= 1400


def test_sticky_partitioner_switches_only_at_a_batch_boundary() -> None:
    # RecordAccumulatorTest.testBuiltInPartitionerFractionalBatches in a full run: a linger window holds
    # about 2/3 of batch.size (11 records of 100 B per 5 ms against 1536 B). BuiltInPartitioner switches only
    # when the partition's batches are all full, so no batch is a fraction left behind by a switch.
    result = run_scenario(
        scenario(
            topic={"partitions": 3},
            producers=[producer("p1", rate="2000/s", **{"linger.ms": 5, "batch.size": 1536})],
        )
    )
    records = result.records.dropna(subset=["send_ms"])
    assert records["partition"].nunique() == 3
    sizes = records["size_bytes"].to_numpy()
    assert (sizes > 1536 / 2).all() and (sizes < 1536).all(), np.unique(sizes)


def test_the_look_ahead_wakes_the_sender_exactly_as_an_event_per_record_would(monkeypatch: pytest.MonkeyPatch) -> None:
    # The producer appends records lazily and looks ahead (replaying the sticky partitioner on copies)
    # for the one that wakes the Sender. With a look-ahead of one record it acts at every record instead:
    # the batches must be the same (ids aside: the run-wide batch counter is shared by the producers).
    def run() -> pd.DataFrame:
        result = run_scenario(
            scenario(
                seed=5,
                duration="1500ms",
                topic={"partitions": 4},
                producers=[
                    producer("p1", rate="3000/s", arrival="poisson", record_size="1KiB", **{"linger.ms": 5}),
                    producer("p2", rate="300/s", arrival="poisson",
                             record_size={"type": "uniform", "low": "100B", "high": "3KiB"},
                             **{"linger.ms": 3, "batch.size": 4096, "max.in.flight.requests.per.connection": 1}),
                ],
                consumers=[consumer("c1")],
            )
        )
        columns = ["producer", "partition", "offset", "record_count", "size_bytes", "first_intended_ms",
                   "created_ms", "send_ms", "ack_ms"]
        return result.records[columns].sort_values(["producer", "first_intended_ms"]).reset_index(drop=True)

    planned = run()
    monkeypatch.setattr(producer_module, "MAX_LOOKAHEAD_RECORDS", 1)
    every_record = run()
    # Event times differ in the last bit (an event is scheduled as a delay from now).
    pd.testing.assert_frame_equal(planned, every_record, check_exact=False, rtol=0, atol=1e-9)


def test_no_batch_is_intended_at_or_after_the_runs_end() -> None:
    """A record intended at the run's end exactly arrives in an event the run stops ahead of
    (``Environment.run(until)`` schedules its stop URGENT): the end of the run must not append it when it reads
    the accumulator. It did, as a pending batch no phase of the summary held (a leader_crash run had 2,695
    batches after the warmup and its phases 2,694)."""
    result = run_scenario(scenario(duration="1000ms", warmup="0ms", producers=[producer("p", rate="100/s")]))
    intended = result.records["first_intended_ms"].to_numpy(dtype=float)
    assert intended.max() < 1000.0
    assert intended.max() == 990.0  # the one before it was appended and sent
