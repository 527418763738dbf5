"""The KRaft controller in whole runs: a follower that crashes leaves the ISR when the controller fences it,
comes back as a new incarnation, is unfenced and rejoins (the timeline of a follower crash, Kafka 4.x:
``BrokerLifecycleManager``, ``BrokerHeartbeatManager``, ``ReplicationControlManager.handleBrokerFenced`` /
``handleBrokerUnfenced``, the leader's ``Partition.maybeExpandIsr``); ISR changes go through the controller."""

from __future__ import annotations

from kafkasim.run import run_scenario

from .support import STARTUP_MS, gauge, scenario

FIXED = {"latency": {"type": "constant", "value": "0.5ms"}}


def _isr_changes(result) -> list[tuple[float, float]]:
    isr = gauge(result, "IsrSize", "t-0")
    values = isr["value"].to_numpy(dtype=float)
    times = isr["time_ms"].to_numpy(dtype=float)
    return [(float(times[i]), float(values[i])) for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]


def test_a_crashed_follower_is_fenced_7_to_10_s_later_and_rejoins_after_its_restart() -> None:
    s = scenario(
        duration="30s",
        controller={"link_latency": FIXED["latency"]},
        faults=[{"type": "crash", "target": "follower-2", "at": "5s", "restart_after": "15s"}],
    )
    result = run_scenario(s)
    changes = _isr_changes(result)
    (start, three), (out, two), (back, three_again) = changes
    assert (three, two, three_again) == (3.0, 2.0, 3.0)
    # Last heartbeat at most 2 s before the crash; fenced by the first periodic check (every 9000 / 8 = 1125 ms,
    # Kafka 4.3's maybeFenceStaleBroker) after its session ended 9 s after it; the commit linger (25 ms) and the
    # propagation (2 ms) before the leader applies it; gauges every 50 ms.
    assert 5_000 + 7_000 <= out <= 5_000 + 9_000 + 1_125 + 100
    # Restarted at 20 s: registers (the old session already expired) once the new process started, loads its
    # logs and catches up with the metadata (broker.startup), is unfenced, fetches; the leader adds it back
    # once it has caught up (AlterPartition via the controller).
    assert 20_000 + STARTUP_MS < back < 21_000 + STARTUP_MS
    counters = result.summary["counters"]
    assert counters["isr_shrinks"] == 0 and counters["isr_expands"] == 1 and counters["alter_partition_requests"] == 1
    # Who made each change: the fence's shrink is the controller's, the rejoin the leader's AlterPartition.
    assert counters["controller_isr_shrinks"] == 1 and counters["controller_isr_expands"] == 0


def test_a_follower_back_before_its_session_expired_is_still_fenced_then_registers() -> None:
    # Kafka's ClusterControlManager.registerBroker: a new incarnation gets DUPLICATE_BROKER_REGISTRATION while
    # the old one's session is valid, so the broker keeps retrying; the old session expires, the controller
    # fences it (leaving the ISR although the new incarnation already fetches), then the registration goes
    # through and the leader adds it back.
    s = scenario(
        duration="30s",
        controller={"link_latency": FIXED["latency"]},
        faults=[{"type": "crash", "target": "follower-2", "at": "5s", "restart_after": "3s"}],
    )
    result = run_scenario(s)
    changes = _isr_changes(result)
    values = [v for _, v in changes]
    assert values == [3.0, 2.0, 3.0]
    out, back = changes[1][0], changes[2][0]
    assert 5_000 + 7_000 <= out <= 5_000 + 9_000 + 1_125 + 100  # as above: the periodic check
    assert out < back < out + 2_000  # registered and unfenced within the registration backoff


def _leader_changes(result) -> list[tuple[float, float]]:
    leader = gauge(result, "LeaderId", "t-0")
    values = leader["value"].to_numpy(dtype=float)
    times = leader["time_ms"].to_numpy(dtype=float)
    return [(float(times[i]), float(values[i])) for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]


LEADER_PAUSED_THEN_ITS_SUCCESSOR_CRASHES = """\
name: successor-crash
description: a leader paused past its session, then a crash of the broker that took over
seed: 640
duration: 40s
cluster:
  brokers: 3
topics:
  - name: t
    partitions: 1
    replica_assignment: [[0, 1]]
producers:
  - {name: p1, topic: t, rate: 50/s}
faults:
  - {type: pause, target: broker-0, at: 5s, duration: 20s}
  - {type: crash, target: broker-1, at: 30s, restart_after: 1s}
"""


def test_a_crash_of_a_broker_that_became_leader_moves_leadership_back(tmp_path) -> None:
    """Found by the random-scenario generator (seed 640): broker-1 led nothing when the scenario was checked,
    but the controller fenced the paused leader and elected it; its crash raised a ValueError traceback
    (later: a refusal, "not simulated yet"). A crash of a leader is now simulated: the controller fences
    broker-1 once its session expires and elects broker-0 back (in the ISR again since its pause ended)."""
    from kafkasim import load_scenario

    path = tmp_path / "successor-crash.yaml"
    path.write_text(LEADER_PAUSED_THEN_ITS_SUCCESSOR_CRASHES, encoding="utf-8")
    result = run_scenario(load_scenario(path))
    changes = _leader_changes(result)
    # broker-0 leads; fenced during its pause (broker-1 elected ~8 s in); broker-1 crashes at 30 s, restarts at
    # 31 s but cannot register before its old session expires: broker-0 is elected 7-10.1 s after the crash
    # (session 9 s, then the controller's periodic check, every 1125 ms).
    assert changes[0] == (0.0, 0.0) and changes[1][1] == 1.0 and 5_000 + 7_000 <= changes[1][0] <= 5_000 + 10_225
    last_time, last_leader = changes[-1]
    assert last_leader == 0.0 and 30_000 + 7_000 <= last_time <= 30_000 + 10_225
    records = result.records
    assert set(records["outcome"].astype(str)) <= {"acknowledged", "pending"}
    assert (records["outcome"] == "acknowledged").sum() > 0.95 * len(records)
    # The producer followed the leader back: batches acknowledged after the second election.
    assert (records["ack_ms"] > last_time).sum() > 50
    tmp_out = tmp_path / "out"
    from tests.cli.support import assert_no_traceback, kafkasim

    cli = kafkasim("run", path, "--no-figures", "--out", tmp_out, cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert_no_traceback(cli)


def test_a_crashed_leader_is_replaced_7_to_10_s_later_and_clients_follow_the_new_leader() -> None:
    """Kafka 4.x's timeline of a leader crash: the controller fences the broker once broker.session.timeout.ms
    passes without a heartbeat (BrokerHeartbeatManager), elects a new leader from the ISR
    (PartitionChangeBuilder), brokers apply it; the producer's request to the dead broker fails
    (NETWORK_EXCEPTION, retriable), it refreshes metadata until the new leader appears and retries there
    (Sender.completeBatch / RecordAccumulator.reenqueue); the consumer moves its fetch too. Records wait, none
    fails; the restarted broker comes back as a follower and rejoins the ISR."""
    from .support import leader_crash

    s = leader_crash("40s")
    result = run_scenario(s)
    changes = _leader_changes(result)
    # broker-1 leads t-0; while it is down it reports nothing; broker-2 is elected 7-10.1 s after the crash
    # (session 9 s after its last heartbeat, then the periodic check, every 1125 ms).
    assert changes[0] == (0.0, 1.0)
    (elected_at, new_leader), = changes[1:]
    assert new_leader in (0.0, 2.0) and 5_000 + 7_000 <= elected_at <= 5_000 + 9_000 + 1_125 + 100
    assert [v for _, v in _isr_changes(result)] == [3.0, 2.0, 3.0]  # shrinks at the election, back after restart
    assert 20_000 + STARTUP_MS < _isr_changes(result)[-1][0] < 21_000 + STARTUP_MS

    requests = result.requests
    produce = requests[requests["api"] == "Produce"]
    failed = produce[produce["error_name"] == "NETWORK_EXCEPTION"]
    assert len(failed) >= 1 and (failed["broker"] == 1).all() and (failed["client_send_ms"] <= 5_000).all()
    after = produce[produce["client_send_ms"] > 5_000]
    assert (after["broker"] == int(new_leader)).all() and after["client_send_ms"].min() >= elected_at - 50

    records = result.records
    outcomes = records["outcome"].astype(str)
    assert set(outcomes) <= {"acknowledged", "pending"} and (outcomes == "pending").sum() <= 2  # the run's tail
    retried = records[records["attempts"] > 1]
    assert len(retried) >= 1 and (retried["ack_ms"] > elected_at).all()
    # The stall: records created during the failover wait for the election, then go out within a second
    # (metadata refresh with retry.backoff.ms, exponential up to retry.backoff.max.ms).
    stalled = records[(records["first_intended_ms"] > 5_000) & (records["first_intended_ms"] < elected_at - 100)]
    # ~8 s of records at 50/s, in few batches: they pile up in the accumulator (batch.size) while no leader
    # is known.
    assert stalled["record_count"].sum() > 300 and (stalled["ack_ms"] > elected_at).all()
    first_ack_after = stalled["ack_ms"].min()
    assert first_ack_after - elected_at < 1_100
    assert 7_000 < records["produce_latency_ms"].max() < 10_500
    # The consumer followed: everything acknowledged before the last second was read, across the failover.
    acked = records[(outcomes == "acknowledged") & (records["ack_ms"] < 39_000)]
    assert acked["first_consumed_ms"].notna().all()
    assert (stalled["first_consumed_ms"] > elected_at).all()






def test_a_broker_restarted_while_a_pause_is_in_force_stays_paused_fetchers_included() -> None:
    """Found reviewing the crash: a broker paused 5-25 s that crashed at 10 s and restarted at 15 s came back
    with its request plane paused but its fetcher threads running; they fetched from 15 s although the
    process was still stopped until 25 s."""
    s = scenario(
        duration="30s",
        cluster={"brokers": 3},
        faults=[{"type": "pause", "target": "broker-2", "at": "5s", "duration": "20s"},
                {"type": "crash", "target": "broker-2", "at": "10s", "restart_after": "5s"}],
    )
    result = run_scenario(s)
    fetches = result.requests[(result.requests["api"] == "FetchFollower")
                              & result.requests["client"].str.startswith("broker-2/")]
    sent = fetches["client_send_ms"].to_numpy(dtype=float)
    assert not ((sent > 5_000) & (sent < 25_000)).any()
    assert (sent >= 25_000).sum() > 10  # fetching again once the pause ends


def test_a_broker_restarted_while_a_pause_is_in_force_registers_only_when_the_pause_ends() -> None:
    """Same review: its BrokerLifecycleManager sent the registration at once although the JVM was stopped."""
    from kafkasim.run.engine import Engine

    s = scenario(
        duration="30s",
        cluster={"brokers": 3},
        faults=[{"type": "pause", "target": "broker-2", "at": "5s", "duration": "20s"},
                {"type": "crash", "target": "broker-2", "at": "10s", "restart_after": "5s"}],
    )
    engine = Engine(s)
    engine._start()
    engine.env.run(until=20_000.0)
    lifecycle = engine.components.controller_link.lifecycles[2]
    assert not lifecycle._registered
    engine.env.run(until=27_000.0)
    assert lifecycle._registered


def test_heartbeat_and_fence_check_phases_are_drawn_from_the_seed() -> None:
    """A real cluster's brokers and controller start when they start: each broker's heartbeats
    (BrokerLifecycleManager) and the controller's periodic stale-broker check (Kafka 4.3's maybeFenceStaleBroker,
    every 9000 / 8 ms) keep the phase their start gave them, so where a crash falls between two heartbeats,
    and how long the fence then waits for the check, differ run to run. kafkasim draws those phases from the
    seed: the same seed gives the same phases; seeds spread them over the interval."""
    from kafkasim.run import Engine

    def phases(seed: int) -> tuple[tuple[float, ...], float]:
        engine = Engine(scenario(duration="2001ms", cluster={"brokers": 3},
                                 controller={"link_latency": FIXED["latency"]}), seed=seed)
        controller = engine.components.controller
        check = controller.fence_check_at_ms
        assert check is not None and 0.0 <= check <= 1_125.0
        engine.run()
        manager = controller.core.heartbeat_manager
        # Each broker's first heartbeat reached the controller at phase + 0.5 ms (the link latency).
        return tuple(manager.state(b).last_contact_ms - 0.5 for b in (0, 1, 2)), check  # type: ignore[union-attr]

    first = phases(1)
    assert phases(1) == first
    assert len(set(first[0])) == 3 and all(0.0 <= t <= 2_000.0 for t in first[0])
    seen = [phases(seed) for seed in range(2, 8)]
    heartbeats = [t for beats, _ in seen for t in beats]
    checks = [c for _, c in seen]
    assert max(heartbeats) - min(heartbeats) > 1_000.0 and max(checks) - min(checks) > 400.0


ONLY_REPLICA_CRASHES = """\
name: only-replica-crashes
description: the only replica of a partition crashes, is fenced, and restarts
seed: 7
duration: 30s
sample_interval: 100ms
cluster:
  brokers: 3
topics:
  - name: t
    partitions: 2
    replica_assignment: [[0], [1]]
producers:
  - {name: p1, topic: t, rate: 50/s}
faults:
  - {type: crash, target: broker-0, at: 3s, restart_after: 15s}
"""


def test_a_partition_without_a_leader_shows_in_offline_partitions_and_leader_id_minus_one(tmp_path) -> None:
    """Kafka's OfflinePartitionsCount (ControllerMetadataMetricsPublisher: partitions whose registration has no
    leader) and the partition's leader as its metadata reports it (-1) while its only replica is fenced."""
    from kafkasim import load_scenario

    path = tmp_path / "offline.yaml"
    path.write_text(ONLY_REPLICA_CRASHES)
    result = run_scenario(load_scenario(path))
    offline = gauge(result, "OfflinePartitionsCount", "controller")
    changes = [(float(t), float(v)) for t, v in zip(offline["time_ms"], offline["value"], strict=True)]
    changes = [c for i, c in enumerate(changes) if i == 0 or c[1] != changes[i - 1][1]]
    (start, zero), (fenced, one), (back, zero_again) = changes
    assert (start, zero, one, zero_again) == (0.0, 0.0, 1.0, 0.0)
    assert 3_000 + 7_000 <= fenced <= 3_000 + 9_000 + 1_125 + 200  # the controller's periodic fencing check
    assert 18_000 + STARTUP_MS < back < 20_000 + STARTUP_MS  # restarted at 18 s, started, unfenced: leader again
    leaders = _leader_changes(result)
    assert [v for _, v in leaders] == [0.0, -1.0, 0.0]
    assert abs(leaders[1][0] - fenced) <= 100.0 and abs(leaders[2][0] - back) <= 100.0
    other = gauge(result, "LeaderId", "t-1")
    assert set(other["value"]) == {1.0}  # the other partition never lost its leader
    ids = gauge(result, "LeaderId", "t-0")
    assert not ids["time_ms"].duplicated().any()  # one leader per partition per sample


def test_the_console_names_who_changed_the_isr() -> None:
    from rich.console import Console

    from kafkasim.console.summary import counters_table

    def text(counters: dict[str, int]) -> str:
        console = Console(width=80, record=True)
        console.print(counters_table(counters))
        return console.export_text()

    simulated = text({"isr_shrinks": 2, "isr_expands": 4, "controller_isr_shrinks": 30, "controller_isr_expands": 0,
                      "failed_isr_updates": 0, "produce_expires": 0, "fetch_expires_follower": 5,
                      "fetch_expires_consumer": 1})
    rows = {" ".join(line.split()[:3]): line.split()[3] for line in simulated.splitlines()
            if line.startswith("ISR")}
    assert rows == {"ISR shrinks (leaders)": "2", "ISR expands (leaders)": "4", "ISR shrinks (controller)": "30",
                    "ISR expands (controller)": "0"}
    assert max(map(len, simulated.splitlines())) <= 80
    real = text({"isr_shrinks": 2, "isr_expands": 4})  # a real run's JMX: the leaders' meters only
    assert "ISR shrinks  " in real and "controller" not in real
