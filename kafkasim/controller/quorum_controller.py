"""Kafka's ``QuorumController`` on SimPy: the ``ControllerCore`` driven by the simulated clock.

What the clock adds to the core:

* **Stale-broker fencing** (Kafka 4.3's periodic task ``maybeFenceStaleBroker``,
  ``QuorumController.registerMaybeFenceStaleBroker`` run by ``PeriodicTaskControlManager``): every
  ``broker.session.timeout.ms / 8`` (``maybeFenceStaleBrokerPeriodNs``: 1125 ms for 9 s) the controller fences
  at most one broker whose last heartbeat is older than the session (``BrokerHeartbeatTracker.isExpired``:
  ``lastContact + timeout < now``); a run that fenced one reruns 10 ms later (``PeriodicTask``'s immediate
  period), so several dead brokers are fenced in consecutive events, each with its own batch. The task runs
  from the controller's activation, so its phase against the brokers' heartbeats is whatever the cluster's
  start made it: ``fence_check_phase_ms`` (the run's build draws it from the seed). A broker is therefore fenced
  between ``timeout`` and ``timeout + timeout / 8`` after its last heartbeat reached the controller -- Kafka
  4.0 (the source mirror's version) fenced it at exactly ``timeout`` with a deferred event at the deadline.
* **Append linger** (``controller.quorum.append.linger.ms``, 25 ms; ``QuorumConfig.DEFAULT_QUORUM_LINGER_MS``):
  the first batch appended after a commit starts the linger; every batch appended until it ends is
  committed with it (one controller voter: commit = the linger's end). An event's reply is due when its
  batch is committed (``on_reply``); an event that wrote nothing replies at once, or with the pending batches
  if some are not committed yet.
* **Propagation to brokers** (``subscribe``): each committed batch's ``MetadataDelta`` reaches a subscribed
  broker after a latency drawn per broker per commit from ``propagation_latency`` (a sampler, with the named
  random stream ``rng`` the run passes in; brokers in id order), never before an earlier delta to the
  same broker. So a controller decision reaches a broker ``linger + latency`` after the event.
* **Unclean elections** (the periodic task ``electUnclean``, ``QuorumController.registerElectUnclean``): every
  ``unclean.leader.election.interval.ms`` (300 s) from the controller's activation, a pass tries an UNCLEAN
  election for leaderless partitions whose topic allows it; a pass that left partitions for later runs again
  10 ms later.
* **Preferred leaders** (the periodic task ``electPreferred``, ``registerElectPreferred``, registered with
  ``auto.leader.rebalance.enable``): every ``leader.imbalance.check.interval.seconds`` (300 s) from the
  activation, a PREFERRED election for the partitions not led by their first replica, so leadership returns
  to a restarted preferred replica once it is back in the ISR.
  Kafka 4.0's snapshot scheduled both passes one interval after the write that made them needed
  (``maybeScheduleNextBalancePartitionLeaders``); since KAFKA-17793 they are periodic tasks like the fence
  check, all rescheduled at the activation (``PeriodicTaskControlManager.activate``): their phase is the fence
  check's (``fence_check_phase_ms``) -- the controller became active one fence period before it.

Example (Kafka's defaults, latency 5 ms, the fence check first at 1125 ms): brokers 0-2 bootstrapped at t=0,
topic "t" = [(0, 1, 2)]; brokers 1 and 2 heartbeat every 2000 ms, broker 0 stops after its heartbeat at t=4000.
Its session ends at 13000; the checks run at 1125 k ms, so the one at 13500 fences 0: leader 1, ISR [1, 2],
leader epoch 1. The batch commits at 13525; broker 1 applies the delta at 13530.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from simpy import Environment

from kafkasim.broker.alter_partition import AlterPartitionReply, AlterPartitionRequest
from kafkasim.broker.metadata import MetadataDelta
from kafkasim.controller.broker_heartbeat_manager import (
    DEFAULT_SESSION_TIMEOUT_MS,
    BrokerHeartbeatRequest,
)
from kafkasim.controller.controller_core import (
    ELIGIBLE_LEADER_REPLICAS_VERSION_DEFAULT,
    BrokerRegistrationReply,
    ControllerCore,
    ControllerResult,
)
from kafkasim.controller.metadata_log import MetadataBatch, MetadataImage
from kafkasim.controller.replication_control_manager import BrokerHeartbeatReply
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import Sampler

DEFAULT_APPEND_LINGER_MS = 25.0
"""``controller.quorum.append.linger.ms``."""
DEFAULT_UNCLEAN_LEADER_ELECTION_INTERVAL_MS = 300_000.0
"""``unclean.leader.election.interval.ms``."""
DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS = 300_000.0
"""``leader.imbalance.check.interval.seconds`` (300) in ms."""
IMMEDIATE_RESCHEDULE_MS = 10.0
"""QuorumController: a deferred task to rerun "immediately" waits 10 ms (fairness with other events;
``PeriodicTask.DEFAULT_IMMEDIATE_PERIOD_NS``)."""


def fence_stale_broker_period_ms(session_timeout_ms: float) -> float:
    """Kafka 4.3's ``QuorumController.maybeFenceStaleBrokerPeriodNs``: ``max(1 ms, sessionTimeoutNs / 8)`` --
    "we sample 8 times per broker timeout period, so we'll generally fence a broker in no more than 112.5% of
    the given broker session timeout" (integer nanoseconds: 1125 ms for 9000)."""
    return max(1_000_000, int(session_timeout_ms * 1_000_000) // 8) / 1_000_000

R = TypeVar("R")
DeltaCallback = Callable[[MetadataDelta], None]


class _EnvTime:
    """The controller's clock: SimPy time in (fractional) milliseconds."""

    __slots__ = ("_env",)

    def __init__(self, env: Environment) -> None:
        self._env = env

    def milliseconds(self) -> float:
        return float(self._env.now)


class QuorumController:
    """The KRaft controller of one simulated cluster (a single voter)."""

    __slots__ = ("env", "core", "propagation_latency", "rng", "append_linger_ms",
                 "unclean_leader_election_interval_ms", "_subscribers", "_last_delivery", "_drain",
                 "_pending_replies", "_fence_call", "_fence_at", "fence_check_period_ms", "_fence_check_phase_ms",
                 "_unclean_call", "auto_leader_rebalance_enable", "leader_imbalance_check_interval_ms",
                 "_balance_call", "_running")

    def __init__(
        self, env: Environment, propagation_latency: Sampler, rng: random.Random, *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS, append_linger_ms: float = DEFAULT_APPEND_LINGER_MS,
        unclean_leader_election_interval_ms: float = DEFAULT_UNCLEAN_LEADER_ELECTION_INTERVAL_MS,
        auto_leader_rebalance_enable: bool = True,
        leader_imbalance_check_interval_ms: float = DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS,
        fence_check_phase_ms: float | None = None,
        eligible_leader_replicas_version: int = ELIGIBLE_LEADER_REPLICAS_VERSION_DEFAULT,
    ) -> None:
        """``fence_check_phase_ms``: when the periodic stale-broker check first runs (default: one period after
        the start, as for a controller activated at t=0)."""
        self.env = env
        self.core = ControllerCore(_EnvTime(env), session_timeout_ms, eligible_leader_replicas_version)
        self.propagation_latency = propagation_latency
        self.rng = rng
        self.append_linger_ms = append_linger_ms
        self.unclean_leader_election_interval_ms = unclean_leader_election_interval_ms
        self._subscribers: dict[int, DeltaCallback] = {}
        self._last_delivery: dict[int, float] = {}
        self._drain: Call | None = None
        self._pending_replies: list[Callable[[], None]] = []
        self._fence_call: Call | None = None
        self._fence_at = -1.0
        self.fence_check_period_ms = fence_stale_broker_period_ms(session_timeout_ms)
        self._fence_check_phase_ms = (self.fence_check_period_ms if fence_check_phase_ms is None
                                      else fence_check_phase_ms)
        if not 0.0 <= self._fence_check_phase_ms <= self.fence_check_period_ms:
            raise ValueError(f"fence_check_phase_ms must be in [0, {self.fence_check_period_ms}], "
                             f"got {fence_check_phase_ms}")
        self._unclean_call: Call | None = None
        self.auto_leader_rebalance_enable = auto_leader_rebalance_enable
        self.leader_imbalance_check_interval_ms = leader_imbalance_check_interval_ms
        self._balance_call: Call | None = None
        self._running = True

    # ----- reads
    @property
    def image(self) -> MetadataImage:
        """The committed metadata image (Kafka's ``MetadataImage``): ``partitions``, ``brokers``, ``offset``."""
        return self.core.image

    @property
    def fence_check_at_ms(self) -> float | None:
        """When the periodic stale-broker check runs next (None: not started, or stopped)."""
        return self._fence_at if self._fence_call is not None else None

    # ----- set-up
    def bootstrap(
        self, broker_ids: Sequence[int], topics: Mapping[str, Sequence[tuple[int, ...]]] | None = None,
        unclean_topics: frozenset[str] = frozenset(), min_insync_replicas: Mapping[str, int] | None = None,
    ) -> None:
        """A cluster already running at the start: brokers registered and unfenced, topics created, all
        committed at once (no linger, nothing delivered: brokers start from the same state)."""
        self.core.bootstrap(broker_ids)
        for name in sorted(topics or {}):
            self.core.create_topic(name, (topics or {})[name], name in unclean_topics,
                                   (min_insync_replicas or {}).get(name, 1))
        self.core.commit()
        self._start_fence_check()

    def create_topic(
        self, name: str, assignment: Sequence[tuple[int, ...]], unclean_leader_election_enable: bool = False,
    ) -> MetadataBatch:
        batch = self.core.create_topic(name, assignment, unclean_leader_election_enable)
        self._appended(batch)
        return batch

    def set_unclean_leader_election(self, topic: str, enabled: bool) -> None:
        self.core.set_unclean_leader_election(topic, enabled)

    def set_min_insync_replicas(self, topic: str, value: int) -> None:
        """The controller's side of a min.insync.replicas change (the ELR is cleared, with ELR on)."""
        batch = self.core.set_min_insync_replicas(topic, value)
        if batch is not None:
            self._appended(batch)

    def subscribe(self, broker_id: int, callback: DeltaCallback, catch_up: bool = False) -> None:
        """Deliver every delta committed from now on to ``callback`` (replacing an earlier subscription of the
        broker). ``catch_up``: first, after one propagation latency, a delta holding the whole committed image
        (a restarted broker loading the metadata log)."""
        self._subscribers[broker_id] = callback
        if catch_up:
            image = self.core.image
            snapshot = MetadataDelta(image.offset, dict(sorted(image.partitions.items())), frozenset(),
                                     dict(sorted(image.brokers.items())))
            self._schedule_delivery(broker_id, [snapshot], self.propagation_latency.sample(self.rng))

    def unsubscribe(self, broker_id: int) -> None:
        """The broker is gone (crashed): deltas in flight to it are dropped."""
        self._subscribers.pop(broker_id, None)
        self._last_delivery.pop(broker_id, None)

    def stop(self) -> None:
        self._running = False
        for call in (self._drain, self._fence_call, self._unclean_call, self._balance_call):
            if call is not None:
                call.cancel()
        self._drain = self._fence_call = self._unclean_call = self._balance_call = None

    # ----- broker requests
    def register_broker(
        self, broker_id: int, incarnation_id: str, rack: str | None = None,
        on_reply: Callable[[BrokerRegistrationReply], None] | None = None, previous_broker_epoch: int = -1,
    ) -> BrokerRegistrationReply:
        """Kafka's ``registerBroker``: the reply (new epoch, or DUPLICATE_BROKER_REGISTRATION) is decided now
        and due (``on_reply``) when the registration record is committed."""
        result = self.core.register_broker(broker_id, incarnation_id, rack, previous_broker_epoch)
        self._start_fence_check()
        return self._finish(result, on_reply)

    def heartbeat(
        self, request: BrokerHeartbeatRequest, on_reply: Callable[[BrokerHeartbeatReply], None] | None = None,
    ) -> BrokerHeartbeatReply:
        """Kafka's ``processBrokerHeartbeat``; the reply is due (``on_reply``) once the event's records commit."""
        result = self.core.process_broker_heartbeat(request)
        return self._finish(result, on_reply)

    def alter_partition(
        self, broker_id: int, broker_epoch: int, partitions: Sequence[AlterPartitionRequest],
        on_reply: Callable[[AlterPartitionReply], None] | None = None,
    ) -> AlterPartitionReply:
        """Kafka's ``alterPartition``; the reply is due (``on_reply``) once the new records commit."""
        result = self.core.alter_partition(broker_id, broker_epoch, partitions)
        return self._finish(result, on_reply)

    # ----- event plumbing
    def _finish(self, result: ControllerResult[R], on_reply: Callable[[R], None] | None) -> R:
        if result.batch is not None:
            self._appended(result.batch)
        if on_reply is not None:
            response = result.response
            if self._drain is not None:
                self._pending_replies.append(lambda: on_reply(response))
            else:
                on_reply(response)
        return result.response

    def _appended(self, batch: MetadataBatch) -> None:
        # Kafka: BatchAccumulator -- the first append after a drain starts the linger.
        if self._drain is None and self._running:
            self._drain = Call(self.env, self.append_linger_ms, self._on_drain)

    def _on_drain(self, _event: object) -> None:
        self._drain = None
        batches = self.core.commit()
        replies, self._pending_replies = self._pending_replies, []
        if batches:
            deltas = [b.delta for b in batches]
            for broker_id in sorted(self._subscribers):
                self._schedule_delivery(broker_id, deltas, self.propagation_latency.sample(self.rng))
        for reply in replies:
            reply()

    def _schedule_delivery(self, broker_id: int, deltas: list[MetadataDelta], latency: float) -> None:
        now = self.env.now
        at = max(now + max(latency, 0.0), self._last_delivery.get(broker_id, now))
        self._last_delivery[broker_id] = at
        callback = self._subscribers[broker_id]

        def deliver(_event: object) -> None:
            if self._subscribers.get(broker_id) is not callback:
                return  # the broker went away (or re-subscribed) meanwhile
            for delta in deltas:
                callback(delta)

        Call(self.env, at - now, deliver)

    def _start_fence_check(self) -> None:
        """``PeriodicTaskControlManager.activate``: every periodic task's first run (once). The controller
        became active one fence period before the fence check's first run."""
        if self._running and self._fence_call is None and self._fence_at < 0:
            self._schedule_fence_check(self._fence_check_phase_ms)
            activated = self.env.now + self._fence_check_phase_ms - self.fence_check_period_ms
            self._unclean_call = Call(self.env, self._first_run_after(activated, self.unclean_leader_election_interval_ms),
                                      self._on_elect_unclean_leaders)
            if self.auto_leader_rebalance_enable:
                self._balance_call = Call(
                    self.env, self._first_run_after(activated, self.leader_imbalance_check_interval_ms),
                    self._on_balance_partition_leaders)

    def _first_run_after(self, activated: float, period_ms: float) -> float:
        """How long from now until a task with ``period_ms`` activated at ``activated`` first runs."""
        delay = activated + period_ms - self.env.now
        while delay < 0:
            delay += period_ms
        return delay

    def _schedule_fence_check(self, delay_ms: float) -> None:
        self._fence_at = self.env.now + delay_ms
        self._fence_call = Call(self.env, delay_ms, self._on_maybe_fence)

    def _on_maybe_fence(self, _event: object) -> None:
        """The periodic ``maybeFenceStaleBroker`` task (``ReplicationControlManager.maybeFenceOneStaleBroker``):
        ``PeriodicTaskOperation`` reschedules it when it runs -- 10 ms later if it fenced a broker (there may be
        another), else one period later."""
        self._fence_call = None
        result = self.core.maybe_fence_one_stale_broker()
        if self._running:
            self._schedule_fence_check(IMMEDIATE_RESCHEDULE_MS if result.response is not None
                                       else self.fence_check_period_ms)
        self._finish(result, None)

    def _on_elect_unclean_leaders(self, _event: object) -> None:
        """The periodic ``electUnclean`` task (``ReplicationControlManager.maybeElectUncleanLeaders``)."""
        self._unclean_call = None
        result = self.core.maybe_elect_unclean_leaders()
        if self._running:
            self._unclean_call = Call(self.env, IMMEDIATE_RESCHEDULE_MS if result.response
                                      else self.unclean_leader_election_interval_ms, self._on_elect_unclean_leaders)
        self._finish(result, None)

    def _on_balance_partition_leaders(self, _event: object) -> None:
        """The periodic ``electPreferred`` task (``ReplicationControlManager.maybeBalancePartitionLeaders``)."""
        self._balance_call = None
        result = self.core.maybe_balance_partition_leaders()
        if self._running:
            self._balance_call = Call(self.env, IMMEDIATE_RESCHEDULE_MS if result.response
                                      else self.leader_imbalance_check_interval_ms, self._on_balance_partition_leaders)
        self._finish(result, None)
