"""The SimPy ``QuorumController``: when fencing happens, when batches commit (append linger), when brokers
see them (linger + propagation latency), and Kafka's failover timeline for a crashed leader."""

from __future__ import annotations

import random
from typing import Any

import pytest
import simpy

from kafkasim.broker.alter_partition import AlterPartitionRequest, BrokerState
from kafkasim.broker.metadata import LEADER_RECOVERY_RECOVERING, NO_LEADER, MetadataDelta
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.broker_heartbeat_manager import BrokerHeartbeatRequest
from kafkasim.controller.quorum_controller import (
    DEFAULT_APPEND_LINGER_MS,
    IMMEDIATE_RESCHEDULE_MS,
    QuorumController,
    fence_stale_broker_period_ms,
)
from kafkasim.controller.records import FENCE, BrokerRegistrationChangeRecord, PartitionChangeRecord
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import Constant

HEARTBEAT_INTERVAL_MS = 2000.0
SESSION_TIMEOUT_MS = 9000
LINGER = DEFAULT_APPEND_LINGER_MS
CHECK_MS = 1125.0  # the periodic stale-broker check: broker.session.timeout.ms / 8
P0 = TopicPartition("t", 0)  # replicas [0, 1, 2]: broker 0 leads
P1 = TopicPartition("t", 1)  # replicas [1, 0, 2]: broker 0 follows


class Heartbeater:
    """A broker's ``BrokerLifecycleManager`` reduced to periodic heartbeats until ``crash_at``."""

    def __init__(self, env: simpy.Environment, controller: QuorumController, broker_id: int,
                 crash_at: float = float("inf"), start_at: float = 0.0) -> None:
        self.env, self.controller, self.broker_id, self.crash_at = env, controller, broker_id, crash_at
        self.last_heartbeat = -1.0
        Call(env, start_at, self._beat)

    def _beat(self, _event: Any) -> None:
        if self.env.now >= self.crash_at:
            return
        registration = self.controller.image.brokers[self.broker_id]
        self.controller.heartbeat(BrokerHeartbeatRequest(self.broker_id, registration.epoch,
                                                         self.controller.image.offset))
        self.last_heartbeat = self.env.now
        Call(self.env, HEARTBEAT_INTERVAL_MS, self._beat)


class Recorder:
    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.seen: list[tuple[float, MetadataDelta]] = []

    def __call__(self, delta: MetadataDelta) -> None:
        self.seen.append((self.env.now, delta))

    def first_with_leader(self, tp: TopicPartition, leader: int) -> tuple[float, MetadataDelta]:
        for at, delta in self.seen:
            p = delta.partitions.get(tp)
            if p is not None and p.leader == leader:
                return at, delta
        raise AssertionError(f"no delta gave {tp} leader {leader}: {self.seen}")


def cluster(latency: float = 5.0, brokers: int = 3) -> tuple[simpy.Environment, QuorumController]:
    env = simpy.Environment()
    controller = QuorumController(env, Constant(latency), random.Random(7))
    controller.bootstrap(list(range(brokers)), {"t": [(0, 1, 2), (1, 0, 2)]})
    return env, controller


def first_check_after(deadline: float, phase: float = CHECK_MS) -> float:
    """The first run of the periodic stale-broker check (at phase + k * 1125) strictly after ``deadline``."""
    k = 0
    while phase + k * CHECK_MS <= deadline:
        k += 1
    return phase + k * CHECK_MS


def test_fence_check_period_is_an_eighth_of_the_session() -> None:
    """Kafka 4.3: QuorumController.maybeFenceStaleBrokerPeriodNs -- max(1 ms, sessionTimeoutNs / 8)."""
    assert fence_stale_broker_period_ms(9000) == 1125.0
    assert fence_stale_broker_period_ms(18_000) == 2250.0
    assert fence_stale_broker_period_ms(4) == 1.0
    assert fence_stale_broker_period_ms(9) == 1.125


def test_crashed_broker_fenced_at_the_first_check_after_its_session() -> None:
    """Kafka 4.3: BrokerHeartbeatTracker.isExpired / the periodic maybeFenceStaleBroker task -- broker 0
    heartbeats last at 4000, its session ends at 13000, and the check that runs every 1125 ms (from 1125)
    fences it at 13500; its partitions' new leader reaches a subscribed broker after the append linger (25 ms)
    plus the propagation latency (5 ms)."""
    env, controller = cluster(latency=5.0)
    beats = [Heartbeater(env, controller, 0, crash_at=5000.0)] + [Heartbeater(env, controller, b) for b in (1, 2)]
    seen = Recorder(env)
    controller.subscribe(1, seen)
    env.run(until=13_499.0)
    assert beats[0].last_heartbeat == 4000.0
    assert not controller.core.registration(0).fenced  # type: ignore[union-attr]
    assert controller.fence_check_at_ms == pytest.approx(13_500.0)
    env.run(until=20_000.0)
    fence_batch = [b for b in controller.core.log.batches
                   if BrokerRegistrationChangeRecord(0, 0, fenced=FENCE) in b.records][0]
    assert fence_batch.append_ms == pytest.approx(13_500.0)
    assert fence_batch.records == (
        PartitionChangeRecord(P0, leader=1, isr=(1, 2)),
        PartitionChangeRecord(P1, isr=(1, 2)),
        BrokerRegistrationChangeRecord(0, 0, fenced=FENCE),
    )
    at, delta = seen.first_with_leader(P0, 1)
    assert at == pytest.approx(13_500.0 + LINGER + 5.0)
    assert (delta.partitions[P0].leader_epoch, delta.partitions[P0].partition_epoch) == (1, 1)
    assert (delta.partitions[P1].leader, delta.partitions[P1].leader_epoch) == (1, 0)
    assert delta.brokers[0].fenced


@pytest.mark.parametrize("crash_at", [4000.5, 5000.0, 5999.5])
def test_timeline_a_leader_crash(crash_at: float) -> None:
    """Kafka's failover timeline for an uncontrolled leader crash (replicas [A, B, C] = [0, 1, 2], leader A,
    heartbeats every 2000 ms): A is fenced at the first check after t_lastHeartbeat + 9000, i.e. 7000-10125 ms
    after the crash; one
    batch makes B leader with ISR {B, C}, leader epoch +1, partition epoch +1, shrinks the ISR of the
    partition A followed (same leader epoch), then fences A; brokers B and C apply it linger + latency later."""
    latency = 12.0
    env, controller = cluster(latency=latency)
    Heartbeater(env, controller, 0, crash_at=crash_at)
    Heartbeater(env, controller, 1)
    Heartbeater(env, controller, 2)
    on_b, on_c = Recorder(env), Recorder(env)
    controller.subscribe(1, on_b)
    controller.subscribe(2, on_c)
    env.run(until=crash_at + 10_000.0)
    last_heartbeat = 4000.0  # the last multiple of 2000 before the crash
    fenced_at = first_check_after(last_heartbeat + SESSION_TIMEOUT_MS)
    assert 7000.0 <= fenced_at - crash_at <= 9000.0 + CHECK_MS
    p0, p1 = controller.image.partitions[P0], controller.image.partitions[P1]
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (1, (1, 2), 1, 1)
    assert (p1.leader, p1.isr, p1.leader_epoch, p1.partition_epoch) == (1, (1, 2), 0, 1)
    for recorder in (on_b, on_c):
        at, _ = recorder.first_with_leader(P0, 1)
        assert at == pytest.approx(fenced_at + LINGER + latency)


def test_several_dead_brokers_fenced_in_consecutive_events() -> None:
    """Kafka 4.3: maybeFenceOneStaleBroker fences one broker per run and the periodic task reruns 10 ms later
    when it fenced one -- two brokers dead since the same heartbeat are fenced in consecutive events, each in
    its own batch (committed together)."""
    env = simpy.Environment()
    controller = QuorumController(env, Constant(0.0), random.Random(1))
    controller.bootstrap([0, 1, 2, 3], {"t": [(0, 1, 2)]})
    for b, crash in ((0, 3000.0), (1, 3000.0), (2, 1e12), (3, 1e12)):
        Heartbeater(env, controller, b, crash_at=crash)
    env.run(until=20_000.0)
    fences = [b for b in controller.core.log.batches
              if any(isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == FENCE for r in b.records)]
    assert [f.records[-1].broker_id for f in fences] == [0, 1]  # type: ignore[union-attr]
    first = first_check_after(2000.0 + SESSION_TIMEOUT_MS)
    assert [f.append_ms for f in fences] == pytest.approx([first, first + IMMEDIATE_RESCHEDULE_MS])
    p = controller.image.partitions[P0]
    assert (p.leader, p.isr, p.leader_epoch) == (2, (2,), 2)


def test_linger_batches_and_replies_after_commit() -> None:
    """Kafka: BatchAccumulator linger (controller.quorum.append.linger.ms = 25) -- a restarted broker registers
    (reply when the record commits), then heartbeats caught up: it is unfenced, the reply is due at commit;
    both events appended within one linger commit together."""
    env = simpy.Environment()
    controller = QuorumController(env, Constant(3.0), random.Random(1))
    controller.bootstrap([0, 1], {"t": [(0, 1)]})
    replies: list[tuple[str, float, Any]] = []
    Heartbeater(env, controller, 0)
    Heartbeater(env, controller, 1, crash_at=100.0)

    def restart(_event: Any) -> None:
        reply = controller.register_broker(1, "incarnation-1-b",
                                           on_reply=lambda r: replies.append(("register", env.now, r)))
        request = BrokerHeartbeatRequest(1, reply.epoch, reply.epoch)
        controller.heartbeat(request, on_reply=lambda r: replies.append(("heartbeat", env.now, r)))

    Call(env, 20_000.0, restart)
    env.run(until=20_100.0)
    assert [(kind, at) for kind, at, _ in replies] == [("register", 20_025.0), ("heartbeat", 20_025.0)]
    assert replies[0][2].epoch == controller.core.registration(1).epoch  # type: ignore[union-attr]
    assert not replies[1][2].is_fenced
    assert not controller.image.brokers[1].fenced


def test_duplicate_registration_until_old_session_fenced() -> None:
    """Kafka: ClusterControlManager.registerBroker -- a broker restarted within its session timeout gets
    DUPLICATE_BROKER_REGISTRATION until the old incarnation's session has expired."""
    env, controller = cluster()
    Heartbeater(env, controller, 1)
    Heartbeater(env, controller, 2)
    results: list[Any] = []
    Call(env, 3000.0, lambda _e: results.append(controller.register_broker(0, "incarnation-0-b")))
    Call(env, 9500.0, lambda _e: results.append(controller.register_broker(0, "incarnation-0-b")))
    env.run(until=10_000.0)
    assert results[0].error.name == "DUPLICATE_BROKER_REGISTRATION"
    # Its session ended at 9000: the registration is accepted although the periodic check (at 10125) has not
    # fenced the old incarnation yet (Kafka 4.3: ClusterControlManager.registerBroker asks hasValidSession).
    assert results[1].error.name == "NONE" and results[1].epoch > 0


class Sequence_:
    """A sampler returning fixed values in turn (to force a later delta's latency below an earlier one's)."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def sample(self, rng: random.Random) -> float:
        return self.values.pop(0)

    def mean(self) -> float:
        return 0.0


def test_deliveries_to_one_broker_stay_in_order() -> None:
    """Kafka: a broker's metadata loader applies committed batches in log order -- a later commit never
    overtakes an earlier one, whatever latencies are drawn."""
    env = simpy.Environment()
    controller = QuorumController(env, Sequence_(100.0, 1.0), random.Random(1))
    controller.bootstrap([0, 1, 2], {"t": [(0, 1, 2)]})
    seen = Recorder(env)
    controller.subscribe(0, seen)
    epoch = controller.image.brokers[0].epoch

    def alter(isr: tuple[int, ...], partition_epoch: int) -> None:
        controller.alter_partition(0, epoch, [AlterPartitionRequest(P0, 0, partition_epoch,
                                                                     tuple(BrokerState(r) for r in isr))])

    Call(env, 0.0, lambda _e: alter((0, 1), 0))
    Call(env, 30.0, lambda _e: alter((0,), 1))
    env.run(until=1000.0)
    assert [(at, d.partitions[P0].isr) for at, d in seen.seen] == [(125.0, (0, 1)), (125.0, (0,))]


def test_periodic_unclean_election_after_config_enabled() -> None:
    """Kafka 4.3.1: QuorumController.registerElectUnclean (KAFKA-17793) -- a partition left leaderless (its last
    ISR member fenced, unclean election disabled) stays offline; enabling unclean.leader.election.enable later
    acts at the periodic task's next run, 300 s after the controller's activation (t=0 here) whenever the
    partition went leaderless: the first live replica leads with ISR [it], RECOVERING."""
    env, controller = cluster(latency=0.0)
    epoch0 = controller.image.brokers[0].epoch
    controller.alter_partition(0, epoch0, [AlterPartitionRequest(P0, 0, 0, (BrokerState(0),))])
    Heartbeater(env, controller, 0, crash_at=1000.0)
    Heartbeater(env, controller, 1)
    Heartbeater(env, controller, 2)
    fenced_at = first_check_after(0.0 + SESSION_TIMEOUT_MS)
    env.run(until=fenced_at + 1000.0)
    assert controller.image.partitions[P0].leader == NO_LEADER
    Call(env, 1000.0, lambda _e: controller.set_unclean_leader_election("t", True))
    env.run(until=300_000.0 - 1.0)
    assert controller.image.partitions[P0].leader == NO_LEADER
    env.run(until=300_000.0 + LINGER + 1.0)
    p = controller.image.partitions[P0]
    assert (p.leader, p.isr, p.leader_recovery_state) == (1, (1,), LEADER_RECOVERY_RECOVERING)


def _preferred_leader_crashes_and_comes_back(env: simpy.Environment, controller: QuorumController) -> None:
    """Brokers 0-2 heartbeat; 0, P0's preferred leader, crashes at 1 s (fenced: 1 leads), restarts as a new
    incarnation at 20 s and is re-added to P0's ISR by leader 1's AlterPartition at 30 s."""
    Heartbeater(env, controller, 0, crash_at=1000.0)
    Heartbeater(env, controller, 1)
    Heartbeater(env, controller, 2)

    def restart(_event: Any) -> None:
        reply = controller.register_broker(0, "incarnation-0-b")
        Heartbeater(env, controller, 0, start_at=LINGER)
        assert reply.epoch > 0

    def readmit(_event: Any) -> None:
        p = controller.core.partition(P0)
        assert p is not None and p.leader == 1
        controller.alter_partition(1, controller.image.brokers[1].epoch,
                                   [AlterPartitionRequest(P0, p.leader_epoch, p.partition_epoch,
                                                          (BrokerState(0), BrokerState(1), BrokerState(2)))])

    Call(env, 20_000.0, restart)
    Call(env, 30_000.0, readmit)


def test_leadership_returns_to_restarted_preferred_replica_at_imbalance_check() -> None:
    """Kafka 4.3.1: QuorumController.registerElectPreferred (auto.leader.rebalance.enable,
    leader.imbalance.check.interval.seconds = 300, KAFKA-17793): the crashed preferred leader 0 restarts, is
    unfenced and re-added to the ISR by the leader's AlterPartition; leadership moves back to it only at the
    periodic task's run, 300 s after the controller's activation (t=0 here; unfencing alone never moves it)."""
    env, controller = cluster(latency=0.0)
    _preferred_leader_crashes_and_comes_back(env, controller)
    env.run(until=300_000.0 - 1.0)
    p = controller.image.partitions[P0]
    assert (p.leader, p.isr, p.leader_epoch) == (1, (0, 1, 2), 1)
    assert not controller.image.brokers[0].fenced
    env.run(until=300_000.0 + LINGER + 1.0)
    p = controller.image.partitions[P0]
    assert (p.leader, p.leader_epoch) == (0, 2)
    assert controller.image.partitions[P1].leader == 1  # replicas [1, 0, 2]: already preferred


def test_the_election_tasks_run_in_the_phase_of_the_controllers_activation() -> None:
    """PeriodicTaskControlManager.activate reschedules every task at once: the controller became active one
    fence period before the fence check's first run (``fence_check_phase_ms``), so with a phase of 500 ms the
    electPreferred task runs at 500 - 1125 + 300,000 = 299,375 ms, not at 300,000."""
    env = simpy.Environment()
    controller = QuorumController(env, Constant(0.0), random.Random(1), fence_check_phase_ms=500.0)
    controller.bootstrap([0, 1, 2], {"t": [(0, 1, 2)]})
    _preferred_leader_crashes_and_comes_back(env, controller)
    env.run(until=299_375.0 - 1.0)
    assert controller.image.partitions[P0].leader == 1
    env.run(until=299_375.0 + LINGER + 1.0)
    assert controller.image.partitions[P0].leader == 0


def test_subscribe_with_catch_up_and_unsubscribe() -> None:
    """Kafka: a (re)starting broker's metadata loader first loads what is committed, then follows the log; a
    broker that went away gets nothing that was still in flight to it."""
    env, controller = cluster(latency=7.0)
    Heartbeater(env, controller, 1)
    Heartbeater(env, controller, 2)
    restarted, gone = Recorder(env), Recorder(env)
    controller.subscribe(2, gone)
    Call(env, 100.0, lambda _e: controller.subscribe(0, restarted, catch_up=True))
    fenced_at = first_check_after(SESSION_TIMEOUT_MS)  # broker 0 never heartbeats: fenced at 10125
    env.run(until=fenced_at + 20.0)  # the commit is at +25
    controller.unsubscribe(2)
    env.run(until=fenced_at + 100.0)
    at, snapshot = restarted.seen[0]
    assert at == 107.0
    assert snapshot.offset == controller.core.log.batches[1].last_offset  # bootstrap + topic, committed
    assert set(snapshot.partitions) == {P0, P1} and set(snapshot.brokers) == {0, 1, 2}
    at, delta = restarted.first_with_leader(P0, 1)
    assert at == pytest.approx(fenced_at + LINGER + 7.0)
    assert gone.seen == []


@pytest.mark.parametrize("phase", [0.0, 1.0, 600.0, 1124.0, CHECK_MS])
@pytest.mark.parametrize("last_heartbeat", [4000.0, 4400.0, 5123.5])
def test_fence_waits_for_the_periodic_check(phase: float, last_heartbeat: float) -> None:
    """Kafka 4.3's rule, by the phase of the controller's check (its activation) against the broker's last
    heartbeat: fenced at the first check strictly after last heartbeat + session, so 9000 < heartbeat -> fence
    <= 10125 ms (the real cluster here: 9045-9760 ms). Kafka 4.0 fenced at exactly +9000 whatever the phase."""
    env = simpy.Environment()
    controller = QuorumController(env, Constant(0.0), random.Random(1), fence_check_phase_ms=phase)
    controller.bootstrap([0, 1, 2], {"t": [(0, 1, 2)]})
    Heartbeater(env, controller, 1)
    Heartbeater(env, controller, 2)
    Call(env, last_heartbeat, lambda _e: controller.heartbeat(
        BrokerHeartbeatRequest(0, controller.image.brokers[0].epoch, controller.image.offset)))
    env.run(until=last_heartbeat + 12_000.0)
    fences = [b.append_ms for b in controller.core.log.batches
              if any(isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == FENCE for r in b.records)]
    assert fences == [pytest.approx(first_check_after(last_heartbeat + SESSION_TIMEOUT_MS, phase))]
    assert SESSION_TIMEOUT_MS < fences[0] - last_heartbeat <= SESSION_TIMEOUT_MS + CHECK_MS


def test_fence_check_phase_must_lie_in_one_period() -> None:
    with pytest.raises(ValueError, match="fence_check_phase_ms"):
        QuorumController(simpy.Environment(), Constant(0.0), random.Random(1), fence_check_phase_ms=1200.0)
