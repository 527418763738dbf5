"""Faults on a whole broker of a cluster (``broker-<id>`` targets) at run time.

Every scenario here spells its replicas out (``replica_assignment``) so that which broker leads and which
follows each partition is plain, and a producer writes round robin to every partition (acks=all). A
produce request goes to one leader, so the requests table's ``broker`` column says which partitions it
carried.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kafkasim.record.result import RunResult
from kafkasim.run.engine import Engine
from kafkasim.sim.calls import Call

from .support import producer, scenario

AT_MS = 1000.0
PAUSE_MS = 300.0


def _run(assignment: list[list[int]], faults: list[dict[str, Any]], **extra: Any) -> tuple[Engine, RunResult]:
    topic = {"name": "t", "replica_assignment": assignment, "min.insync.replicas": 1}
    topic.update(extra.pop("topic", {}))
    s = scenario(
        duration="2s",
        cluster={"brokers": 3, **extra.pop("cluster", {})},
        topics=[topic],
        producers=[producer("p1", **{"rate": "200/s", "partitioner": "round_robin", **extra.pop("producer", {})})],
        faults=faults,
        **extra,
    )
    engine = Engine(s, check_invariants=True)
    return engine, engine.run()


def _produce(result: RunResult, broker: int, start: float = AT_MS, end: float = AT_MS + PAUSE_MS) -> pd.Series:
    """Client latency of the produce requests to ``broker`` sent in [start, end)."""
    rows = result.requests
    rows = rows[(rows["api"] == "Produce") & (rows["broker"] == broker)]
    rows = rows[(rows["client_send_ms"] >= start) & (rows["client_send_ms"] < end)]
    assert len(rows) > 0, f"no produce to broker {broker} in [{start}, {end})"
    return rows["client_latency_ms"]


def _baseline(result: RunResult, broker: int) -> float:
    return float(_produce(result, broker, 500.0, AT_MS).median())


def test_a_paused_leader_broker_stalls_its_partitions_produces_but_not_the_others() -> None:
    # Broker 0 leads partition 0; partition 1 (leader 1, follower 2) does not involve it.
    _, result = _run([[0, 1], [1, 2]], [{"type": "pause", "target": "broker-0", "at": "1s", "duration": "300ms"}])
    stalled = _produce(result, 0)
    # The first request sent in the pause waits for all of it (stop the world: nothing is read).
    assert PAUSE_MS - 10 < stalled.max() <= PAUSE_MS + 10
    assert stalled.min() > 5 * _baseline(result, 0)
    # Partition 1's produces do not notice.
    others = _produce(result, 1)
    assert others.max() <= 1.01 * _baseline(result, 1)
    # After the pause, broker 0 is back to normal.
    assert _produce(result, 0, 1500.0, 2000.0).median() <= 1.01 * _baseline(result, 0)


def test_a_paused_broker_runs_its_reapers_and_tasks_late_and_requests_wait_in_its_socket() -> None:
    engine, result = _run([[0, 1], [1, 2]], [{"type": "pause", "target": "broker-0", "at": "1s", "duration": "300ms"}])
    rows = result.requests
    to_0 = rows[(rows["broker"] == 0) & (rows["client_send_ms"] >= AT_MS) & (rows["client_send_ms"] < AT_MS + PAUSE_MS)]
    # No request sent to broker 0 during the pause is read (start) before the pause ends.
    assert (to_0["start_ms"] >= AT_MS + PAUSE_MS).all()
    # Broker 1's fetcher of partition 0 waits on its fetch to broker 0 (a FetchFollower handled late).
    follower = rows[(rows["api"] == "FetchFollower") & (rows["broker"] == 0)]
    assert (follower["end_ms"] - follower["start_ms"]).max() < 600  # no fetch was lost
    spanning = follower[(follower["client_send_ms"] < AT_MS + PAUSE_MS) & (follower["client_receive_ms"] > AT_MS + PAUSE_MS)]
    assert len(spanning) >= 1
    assert not engine.components.broker(0).stw.paused


def test_a_paused_follower_broker_delays_acks_all_for_the_partitions_it_follows_only() -> None:
    # Broker 0 follows partition 0 (leader 1) and nothing else; partition 1 (leader 2, follower 1) does not
    # involve it.
    _, result = _run([[1, 0], [2, 1]], [{"type": "pause", "target": "broker-0", "at": "1s", "duration": "300ms"}])
    waiting = _produce(result, 1)
    # acks=all waits for the paused follower's fetch: up to the pause (plus a fetch round trip).
    assert PAUSE_MS - 20 < waiting.max() <= PAUSE_MS + 20
    assert _produce(result, 2).max() <= 1.01 * _baseline(result, 2)


def test_slow_disk_on_a_broker_slows_its_leader_appends_and_its_follower_appends() -> None:
    # Broker 0 leads partition 0 and follows partition 1 (leader 1); partition 2 does not involve it.
    big = {"record_size": "64KiB"}
    fault = [{"type": "slow_disk", "target": "broker-0", "at": "1s", "duration": "300ms", "factor": 200}]
    assignment = [[0, 2], [1, 0], [2, 1]]
    _, result = _run(assignment, fault, producer=big)
    _, clean = _run(assignment, [], producer=big)
    # Leader appends: the produce's LocalTimeMs on broker 0 is factor times the append cost (0.005 ms/KiB).
    rows = result.requests
    local = rows[(rows["api"] == "Produce") & (rows["broker"] == 0) & (rows["client_send_ms"] >= AT_MS)
                 & (rows["client_send_ms"] < AT_MS + PAUSE_MS)]["LocalTimeMs"]
    assert local.median() > 50 * 0.005 * 64  # 200 x 0.32 ms = 64 ms, minus nothing
    # Follower appends: acks=all on broker 1 (partition 1, followed by 0) rises; broker 2's does not.
    assert _produce(result, 1).median() > 10 * _produce(clean, 1).median()
    assert _produce(result, 2).median() <= 1.05 * _produce(clean, 2).median()


def test_a_crashed_broker_that_leads_nothing_stops_fetching_and_acks_all_waits_until_it_restarts() -> None:
    # Broker 0 leads nothing and follows partition 0 (leader 1). The new process registers 100 ms after the
    # restart and fetches again once its logs are loaded, 50 ms later (broker.startup): acks=all on partition 0
    # waits for the crash, the restart and both start-up steps.
    fault = [{"type": "crash", "target": "broker-0", "at": "1s", "restart_after": "300ms"}]
    startup = {"startup": {"process_start": "100ms", "log_load": "50ms"}}
    engine, result = _run([[1, 0], [2, 1]], fault, broker=startup)
    waiting = _produce(result, 1)
    assert PAUSE_MS + 150 - 20 < waiting.max() <= PAUSE_MS + 150 + 30
    assert _produce(result, 2).max() <= 1.01 * _baseline(result, 2)
    broker = engine.components.broker(0)
    assert broker.fetchers and not broker.crashed  # restarted
    follower = broker.replica_manager.partitions[next(iter(broker.replica_manager.partitions))]
    leader = engine.components.broker(1).replica_manager.partitions[follower.topic_partition]
    assert follower.log_end_offset >= leader.high_watermark - 5  # caught up again


def test_link_delay_on_a_broker_delays_its_replication_traffic_only() -> None:
    # Broker 0 follows partition 0 (leader 1); its fetcher's path to broker 1 gets 50 ms more each way.
    fault = [{"type": "link_delay", "target": "broker-0", "at": "1s", "duration": "300ms", "extra": "50ms"}]
    _, result = _run([[1, 0], [2, 1]], fault)
    # acks=all on partition 0 needs a fetch round trip on the delayed path: >= 2 x 50 ms more.
    assert _produce(result, 1).median() > _baseline(result, 1) + 90
    assert _produce(result, 2).max() <= 1.01 * _baseline(result, 2)
    # Only the direction asked for: to_broker delays the fetch requests (one way, 50 ms).
    fault[0]["direction"] = "to_broker"
    _, one_way = _run([[1, 0], [2, 1]], fault)
    assert _baseline(one_way, 1) + 40 < _produce(one_way, 1).median() < _produce(result, 1).median() - 30


def test_link_drop_on_a_broker_delays_its_fetchers_responses_only() -> None:
    fault = [{"type": "link_drop", "target": "broker-0", "at": "1s", "duration": "300ms", "direction": "from_broker"}]
    engine, result = _run([[1, 0], [2, 1]], fault)
    c = engine.components
    fetcher = c.broker(0).fetchers[0]
    assert c.links[fetcher.name].from_broker.dropped >= 1 and c.links[fetcher.name].to_broker.dropped == 0
    # Nobody else's path lost anything.
    assert all(path.dropped == 0 for name, path in c.links.items() if name != fetcher.name)
    # TCP retransmits the lost fetch responses once the link is back (the fetcher's request timeout,
    # replica.socket.timeout.ms = 30 s, is far longer): acks=all on partition 0 waits for the outage and one
    # retransmission (RTO >= 200 ms) at most, then every produce to broker 1 is answered.
    assert c.links[fetcher.name].from_broker.retransmitted >= 1
    stalled = _produce(result, 1, AT_MS, AT_MS + 300.0)
    assert stalled.notna().all() and 200.0 < stalled.max() < 300.0 + 2 * 210.0
    assert _produce(result, 1, AT_MS + 800.0, 2000.0).max() < 5 * _baseline(result, 1)
    assert _produce(result, 2).max() <= 1.01 * _baseline(result, 2)


def test_a_clients_link_fault_in_a_cluster_acts_on_its_path_to_every_broker() -> None:
    # In a cluster a client has one path per broker (through that broker's NIC): the fault covers them all.
    fault = [{"type": "link_delay", "target": "p1", "at": "1s", "duration": "300ms", "extra": "50ms",
              "direction": "to_broker"}]
    _, result = _run([[0, 1], [1, 2]], fault)
    for broker in (0, 1):
        assert _produce(result, broker).median() > _baseline(result, broker) + 45



def test_a_restarted_broker_registers_after_its_process_starts_and_is_unfenced_once_its_logs_are_loaded() -> None:
    """Kafka's restart, step by step (found by the real cluster: a broker restarted after a SIGKILL was unfenced
    3-5 s after the restart, kafkasim's at once): the new process registers ``process_start`` after the restart
    (BrokerLifecycleManager, STARTING), applies the metadata once ``LogManager.startup`` loaded its logs
    (``log_load`` later), reports itself caught up and is unfenced; the run's phases name the time between."""
    from kafkasim.controller.records import UNFENCE, BrokerRegistrationChangeRecord, RegisterBrokerRecord

    # Restarted at 12 s, after its fence (7-10.1 s after the crash: a new incarnation's registration is refused
    # while the old session is valid).
    s = scenario(
        duration="13s", cluster={"brokers": 3},
        topics=[{"name": "t", "replica_assignment": [[1, 0], [2, 1]], "min.insync.replicas": 1}],
        producers=[producer("p1", rate="200/s", partitioner="round_robin")],
        faults=[{"type": "crash", "target": "broker-0", "at": "1s", "restart_after": "11s"}],
        broker={"startup": {"process_start": "400ms", "log_load": "250ms"}},
    )
    engine = Engine(s, check_invariants=True)
    result = engine.run()
    registered, unfenced = [], []
    for batch in engine.components.controller.core.log.batches:
        for record in batch.records:
            if isinstance(record, RegisterBrokerRecord) and record.broker_id == 0 and batch.append_ms > 1_000:
                registered.append(batch.append_ms)
            if isinstance(record, BrokerRegistrationChangeRecord) and record.broker_id == 0 and record.fenced == UNFENCE:
                unfenced.append(batch.append_ms)
    # The registration reaches the controller just after 12.4 s (plus its commit linger); the logs are loaded
    # at 12.65 s, the next STARTING heartbeat (every 10 ms) says caught up, then unfenced.
    assert len(registered) == 1 and 12_400 < registered[0] < 12_460, registered
    assert len(unfenced) == 1 and 12_650 < unfenced[0] < 12_750, unfenced
    restart = [p for p in result.summary["phases"] if p["name"] == "restart broker-0"]
    assert len(restart) == 1 and restart[0]["from_ms"] == 12_000 and restart[0]["to_ms"] == unfenced[0]
    # The defaults, measured on the project's machine (docs/validation.md): 2.3 s + 0.8 s.
    from kafkasim.scenario.broker import BrokerStartup

    from .support import STARTUP_MS
    defaults = BrokerStartup()
    assert defaults == BrokerStartup.model_validate({"process_start": "2300ms", "log_load": "800ms"})
    assert STARTUP_MS == 3_100.0


def test_connection_reset_of_a_broker_resets_every_connection_to_it_and_its_own_fetchers() -> None:
    # Broker 1 leads partition 0 (broker 0 fetches it) and follows partition 1 (its fetcher fetches from 2).
    engine = Engine(scenario(
        duration="3s", cluster={"brokers": 3},
        topics=[{"name": "t", "replica_assignment": [[1, 0], [2, 1]], "min.insync.replicas": 1}],
        producers=[producer("p1", rate="200/s", partitioner="round_robin")],
        faults=[{"type": "connection_reset", "target": "broker-1", "at": "1s"}],
    ), check_invariants=True)
    network = engine.components.network
    seen: list[list[str]] = []
    Call(engine.env, 999.0, lambda _e: seen.append(sorted(c.name for c in network.open_connections("broker-1"))))
    result = engine.run()
    fetcher_0, fetcher_1 = engine.components.broker(0).fetchers[0].name, engine.components.broker(1).fetchers[0].name
    assert seen == [sorted(["p1", fetcher_0, fetcher_1])]
    rows = result.requests
    failed = rows[rows["error_name"].astype(str) == "NETWORK_EXCEPTION"]
    # The fetchers' long polls in flight at 1 s fail at once; both fetch again on new connections (after
    # replica.fetch.backoff.ms, 1 s, on their partitions).
    assert {fetcher_0, fetcher_1} <= set(failed["client"])
    assert (failed["client_send_ms"] < 1_000).all() and (failed["client_send_ms"] > 400).all()
    for name in (fetcher_0, fetcher_1):
        later = rows[(rows["client"] == name) & (rows["client_send_ms"] > 1_000)]
        assert len(later) and (later["error_name"].astype(str) == "NONE").all()
    # Nothing is lost: every batch acknowledged but the run's last.
    assert set(result.records["outcome"].astype(str)) <= {"acknowledged", "pending"}
