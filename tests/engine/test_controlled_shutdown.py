"""A controlled shutdown in whole runs (Kafka 4.x's ``BrokerServer.shutdown`` with
``controlled.shutdown.enable``): the broker's ``BrokerLifecycleManager`` heartbeats with wantShutDown, the
controller (``BrokerHeartbeatManager.calculateNextBrokerState``, ``ReplicationControlManager
.handleBrokerInControlledShutdown``) moves its leaderships to other ISR members and takes it out of the ISRs
at once, answers shouldShutDown once it leads nothing and the other brokers caught up with those records
(``lowestActiveOffset``), fences it, and the process stops. Compared with a crash (fenced only after
``broker.session.timeout.ms``), producers hardly notice."""

from __future__ import annotations

from typing import Any

from kafkasim.run import Engine, run_scenario
from kafkasim.server.broker_lifecycle_manager import BrokerState

from .support import STARTUP_MS, consumer, gauge, producer, scenario

FIXED = {"latency": {"type": "constant", "value": "0.5ms"}}


def _changes(result: Any, metric: str) -> list[tuple[float, float]]:
    rows = gauge(result, metric, "t-0")
    values = rows["value"].to_numpy(dtype=float)
    times = rows["time_ms"].to_numpy(dtype=float)
    return [(float(times[i]), float(values[i])) for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]


def _leader_fault(kind: str, duration: str = "30s", restart_after: str | None = "10s") -> Any:
    fault: dict[str, Any] = {"type": kind, "target": "broker-1", "at": "5s"}
    if restart_after is not None:
        fault["restart_after"] = restart_after
    # broker-1 leads t-0 (replicas [1, 2, 0]).
    return scenario(duration=duration, cluster={"brokers": 3}, controller={"link_latency": FIXED["latency"]},
                    producers=[producer("p1", rate="50/s")], consumers=[consumer("c1")], faults=[fault])


def test_a_leaders_controlled_shutdown_moves_leadership_at_once_and_producers_hardly_notice() -> None:
    shutdown = run_scenario(_leader_fault("shutdown"))
    crash = run_scenario(_leader_fault("crash"))

    # The first heartbeat with wantShutDown goes at once: the controller elects broker-2 (the next ISR member in
    # replica order) and takes broker-1 out of the ISR in one batch, committed after the 25 ms linger --
    # within a gauge sample of the shutdown, not the 7-9 s of a crash's session timeout.
    leaders = _changes(shutdown, "LeaderId")
    assert leaders == [(0.0, 1.0), (5_050.0, 2.0)]
    assert _changes(crash, "LeaderId")[1][0] >= 12_000
    # Back in the ISR after the restart at 15 s and its start-up (it fetches and catches up; leadership stays
    # with broker-2 until the preferred-leader election, 300 s).
    isr = _changes(shutdown, "IsrSize")
    assert [v for _, v in isr] == [3.0, 2.0, 3.0] and isr[1][0] == 5_050.0
    assert 15_000 + STARTUP_MS < isr[2][0] < 16_000 + STARTUP_MS

    records = shutdown.records
    outcomes = records["outcome"].astype(str)
    assert set(outcomes) <= {"acknowledged", "pending"} and (outcomes == "pending").sum() <= 1  # the run's tail
    assert not records["lost_after_ack"].any() and (records["error"] == 0).all()
    # A produce that reached broker-1 after it stepped down was answered NOT_LEADER_OR_FOLLOWER and retried on
    # broker-2 (none failed); the worst produce latency is a few ms, a crash's is the whole failover.
    produce = shutdown.requests[shutdown.requests["api"] == "Produce"]
    assert set(produce["error_name"]) <= {"NONE", "NOT_LEADER_OR_FOLLOWER"}
    worst_shutdown = float(records["produce_latency_ms"].max())
    worst_crash = float(crash.records["produce_latency_ms"].max())
    assert worst_shutdown < 50.0 and worst_crash > 7_000.0 and worst_crash > 100 * worst_shutdown
    # The consumer followed the leader too: everything acknowledged before the last second was read.
    acked = records[(outcomes == "acknowledged") & (records["ack_ms"] < 29_000)]
    assert acked["first_consumed_ms"].notna().all()


def test_the_process_stops_once_the_controller_agrees_and_is_fenced_without_a_session_timeout() -> None:
    # 9 s: a crash at 5 s would not be fenced before 12 s (last heartbeat + broker.session.timeout.ms).
    engine = Engine(_leader_fault("shutdown", duration="9s", restart_after=None))
    engine.run()
    c = engine.components
    broker = c.broker(1)
    assert broker.crashed
    assert c.controller_link.lifecycles[1].state is BrokerState.NOT_RUNNING
    registration = c.controller.image.brokers[1]
    assert registration.fenced and registration.in_controlled_shutdown
    partition = c.controller.image.partitions[next(iter(c.controller.image.partitions))]
    assert partition.leader == 2 and 1 not in partition.isr


def test_a_followers_controlled_shutdown_leaves_the_isr_at_once() -> None:
    # broker-0 leads nothing: its first wantShutDown heartbeat is answered shouldShutDown (SHUTDOWN_NOW) and the
    # controller fences it (handleBrokerFenced): the leader learns the smaller ISR ~30 ms later. A crash would
    # leave it in the ISR, holding acks=all back, for 7-9 s.
    s = scenario(duration="13s", cluster={"brokers": 3}, controller={"link_latency": FIXED["latency"]},
                 producers=[producer("p1", rate="50/s")],
                 faults=[{"type": "shutdown", "target": "broker-0", "at": "5s", "restart_after": "3s"}])
    result = run_scenario(s)
    isr = _changes(result, "IsrSize")
    assert [v for _, v in isr] == [3.0, 2.0, 3.0]
    assert isr[1][0] == 5_050.0 and 8_000 + STARTUP_MS < isr[2][0] < 9_000 + STARTUP_MS
    assert float(result.records["produce_latency_ms"].max()) < 50.0


def test_without_the_controllers_answer_the_broker_stops_after_5_minutes() -> None:
    # Cut off from the controller, broker-1's wantShutDown heartbeats never get through; Kafka's
    # BrokerServer.shutdown waits for controlledShutdownFuture 5 minutes, then shuts down anyway.
    down_at: list[bool] = []
    for duration in ("304900ms", "305100ms"):
        s = scenario(duration=duration, cluster={"brokers": 3}, controller={"link_latency": FIXED["latency"]},
                     producers=[producer("p1", rate="2/s")],
                     faults=[{"type": "network_partition", "at": "4s", "sides": [["broker-1"], ["controller"]]},
                             {"type": "shutdown", "target": "broker-1", "at": "5s"}])
        engine = Engine(s)
        engine.run()
        assert engine.components.controller_link.lifecycles[1].state is not BrokerState.RUNNING
        down_at.append(engine.components.broker(1).crashed)
    assert down_at == [False, True]




def _after_the_shutdown(apply_ms: dict[int, float]) -> tuple[Any, Any]:
    """Broker-1's controlled shutdown at 5 s moves t-0 (replicas [1, 2, 0]) to broker-2; ``apply_ms``: how long
    each broker takes to apply a delta that moves a leadership it hosts (``ReplicaManager.applyDelta``). The
    produce requests that reached broker-2 after the shutdown began, and broker-0's fetches from broker-2."""
    engine = Engine(_leader_fault("shutdown", duration="9s", restart_after=None))
    engine.components.controller_link.metadata_loader.apply_costs = {b: (lambda ms=ms: ms) for b, ms in apply_ms.items()}
    requests = engine.run().requests
    after = (requests["start_ms"] >= 5_000.0) & (requests["broker"] == 2)
    produce = requests[after & (requests["api"] == "Produce") & (requests["error_name"] == "NONE")]
    fetches = requests[after & (requests["client"] == "broker-0/ReplicaFetcherThread-0-2")]
    return produce, fetches


def test_a_follower_that_applies_the_new_leadership_first_backs_off_and_holds_acks_all() -> None:
    """Kafka: brokers publish a committed delta on their own (MetadataLoader -> BrokerMetadataPublisher ->
    ReplicaManager.applyDelta). When the new leader (broker-2) takes 300 ms longer than the remaining follower
    (broker-0), the follower's first fetch reaches a broker that does not lead yet: UNKNOWN_LEADER_EPOCH
    (Partition.checkCurrentLeaderEpoch), and its fetcher backs the partition off replica.fetch.backoff.ms
    (1 s, AbstractFetcherThread.handlePartitionsWithErrors) -- the first acks=all produce broker-2 accepts
    waits in its purgatory until that follower fetches again. Seen on a real Kafka 4.3.1 cluster (a 1,284 ms
    produce in a controlled shutdown of the leader)."""
    produce, fetches = _after_the_shutdown({})
    assert set(fetches["error_name"]) == {"NONE"} and float(produce["RemoteTimeMs"].max()) < 50.0

    produce, fetches = _after_the_shutdown({2: 300.0})
    refused = fetches[fetches["error_name"] == "UNKNOWN_LEADER_EPOCH"]
    assert len(refused) == 1
    back_at = float(refused["end_ms"].iloc[0]) + 1_000.0  # replica.fetch.backoff.ms
    first = produce.sort_values("start_ms").iloc[0]
    assert float(first["start_ms"]) > float(refused["end_ms"].iloc[0]) + 300.0 - 30.0  # broker-2 leads by then
    assert back_at < float(first["end_ms"]) < back_at + 10.0 and float(first["RemoteTimeMs"]) > 300.0

    # The other way round (the follower late): no refused fetch, the produce waits at most for its apply.
    produce, fetches = _after_the_shutdown({0: 300.0})
    assert set(fetches["error_name"]) == {"NONE"} and float(produce["RemoteTimeMs"].max()) < 320.0
