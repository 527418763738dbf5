"""BrokerLifecycleManager: registration, heartbeat cadence by state, backoff after failures, controlled
shutdown, crash and pause (Kafka's ``BrokerLifecycleManager`` and its ``BrokerLifecycleManagerTest``)."""

from __future__ import annotations

import random

import pytest
import simpy

from kafkasim.broker.metadata import BrokerHeartbeatReply, BrokerRegistrationReply
from kafkasim.server.broker_lifecycle_manager import BrokerLifecycleManager, BrokerState
from kafkasim.sim.backoff import ExponentialBackoff
from kafkasim.sim.calls import Call


class ScriptedController:
    """Answers after ``latency`` ms: registration epoch 7; caught up from ``caught_up_at``; unfenced once a
    heartbeat does not want fencing; shutdown allowed from ``shutdown_at``; ``down`` makes every exchange
    fail (answer None)."""

    def __init__(self, env, latency=1.0, caught_up_at=0.0, shutdown_at=float("inf")):
        self.env = env
        self.latency = latency
        self.caught_up_at = caught_up_at
        self.shutdown_at = shutdown_at
        self.down = False
        self.heartbeats: list = []  # (time, request)
        self.registrations: list[float] = []
        self.previous_epochs: list[int] = []

    def register_broker(self, broker_id, rack, previous_broker_epoch, callback):
        self.registrations.append(self.env.now)
        self.previous_epochs.append(previous_broker_epoch)
        answer = None if self.down else BrokerRegistrationReply(7)
        Call(self.env, self.latency, lambda _e: callback(answer))

    def heartbeat(self, request, callback):
        self.heartbeats.append((self.env.now, request))
        if self.down:
            answer = None
        else:
            answer = BrokerHeartbeatReply(
                is_caught_up=self.env.now >= self.caught_up_at,
                is_fenced=request.want_fence,
                in_controlled_shutdown=request.want_shutdown,
                should_shut_down=request.want_shutdown and self.env.now >= self.shutdown_at,
            )
        Call(self.env, self.latency, lambda _e: callback(answer))


def manager(env, controller, **kwargs):
    return BrokerLifecycleManager(env, 3, controller, heartbeat_interval_ms=2000, metadata_offset=lambda: 42, **kwargs)


def test_registration_then_starting_heartbeats_every_10ms_until_caught_up_then_running_every_2s():
    """BrokerLifecycleManagerTest.testSuccessfulRegistration, with the heartbeat cadence of each state."""
    env = simpy.Environment()
    controller = ScriptedController(env, latency=1.0, caught_up_at=25.0)
    m = manager(env, controller)
    m.start()
    env.run(until=0.5)
    assert controller.registrations == [0.0] and m.state is BrokerState.STARTING
    env.run(until=40)
    # Registered at 1 -> heartbeat at once (1), answers at 2, next 10 ms later: 12, 23, 34 (caught up).
    times = [t for t, _ in controller.heartbeats]
    assert times[:4] == [1.0, 12.0, 23.0, 34.0]
    assert m.broker_epoch == 7
    assert all(r.want_fence and r.current_metadata_offset == 42 for _, r in controller.heartbeats)
    assert m.state is BrokerState.RECOVERY
    m.set_ready_to_unfence()  # at 40: a heartbeat at once
    env.run(until=45)
    assert controller.heartbeats[-1][0] == 40.0 and not controller.heartbeats[-1][1].want_fence
    assert m.state is BrokerState.RUNNING
    env.run(until=10_000)
    running = [t for t, _ in controller.heartbeats if t > 40.0]
    assert [b - a for a, b in zip(running, running[1:], strict=False)] == [2001.0] * (len(running) - 1)


def test_failed_exchanges_are_retried_a_heartbeat_interval_later():
    """Kafka 4.1+'s ``scheduleNextCommunicationAfterFailure`` (KAFKA-19294): the next try after
    ``broker.heartbeat.interval.ms``, every time (4.0 backed off exponentially from 100 ms up to the session)."""
    env = simpy.Environment()
    controller = ScriptedController(env, latency=0.0)
    controller.down = True
    m = manager(env, controller)
    m.start()
    env.run(until=60_000)
    times = controller.registrations
    assert [b - a for a, b in zip(times, times[1:], strict=False)] == [2000.0] * (len(times) - 1)
    assert len(times) == 30
    controller.down = False
    env.run(until=80_000)
    assert m.broker_epoch == 7  # registered once the controller answers


def test_controlled_shutdown_heartbeats_at_once_then_after_50ms_then_every_interval():
    """BrokerLifecycleManagerTest.testControlledShutdown: wantShutDown until the controller agrees."""
    env = simpy.Environment()
    controller = ScriptedController(env, latency=1.0, shutdown_at=3000.0)
    done = []
    m = manager(env, controller, on_shutdown=lambda: done.append(env.now))
    m.on_caught_up = m.set_ready_to_unfence  # what the broker does once caught up (no log recovery work)
    m.start()
    env.run(until=100)
    assert m.state is BrokerState.RUNNING
    m.begin_controlled_shutdown()  # at 100
    env.run(until=10_000)
    asks = [t for t, r in controller.heartbeats if r.want_shutdown]
    assert asks[:3] == [100.0, 151.0, 2152.0]
    assert m.state is BrokerState.SHUTTING_DOWN and done == [4154.0]  # the answer to the 4153 heartbeat
    assert len(asks) == 4  # nothing after the shutdown


def test_a_crashed_broker_sends_nothing_and_ignores_late_answers_and_a_paused_one_waits():
    env = simpy.Environment()
    controller = ScriptedController(env, latency=5.0)
    m = manager(env, controller)
    m.on_caught_up = m.set_ready_to_unfence
    m.start()
    env.run(until=3000)
    sent = len(controller.heartbeats)
    m.crash()
    env.run(until=20_000)
    assert len(controller.heartbeats) == sent and m.state is BrokerState.NOT_RUNNING
    m.start()  # a new incarnation registers again
    env.run(until=20_100)
    assert len(controller.registrations) == 2 and m.state is BrokerState.RUNNING
    m.pause()
    env.run(until=30_000)
    paused_count = len(controller.heartbeats)
    assert controller.heartbeats[-1][0] < 22_200
    m.resume()  # the heartbeat that fell due goes now
    env.run(until=30_001)
    assert len(controller.heartbeats) == paused_count + 1 and controller.heartbeats[-1][0] == 30_000.0


def test_exponential_backoff_is_kafkas_formula():
    """ExponentialBackoffTest.testExponentialBackoff: 100 x2 up to 1000 with jitter 0.2 (KIP-580)."""
    backoff = ExponentialBackoff(100, 2, 1000, 0.2)
    rng = random.Random(3)
    for attempts in range(10):
        nominal = min(100 * 2**min(attempts, 3.3219280948873626), 1000)
        value = backoff.backoff(attempts, rng)
        assert nominal * 0.8 - 1 <= value <= min(1000, nominal * 1.2)
    assert ExponentialBackoff(100, 2, 100, 0.2).backoff(5, rng) == 100  # max <= initial: constant
    assert ExponentialBackoff(100, 2, 1000, 0.0).backoff(2, rng) == 400  # no jitter: exact


def test_a_broker_running_from_the_start_heartbeats_with_its_own_phase():
    """A broker already RUNNING when the run begins keeps the phase its start gave its heartbeats (each answer
    schedules the next one an interval later): first at ``first_heartbeat_ms``, then every interval plus the
    answer's round trip. Without a phase, one interval."""
    env = simpy.Environment()
    controller = ScriptedController(env, latency=1.0)
    m = manager(env, controller)
    m.start_running(7, first_heartbeat_ms=733.0)
    env.run(until=5000)
    assert [t for t, _ in controller.heartbeats] == [733.0, 2734.0, 4735.0]
    assert all(not r.want_fence for _, r in controller.heartbeats)

    env = simpy.Environment()
    controller = ScriptedController(env, latency=1.0)
    manager(env, controller).start_running(7)
    env.run(until=5000)
    assert [t for t, _ in controller.heartbeats] == [2000.0, 4001.0]


def test_a_heartbeat_phase_outside_one_interval_is_refused():
    env = simpy.Environment()
    m = manager(env, ScriptedController(env))
    for bad in (-1.0, 2000.5):
        with pytest.raises(ValueError, match="first_heartbeat_ms"):
            m.start_running(7, first_heartbeat_ms=bad)


def test_the_next_incarnation_reports_the_epoch_of_a_clean_shutdown_and_none_after_a_kill():
    """KIP-966's unclean shutdown detection: a broker that shut down cleanly left its epoch in the clean-shutdown
    file (LogManager), which its next incarnation sends as previousBrokerEpoch; a killed one left none (-1);
    the file is read once (the incarnation after next, killed meanwhile, sends -1 again)."""
    env = simpy.Environment()
    controller = ScriptedController(env, latency=1.0, shutdown_at=3000.0)
    m = manager(env, controller)
    m.on_caught_up = m.set_ready_to_unfence
    m.start()
    env.run(until=100)
    m.begin_controlled_shutdown()
    env.run(until=10_000)
    assert m.state is BrokerState.SHUTTING_DOWN
    m.crash()  # the process stops after its clean shutdown
    m.start()
    env.run(until=10_100)
    m.crash()  # killed: no clean shutdown this time
    m.start()
    env.run(until=10_200)
    assert controller.previous_epochs == [-1, 7, -1]


def test_a_shutdown_that_did_not_wait_for_the_controller_is_still_clean():
    """BrokerServer.shutdown goes on once its wait for the controlled shutdown ends, answered or not: the logs
    close cleanly all the same (``begin_shutdown``)."""
    env = simpy.Environment()
    controller = ScriptedController(env, latency=1.0)  # never agrees to the shutdown
    m = manager(env, controller)
    m.on_caught_up = m.set_ready_to_unfence
    m.start()
    env.run(until=100)
    m.begin_controlled_shutdown()
    env.run(until=5_000)
    m.begin_shutdown()
    m.crash()
    m.start()
    env.run(until=5_100)
    assert controller.previous_epochs == [-1, 7]
