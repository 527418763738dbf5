"""A real run's failovers from its nodes' server.logs (kafkasim.real.failovers, kafkasim.real.server_log), without
a cluster: lines as Kafka 4.3.1 writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kafkasim import load_scenario
from kafkasim.real.failovers import real_failovers
from kafkasim.real.server_log import ControllerEvents, LeaderStart, controller_events, leader_starts

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_795_924_734_349

BROKER_1 = f"""\
[{T0 - 4_450}] INFO [Broker id=1] Transitioning 1 partition(s) to local followers. (state.change.logger)
[{T0 + 10_145}] INFO [Broker id=1] Transitioning 1 partition(s) to local leaders. (state.change.logger)
[{T0 + 10_179}] INFO [Broker id=1] Leader orders-0 with topic id Some(WlOR-BPXSnalx583ch3zJQ) starts at leader epoch 1 \
from offset 1976 with partition epoch 1, high watermark 1972, ISR [1,2], adding replicas [] and removing replicas [] . \
Previous leader Some(0) and previous leader epoch was 0. (state.change.logger)
[{T0 + 10_180}] INFO [Broker id=1] Leader __consumer_offsets-7 with topic id Some(Q) starts at leader epoch 3 from \
offset 0 with partition epoch 3, high watermark 0, ISR [1], adding replicas [] and removing replicas [] . Previous \
leader Some(0) and previous leader epoch was 2. (state.change.logger)
"""
BROKER_0 = f"""\
[{T0 - 4_412}] INFO [Broker id=0] Leader orders-0 with topic id Some(WlOR-BPXSnalx583ch3zJQ) starts at leader epoch 0 \
from offset 0 with partition epoch 0, high watermark 0, ISR [0,1,2], adding replicas [] and removing replicas [] . \
Previous leader None and previous leader epoch was -1. (state.change.logger)
[{T0 + 10_268}] INFO [Broker id=0] Follower orders-0 starts at leader epoch 1 from offset 1977 with partition epoch 1 \
and high watermark 1976. Current leader is 1. Previous leader Some(0) and previous leader epoch was 0. (state.change.logger)
"""
CONTROLLER = f"""\
[{T0 + 10_052}] INFO [QuorumController id=1000] Unfenced broker 0 has requested and been granted a controlled \
shutdown. (org.apache.kafka.controller.BrokerHeartbeatManager)
[{T0 + 10_060}] INFO [QuorumController id=1000] enterControlledShutdown[0]: changing 1 partition(s) \
(org.apache.kafka.controller.ReplicationControlManager)
"""


def _records(acks_ms: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"topic": ["orders"] * len(acks_ms), "partition": [0] * len(acks_ms),
                         "ack_ms": np.array(acks_ms, dtype=float), "error": [0] * len(acks_ms)})


def test_the_logs_give_each_leadership_taken_and_each_controlled_shutdown(tmp_path: Path) -> None:
    (tmp_path / "b1.log").write_text(BROKER_1)
    (tmp_path / "b0.log").write_text(BROKER_0)
    (tmp_path / "c.log").write_text(CONTROLLER)
    starts = leader_starts(tmp_path / "b1.log", 1, T0) + leader_starts(tmp_path / "b0.log", 0, T0)
    assert starts == [LeaderStart(10_179.0, 1, "orders", 0, 1), LeaderStart(10_180.0, 1, "__consumer_offsets", 7, 3),
                      LeaderStart(-4_412.0, 0, "orders", 0, 0)]  # a follower's start is not a leadership
    assert leader_starts(tmp_path / "b1.log", 0, T0) == []  # another broker's lines are not this one's
    assert controller_events(tmp_path / "c.log", T0).shutdown == [(10_060.0, 0)]


# A restart after a SIGKILL, as the controller of a real run of follower_crash_fenced.yaml logged it.
RESTART = f"""\
[{T0 + 17_532}] INFO [QuorumController id=1000] Registering a new incarnation of broker 2. Previous incarnation ID \
was XmjKUobRS0-pH9ucSIxY8g; new incarnation ID is 91rkuyn4QNKBGnxb69qySA. Generated 0 record(s) to clean up \
previous incarnations. Broker epoch will become 96. (org.apache.kafka.controller.ClusterControlManager)
[{T0 + 17_533}] INFO [QuorumController id=1000] Replayed RegisterBrokerRecord establishing a new incarnation of \
broker 2: RegisterBrokerRecord(brokerId=2, isMigratingZkBroker=false, incarnationId=91rkuyn4QNKBGnxb69qySA, \
brokerEpoch=96) (org.apache.kafka.controller.ClusterControlManager)
[{T0 + 18_916}] INFO [QuorumController id=1000] The request from broker 2 to unfence has been granted because it has \
caught up with the offset of its register broker record 96. (org.apache.kafka.controller.BrokerHeartbeatManager)
"""


def test_the_controllers_log_gives_each_registration_and_unfence(tmp_path: Path) -> None:
    (tmp_path / "c.log").write_text(RESTART)
    events = controller_events(tmp_path / "c.log", T0)
    assert events.registered == [(17_532.0, 2)] and events.unfenced == [(18_916.0, 2)]
    assert events.fenced == [] and events.shutdown == []


def test_a_controlled_shutdown_seen_in_the_logs_is_a_failover_with_its_phases(tmp_path: Path) -> None:
    """As in a real run of leader_controlled_shutdown.yaml: the old leader acknowledged until it applied the
    change, so the first acknowledgement counted is the first after the new leader took over."""
    scenario = load_scenario(ROOT / "scenarios" / "leader_controlled_shutdown.yaml")
    starts = [LeaderStart(-4_412.0, 0, "orders", 0, 0), LeaderStart(10_179.0, 1, "orders", 0, 1),
              LeaderStart(-4_000.0, 0, "__consumer_offsets", 7, 2), LeaderStart(10_180.0, 1, "__consumer_offsets", 7, 3)]
    events = ControllerEvents(shutdown=[(10_060.0, 0)])
    rows = real_failovers(starts, events, {}, scenario.faults, _records([10_066.6, 10_190.0, 10_200.0]), 18_000.0)
    assert rows == [{
        "partition": "orders-0", "old_leader": 0, "new_leader": 1, "cause": "shutdown broker-0: shutdown",
        "fault_ms": 10_000.0, "fenced_ms": 10_060.0, "elected_ms": 10_060.0, "first_ack_ms": 10_190.0,
        "unavailable_ms": 190.0, "bounded_by": ["controlled.shutdown (the controller moves leaders first)",
                                                "retry.backoff.max.ms"], "applied_ms": 10_179.0}]


def test_fences_unclean_elections_and_the_runs_end_name_the_cause(tmp_path: Path) -> None:
    scenario = load_scenario(ROOT / "tests" / "real" / "scenarios" / "unclean_acks1_crashes.yaml")
    starts = [LeaderStart(0.0, 0, "orders", 0, 0), LeaderStart(22_000.0, 1, "orders", 0, 1),
              LeaderStart(40_000.0, 2, "orders", 0, 2)]  # after the run's end (the cluster stopping)
    events = ControllerEvents(fenced=[(11_000.0, 1), (11_500.0, 2), (21_900.0, 0)],
                              unclean=[(21_901.0, "tid", 0, 1)])
    rows = real_failovers(starts, events, {"tid": "orders"}, scenario.faults, _records([21_950.0, 22_050.0]), 30_000.0,
                          heartbeats={0: [9_980.0, 11_990.0, 13_990.0], 1: [3_990.0]})
    assert [(r["cause"], r["fenced_ms"], r["elected_ms"], r["first_ack_ms"], r["last_heartbeat_ms"])
            for r in rows] == [("crash broker-0: unclean", 21_900.0, 21_901.0, 22_050.0, 13_990.0)]
    # Without a controller line for it, the change is an election made when the new leader took it.
    rows = real_failovers(starts, ControllerEvents(), {}, scenario.faults, _records([]), 30_000.0)
    assert [(r["cause"], r["elected_ms"], r["first_ack_ms"]) for r in rows] == [
        ("crash broker-0: election", 22_000.0, None)]
