"""Kafka's ``BrokerLifecycleManager``: a broker's registration and heartbeats to the KRaft controller.

A broker starts by registering (``BrokerRegistration``: the controller answers with a new *broker epoch*
and records the broker fenced), then heartbeats (``BrokerHeartbeat``: broker epoch, the metadata offset it
has applied, ``wantFence``, ``wantShutDown``). Its states are Kafka's ``BrokerState``:

* STARTING: heartbeats every 10 ms until the controller says the broker caught up with the metadata log
  (``isCaughtUp``), then RECOVERY;
* RECOVERY: ``wantFence`` is true until the broker is ready to unfence (``set_ready_to_unfence``: log
  recovery done, which takes no simulated time here), then a heartbeat goes at once; once an answer says
  ``isFenced = false``, RUNNING;
* RUNNING: a heartbeat every ``broker.heartbeat.interval.ms`` (2000);
* PENDING_CONTROLLED_SHUTDOWN (``begin_controlled_shutdown``): ``wantShutDown``, a heartbeat at once, the
  next 50 ms after the first answer, then every interval, until the controller answers ``shouldShutDown``
  (the broker leads nothing any more): SHUTTING_DOWN, and ``on_shutdown`` runs.

A failed exchange (no answer within the heartbeat channel's timeout, ``broker.heartbeat.interval.ms``, or an
error such as DUPLICATE_BROKER_REGISTRATION) is retried ``broker.heartbeat.interval.ms`` later (Kafka 4.1+'s
``scheduleNextCommunicationAfterFailure``, KAFKA-19294; 4.0 backed off exponentially from 100 ms up to
``broker.session.timeout.ms``). A broker whose heartbeats stop (it crashed,
it is paused, it is cut off from the controller) is fenced by the controller ``broker.session.timeout.ms``
after its last heartbeat arrived.

Kafka schedules the next communication as a deferred event tagged "communication" on its event queue, so a
new schedule replaces the pending one; here, one pending ``Call`` that a new schedule cancels. The controller
side is reached through a ``ControllerChannel`` (Kafka's ``NodeToControllerChannelManager``): the run wires it
to the controller with the network latency between the hosts; an answer of None is a failed exchange.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Final, Protocol

from simpy import Environment

from kafkasim.broker.errors import Errors
from kafkasim.broker.metadata import BrokerHeartbeatReply, BrokerHeartbeatRequest, BrokerRegistrationReply
from kafkasim.sim.calls import Call

STARTING_HEARTBEAT_MS: Final = 10.0
"""``BrokerLifecycleManager``: heartbeats while STARTING go 10 ms apart ("so that in the case where there is
no recovery work to be done, we start up a bit quicker")."""
FIRST_CONTROLLED_SHUTDOWN_HEARTBEAT_MS: Final = 50.0
"""After the first PENDING_CONTROLLED_SHUTDOWN answer the next heartbeat goes 50 ms later."""


class BrokerState(enum.Enum):
    """Kafka's ``BrokerState`` (the values a broker goes through here)."""

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


class ControllerChannel(Protocol):
    """How a broker reaches the active controller (Kafka's ``NodeToControllerChannelManager``): each call
    answers later through its callback -- with None if the exchange failed."""

    def register_broker(
        self, broker_id: int, rack: str | None, previous_broker_epoch: int,
        callback: Callable[[BrokerRegistrationReply | None], None],
    ) -> None: ...

    def heartbeat(
        self, request: BrokerHeartbeatRequest, callback: Callable[[BrokerHeartbeatReply | None], None]
    ) -> None: ...


class BrokerLifecycleManager:
    """One broker's side of the controller's membership protocol; ``start()`` when the broker starts,
    ``crash()`` when it dies (everything stops; a restart makes a new incarnation: ``start()`` again)."""

    __slots__ = (
        "env",
        "broker_id",
        "rack",
        "channel",
        "heartbeat_interval_ms",
        "metadata_offset",
        "on_shutdown",
        "on_caught_up",
        "_state",
        "_broker_epoch",
        "_clean_shutdown_epoch",
        "_previous_broker_epoch",
        "_registered",
        "_ready_to_unfence",
        "_got_controlled_shutdown_response",
        "_next",
        "_generation",
        "_paused",
        "_due_while_paused",
    )

    def __init__(
        self,
        env: Environment,
        broker_id: int,
        channel: ControllerChannel,
        *,
        heartbeat_interval_ms: int,
        metadata_offset: Callable[[], int],
        rack: str | None = None,
        on_caught_up: Callable[[], None] | None = None,
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.env = env
        self.broker_id = broker_id
        self.rack = rack
        self.channel = channel
        self.heartbeat_interval_ms = float(heartbeat_interval_ms)
        # The highest metadata offset the broker has applied (BrokerLifecycleManager's provider).
        self.metadata_offset = metadata_offset
        # Kafka's initialCatchUpFuture: the broker then recovers its logs and calls set_ready_to_unfence.
        self.on_caught_up = on_caught_up
        self.on_shutdown = on_shutdown
        self._state = BrokerState.NOT_RUNNING
        self._broker_epoch = -1
        # Kafka's clean-shutdown file (LogManager): the epoch of an incarnation that shut down cleanly, read
        # (and deleted) by the next one, which sends it as previousBrokerEpoch; -1 after a kill.
        self._clean_shutdown_epoch = -1
        self._previous_broker_epoch = -1
        self._registered = False
        self._ready_to_unfence = False
        self._got_controlled_shutdown_response = False
        self._next: Call | None = None
        # Bumped by crash(): answers to an earlier incarnation's requests are dropped.
        self._generation = 0
        self._paused = False
        self._due_while_paused = False

    @property
    def state(self) -> BrokerState:
        return self._state

    @property
    def broker_epoch(self) -> int:
        """The epoch the controller gave this incarnation (-1 before it registered)."""
        return self._broker_epoch

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        """``StartupEvent``: STARTING, and the registration goes out."""
        self._state = BrokerState.STARTING
        self._previous_broker_epoch, self._clean_shutdown_epoch = self._clean_shutdown_epoch, -1
        self._registered = False
        self._ready_to_unfence = False
        self._got_controlled_shutdown_response = False
        self._broker_epoch = -1
        self._communicate()  # a process started inside a pause fault in force registers when it resumes

    def start_running(self, broker_epoch: int, first_heartbeat_ms: float | None = None) -> None:
        """A broker that was already registered, unfenced and RUNNING when the run began (the controller was
        bootstrapped with it): it heartbeats every interval from now on, the first after
        ``first_heartbeat_ms`` (default: one interval). In a real cluster each broker's heartbeats keep the
        phase its start gave them (every answer schedules the next one an interval later,
        ``BrokerHeartbeatResponseHandler``), so where a crash falls between two of them is random: the run's
        build (``kafkasim.run.build``) draws each broker's phase from the seed."""
        if first_heartbeat_ms is None:
            first_heartbeat_ms = self.heartbeat_interval_ms
        if not 0.0 <= first_heartbeat_ms <= self.heartbeat_interval_ms:
            raise ValueError(f"first_heartbeat_ms must be in [0, {self.heartbeat_interval_ms}], "
                             f"got {first_heartbeat_ms}")
        self._state = BrokerState.RUNNING
        self._registered = True
        self._ready_to_unfence = True
        self._broker_epoch = broker_epoch
        self._schedule(first_heartbeat_ms)

    def set_ready_to_unfence(self) -> None:
        """``setReadyToUnfence``: the broker may be unfenced; the next heartbeat goes at once."""
        self._ready_to_unfence = True
        self._schedule(0.0)

    def begin_controlled_shutdown(self) -> None:
        """``beginControlledShutdown``: from RUNNING, ask the controller to move leadership away first; from
        any other state, shut down at once."""
        if self._state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            return
        if self._state is BrokerState.RUNNING:
            self._state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
            self._schedule(0.0)
        else:
            self._begin_shutdown()

    def begin_shutdown(self) -> None:
        """``beginShutdown``: the broker stops now, cleanly (``BrokerServer.shutdown`` goes on after its wait
        for the controlled shutdown, answered or timed out)."""
        if self._state is not BrokerState.SHUTTING_DOWN:
            self._begin_shutdown()

    def crash(self) -> None:
        """The broker process died: nothing more is sent, late answers are ignored. Killed before its shutdown
        finished, it leaves no clean-shutdown epoch."""
        if self._state is not BrokerState.SHUTTING_DOWN:
            self._clean_shutdown_epoch = -1
        self._generation += 1
        self._cancel_next()
        self._state = BrokerState.NOT_RUNNING
        self._registered = False

    def pause(self) -> None:
        """A stop-the-world pause: a communication that falls due waits for the resume."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        if self._due_while_paused:
            self._due_while_paused = False
            self._communicate()

    # --- scheduling ---------------------------------------------------------------------------------

    def _cancel_next(self) -> None:
        if self._next is not None:
            self._next.cancel()
            self._next = None

    def _schedule(self, delay_ms: float) -> None:
        """``scheduleNextCommunication``: replaces the pending communication (Kafka's tagged deferred
        event)."""
        if self._state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN):
            return
        self._cancel_next()
        generation = self._generation

        def due(_event: object) -> None:
            self._next = None
            if generation == self._generation:
                self._communicate()

        self._next = Call(self.env, delay_ms, due)

    def _after_failure(self) -> None:
        """``scheduleNextCommunicationAfterFailure``: the next try a heartbeat interval later."""
        self._schedule(self.heartbeat_interval_ms)

    def _communicate(self) -> None:
        """``CommunicationEvent``: a heartbeat once registered, else the registration again."""
        if self._paused:
            self._due_while_paused = True
            return
        if self._registered:
            self._send_heartbeat()
        else:
            self._send_registration()

    # --- registration -------------------------------------------------------------------------------

    def _send_registration(self) -> None:
        generation = self._generation

        def answered(response: BrokerRegistrationReply | None) -> None:
            if generation != self._generation:
                return
            if response is None or response.error is not Errors.NONE:
                self._after_failure()
                return
            self._broker_epoch = response.epoch
            self._registered = True
            self._schedule(0.0)  # a heartbeat at once

        self.channel.register_broker(self.broker_id, self.rack, self._previous_broker_epoch, answered)

    # --- heartbeats ---------------------------------------------------------------------------------

    def _send_heartbeat(self) -> None:
        request = BrokerHeartbeatRequest(
            self.broker_id,
            self._broker_epoch,
            self.metadata_offset(),
            not self._ready_to_unfence,
            self._state is BrokerState.PENDING_CONTROLLED_SHUTDOWN,
        )
        generation = self._generation

        def answered(response: BrokerHeartbeatReply | None) -> None:
            if generation == self._generation:
                self._on_heartbeat_response(response)

        self.channel.heartbeat(request, answered)

    def _on_heartbeat_response(self, response: BrokerHeartbeatReply | None) -> None:
        """``BrokerHeartbeatResponseHandler.onComplete``."""
        if response is None or response.error is not Errors.NONE:
            self._after_failure()
            return
        state = self._state
        if state is BrokerState.STARTING:
            self._schedule(STARTING_HEARTBEAT_MS)
            if response.is_caught_up:
                self._state = BrokerState.RECOVERY
                if self.on_caught_up is not None:
                    self.on_caught_up()
        elif state is BrokerState.RECOVERY:
            if not response.is_fenced:
                self._state = BrokerState.RUNNING
            self._schedule(self.heartbeat_interval_ms)
        elif state is BrokerState.RUNNING:
            self._schedule(self.heartbeat_interval_ms)
        elif state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if not response.should_shut_down:
                if not self._got_controlled_shutdown_response:
                    self._schedule(FIRST_CONTROLLED_SHUTDOWN_HEARTBEAT_MS)
                else:
                    self._schedule(self.heartbeat_interval_ms)
            else:
                self._begin_shutdown()
            self._got_controlled_shutdown_response = True
        # SHUTTING_DOWN / NOT_RUNNING: the answer is ignored.

    def _begin_shutdown(self) -> None:
        """``ShutdownEvent``: the broker stops; its logs close cleanly (LogManager writes the clean-shutdown
        file with this incarnation's epoch)."""
        self._state = BrokerState.SHUTTING_DOWN
        self._clean_shutdown_epoch = self._broker_epoch
        self._cancel_next()
        if self.on_shutdown is not None:
            self.on_shutdown()

    def __repr__(self) -> str:
        return (
            f"BrokerLifecycleManager(broker={self.broker_id}, state={self._state.name}, "
            f"epoch={self._broker_epoch}, readyToUnfence={self._ready_to_unfence})"
        )
