"""The brokers' link to the KRaft controller: registrations, heartbeats, AlterPartition and metadata.

Kafka's brokers reach the active controller through ``NodeToControllerChannelManager``: a
``BrokerLifecycleManager`` registers and heartbeats, the ``AlterPartitionManager`` sends ISR changes, and
each broker applies the metadata the controller commits (``BrokerMetadataPublisher`` ->
``ReplicaManager.applyDelta``). Here:

* every message between a broker and the controller takes one draw of ``controller.link_latency`` (a
  stream per broker), each way;
* each broker publishes the committed metadata on its own, one delta at a time in log order (Kafka's
  ``MetadataLoader`` thread calling ``BrokerMetadataPublisher.onMetadataUpdate``): the delta reaches it after its
  own propagation latency (``QuorumController``), its ``MetadataCache`` takes the new image at once (what it
  answers clients' Metadata requests with: ``metadataCache.setImage`` comes first), then
  ``ReplicaManager.applyDelta`` makes its leaders and followers and moves its fetchers -- which, for a delta
  that moves a leadership this broker hosts, takes ``controller.metadata_apply`` (drawn per broker per such
  delta). Only then does the broker report the delta's offset in its heartbeats (``MetadataLoader``'s
  ``lastAppliedOffset`` is updated after every publisher ran): what the controller's controlled-shutdown
  check (``BrokerHeartbeatManager``'s lowest active offset) waits for. So brokers apply a leadership change
  at different times: a follower may fetch from the new leader before it leads (UNKNOWN_LEADER_EPOCH, and
  its fetcher backs that partition off ``replica.fetch.backoff.ms``: ``AbstractFetcherThread``);
* a broker that is crashed neither sends nor receives: a request it sent before crashing still reaches the
  controller, the answer is dropped, and the metadata the controller commits meanwhile is not delivered to
  it -- on restart it registers again and loads the whole committed image (a catch-up subscription);
* an AlterPartition goes to the controller with the leader's broker epoch and its answer comes back once
  the controller committed it (``controller.quorum.append.linger.ms``), as the leader's
  ``Partition.handleAlterPartitionUpdate`` expects.

A network partition that separates a broker from ``controller`` (``kafkasim.network.partitions``) cuts this
link too: a message on the wire during the cut is lost. Kafka's ``NodeToControllerChannelManager`` then
decides what the broker sees:

* a registration or heartbeat (the "heartbeat" channel, whose request timeout is
  ``broker.heartbeat.interval.ms`` since Kafka 4.1, KAFKA-19294) fails after that timeout:
  ``BrokerLifecycleManager`` tries again a heartbeat interval later, and the controller fences the broker
  ``broker.session.timeout.ms`` after the last heartbeat that got through;
* an AlterPartition (the "alter-partition" channel: ``retryTimeoutMs`` = Long.MaxValue) is sent again each
  ``controller.socket.timeout.ms`` (30 s) until an answer gets through;
* the metadata the controller commits while the broker is cut off waits, in order, and is applied when the
  cut ends (the broker's next fetch of the metadata log; Kafka's observer may need up to
  ``controller.quorum.request.timeout.ms``, 2 s, more to notice its fetch was lost).

Worked example (defaults: link 0.5 ms, linger 25 ms): a leader proposes an ISR expansion at t=100; the
request reaches the controller at 100.5, its record commits at 125.5, the answer reaches the leader at 126
(Kafka's leader commits the ISR from the answer, before the metadata delta arrives at ~127.5).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from kafkasim.broker.alter_partition import AlterPartitionCallback, LeaderAndIsr
from kafkasim.broker.config import LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.metadata import (
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    MetadataDelta,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.controller_core import AlterPartitionReply
from kafkasim.controller.quorum_controller import QuorumController
from kafkasim.controller.replication_control_manager import AlterPartitionRequest, BrokerState
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import CONTROLLER_HOST, Cut, NetworkPartitions, broker_host
from kafkasim.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkasim.server.broker_server import BrokerServer
from kafkasim.server.metadata_cache import KRaftMetadataCache
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import Sampler

ApplyCost = Callable[[], float]
Reply = TypeVar("Reply")  # what the controller answers one exchange with

if TYPE_CHECKING:
    from simpy import Environment

CONTROLLER_SOCKET_TIMEOUT_MS = 30_000.0
"""``controller.socket.timeout.ms``: the request timeout of a broker's channels to the controller (Kafka's
``NodeToControllerChannelManagerImpl`` caps it at the channel's ``retryTimeoutMs``)."""


class ControllerLink:
    """The messages between the brokers and the controller, and each broker's lifecycle and metadata."""

    def __init__(
        self,
        env: Environment,
        controller: QuorumController,
        brokers: dict[int, BrokerServer],
        latency: Sampler,
        rngs: dict[int, random.Random],
        observer: Observer,
        *,
        partitions: NetworkPartitions | None = None,
        apply_costs: dict[int, ApplyCost] | None = None,
    ) -> None:
        """``apply_costs``: per broker, the time ``ReplicaManager.applyDelta`` takes for a delta that moves a
        leadership the broker hosts (default: none)."""
        self.env = env
        self.apply_costs = apply_costs or {}
        self.controller = controller
        self.brokers = brokers
        self.latency = latency
        self.rngs = rngs
        self.observer = observer
        self.lifecycles: dict[int, BrokerLifecycleManager] = {}
        # Per broker (filled by subscribe): the metadata offset it has applied, and its incarnation.
        self.applied_offset: dict[int, int] = {}
        self.incarnations: dict[int, int] = {}
        self._log_config_for: dict[int, Callable[[TopicPartition], LogConfig]] = {}
        self.alter_partitions_submitted = 0
        # Per broker: the partitions of the metadata it has applied, what it answers a client's Metadata
        # request with.
        self.metadata_cache: dict[int, KRaftMetadataCache] = {}
        # When each broker applied a delta naming it a partition's leader (Partition.makeLeader ran): the
        # failovers' applied_ms, per (partition, broker), in time order.
        self.leaderships_applied: dict[tuple[TopicPartition, int], list[float]] = {}
        # When the controller received each broker's heartbeats (the failovers' last_heartbeat_ms).
        self.heartbeats_received: dict[int, list[float]] = {}
        # Brokers a network partition separates from the controller at some time, and their cut.
        self._cuts: dict[int, Cut] = {}
        if partitions is not None:
            for broker_id in rngs:
                cut = partitions.between(broker_host(broker_id), CONTROLLER_HOST)
                if cut is not None:
                    self._cuts[broker_id] = cut
        self._heartbeat_timeout_ms: dict[int, float] = {}
        self._held: dict[int, list[MetadataDelta]] = {}  # deltas waiting for the end of a cut, per broker

    # --- plumbing ------------------------------------------------------------------------------------

    def _alive(self, broker_id: int) -> bool:
        return not self.brokers[broker_id].crashed

    def _to_controller(self, broker_id: int, send: Callable[[], object]) -> None:
        if not self._alive(broker_id):
            return
        cut = self._cuts.get(broker_id)
        sent_ms = self.env.now

        def arrive(_e: object) -> None:
            if cut is not None and cut.severs(sent_ms, self.env.now):
                return  # lost in a network partition
            send()

        Call(self.env, max(0.0, self.latency.sample(self.rngs[broker_id])), arrive)

    def _to_broker(self, broker_id: int, incarnation: int, deliver: Callable[[], None]) -> None:
        cut = self._cuts.get(broker_id)
        sent_ms = self.env.now

        def arrive(_e: object) -> None:
            if cut is not None and cut.severs(sent_ms, self.env.now):
                return  # lost in a network partition
            # An answer to an earlier incarnation, or to a broker that is down, is lost with its connection.
            if self._alive(broker_id) and self.incarnations[broker_id] == incarnation:
                deliver()

        Call(self.env, max(0.0, self.latency.sample(self.rngs[broker_id])), arrive)

    def _exchange(self, broker_id: int, timeout_ms: float, callback: Callable[[Reply | None], None]
                  ) -> Callable[[Reply | None], None]:
        """``callback`` for one request/answer exchange with the controller; for a broker a partition can cut
        off, it gets None (a failed exchange) ``timeout_ms`` after the send unless an answer came first."""
        if broker_id not in self._cuts:
            return callback
        done = [False]

        def answered(reply: Reply | None) -> None:
            if not done[0]:
                done[0] = True
                callback(reply)

        Call(self.env, timeout_ms, lambda _e: answered(None))
        return answered

    # --- metadata ------------------------------------------------------------------------------------

    def subscribe(self, broker_id: int, log_config_for: Callable[[TopicPartition], LogConfig], catch_up: bool) -> None:
        broker = self.brokers[broker_id]
        self.incarnations.setdefault(broker_id, 0)
        self._log_config_for[broker_id] = log_config_for
        if not catch_up:
            self.applied_offset[broker_id] = self.controller.image.offset  # it starts with the bootstrap image
            self.metadata_cache[broker_id] = KRaftMetadataCache(self.controller.image.partitions)
        cache = self.metadata_cache[broker_id]
        incarnation = self.incarnations[broker_id]
        waiting: deque[MetadataDelta] = deque()  # committed, reached the broker, not published yet
        publishing = [False]

        def publish_next() -> None:
            """``MetadataLoader.maybePublishMetadata``: one delta at a time, in log order."""
            while waiting and not publishing[0]:
                if broker.crashed or self.incarnations[broker_id] != incarnation:
                    waiting.clear()
                    return
                delta = waiting.popleft()
                apply_cost = self.apply_costs.get(broker_id)
                # BrokerMetadataPublisher.onMetadataUpdate: metadataCache.setImage first ...
                moves = apply_cost is not None and _moves_leadership(broker_id, cache, delta)
                cache.set_image(delta)
                cost = apply_cost() if moves and apply_cost is not None else 0.0
                if cost <= 0.0:
                    applied(delta)
                else:
                    # ... then ReplicaManager.applyDelta (makeLeader / makeFollower, the fetchers), which takes
                    # time: meanwhile the broker's partitions are as they were.
                    publishing[0] = True
                    Call(self.env, cost, partial(applied_later, delta))

        def applied(delta: MetadataDelta) -> None:
            broker.apply_delta(delta, log_config_for=log_config_for)
            for tp, registration in delta.partitions.items():
                if registration.leader == broker_id:
                    self.leaderships_applied.setdefault((tp, broker_id), []).append(self.env.now)
            # MetadataLoader: lastAppliedOffset (what the heartbeats report) moves once every publisher ran.
            self.applied_offset[broker_id] = max(self.applied_offset[broker_id], delta.offset)

        def applied_later(delta: MetadataDelta, _event: object) -> None:
            publishing[0] = False
            if broker.crashed or self.incarnations[broker_id] != incarnation:
                waiting.clear()
                return
            applied(delta)
            publish_next()

        def apply_now(delta: MetadataDelta) -> None:
            if broker.crashed:
                return
            waiting.append(delta)
            publish_next()

        cut = self._cuts.get(broker_id)
        if cut is None:
            self.controller.subscribe(broker_id, apply_now, catch_up=catch_up)
            return

        def apply(delta: MetadataDelta) -> None:
            # Cut off from the controller: the delta waits for the end of the cut, behind any already waiting.
            held = self._held.get(broker_id)
            if held is None:
                end = cut.until(self.env.now)
                if end is None:
                    apply_now(delta)
                    return
                held = self._held[broker_id] = []
                if end != math.inf:
                    Call(self.env, end - self.env.now, lambda _e: self._release(broker_id, held, apply_now))
            held.append(delta)

        self.controller.subscribe(broker_id, apply, catch_up=catch_up)

    def _release(self, broker_id: int, held: list[MetadataDelta], apply: Callable[[MetadataDelta], None]) -> None:
        if self._held.get(broker_id) is not held:
            return  # the broker crashed meanwhile: what it was waiting for went with it
        del self._held[broker_id]
        for delta in held:
            apply(delta)

    # --- lifecycle (ControllerChannel for each broker) ----------------------------------------------

    def lifecycle(self, broker_id: int, *, heartbeat_interval_ms: int, rack: str | None) -> BrokerLifecycleManager:
        manager = BrokerLifecycleManager(
            self.env, broker_id, _Channel(self, broker_id), heartbeat_interval_ms=heartbeat_interval_ms,
            metadata_offset=lambda: self.applied_offset[broker_id], rack=rack,
        )
        manager.on_caught_up = manager.set_ready_to_unfence  # no log recovery work to wait for
        # Kafka's "heartbeat" channel: its request timeout is broker.heartbeat.interval.ms (BrokerServer, 4.1+,
        # KAFKA-19294; 4.0: min(controller.socket.timeout.ms, broker.session.timeout.ms / 2)).
        self._heartbeat_timeout_ms[broker_id] = float(heartbeat_interval_ms)
        self.lifecycles[broker_id] = manager
        return manager

    def broker_crashed(self, broker_id: int) -> None:
        self.incarnations[broker_id] += 1
        self._held.pop(broker_id, None)
        self.lifecycles[broker_id].crash()
        self.controller.unsubscribe(broker_id)

    def broker_restarted(self, broker_id: int) -> None:
        """A new incarnation: it loads the committed metadata and registers again."""
        self.incarnations[broker_id] += 1
        self.subscribe(broker_id, self._log_config_for[broker_id], catch_up=True)
        self.lifecycles[broker_id].start()

    # --- AlterPartition (the brokers' AlterPartitionManager) ----------------------------------------

    def submit(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr,
               callback: AlterPartitionCallback) -> None:
        """``AlterPartitionManager.submit`` from a leader's ``Partition``: to the controller with the leader's
        broker epoch, the answer back once committed."""
        self.alter_partitions_submitted += 1
        observer = self.observer
        observer.alter_partition_submitted(topic_partition, leader_and_isr)
        broker_id = leader_and_isr.leader
        incarnation = self.incarnations[broker_id]
        request = AlterPartitionRequest(
            topic_partition, leader_and_isr.leader_epoch, leader_and_isr.partition_epoch,
            tuple(BrokerState(b) for b in leader_and_isr.isr),
        )

        answered = [False]

        def answer(reply: AlterPartitionReply) -> None:
            result = _leader_and_isr(reply)

            def deliver() -> None:
                if answered[0]:
                    return  # a resent request's second answer
                answered[0] = True
                # The checker must know a committed ISR before the acknowledgements it makes possible.
                observer.alter_partition_committed(topic_partition, result)
                callback(result)
                observer.alter_partition_answered(topic_partition)

            self._to_broker(broker_id, incarnation, deliver)

        def send() -> None:
            epoch = self.lifecycles[broker_id].broker_epoch
            self.controller.alter_partition(broker_id, epoch, [request], on_reply=answer)

        self._to_controller(broker_id, send)
        if broker_id in self._cuts:
            self._resend_unanswered(broker_id, incarnation, send, answered)

    def _resend_unanswered(self, broker_id: int, incarnation: int, send: Callable[[], None],
                           answered: list[bool]) -> None:
        """``NodeToControllerRequestThread``: a request with no answer after the channel's request timeout is
        disconnected and sent again (the alter-partition channel never gives up: retryTimeoutMs is
        Long.MaxValue)."""

        def check(_e: object) -> None:
            if answered[0] or not self._alive(broker_id) or self.incarnations[broker_id] != incarnation:
                return
            self._to_controller(broker_id, send)
            Call(self.env, CONTROLLER_SOCKET_TIMEOUT_MS, check)

        Call(self.env, CONTROLLER_SOCKET_TIMEOUT_MS, check)


def _moves_leadership(broker_id: int, cache: KRaftMetadataCache, delta: MetadataDelta) -> bool:
    """Whether ``delta`` gives a partition that ``broker_id`` hosts a new leader or leader epoch (Kafka's
    ``TopicsDelta.localChanges`` leading to a state change in ``Partition.makeLeader`` / ``makeFollower``);
    an ISR-only change ("Skipped the become-leader state change") costs nothing here."""
    for tp, registration in delta.partitions.items():
        if broker_id not in registration.replicas:
            continue
        before = cache.get(tp)
        if before is None or before.leader != registration.leader or before.leader_epoch != registration.leader_epoch:
            return True
    return False


def _leader_and_isr(reply: AlterPartitionReply) -> LeaderAndIsr | Errors:
    if reply.error is not Errors.NONE:
        return reply.error
    (partition,) = reply.partitions
    if partition.error is not Errors.NONE:
        return partition.error
    return LeaderAndIsr(partition.leader, partition.leader_epoch, tuple(sorted(partition.isr)),
                        partition.partition_epoch)


class _Channel:
    """One broker's ``ControllerChannel`` (Kafka's ``NodeToControllerChannelManager``)."""

    __slots__ = ("link", "broker_id")

    def __init__(self, link: ControllerLink, broker_id: int) -> None:
        self.link = link
        self.broker_id = broker_id

    def register_broker(
        self, broker_id: int, rack: str | None, previous_broker_epoch: int,
        callback: Callable[[BrokerRegistrationReply | None], None],
    ) -> None:
        link = self.link
        incarnation = link.incarnations[broker_id]

        callback = link._exchange(broker_id, link._heartbeat_timeout_ms[broker_id], callback)

        def answer(reply: BrokerRegistrationReply) -> None:
            link._to_broker(broker_id, incarnation, lambda: callback(reply))

        link._to_controller(broker_id, lambda: link.controller.register_broker(
            broker_id, f"broker-{broker_id}/incarnation-{incarnation}", rack, on_reply=answer,
            previous_broker_epoch=previous_broker_epoch))

    def heartbeat(
        self, request: BrokerHeartbeatRequest, callback: Callable[[BrokerHeartbeatReply | None], None]
    ) -> None:
        link = self.link
        broker_id = request.broker_id
        incarnation = link.incarnations[broker_id]

        callback = link._exchange(broker_id, link._heartbeat_timeout_ms[broker_id], callback)

        def answer(reply: BrokerHeartbeatReply) -> None:
            link._to_broker(broker_id, incarnation, lambda: callback(reply))

        def receive() -> None:
            link.heartbeats_received.setdefault(broker_id, []).append(link.env.now)
            link.controller.heartbeat(request, on_reply=answer)

        link._to_controller(broker_id, receive)
