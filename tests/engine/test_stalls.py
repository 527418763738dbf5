"""Hosts' stalls at run time (``kafkasim.run.stalls``): they stop the host as a pause fault does, nest with pause
faults, skip a crashed broker, are drawn from streams of their own, and are written to the result; the machine's
stop every broker at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kafkasim.record.result import RunResult
from kafkasim.record.window import Window, windowed
from kafkasim.run.engine import Engine

from .support import consumer, producer, scenario
from .test_determinism import table_hash

# Broker 0 alone stalls: the first stall at 1 s, 200 ms long, then every 1 s (constant draws: exact times).
STALL_AT, STALL_MS = 1000.0, 200.0
BROKER_0_STALLS = {"brokers": 3, "overrides": [{"broker": 0, "stalls": {"interval": "1s", "pause": "200ms"}}]}


def _run(faults: list[dict[str, Any]] | None = None, **extra: Any) -> tuple[Engine, RunResult]:
    s = scenario(
        duration="2500ms",
        cluster=extra.pop("cluster", BROKER_0_STALLS),
        topics=extra.pop("topics", [{"name": "t", "replica_assignment": [[0, 1], [1, 2]], "min.insync.replicas": 1}]),
        producers=[producer("p1", **{"rate": "200/s", "partitioner": "round_robin", **extra.pop("producer", {})})],
        faults=faults or [],
        **extra,
    )
    engine = Engine(s, check_invariants=True)
    return engine, engine.run()


def _to_broker_0(result: RunResult, start: float, end: float) -> pd.DataFrame:
    rows = result.requests
    rows = rows[(rows["api"] == "Produce") & (rows["broker"] == 0)]
    rows = rows[(rows["client_send_ms"] >= start) & (rows["client_send_ms"] < end)]
    assert len(rows) > 0, f"no produce to broker 0 in [{start}, {end})"
    return rows


def test_without_stalls_a_result_has_no_stalls_table_nor_summary() -> None:
    _, result = _run(cluster={"brokers": 3})
    assert result.stalls is None and "stalls" not in result.summary


def test_a_broker_stall_holds_a_request_for_the_rest_of_the_stall() -> None:
    _, result = _run()
    assert list(result.stalls["host"]) == ["broker-0", "broker-0"]  # type: ignore[index]
    assert list(result.stalls["start_ms"]) == [STALL_AT, STALL_AT + 1000.0]  # type: ignore[index]
    assert result.summary["stalls"]["count"] == 2 and result.summary["stalls"]["stalled_ms"] == 2 * STALL_MS
    during = _to_broker_0(result, STALL_AT, STALL_AT + STALL_MS)
    # Nothing is read before the stall ends; each request waits about the rest of the stall.
    assert (during["start_ms"] >= STALL_AT + STALL_MS).all()
    remaining = STALL_AT + STALL_MS - during["client_send_ms"]
    baseline = float(_to_broker_0(result, 500.0, STALL_AT)["client_latency_ms"].median())
    extra = during["client_latency_ms"] - baseline
    assert ((extra - remaining).abs() < 5.0).all(), (extra - remaining).describe()
    # Partition 1 (brokers 1 and 2) does not notice.
    others = result.requests[(result.requests["api"] == "Produce") & (result.requests["broker"] == 1)]
    assert others["client_latency_ms"].max() < 10 * baseline


MACHINE_STALLS = {"machine_stalls": {"interval": "1s", "pause": "200ms"}}


def test_a_machine_stall_stops_every_broker_at_once() -> None:
    """`machine_stalls`: one process whose stalls hold every broker (each leads a partition here), one row each."""
    s = scenario(duration="2500ms", cluster={"brokers": 3}, **MACHINE_STALLS,
                 topics=[{"name": "t", "replica_assignment": [[0, 1], [1, 2], [2, 0]], "min.insync.replicas": 1}],
                 producers=[producer("p1", rate="300/s", partitioner="round_robin")])
    engine = Engine(s, check_invariants=True)
    result = engine.run()
    assert result.stalls is not None
    assert list(result.stalls["host"]) == ["machine", "machine"]
    assert list(result.stalls["start_ms"]) == [STALL_AT, STALL_AT + 1000.0]
    rows = result.requests
    for broker in (0, 1, 2):
        mine = rows[rows["broker"] == broker]
        sent = mine[(mine["client_send_ms"] >= STALL_AT) & (mine["client_send_ms"] < STALL_AT + STALL_MS - 5.0)]
        assert len(sent) > 0 and (sent["start_ms"] >= STALL_AT + STALL_MS).all(), broker
        # Nothing is taken by a handler while the machine is stalled.
        dequeued = mine["dequeue_ms"].to_numpy(dtype=float)
        assert not ((dequeued > STALL_AT) & (dequeued < STALL_AT + STALL_MS)).any(), broker
    assert not any(b.stw.paused for b in engine.components.brokers)


def test_a_machine_stall_leaves_a_crashed_broker_alone_and_its_own_stalls_keep_their_draws() -> None:
    engine, result = _run([{"type": "crash", "target": "broker-1", "at": "500ms", "restart_after": "1100ms"}],
                          broker={"startup": {"process_start": "10ms", "log_load": "10ms"}}, **MACHINE_STALLS)
    assert result.stalls is not None
    machine = result.stalls[result.stalls["host"] == "machine"]
    assert list(machine["start_ms"]) == [STALL_AT, STALL_AT + 1000.0]  # broker-1 down at 1 s: the others stall
    own = result.stalls[result.stalls["host"] == "broker-0"].reset_index(drop=True)
    alone = _run([{"type": "crash", "target": "broker-1", "at": "500ms", "restart_after": "1100ms"}],
                 broker={"startup": {"process_start": "10ms", "log_load": "10ms"}})[1].stalls
    assert own.equals(alone)  # broker 0's own stalls: the same rows with the machine's beside them
    assert not any(b.stw.paused for b in engine.components.brokers)
    assert all(b.responsive for b in engine.components.brokers)


def test_a_stall_and_a_pause_fault_nest() -> None:
    # The pause fault (1.1 s to 1.4 s) outlasts the stall (1 s to 1.2 s); another (0.9 s to 1.1 s) starts before.
    engine, result = _run([{"type": "pause", "target": "broker-0", "at": "1100ms", "duration": "300ms"},
                           {"type": "pause", "target": "broker-0", "at": "1800ms", "duration": "300ms"}])
    # The stall's end (1.2 s) does not resume a broker the fault still holds.
    assert (_to_broker_0(result, STALL_AT, 1400.0)["start_ms"] >= 1400.0).all()
    # Second stall 2 s to 2.2 s inside the fault 1.8 s to 2.1 s: paused until the stall's end.
    assert (_to_broker_0(result, 1800.0, 2200.0)["start_ms"] >= 2200.0).all()
    assert not engine.components.broker(0).stw.paused
    assert engine.components.broker(0).responsive


def test_a_crashed_broker_does_not_stall_and_one_that_restarts_stalls_again() -> None:
    # Down from 0.5 s; back (registered) at 0.5 + 0.1 + 1.1 s... the stall at 1 s falls while it is down.
    engine, result = _run([{"type": "crash", "target": "broker-0", "at": "500ms", "restart_after": "1100ms"}],
                          broker={"startup": {"process_start": "10ms", "log_load": "10ms"}})
    assert list(result.stalls["start_ms"]) == [2000.0]  # type: ignore[index]
    assert not engine.components.broker(0).stw.paused


def test_a_restart_during_a_stall_comes_up_paused_until_its_end() -> None:
    # The stall 1 s to 1.2 s; a crash at 1.05 s; the new process registers at 1.09 s, inside the stall: as with a
    # pause fault in force, it serves nothing until the stall ends.
    engine, result = _run([{"type": "crash", "target": "broker-0", "at": "1050ms", "restart_after": "30ms"}],
                          broker={"startup": {"process_start": "10ms", "log_load": "10ms"}})
    assert list(result.stalls["start_ms"])[:1] == [STALL_AT]  # type: ignore[index]
    rows = result.requests
    served = rows[(rows["broker"] == 0) & (rows["start_ms"] > 1050.0) & (rows["start_ms"] < 1500.0)]
    assert len(served) > 0 and (served["start_ms"] >= STALL_AT + STALL_MS).all()
    assert not engine.components.broker(0).stw.paused


def test_a_client_stall_delays_its_records_from_their_intended_time() -> None:
    _, result = _run(cluster={"brokers": 3},
                     producer={"stalls": {"interval": "1s", "pause": "200ms"}, "arrival": "constant"})
    assert set(result.stalls["host"]) == {"p1"}  # type: ignore[index]
    records = result.records
    meant = records[(records["first_intended_ms"] > STALL_AT) & (records["first_intended_ms"] < STALL_AT + STALL_MS)]
    assert len(meant) >= 1  # the records meant during the stall are batched together after it
    remaining = STALL_AT + STALL_MS - meant["first_intended_ms"]
    # Each batch left the producer only after the stall: its latency from the intended time counts the rest of it.
    assert (meant["produce_latency_ms"] >= remaining - 1e-6).all()
    assert (meant["created_ms"] >= STALL_AT + STALL_MS).all()
    # The per-record latency "intended" counts the stall too: its max is about the whole stall.
    assert result.summary["produce_record_latency"]["acks=all"]["from_intended"]["max"] >= STALL_MS - 6


def test_a_consumer_stall_holds_what_it_reads_until_the_stall_ends() -> None:
    _, result = _run(cluster={"brokers": 3}, consumers=[consumer("c1", stalls={"interval": "1s", "pause": "200ms"})])
    assert set(result.stalls["host"]) == {"c1"}  # type: ignore[index]
    records = result.records
    # Acknowledged during the stall: the consumer reads them only once it resumes.
    acked = records[(records["ack_ms"] > STALL_AT + 5.0) & (records["ack_ms"] < STALL_AT + STALL_MS)]
    assert len(acked) > 0 and (acked["consumed_ms:c1"] >= STALL_AT + STALL_MS).all()
    before = records[(records["ack_ms"] > 500.0) & (records["ack_ms"] < STALL_AT - 50.0)]
    assert ((before["consumed_ms:c1"] - before["ack_ms"]) < 5.0).all()


CLIENTS_STALLS = {"clients_stalls": {"interval": "1s", "pause": "200ms"}}


def test_the_clients_process_stall_stops_every_producer_and_consumer_at_once() -> None:
    """`clients_stalls`: one process whose stalls hold every client (kafkasim's load driver runs them in one JVM),
    one row each: a producer's records meant during it leave after it, its consumer reads nothing during it."""
    # The consumer's link takes 15 ms each way: what was acknowledged just before the stall reaches it during it.
    _, result = _run(cluster={"brokers": 3}, producer={"arrival": "constant"},
                     consumers=[consumer("c1", link={"latency": "15ms"})], **CLIENTS_STALLS)
    assert result.stalls is not None
    assert list(result.stalls["host"]) == ["clients", "clients"]
    assert list(result.stalls["start_ms"]) == [STALL_AT, STALL_AT + 1000.0]
    end = STALL_AT + STALL_MS
    records = result.records
    meant = records[(records["first_intended_ms"] > STALL_AT) & (records["first_intended_ms"] < end)]
    assert len(meant) >= 1 and (meant["created_ms"] >= end).all()
    # Acknowledged just before the stall: the consumer, stalled with its producer, reads them only after it (not
    # 15-30 ms after their acknowledgement, as it would on its own).
    acked = records[(records["ack_ms"] > STALL_AT - 20.0) & (records["ack_ms"] < STALL_AT)]
    assert len(acked) > 0 and (acked["consumed_ms:c1"] >= end).all()
    fetches = result.requests[result.requests["client"] == "c1"]
    sent = fetches["client_send_ms"].to_numpy(dtype=float)
    assert len(sent) > 0 and not ((sent > STALL_AT) & (sent < end)).any()


def test_the_clients_process_stalls_nest_with_a_clients_own_and_keep_their_draws() -> None:
    """A client's own `stalls` beside `clients_stalls`: both rows, each process on its own streams."""
    own = {"interval": {"type": "exponential", "mean": "300ms"}, "pause": "5ms"}
    shared = {"interval": {"type": "exponential", "mean": "700ms"}, "pause": "30ms"}
    both = _run(cluster={"brokers": 3}, producer={"stalls": own}, clients_stalls=shared)[1].stalls
    alone = _run(cluster={"brokers": 3}, producer={"stalls": own})[1].stalls
    assert both is not None and alone is not None and set(both["host"]) == {"p1", "clients"}
    assert both[both["host"] == "p1"].reset_index(drop=True).equals(alone)


def _stalling(seed: int, *, client_stalls: bool) -> RunResult:
    s = scenario(
        seed=seed, duration="3s",
        cluster={"brokers": 3},
        broker={"stalls": {"preset": "jvm-g1-young"}},
        topic={"partitions": 3},
        producers=[producer("p1", rate="500/s", arrival="poisson",
                            **({"stalls": {"interval": "300ms", "pause": "5ms"}} if client_stalls else {}))],
    )
    return Engine(s, check_invariants=True).run()


def test_stalls_are_deterministic_and_drawn_from_streams_of_their_own(tmp_path: Path) -> None:
    first, again = _stalling(5, client_stalls=False), _stalling(5, client_stalls=False)
    assert first.stalls is not None and len(first.stalls) > 3
    assert first.stalls.equals(again.stalls)
    for table in ("requests", "records", "timeseries"):
        assert table_hash(getattr(first, table)) == table_hash(getattr(again, table))
    # The producer's stalls do not move the brokers' draws.
    with_client = _stalling(5, client_stalls=True)
    assert with_client.stalls is not None
    brokers = with_client.stalls[with_client.stalls["host"] != "p1"].reset_index(drop=True)
    assert brokers.equals(first.stalls)
    # Saved and loaded back as it was.
    loaded = RunResult.load(first.save(tmp_path / "r"))
    assert loaded.stalls is not None and loaded.stalls.equals(first.stalls)
    assert (tmp_path / "r" / "stalls.parquet").is_file()
    # A window of the run keeps the stalls that began in it.
    cut = windowed(first, Window(1000.0, 2000.0))
    assert cut.stalls is not None
    began = first.stalls[(first.stalls["start_ms"] >= 1000.0) & (first.stalls["start_ms"] < 2000.0)]
    assert list(cut.stalls["start_ms"]) == list(began["start_ms"]) and cut.summary["stalls"]["count"] == len(began)


def test_a_run_on_a_real_cluster_lists_the_stalls_among_what_it_does_not_apply() -> None:
    from kafkasim.real.config_map import not_applied

    calm = scenario(cluster={"brokers": 3})
    assert not any("stalls" in note for note in not_applied(calm))
    s = scenario(cluster=BROKER_0_STALLS, producers=[producer("p1", stalls={"preset": "jvm-g1-young"})])
    notes = [note for note in not_applied(s) if "stalls" in note]
    assert len(notes) == 1 and notes[0].startswith("cluster.overrides[0].stalls, producers[p1].stalls (")
    s = scenario(cluster={"brokers": 3}, **MACHINE_STALLS)
    assert [note for note in not_applied(s) if "stalls" in note][0].startswith("machine_stalls (")
    s = scenario(cluster={"brokers": 3}, consumers=[consumer("c1")], **CLIENTS_STALLS)
    assert [note for note in not_applied(s) if "stalls" in note][0].startswith("clients_stalls (")


def test_kafkas_invariants_hold_with_every_host_stalling_through_crashes_pauses_and_a_shutdown() -> None:
    frequent = {"interval": {"type": "exponential", "mean": "150ms"},
                "pause": {"type": "lognormal", "median": "15ms", "p99": "120ms"}}
    s = scenario(
        seed=9, duration="9s",
        cluster={"brokers": 4},
        topic={"partitions": 4},
        broker={"stalls": frequent, "replica.lag.time.max.ms": 400, "replica.fetch.wait.max.ms": 100,
                "startup": {"process_start": "50ms", "log_load": "50ms"}},
        producers=[producer("p1", rate="400/s", arrival="poisson", stalls=frequent, **{"request.timeout.ms": 2000}),
                   producer("p2", acks=1, rate="200/s", arrival="poisson", stalls=frequent,
                            **{"enable.idempotence": False})],
        consumers=[consumer("c1", stalls=frequent)],
        faults=[{"type": "crash", "target": "broker-1", "at": "1s", "restart_after": "1500ms"},
                {"type": "pause", "target": "broker-2", "at": "2s", "duration": "300ms"},
                {"type": "shutdown", "target": "broker-3", "at": "4s", "restart_after": "2s"},
                {"type": "crash", "target": "broker-0", "at": "6500ms", "restart_after": "80ms"}],
    )
    engine = Engine(s, check_invariants=True)
    result = engine.run()  # raises on a broken invariant
    assert result.stalls is not None and set(result.stalls["host"]) >= {"broker-0", "p1", "c1"}
    crashed = result.stalls[(result.stalls["host"] == "broker-1") & (result.stalls["start_ms"] > 1000.0)
                            & (result.stalls["start_ms"] < 2500.0)]
    assert crashed.empty
    acked = result.records["ack_ms"].to_numpy(dtype=float)
    assert (acked > 8000.0).sum() > 100  # still producing at the end
    # Every pause was undone: at the end a broker is paused exactly when one of its stalls is still in force.
    stalls, end = result.stalls, 9000.0
    for broker in engine.components.brokers:
        mine = stalls[stalls["host"] == broker.name]
        in_force = ((mine["start_ms"] <= end) & (mine["start_ms"] + mine["duration_ms"] > end)).any()
        assert broker.stw.paused == bool(in_force) and not broker.crashed


def test_a_requests_deadline_moves_by_the_stalls_its_client_stood_in_since_it_was_sent() -> None:
    """stalled_since_sent: a producer or consumer stands in its own stalls, a replica fetcher in its broker's and
    the machine's (overlapping ones counted once), only after the request was sent and before the end."""
    from types import SimpleNamespace as NS

    from kafkasim.run.stalls import stalled_since_sent

    rows = [("broker-1", 10.0, 20.0), ("machine", 25.0, 10.0), ("c1", 0.0, 100.0), ("broker-2", 0.0, 1000.0)]
    cluster = NS(producers=[NS(name="p1")], consumers=[NS(name="c1")],
                 brokers=[NS(name="broker-1", fetchers=[NS(name="fetcher-1")]), NS(name="broker-2", fetchers=[])])
    requests = [NS(request_id=1, client="fetcher-1", client_send_ms=15.0),
                NS(request_id=2, client="c1", client_send_ms=50.0),
                NS(request_id=3, client="p1", client_send_ms=0.0)]
    # fetcher-1: its broker's stall from 15 to 30, then the machine's to 35 (25-30 once); c1: 50 to the end, 80.
    assert stalled_since_sent(rows, cluster, requests, 80.0) == {1: 20.0, 2: 30.0}  # type: ignore[arg-type]


EVERY_100 = {"brokers": 3, "overrides": [{"broker": 0, "stalls": {"every_requests": 100, "pause": "50ms"}}]}


def _every_nth(times: list[float], n: int, first: float | None) -> list[float]:
    """Every `n`th of `times` from `first` on (one of them), or from the `n`th when None (an empty young
    generation's count)."""
    start = n - 1 if first is None else times.index(first)
    assert start < n, "the first collection came after more than a whole young generation's allocations"
    return times[start::n]


def _every_100th(result: RunResult, since: float = 0.0, until: float = float("inf"),
                 first: float | None = None) -> list[float]:
    """When every 100th request of broker 0's in [since, until) reached its request channel (the processor's stamp,
    `start_ms`), from `first` on (the run's first stall: the young generation's fill at the start is drawn), or
    from the 100th (a restarted process's empty heap)."""
    started = result.requests.loc[result.requests["broker"] == 0, "start_ms"].astype(float)
    return _every_nth(sorted(started[(started >= since) & (started < until)]), 100, first)


def test_a_broker_stalls_each_time_so_many_more_requests_reached_its_request_channel() -> None:
    _, result = _run(cluster=EVERY_100)
    assert result.stalls is not None and set(result.stalls["host"]) == {"broker-0"}
    # Each stall starts as the 100th request since the last one is put on the channel, every API's alike; the
    # first as the young generation drawn part-full at the start fills.
    starts = list(result.stalls["start_ms"])
    assert starts == _every_100th(result, first=starts[0])
    assert len(result.stalls) >= 4 and (result.stalls["duration_ms"] == 50.0).all()
    assert set(result.requests.loc[result.requests["broker"] == 0, "api"]) >= {"Produce", "FetchFollower"}
    # Nothing is read during a stall: the stall's own request was the last before it.
    for start in result.stalls["start_ms"]:
        read = result.requests["start_ms"]
        assert not ((read > start) & (read < start + 50.0) & (result.requests["broker"] == 0)).any()


def test_a_broker_that_restarts_counts_its_new_process_requests_and_invariants_hold() -> None:
    engine, result = _run([{"type": "crash", "target": "broker-0", "at": "800ms", "restart_after": "300ms"}],
                          cluster=EVERY_100, broker={"startup": {"process_start": "10ms", "log_load": "10ms"}})
    assert result.stalls is not None
    starts = list(result.stalls["start_ms"])
    # The restarted process starts with an empty heap: its count starts again from its first request.
    assert any(s < 800.0 for s in starts) and any(s > 1100.0 for s in starts)
    assert starts == _every_100th(result, until=800.0, first=starts[0]) + _every_100th(result, since=800.0)
    assert starts != _every_100th(result, first=starts[0])  # counting on over the crash would have stalled elsewhere
    assert not engine.components.broker(0).stw.paused


def _fetch_responses(result: RunResult, broker: int) -> list[float]:
    """When broker `broker`'s replica fetchers received each response (its FetchFollower requests' ends at the
    client), in order."""
    rows = result.requests
    mine = rows[(rows["api"] == "FetchFollower") & rows["client"].str.startswith(f"broker-{broker}/")]
    return sorted(mine["client_receive_ms"].dropna().astype(float))


def test_a_follower_stalls_each_time_its_fetchers_received_so_many_more_responses() -> None:
    # Broker 2 leads nothing: it follows partition 1, whose leader is broker 1.
    cluster = {"brokers": 3, "overrides": [{"broker": 2, "stalls": {"every_fetches": 50, "pause": "30ms"}}]}
    engine, result = _run(cluster=cluster)
    assert result.stalls is not None and set(result.stalls["host"]) == {"broker-2"}
    received = _fetch_responses(result, 2)
    assert len(received) >= 200
    starts = list(result.stalls["start_ms"])
    assert starts == _every_nth(received, 50, starts[0])
    assert (result.stalls["duration_ms"] == 30.0).all()
    assert not engine.components.broker(2).stw.paused


def test_a_broker_that_leads_and_follows_collects_when_requests_and_fetch_responses_together_filled_it() -> None:
    # Broker 1 leads partition 1 and follows partition 0: a request fills 1/90 of its young generation, a fetch
    # response 1/45; a collection a fetch response started lasts its fetch_pause.
    stalls = {"every_requests": 90, "every_fetches": 45, "pause": "30ms", "fetch_pause": "5ms"}
    _, result = _run(cluster={"brokers": 3, "overrides": [{"broker": 1, "stalls": stalls}]})
    assert result.stalls is not None and set(result.stalls["host"]) == {"broker-1"}
    rows = result.requests
    # In whole units (kafkasim.run.stalls): the generation holds 90 * 45, a request fills 45, a response 90.
    events = sorted([(t, 45, 30.0) for t in rows.loc[rows["broker"] == 1, "start_ms"].dropna().astype(float)]
                    + [(t, 90, 5.0) for t in _fetch_responses(result, 1)])

    def collections(filled: int) -> list[tuple[float, float]]:
        """The collections from a young generation `filled` units full at the start."""
        expected = []
        for t, units, pause in events:
            filled += units
            if filled >= 90 * 45:
                filled = 0
                expected.append((t, pause))
        return expected

    stalled = list(zip(result.stalls["start_ms"], result.stalls["duration_ms"], strict=True))
    # One fill at the start (drawn) gives exactly the run's collections: none due during another here.
    assert any(collections(f) == stalled for f in range(0, 90 * 45, 15))
    assert {p for _, p in stalled} == {30.0, 5.0}


def test_followers_that_fetch_in_step_collect_each_on_its_own_cycle() -> None:
    # Brokers 1 and 2 follow broker 0's partition alone and fetch in step; each JVM's young generation is drawn
    # part-full at the start (its own stream), so they do not collect together for the whole run.
    every = {"every_fetches": 100, "pause": "1ms"}
    _, result = _run(cluster={"brokers": 3, "overrides": [{"broker": 1, "stalls": every},
                                                          {"broker": 2, "stalls": every}]},
                     topics=[{"name": "t", "replica_assignment": [[0, 1, 2]], "min.insync.replicas": 1}])
    assert result.stalls is not None
    one, two = (list(result.stalls.loc[result.stalls["host"] == h, "start_ms"]) for h in ("broker-1", "broker-2"))
    assert len(one) >= 3 and len(two) >= 3
    assert len(set(one) & set(two)) == 0 and abs(len(_fetch_responses(result, 1)) - len(_fetch_responses(result, 2))) <= 1
