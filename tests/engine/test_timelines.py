"""Kafka's acks=all, long-poll and under-min-ISR timelines, observed in full engine runs (small, deterministic
scenarios)."""

from __future__ import annotations

import numpy as np
import pytest

from kafkasim.broker.errors import Errors
from kafkasim.run import run_scenario

from .support import after_warmup, consumer, gauge, median, producer, scenario

# Default costs (scenario HandlerCosts / FollowerCosts) of a 100-byte record batch, in ms.
PROCESSOR_SEND = 0.01 + 0.001 * 0.2  # response of a ~200-byte fetch
FOLLOWER_APPEND = 0.02 + 0.005 * 0.2
PROCESSOR_READ = 0.01
HANDLER_REQUEST = 0.05


def _follower_link(latency: str) -> dict[str, object]:
    return {"link": {"latency": latency}}


def test_acks_all_remote_time_is_one_follower_round_trip() -> None:
    # Idle followers are parked at the LEO (DelayedFetch); the produce's action queue completes their fetches,
    # each follower appends and fetches again, and the second one's fetch raises the HW.
    result = run_scenario(scenario(followers=_follower_link("2ms")))
    produce = after_warmup(result, "Produce")
    assert len(produce) >= 40
    remote = median(produce, "RemoteTimeMs")
    round_trip = 2 * 2.0 + PROCESSOR_SEND + FOLLOWER_APPEND + PROCESSOR_READ + HANDLER_REQUEST
    assert remote == pytest.approx(round_trip, abs=0.05)
    # The append itself is local and tiny.
    assert median(produce, "LocalTimeMs") < 0.2


def test_acks_all_latency_grows_with_follower_link_latency() -> None:
    fast = after_warmup(run_scenario(scenario(followers=_follower_link("1ms"))), "Produce")
    slow = after_warmup(run_scenario(scenario(followers=_follower_link("6ms"))), "Produce")
    # Two extra 5 ms trips (leader -> follower, follower -> leader) per acknowledgement.
    assert median(slow, "TotalTimeMs") - median(fast, "TotalTimeMs") == pytest.approx(10.0, abs=0.1)
    assert median(slow, "client_latency_ms") - median(fast, "client_latency_ms") == pytest.approx(10.0, abs=0.1)


def test_acks_1_latency_excludes_the_replication_wait() -> None:
    result = run_scenario(
        scenario(
            followers=_follower_link("20ms"),
            producers=[producer("all", acks="all"), producer("one", acks=1)],
        )
    )
    one = after_warmup(result, "Produce", "one")
    every = after_warmup(result, "Produce", "all")
    assert median(one, "RemoteTimeMs") == 0.0
    assert median(one, "TotalTimeMs") < 0.2
    # acks=all waits for a 20 ms each-way follower round trip.
    assert median(every, "RemoteTimeMs") > 40.0
    assert median(every, "client_latency_ms") - median(one, "client_latency_ms") > 40.0


def test_consumer_with_fetch_min_bytes_above_the_traffic_waits_fetch_max_wait() -> None:
    result = run_scenario(
        scenario(consumers=[consumer("c1", **{"fetch.min.bytes": "1MiB", "fetch.max.wait.ms": 300})])
    )
    fetches = after_warmup(result, "FetchConsumer")
    assert len(fetches) >= 5
    # Never enough bytes: every fetch sits in the purgatory until its 300 ms timer fires (1 ms ticks).
    remote = fetches["RemoteTimeMs"].to_numpy(dtype=float)
    remote = remote[np.isfinite(remote)]
    assert remote.min() >= 298.9 and remote.max() <= 300.1
    # ... and still returns the data that arrived meanwhile.
    consumed = result.records["consumed_ms:c1"].to_numpy(dtype=float)
    assert np.isfinite(consumed).sum() > 0


def test_consumer_with_fetch_min_bytes_1_returns_as_soon_as_the_hw_moves() -> None:
    result = run_scenario(scenario(consumers=[consumer("c1")]))
    fetches = after_warmup(result, "FetchConsumer")
    # 20 records/s: a parked consumer fetch completes when the next produce is acknowledged, ~50 ms later.
    assert median(fetches, "RemoteTimeMs") < 60.0
    records = result.records
    e2e = (records["consumed_ms:c1"] - records["first_intended_ms"]).to_numpy(dtype=float)
    assert np.isfinite(e2e).sum() >= 40


def _paused_follower_run(rf: int, min_isr: int, producers: list[dict[str, object]]) -> object:
    return run_scenario(
        scenario(
            duration="58s",
            warmup="1s",
            sample_interval="100ms",
            topic={"replication.factor": rf, "min.insync.replicas": min_isr},
            producers=producers,
            faults=[{"type": "pause", "target": f"follower-{rf - 1}", "at": "5s", "duration": "10m"}],
        )
    )


def test_paused_follower_is_fenced_and_leaves_the_isr_7_to_10_s_after_it_stopped() -> None:
    result = _paused_follower_run(3, 2, [producer("p1", rate="5/s")])
    isr = gauge(result, "IsrSize", "t-0")
    shrunk = isr[isr["value"] == 2.0]["time_ms"].to_numpy(dtype=float)
    assert shrunk.size, "the paused follower never left the ISR"
    left_at = shrunk[0]
    # KRaft (BrokerHeartbeatManager, ReplicationControlManager.handleBrokerFenced): stopped at 5 s, its last
    # heartbeat was at most broker.heartbeat.interval.ms (2 s) earlier; fenced by the controller's first periodic
    # check (every 9000 / 8 = 1125 ms, Kafka 4.3) after broker.session.timeout.ms (9 s) passed since it, removed
    # from the ISR in the same controller event, applied by the leader after the commit linger (25 ms) -- the
    # leader's own lag check (30 s, at the 45 s pass) never gets to it.
    assert 5_000 + 7_000 <= left_at <= 5_000 + 9_000 + 1_125 + 200
    assert result.summary["counters"]["isr_shrinks"] == 0  # the controller's doing, not the leader's
    # While it is paused but still in the ISR, acks=all waits for it; afterwards latency drops back.
    records = result.records
    sent = records["send_ms"].to_numpy(dtype=float)
    latency = (records["ack_ms"] - records["first_intended_ms"]).to_numpy(dtype=float)
    stuck = latency[(sent > 6_000) & (sent < left_at - 1_000)]
    assert np.all(~np.isfinite(stuck) | (stuck > 1_000)), "acks=all did not wait for the paused ISR follower"
    after = latency[sent > left_at + 1_000]
    assert after.size >= 10 and np.all(after < 20.0)


def test_under_min_isr_acks_all_fails_with_not_enough_replicas_while_acks_1_succeeds() -> None:
    # A short request.timeout.ms so that the acks=all producer, stuck behind produces appended while the
    # ISR was still full (they wait for the paused follower: DelayedProduce.tryComplete), reconnects soon
    # after the shrink. retries=0: each batch's outcome is its one attempt's answer (the broker's rule under
    # test); with Kafka's default the producer would retry them (tests/scenarios, min_isr_violation).
    stuck_timeout = 7_000
    result = _paused_follower_run(
        2,
        2,
        [
            producer("all", acks="all", rate="5/s", **{"request.timeout.ms": stuck_timeout, "retries": 0}),
            producer("one", acks=1, rate="5/s"),
        ],
    )
    isr = gauge(result, "IsrSize", "t-0")
    left_at = isr[isr["value"] == 1.0]["time_ms"].to_numpy(dtype=float)[0]
    records = result.records
    every = records[(records["producer"] == "all") & (records["send_ms"] > left_at + stuck_timeout + 500)]
    one = records[(records["producer"] == "one") & (records["send_ms"] > left_at + 500)]
    assert len(every) >= 10 and len(one) >= 10
    # Partition.appendRecordsToLeader: the append-time min-ISR check refuses acks=all at once; acks=1 is
    # appended anyway.
    assert set(every["error"]) == {int(Errors.NOT_ENOUGH_REPLICAS)}
    assert (every["ack_ms"] - every["send_ms"]).max() < 20.0
    assert (every["offset"] == -1).all()
    assert set(one["error"]) == {0}
    assert (one["ack_ms"] - one["send_ms"]).max() < 20.0
    # acks=1 was appended (offsets assigned) but the HW is frozen under min ISR
    # (Partition.maybeIncrementLeaderHW, 3.7+).
    assert (one["offset"] >= 0).all()
    hw = gauge(result, "HighWatermark", "t-0")
    frozen = hw[hw["time_ms"] > left_at + 500]["value"].to_numpy(dtype=float)
    assert frozen.min() == frozen.max()
    # The produces waiting when the follower stopped were not answered before the client gave up.
    stuck = records[(records["producer"] == "all") & (records["send_ms"] > 5_500) & (records["send_ms"] < left_at)]
    assert set(stuck["error"]) <= {int(Errors.REQUEST_TIMED_OUT), int(Errors.NETWORK_EXCEPTION)}


def test_one_handler_thread_under_load_makes_request_queue_time_dominate() -> None:
    # A connection has at most one request in the broker (SocketServer's Processor mutes it), so queueing at
    # the broker needs many connections: 20 producers offering ~1.1 handler-ms per ms to a single handler
    # thread.
    result = run_scenario(
        scenario(
            duration="1500ms",
            broker={"num.io.threads": 1, "costs": {"request": "0.5ms"}},
            producers=[producer(f"p{i}", acks=1, rate="100/s", arrival="poisson") for i in range(20)],
        )
    )
    produce = after_warmup(result, "Produce")
    queue = median(produce, "RequestQueueTimeMs")
    assert queue > 5 * median(produce, "LocalTimeMs")
    assert queue > 0.5 * median(produce, "TotalTimeMs")
    idle = gauge(result, "RequestHandlerAvgIdlePercent", "broker-0")
    assert idle[idle["time_ms"] > 500]["value"].mean() < 0.05


def test_many_handler_threads_keep_request_queue_time_near_zero() -> None:
    result = run_scenario(
        scenario(
            duration="1500ms",
            broker={"num.io.threads": 32, "costs": {"request": "0.5ms"}},
            producers=[producer(f"p{i}", acks=1, rate="100/s", arrival="poisson") for i in range(20)],
        )
    )
    produce = after_warmup(result, "Produce")
    assert median(produce, "RequestQueueTimeMs") == 0.0
