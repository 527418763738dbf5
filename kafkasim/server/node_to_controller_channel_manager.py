"""The brokers' channels to the KRaft controller (Kafka's ``NodeToControllerChannelManager``).

Kafka's brokers reach the active controller through ``NodeToControllerChannelManager``: a
``BrokerLifecycleManager`` registers and heartbeats over the "heartbeat" channel, the
``AlterPartitionManager`` sends ISR changes over the "alter-partition" channel
(``server/alter_partition_manager.py``), and each broker applies the metadata the controller commits
(``server/metadata_loader.py``). Simplification: one ``NodeToControllerChannelManager`` serves every broker
(Kafka has one per broker and channel), each broker with its own latency stream and incarnation. Here:

* every message between a broker and the controller takes one draw of ``controller.link_latency`` (a
  stream per broker), each way;
* a broker that is crashed neither sends nor receives: a request it sent before crashing still reaches the
  controller, the answer is dropped, and the metadata the controller commits meanwhile is not delivered to
  it -- on restart it registers again and loads the whole committed image (a catch-up subscription).

A network partition that separates a broker from ``controller`` (``kafkasim.network.partitions``) cuts these
channels too: a message on the wire during the cut is lost. Kafka's ``NodeToControllerChannelManager`` then
decides what the broker sees:

* a registration or heartbeat (the "heartbeat" channel, whose request timeout is
  ``broker.heartbeat.interval.ms`` since Kafka 4.1, KAFKA-19294) fails after that timeout:
  ``BrokerLifecycleManager`` tries again a heartbeat interval later, and the controller fences the broker
  ``broker.session.timeout.ms`` after the last heartbeat that got through;
* an AlterPartition (the "alter-partition" channel: ``retryTimeoutMs`` = Long.MaxValue) is sent again each
  ``controller.socket.timeout.ms`` (30 s) until an answer gets through (``resend_unanswered``);
* the metadata the controller commits while the broker is cut off waits, in order, and is applied when the
  cut ends (``MetadataLoader``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from kafkasim.broker.alter_partition import AlterPartitionReply, AlterPartitionRequest
from kafkasim.broker.metadata import (
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    MetadataDelta,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.network.observer import Observer
from kafkasim.network.partitions import CONTROLLER_HOST, Cut, NetworkPartitions, broker_host
from kafkasim.server.alter_partition_manager import DefaultAlterPartitionManager
from kafkasim.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkasim.server.broker_server import BrokerServer
from kafkasim.server.metadata_loader import ApplyCost, MetadataLoader
from kafkasim.sim.calls import Call
from kafkasim.sim.distributions import Sampler

Reply = TypeVar("Reply")  # what the controller answers one exchange with

if TYPE_CHECKING:
    from simpy import Environment

CONTROLLER_SOCKET_TIMEOUT_MS = 30_000.0
"""``controller.socket.timeout.ms``: the request timeout of a broker's channels to the controller (Kafka's
``NodeToControllerChannelManagerImpl`` caps it at the channel's ``retryTimeoutMs``)."""


class MetadataImageView(Protocol):
    """What a broker reads of the controller's committed ``MetadataImage``."""

    @property
    def offset(self) -> int: ...
    @property
    def partitions(self) -> Mapping[TopicPartition, PartitionRegistration]: ...


class Controller(Protocol):
    """The active controller as the brokers' channels reach it: Kafka's ``Controller`` interface
    (``registerBroker``, ``processBrokerHeartbeat``, ``alterPartition``; each reply due once its records are
    committed) and the committed metadata log a broker's ``MetadataLoader`` follows (``subscribe``). The
    controller's ``QuorumController`` is one."""

    @property
    def image(self) -> MetadataImageView: ...

    def subscribe(self, broker_id: int, callback: Callable[[MetadataDelta], None], catch_up: bool = False) -> None: ...

    def unsubscribe(self, broker_id: int) -> None: ...

    def register_broker(
        self, broker_id: int, incarnation_id: str, rack: str | None = None,
        on_reply: Callable[[BrokerRegistrationReply], None] | None = None, previous_broker_epoch: int = -1,
    ) -> BrokerRegistrationReply: ...

    def heartbeat(
        self, request: BrokerHeartbeatRequest, on_reply: Callable[[BrokerHeartbeatReply], None] | None = None,
    ) -> BrokerHeartbeatReply: ...

    def alter_partition(
        self, broker_id: int, broker_epoch: int, partitions: Sequence[AlterPartitionRequest],
        on_reply: Callable[[AlterPartitionReply], None] | None = None,
    ) -> AlterPartitionReply: ...


class NodeToControllerChannelManager:
    """The messages between the brokers and the controller, each broker's lifecycle, its metadata
    (``metadata_loader``) and its AlterPartition requests (``alter_partition_manager``)."""

    def __init__(
        self,
        env: Environment,
        controller: Controller,
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
        self.controller = controller
        self.brokers = brokers
        self.latency = latency
        self.rngs = rngs
        self.lifecycles: dict[int, BrokerLifecycleManager] = {}
        # Per broker (set by MetadataLoader.subscribe): its incarnation; an answer to an earlier one is lost.
        self.incarnations: dict[int, int] = {}
        # When the controller received each broker's heartbeats (the failovers' last_heartbeat_ms).
        self.heartbeats_received: dict[int, list[float]] = {}
        # Brokers a network partition separates from the controller at some time, and their cut.
        self._cuts: dict[int, Cut] = {}
        if partitions is not None:
            for broker_id in rngs:
                cut = partitions.between(broker_host(broker_id), CONTROLLER_HOST)
                if cut is not None:
                    self._cuts[broker_id] = cut
        self.heartbeat_timeout_ms: dict[int, float] = {}
        self.metadata_loader = MetadataLoader(self, apply_costs or {})
        self.alter_partition_manager = DefaultAlterPartitionManager(self, observer)

    # --- plumbing ------------------------------------------------------------------------------------

    def alive(self, broker_id: int) -> bool:
        return not self.brokers[broker_id].crashed

    def cut(self, broker_id: int) -> Cut | None:
        """The network partition that separates ``broker_id`` from the controller at some time, if any."""
        return self._cuts.get(broker_id)

    def to_controller(self, broker_id: int, send: Callable[[], object]) -> None:
        """``send`` runs on the controller once the message from ``broker_id`` arrived (unless lost)."""
        if not self.alive(broker_id):
            return
        cut = self._cuts.get(broker_id)
        sent_ms = self.env.now

        def arrive(_e: object) -> None:
            if cut is not None and cut.severs(sent_ms, self.env.now):
                return  # lost in a network partition
            send()

        Call(self.env, max(0.0, self.latency.sample(self.rngs[broker_id])), arrive)

    def to_broker(self, broker_id: int, incarnation: int, deliver: Callable[[], None]) -> None:
        """``deliver`` runs on incarnation ``incarnation`` of ``broker_id`` once the answer arrived (unless lost)."""
        cut = self._cuts.get(broker_id)
        sent_ms = self.env.now

        def arrive(_e: object) -> None:
            if cut is not None and cut.severs(sent_ms, self.env.now):
                return  # lost in a network partition
            # An answer to an earlier incarnation, or to a broker that is down, is lost with its connection.
            if self.alive(broker_id) and self.incarnations[broker_id] == incarnation:
                deliver()

        Call(self.env, max(0.0, self.latency.sample(self.rngs[broker_id])), arrive)

    def exchange(self, broker_id: int, timeout_ms: float, callback: Callable[[Reply | None], None]
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

    def resend_unanswered(self, broker_id: int, incarnation: int, send: Callable[[], None],
                          answered: list[bool]) -> None:
        """``NodeToControllerRequestThread``: a request with no answer after the channel's request timeout is
        disconnected and sent again (the alter-partition channel never gives up: retryTimeoutMs is
        Long.MaxValue)."""

        def check(_e: object) -> None:
            if answered[0] or not self.alive(broker_id) or self.incarnations[broker_id] != incarnation:
                return
            self.to_controller(broker_id, send)
            Call(self.env, CONTROLLER_SOCKET_TIMEOUT_MS, check)

        Call(self.env, CONTROLLER_SOCKET_TIMEOUT_MS, check)

    # --- lifecycle (the heartbeat channel of each broker) -------------------------------------------

    def lifecycle(self, broker_id: int, *, heartbeat_interval_ms: int, rack: str | None) -> BrokerLifecycleManager:
        loader = self.metadata_loader
        manager = BrokerLifecycleManager(
            self.env, broker_id, HeartbeatChannel(self), heartbeat_interval_ms=heartbeat_interval_ms,
            metadata_offset=lambda: loader.applied_offset[broker_id], rack=rack,
        )
        manager.on_caught_up = manager.set_ready_to_unfence  # no log recovery work to wait for
        # Kafka's "heartbeat" channel: its request timeout is broker.heartbeat.interval.ms (BrokerServer, 4.1+,
        # KAFKA-19294; 4.0: min(controller.socket.timeout.ms, broker.session.timeout.ms / 2)).
        self.heartbeat_timeout_ms[broker_id] = float(heartbeat_interval_ms)
        self.lifecycles[broker_id] = manager
        return manager

    def broker_crashed(self, broker_id: int) -> None:
        self.incarnations[broker_id] += 1
        self.metadata_loader.drop_held(broker_id)
        self.lifecycles[broker_id].crash()
        self.controller.unsubscribe(broker_id)

    def broker_restarted(self, broker_id: int) -> None:
        """A new incarnation registers (``BrokerLifecycleManager.start``); it applies the committed metadata
        once its logs are loaded (``broker_logs_loaded``)."""
        self.incarnations[broker_id] += 1
        self.lifecycles[broker_id].start()

    def broker_logs_loaded(self, broker_id: int) -> None:
        """The restarted broker's first metadata publish (``BrokerMetadataPublisher``, after
        ``LogManager.startup``): it loads the whole committed image; its heartbeats then report it caught up."""
        self.metadata_loader.resubscribe(broker_id)


class HeartbeatChannel:
    """The brokers' "heartbeat" channel (Kafka's ``NodeToControllerChannelManager`` a
    ``BrokerLifecycleManager`` registers and heartbeats through): its ``ControllerChannel``."""

    __slots__ = ("manager",)

    def __init__(self, manager: NodeToControllerChannelManager) -> None:
        self.manager = manager

    def register_broker(
        self, broker_id: int, rack: str | None, previous_broker_epoch: int,
        callback: Callable[[BrokerRegistrationReply | None], None],
    ) -> None:
        manager = self.manager
        incarnation = manager.incarnations[broker_id]

        callback = manager.exchange(broker_id, manager.heartbeat_timeout_ms[broker_id], callback)

        def answer(reply: BrokerRegistrationReply) -> None:
            manager.to_broker(broker_id, incarnation, lambda: callback(reply))

        manager.to_controller(broker_id, lambda: manager.controller.register_broker(
            broker_id, f"broker-{broker_id}/incarnation-{incarnation}", rack, on_reply=answer,
            previous_broker_epoch=previous_broker_epoch))

    def heartbeat(
        self, request: BrokerHeartbeatRequest, callback: Callable[[BrokerHeartbeatReply | None], None]
    ) -> None:
        manager = self.manager
        broker_id = request.broker_id
        incarnation = manager.incarnations[broker_id]

        callback = manager.exchange(broker_id, manager.heartbeat_timeout_ms[broker_id], callback)

        def answer(reply: BrokerHeartbeatReply) -> None:
            manager.to_broker(broker_id, incarnation, lambda: callback(reply))

        def receive() -> None:
            manager.heartbeats_received.setdefault(broker_id, []).append(manager.env.now)
            manager.controller.heartbeat(request, on_reply=answer)

        manager.to_controller(broker_id, receive)
