"""The brokers' link to the KRaft controller: registrations, heartbeats, AlterPartition and metadata.

Kafka's brokers reach the active controller through ``NodeToControllerChannelManager``: a
``BrokerLifecycleManager`` registers and heartbeats, the ``AlterPartitionManager`` sends ISR changes, and
each broker applies the metadata the controller commits (``BrokerMetadataPublisher`` ->
``ReplicaManager.applyDelta``). Here:

* every message between a broker and the controller takes one draw of ``controller.link_latency`` (a
  stream per broker), each way;
* a broker that is crashed neither sends nor receives: a request it sent before crashing still reaches the
  controller, the answer is dropped, and the metadata the controller commits meanwhile is not delivered to
  it -- on restart it registers again and loads the whole committed image (a catch-up subscription);
* an AlterPartition goes to the controller with the leader's broker epoch and its answer comes back once
  the controller committed it (``controller.quorum.append.linger.ms``), as the leader's
  ``Partition.handleAlterPartitionUpdate`` expects.

Worked example (defaults: link 0.5 ms, linger 25 ms): a leader proposes an ISR expansion at t=100; the
request reaches the controller at 100.5, its record commits at 125.5, the answer reaches the leader at 126
(Kafka's leader commits the ISR from the answer, before the metadata delta arrives at ~127.5).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafkasim.broker.alter_partition import AlterPartitionCallback, LeaderAndIsr
from kafkasim.broker.errors import Errors
from kafkasim.broker.metadata import (
    NO_LEADER,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    MetadataDelta,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.controller_core import AlterPartitionReply
from kafkasim.controller.quorum_controller import QuorumController
from kafkasim.controller.replication_control_manager import AlterPartitionRequest, BrokerState
from kafkasim.network.observer import Observer
from kafkasim.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkasim.server.broker_server import BrokerServer
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import Sampler

if TYPE_CHECKING:
    from simpy import Environment


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
    ) -> None:
        self.env = env
        self.controller = controller
        self.brokers = brokers
        self.latency = latency
        self.rngs = rngs
        self.observer = observer
        self.lifecycles: dict[int, BrokerLifecycleManager] = {}
        # Per broker (filled by subscribe): the metadata offset it has applied, and its incarnation.
        self.applied_offset: dict[int, int] = {}
        self.incarnations: dict[int, int] = {}
        self._log_config_for: dict[int, Callable[[TopicPartition], Any]] = {}
        self.alter_partitions_submitted = 0
        # Per broker: the partitions of the metadata it has applied (Kafka's KRaftMetadataCache), what it
        # answers a client's Metadata request with.
        self.metadata_cache: dict[int, dict[TopicPartition, PartitionRegistration]] = {}

    # --- plumbing ------------------------------------------------------------------------------------

    def _alive(self, broker_id: int) -> bool:
        return not self.brokers[broker_id].crashed

    def _to_controller(self, broker_id: int, send: Callable[[], object]) -> None:
        if not self._alive(broker_id):
            return
        def arrive(_e: Any) -> None:
            send()

        Call(self.env, max(0.0, self.latency.sample(self.rngs[broker_id])), arrive)

    def _to_broker(self, broker_id: int, incarnation: int, deliver: Callable[[], None]) -> None:
        def arrive(_e: Any) -> None:
            # An answer to an earlier incarnation, or to a broker that is down, is lost with its connection.
            if self._alive(broker_id) and self.incarnations[broker_id] == incarnation:
                deliver()

        Call(self.env, max(0.0, self.latency.sample(self.rngs[broker_id])), arrive)

    # --- metadata ------------------------------------------------------------------------------------

    def subscribe(self, broker_id: int, log_config_for: Callable[[TopicPartition], Any], catch_up: bool) -> None:
        broker = self.brokers[broker_id]
        self.incarnations.setdefault(broker_id, 0)
        self._log_config_for[broker_id] = log_config_for
        if not catch_up:
            self.applied_offset[broker_id] = self.controller.image.offset  # it starts with the bootstrap image
            self.metadata_cache[broker_id] = dict(self.controller.image.partitions)
        cache = self.metadata_cache[broker_id]

        def apply(delta: MetadataDelta) -> None:
            if broker.crashed:
                return
            self.applied_offset[broker_id] = max(self.applied_offset[broker_id], delta.offset)
            cache.update(delta.partitions)
            for tp in delta.deleted:
                cache.pop(tp, None)
            broker.apply_delta(delta, log_config_for=log_config_for)

        self.controller.subscribe(broker_id, apply, catch_up=catch_up)

    def metadata_for(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """A client's Metadata request: ``{tp: (leader, leader epoch)}`` as the broker answering it has applied
        them (``KafkaApis.handleTopicMetadataRequest`` reads the broker's ``MetadataCache``); empty when no
        broker is up. Simplification: the lowest-id broker that is up answers (Kafka's client asks its
        ``leastLoadedNode``), and the answer is read when the request arrives."""
        for broker_id in sorted(self.brokers):
            if self._alive(broker_id):
                cache = self.metadata_cache[broker_id]
                answer: dict[TopicPartition, tuple[int, int]] = {}
                for tp in partitions:
                    registration = cache.get(tp)
                    if registration is not None:
                        answer[tp] = (registration.leader, registration.leader_epoch)
                    else:
                        answer[tp] = (NO_LEADER, -1)
                return answer
        return {}

    # --- lifecycle (ControllerChannel for each broker) ----------------------------------------------

    def lifecycle(
        self, broker_id: int, *, heartbeat_interval_ms: int, session_timeout_ms: int, rack: str | None,
        rng: random.Random,
    ) -> BrokerLifecycleManager:
        manager = BrokerLifecycleManager(
            self.env, broker_id, _Channel(self, broker_id),
            heartbeat_interval_ms=heartbeat_interval_ms, session_timeout_ms=session_timeout_ms,
            metadata_offset=lambda: self.applied_offset[broker_id], rng=rng, rack=rack,
        )
        manager.on_caught_up = manager.set_ready_to_unfence  # no log recovery work to wait for
        self.lifecycles[broker_id] = manager
        return manager

    def broker_crashed(self, broker_id: int) -> None:
        self.incarnations[broker_id] += 1
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

        def answer(reply: AlterPartitionReply) -> None:
            result = _leader_and_isr(reply)

            def deliver() -> None:
                # The checker must know a committed ISR before the acknowledgements it makes possible.
                observer.alter_partition_committed(topic_partition, result)
                callback(result)
                observer.alter_partition_answered(topic_partition)

            self._to_broker(broker_id, incarnation, deliver)

        def send() -> None:
            epoch = self.lifecycles[broker_id].broker_epoch
            self.controller.alter_partition(broker_id, epoch, [request], on_reply=answer)

        self._to_controller(broker_id, send)


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
        self, broker_id: int, rack: str | None, callback: Callable[[BrokerRegistrationReply | None], None]
    ) -> None:
        link = self.link
        incarnation = link.incarnations[broker_id]

        def answer(reply: BrokerRegistrationReply) -> None:
            link._to_broker(broker_id, incarnation, lambda: callback(reply))

        link._to_controller(broker_id, lambda: link.controller.register_broker(
            broker_id, f"broker-{broker_id}/incarnation-{incarnation}", rack, on_reply=answer))

    def heartbeat(
        self, request: BrokerHeartbeatRequest, callback: Callable[[BrokerHeartbeatReply | None], None]
    ) -> None:
        link = self.link
        broker_id = request.broker_id
        incarnation = link.incarnations[broker_id]

        def answer(reply: BrokerHeartbeatReply) -> None:
            link._to_broker(broker_id, incarnation, lambda: callback(reply))

        link._to_controller(broker_id, lambda: link.controller.heartbeat(request, on_reply=answer))
