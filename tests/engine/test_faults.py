"""Faults in full runs: crash/restart, pauses, slow disk, link delay and drops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from kafkasim.broker.errors import Errors
from kafkasim.run import run_scenario
from kafkasim.run.engine import Engine

from .support import after_warmup, consumer, median, producer, scenario


@pytest.mark.pure_only
def test_crashed_follower_keeps_its_log_on_restart_and_catches_up() -> None:
    """Kafka 4.x: a restarted follower fetches from its LEO with its latest epoch
    (``ReplicaManager.initialFetchOffset``) and truncates only what a diverging epoch says the leader lacks
    (``AbstractFetcherThread.truncateOnFetchResponse``); with one leader epoch nothing diverges, so the tail
    above its HW, which the old truncate-to-HW restart dropped and fetched again, is kept."""
    engine = Engine(
        scenario(duration="3s", faults=[{"type": "crash", "target": "follower-1", "at": "1s", "restart_after": "500ms"}],
                 broker={"startup": {"process_start": "0ms", "log_load": "0ms"}})  # fetching again at 1.5 s
    )
    follower = engine.components.followers[0]
    seen: list[tuple[float, int]] = []
    checker = engine.observer.replica_log_end
    at_restart: list[tuple[int, int]] = []
    restart = follower.restart

    def restart_and_note() -> None:
        log = next(iter(follower.partitions.values())).log
        at_restart.append((log.high_watermark, log.log_end_offset))
        restart()

    follower.restart = restart_and_note  # type: ignore[method-assign]

    def log_end(tp: object, broker_id: int, leo: int) -> None:
        if broker_id == follower.broker_id:
            seen.append((engine.env.now, leo))
        checker(tp, broker_id, leo)  # type: ignore[arg-type]

    # Listen in on the run's observer, which every component was given at construction.
    engine.observer.replica_log_end = log_end  # type: ignore[method-assign]
    result = engine.run()
    # It learned the HW one fetch late, so its HW was behind its LEO at the restart...
    (hw, leo), = at_restart
    assert hw < leo
    # ... and yet its log never shrank: the first fetch after the restart starts at that LEO.
    leos = [leo for _, leo in seen]
    assert leos == sorted(leos) and min(leo for t, leo in seen if t >= 1_500) > leo
    # ... which it fetched again, and it is in sync at the end.
    leader = next(iter(engine.components.replica_manager.partitions.values()))
    assert seen[-1][1] == leader.log_end_offset
    # Its fetch in flight at the crash failed with the connection.
    fetches = result.requests[result.requests["client"] == "follower-1"]
    assert (fetches["error"] == int(Errors.NETWORK_EXCEPTION)).sum() == 1
    # acks=all waited for the crashed ISR follower until it was back (crash < replica.lag.time.max.ms).
    records = result.records
    during = records[(records["send_ms"] > 1_050) & (records["send_ms"] < 1_450)]
    assert len(during) >= 3  # max.in.flight.requests.per.connection = 5 stuck requests
    assert ((during["ack_ms"] - 1_500) >= 0).all()
    assert result.summary["counters"]["isr_shrinks"] == 0


def test_paused_producer_latency_counts_from_the_intended_time() -> None:
    # No coordinated omission: records meant to be sent during a 1 s pause are sent when it ends and
    # their latency includes the wait; latency from the actual send does not.
    result = run_scenario(
        scenario(duration="3s", faults=[{"type": "pause", "target": "p1", "at": "1s", "duration": "1s"}])
    )
    records = result.records
    held = records[(records["first_intended_ms"] >= 1_000) & (records["first_intended_ms"] < 2_000)]
    assert len(held) >= 1
    assert (held["send_ms"] >= 2_000).all()
    from_intended = held["ack_ms"] - held["first_intended_ms"]
    assert from_intended.max() > 900
    assert (held["ack_ms"] - held["send_ms"]).max() < 20


def test_slow_follower_disk_slows_acks_all() -> None:
    result = run_scenario(
        scenario(
            duration="2.5s",
            faults=[
                {"type": "slow_disk", "target": f"follower-{k}", "at": "1s", "duration": "1s", "factor": 1000}
                for k in (1, 2)
            ],
        )
    )
    produce = after_warmup(result, "Produce")
    normal = produce[produce["client_send_ms"] < 1_000]
    during = produce[(produce["client_send_ms"] > 1_100) & (produce["client_send_ms"] < 1_900)]
    # Follower append 0.021 ms -> 21 ms per batch.
    assert median(during, "RemoteTimeMs") - median(normal, "RemoteTimeMs") == pytest.approx(20.8, abs=1.0)


def test_link_delay_on_the_followers_adds_two_trips_to_acks_all() -> None:
    result = run_scenario(
        scenario(
            duration="2.5s",
            faults=[
                {"type": "link_delay", "target": f"follower-{k}", "at": "1s", "duration": "1s", "extra": "5ms"}
                for k in (1, 2)
            ],
        )
    )
    produce = after_warmup(result, "Produce")
    normal = produce[produce["client_send_ms"] < 1_000]
    during = produce[(produce["client_send_ms"] > 1_100) & (produce["client_send_ms"] < 1_900)]
    assert median(during, "RemoteTimeMs") - median(normal, "RemoteTimeMs") == pytest.approx(10.0, abs=0.1)


def test_consumer_fetch_lost_in_an_outage_longer_than_its_timeout_times_out_and_the_consumer_carries_on() -> None:
    # The link is down 1.5 s, the request timeout 1 s: TCP's retransmissions (at 200 ms, 400 ms, 800 ms ...)
    # do not get through before the client closes the connection (NetworkClient.handleTimedOutRequests).
    result = run_scenario(
        scenario(
            duration="4s",
            consumers=[consumer("c1", **{"request.timeout.ms": 1000})],
            faults=[{"type": "link_drop", "target": "c1", "at": "1s", "duration": "1500ms", "direction": "to_broker"}],
        )
    )
    fetches = result.requests[result.requests["client"] == "c1"]
    timed_out = fetches[fetches["client_timeout"]]
    assert len(timed_out) == 1
    lost = timed_out.iloc[0]
    # Dropped on the way: the broker never saw it.
    assert np.isnan(lost["start_ms"])
    assert 1_000 <= lost["client_send_ms"] <= 1_300
    assert result.summary["counters"]["messages_dropped"] >= 1
    assert result.summary["counters"]["messages_retransmitted"] >= 1
    # Fetching resumed after the timeout and a backoff; records produced later are consumed.
    records = result.records
    late = records[(records["first_intended_ms"] > 3_000) & (records["first_intended_ms"] < 3_900)]
    assert len(late) >= 5 and np.isfinite(late["consumed_ms:c1"].to_numpy(dtype=float)).all()


def test_a_short_outage_of_a_producer_s_link_delays_its_produces_by_one_retransmission() -> None:
    """Measured on Kafka 4.3.1 (issue 31): the producer's link down for 100 ms, acks=all, 100 records/s, not
    idempotent: the worst produce latency was 207 ms (one TCP retransmission), no retry, no duplicate, one
    connection throughout. Before TCP's retransmission was modelled the lost responses waited for
    request.timeout.ms (30 s) and 5 batches were written twice."""
    result = run_scenario(
        scenario(
            duration="4s",
            producers=[producer("p1", rate="100/s", **{"enable.idempotence": False})],
            consumers=[consumer("c1")],
            faults=[{"type": "link_drop", "target": "p1", "at": "2s", "duration": "100ms"}],
        )
    )
    produce = result.requests[result.requests["client"] == "p1"]
    latency = (produce["client_receive_ms"] - produce["client_send_ms"]).to_numpy(dtype=float)
    worst = float(np.nanmax(latency))
    assert 150.0 <= worst <= 2 * 207.0, worst  # within 2x of the real 207 ms
    assert not produce["client_timeout"].any() and set(produce["error_name"].astype(str)) == {"NONE"}
    records = result.records
    assert (records["attempts"] <= 1).all()  # no retry
    assert (records["outcome"] != "duplicated").all()
    assert result.summary["counters"]["messages_retransmitted"] >= 1


def test_a_5_s_partition_between_a_follower_and_its_leader_resumes_at_tcp_s_next_retransmission() -> None:
    """The connection survives a cut shorter than replica.socket.timeout.ms (30 s): what the cut lost is
    retransmitted after RTO ~201 ms, doubling (Linux tcp_retransmit_timer), and replication resumes at the first
    retransmission after the cut heals -- not at the heal, and not at a request timeout."""
    engine = Engine(scenario(
        duration="12s",
        faults=[{"type": "network_partition", "at": "2s", "duration": "5s", "sides": [["broker-2"], ["broker-0"]]}],
    ))
    result = engine.run()
    fetches = result.requests[result.requests["client"] == "follower-2"].sort_values("client_send_ms")
    assert set(fetches["error_name"].astype(str)) == {"NONE"} and not fetches["client_timeout"].any()
    received = fetches["client_receive_ms"].to_numpy(dtype=float)
    during = received[(received >= 2_000) & (received < 12_000)]
    gap_end = float(during[np.argmax(np.diff(during)) + 1])  # the first response after the longest silence
    # Lost at ~2 s, retransmitted ~2.2, 2.6, 3.4, 5.0 s (into the cut) and ~8.2 s: that one gets through.
    assert 7_000 + 500 < gap_end < 7_000 + 1_700, gap_end
    path = engine.components.links["follower-2"]
    assert path.retransmitted >= 4 and path.dropped >= 1
    # The follower stayed in the ISR (the cut is shorter than replica.lag.time.max.ms): one connection throughout.
    assert result.summary["counters"]["isr_shrinks"] == 0


@pytest.mark.parametrize("retries", [0, None])
def test_dropped_produce_response_times_out_on_the_client(retries: int | None) -> None:
    # The responses' link is down 1 s, longer than the request timeout (500 ms): the client closes the
    # connection before TCP's retransmission gets through.
    keys: dict[str, object] = {"request.timeout.ms": 500}
    if retries is not None:
        keys["retries"] = retries
    result = run_scenario(
        scenario(
            duration="3s",
            producers=[producer("p1", **keys)],
            faults=[{"type": "link_drop", "target": "p1", "at": "1s", "duration": "1s", "direction": "from_broker"}],
        )
    )
    produce = result.requests[result.requests["client"] == "p1"]
    timed_out = produce[produce["client_timeout"]]
    assert len(timed_out) >= 1
    # The broker answered (its timing is recorded) but the response never arrived.
    assert np.isfinite(timed_out["end_ms"].to_numpy(dtype=float)).all()
    assert np.isnan(timed_out["client_receive_ms"].to_numpy(dtype=float)).all()
    failed = result.records[result.records["error"] == int(Errors.REQUEST_TIMED_OUT)]
    if retries == 0:
        # retries=0 (Kafka's behaviour before KIP-91's defaults): the timeout is the batch's outcome.
        assert len(failed) >= 1 and (result.records.loc[failed.index, "outcome"] == "failed").all()
    else:
        # Kafka's default (retries = Integer.MAX_VALUE): the timed-out batches are sent again and acknowledged.
        assert len(failed) == 0
        retried = result.records[result.records["attempts"] >= 2]
        assert len(retried) >= 1 and (retried["outcome"] == "acknowledged").all()
        # The lost response stalls the connection: the requests behind it fail with it when it times out (as
        # timed out too: NetworkClient.processTimeoutDisconnection -> cancelInFlightRequests(timedOut=true)),
        # their batches are retried in order and the broker answers the ones it already has as duplicates
        # (ProducerStateManager's last 5 batches). Before the fix, later responses overtook the lost one and
        # the retry met OUT_OF_ORDER_SEQUENCE_NUMBER until the run ended.
        errors = set(produce["error_name"].astype(str))
        assert errors == {"NONE", "REQUEST_TIMED_OUT"}
        assert len(retried) == (produce["error_name"].astype(str) != "NONE").sum()


@pytest.mark.parametrize("pause", ["30.5s", "31s", "40s"])
def test_follower_paused_longer_than_its_request_timeout_carries_on(pause: str) -> None:
    # The fetch in flight when the pause began was answered during the pause; its request timeout
    # (30 s) passed during the pause too. Kafka's NetworkClient.poll reads the waiting response before
    # it looks for timed-out requests, so the follower appends it and fetches again.
    resume_ms = 1_000 + float(pause.rstrip("s")) * 1000
    engine = Engine(
        scenario(
            duration=f"{resume_ms / 1000 + 2}s",
            consumers=[consumer("c1")],
            faults=[{"type": "pause", "target": "follower-1", "at": "1s", "duration": pause}],
        )
    )
    result = engine.run()
    fetches = result.requests[result.requests["client"] == "follower-1"]
    waited = fetches[(fetches["client_send_ms"] < 1_000) & (fetches["client_receive_ms"] >= 1_000)]
    assert len(waited) == 1
    assert not waited["client_timeout"].any()
    # Its response came in during the pause; the next fetch goes out at the resume, after the append.
    later = fetches[fetches["client_send_ms"] > waited["client_send_ms"].iloc[0]]
    assert resume_ms <= later["client_send_ms"].min() < resume_ms + 5
    assert not later["client_timeout"].any()
    leader = next(iter(engine.components.replica_manager.partitions.values()))
    follower_log = engine.components.followers[0].partitions[leader.topic_partition].log
    assert leader.log_end_offset - follower_log.log_end_offset <= 1


def test_follower_fetch_is_answered_when_its_response_arrives_not_when_a_slow_append_ends() -> None:
    # A disk 100 000 times slower makes appending one fetch response take minutes, far past the follower's
    # 30 s request timeout and the end of the run. The request itself was answered when the response
    # arrived (NetworkClient completes it on receipt); the append is the fetcher thread's work after it.
    engine = Engine(
        scenario(
            duration="34s",
            producers=[producer("p1", acks=1, rate="50/s", record_size="1KiB")],
            faults=[{"type": "slow_disk", "target": "follower-1", "at": "500ms", "duration": "100s", "factor": 100_000}],
        )
    )
    result = engine.run()  # before: "request(s) got neither a response nor a client timeout by their deadline"
    last = result.requests[result.requests["client"] == "follower-1"].iloc[-1]
    # The last fetch was answered at ~3 s; appending its ~25 batches takes ~60 s, past its deadline.
    assert last["client_receive_ms"] < 4_000 and last["client_send_ms"] + 30_000 < 34_000
    assert last["error"] == int(Errors.NONE) and not last["client_timeout"]
    assert engine.components.followers[0].unfinished() == []


def test_a_non_idempotent_retry_after_a_lost_response_is_recorded_as_duplicated() -> None:
    # acks=1 turns the default idempotence off (ProducerConfig.postProcessAndValidateIdempotenceConfigs):
    # the connection is reset while a produce is in flight (sent at 1 s, appended at ~1000.6 ms, its response
    # due at ~1001.1 ms: the reset at 1000.8 ms); its response is lost, the producer retries on a new connection
    # and the batch is appended a second time. The consumer reads both copies: the records table says duplicated.
    result = run_scenario(
        scenario(
            duration="3s",
            producers=[producer("p1", acks=1, **{"request.timeout.ms": 500})],
            consumers=[consumer("c1")],
            faults=[{"type": "connection_reset", "target": "p1", "at": "1000.8ms"}],
        )
    )
    records = result.records
    duplicated = records[records["outcome"] == "duplicated"]
    assert len(duplicated) >= 1
    assert (duplicated["attempts"] >= 2).all() and (duplicated["error"] == 0).all()
    assert (records["outcome"] != "failed").all()
    assert result.summary["per_client"]["producers"]["p1"]["outcomes"]["duplicated"] == len(duplicated)


def test_network_tcp_keys_set_the_retransmission_timer() -> None:
    # rto_min 50 ms: a 100 ms outage of the producer's link costs one retransmission ~50 ms after the loss.
    engine = Engine(scenario(
        duration="3s",
        network={"default_link": {"latency": "0.5ms"}, "tcp": {"rto_min": "50ms", "tcp_retries2": 3}},
        producers=[producer("p1", rate="100/s")],
        faults=[{"type": "link_drop", "target": "p1", "at": "2s", "duration": "100ms"}],
    ))
    assert engine.components.network.tcp.rto_min_ms == 50.0 and engine.components.network.tcp.give_up_ms == 3_000.0
    result = engine.run()
    produce = result.requests[result.requests["client"] == "p1"]
    worst = float(np.nanmax((produce["client_receive_ms"] - produce["client_send_ms"]).to_numpy(dtype=float)))
    assert 100.0 < worst < 100.0 + 2 * 55.0, worst


def _half_open_run(kind: str, at: str = "1000.53ms", **config: Any) -> tuple[pd.DataFrame, Engine]:
    # The produce sent at 1 s reaches the broker at 1000.51 ms, which writes its response at 1000.56 ms and the
    # producer reads it at 1001.07 ms: a half_open at 1000.53 ms drops the response (what is already on the wire
    # arrives), a connection_reset at 1000.8 ms loses it on the wire.
    engine = Engine(scenario(
        duration="4s",
        producers=[producer("p1", **{"acks": 1, "request.timeout.ms": 1000, **config})],
        consumers=[consumer("c1")],
        faults=[{"type": kind, "target": "p1", "at": at}],
    ))
    return engine.run().records, engine


def test_a_half_open_connection_loses_the_response_until_the_request_timeout_then_a_new_connection_works() -> None:
    """half_open: the producer's connection goes silent for good (a NAT's state lost). The response of the
    produce the broker had appended is dropped and retransmitted in vain; the producer finds out only at
    request.timeout.ms (1 s here), closes the connection (NetworkClient.handleTimedOutRequests), and retries
    on a new one, which works: the batch is written twice without idempotence. A connection_reset loses the
    same response at once instead."""
    records, engine = _half_open_run("half_open")
    duplicated = records[records["outcome"] == "duplicated"]
    assert len(duplicated) == 1 and (records["outcome"] != "failed").all()
    first = duplicated.iloc[0]
    assert float(first["first_intended_ms"]) == 1000.0
    # Retried after the request timeout (and retry.backoff.ms, 100 ms), not at once.
    assert 2000.0 <= float(first["ack_ms"]) < 2200.0, first["ack_ms"]
    # The batches sent on the dead connection meanwhile never reached the broker: retried, written once (the
    # one that waited for an in-flight slot, max.in.flight.requests.per.connection 5, went on the new one).
    waited = records[(records["first_intended_ms"] > 1000.0) & (records["first_intended_ms"] < 2000.0)]
    assert (waited["outcome"] == "acknowledged").all() and list(waited["attempts"]) == [2, 2, 2, 2, 1]
    # After the new connection, the producer is as fast as before the fault.
    later = records[(records["first_intended_ms"] >= 2500.0) & (records["outcome"] == "acknowledged")]
    assert (later["attempts"] == 1).all() and float((later["ack_ms"] - later["first_intended_ms"]).max()) < 10.0
    path = engine.components.network.links["p1"]
    assert path.dropped > 0 and path.retransmitted > 0  # the kernel retransmitted into the void
    reset, _ = _half_open_run("connection_reset", at="1000.8ms")
    again = reset[reset["outcome"] == "duplicated"]
    assert len(again) == 1 and float(again.iloc[0]["ack_ms"]) < 1100.0


def test_an_idempotent_producer_writes_nothing_twice_across_a_half_open_connection() -> None:
    records, _ = _half_open_run("half_open", acks="all", **{"enable.idempotence": True})
    assert not records["outcome"].isin(["duplicated", "failed"]).any()
    # The batch the broker had appended is retried after the request timeout and answered with its offset.
    first = records[records["first_intended_ms"] == 1000.0].iloc[0]
    assert int(first["attempts"]) == 2 and float(first["ack_ms"]) >= 2000.0
    assert list(records["offset"].iloc[:25]) == list(range(25))
