"""A test context for the controller core, after Kafka's ``ReplicationControlTestContext``: brokers are
registered and unfenced through real controller events, time is a ``ManualTime`` (Kafka's ``MockTime``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kafkasim.broker.alter_partition import AlterPartitionReply, AlterPartitionRequest, BrokerState
from kafkasim.broker.metadata import LEADER_RECOVERY_RECOVERED, PartitionRegistration
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.broker_heartbeat_manager import BrokerHeartbeatRequest
from kafkasim.controller.controller_core import ControllerCore
from kafkasim.controller.metadata_log import MetadataBatch
from kafkasim.controller.records import MetadataRecord
from kafkasim.timer.time import ManualTime

SESSION_TIMEOUT_MS = 9000


class ControllerTestContext:
    def __init__(self, session_timeout_ms: int = SESSION_TIMEOUT_MS, elr: bool = False) -> None:
        """``elr``: eligible leader replicas on (Kafka's ``Builder.setIsElrEnabled``; off by default there)."""
        self.time = ManualTime()
        self.core = ControllerCore(self.time, session_timeout_ms, eligible_leader_replicas_version=int(elr))
        self.replication = self.core.replication_control
        self.cluster = self.core.cluster_control
        self.heartbeats = self.core.heartbeat_manager

    def register_brokers(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            reply = self.core.register_broker(broker_id, f"incarnation-{broker_id}").response
            assert reply.epoch >= 0, reply

    def replay(self, records: Sequence[MetadataRecord]) -> MetadataBatch | None:
        """Kafka's ``replay(records)``: append the records as one batch and replay them."""
        return self.core._append(list(records))

    def handle_brokers_shutdown(self, is_clean_shutdown: bool, *broker_ids: int) -> None:
        """Kafka's ``handleBrokersShutdown``: the records a new incarnation of each broker would bring
        (``ReplicationControlManager.handleBrokerShutdown``), without registering it."""
        records: list[MetadataRecord] = []
        for broker_id in broker_ids:
            self.replication.handle_broker_shutdown(broker_id, is_clean_shutdown, records)
        self.replay(records)

    def restart_broker(self, broker_id: int, incarnation_id: str, *, clean: bool) -> MetadataBatch | None:
        """A new incarnation of the broker registers: after a clean shutdown its previous broker epoch is the
        registered one (Kafka's clean-shutdown file), otherwise it has none (-1)."""
        previous_broker_epoch = self.epoch(broker_id) if clean else -1
        result = self.core.register_broker(broker_id, incarnation_id, previous_broker_epoch=previous_broker_epoch)
        assert result.response.epoch >= 0, result.response
        return result.batch

    def epoch(self, broker_id: int) -> int:
        registration = self.cluster.registration(broker_id)
        assert registration is not None
        return registration.epoch

    def heartbeat(self, broker_id: int, *, want_fence: bool = False, want_shutdown: bool = False,
                  offset: int | None = None) -> object:
        request = BrokerHeartbeatRequest(broker_id, self.epoch(broker_id),
                                         self.core.log.end_offset if offset is None else offset,
                                         want_fence=want_fence, want_shutdown=want_shutdown)
        return self.core.process_broker_heartbeat(request).response

    def unfence_brokers(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            self.heartbeat(broker_id)
            registration = self.cluster.registration(broker_id)
            assert registration is not None and not registration.fenced

    def fence_brokers(self, broker_ids: Iterable[int]) -> None:
        """Kafka's ``fenceBrokers``: let every session expire, keep the others alive, fence the stale ones."""
        fence = set(broker_ids)
        self.time.sleep(self.heartbeats.session_timeout_ms + 1)
        for broker_id in sorted(self.cluster.registrations()):
            if broker_id not in fence:
                self.heartbeat(broker_id)
        while self.core.maybe_fence_one_stale_broker().response is not None:
            pass
        fenced = {b for b, r in self.cluster.registrations().items() if r.fenced}
        assert fenced == fence, (fenced, fence)

    def create_topic(self, name: str, assignment: Sequence[tuple[int, ...]], unclean: bool = False,
                     min_isr: int = 1) -> None:
        self.core.create_topic(name, assignment, unclean, min_isr)

    def partition(self, topic: str, index: int) -> PartitionRegistration:
        registration = self.core.partition(TopicPartition(topic, index))
        assert registration is not None
        return registration

    def alter_partition(
        self, topic: str, index: int, leader: int, isr: Sequence[int], *,
        recovery: int = LEADER_RECOVERY_RECOVERED, epochs: dict[int, int] | None = None,
        leader_epoch: int | None = None, partition_epoch: int | None = None, broker_epoch: int | None = None,
    ) -> AlterPartitionReply:
        tp = TopicPartition(topic, index)
        current = self.core.partition(tp)
        request = AlterPartitionRequest(
            tp,
            current.leader_epoch if leader_epoch is None and current is not None else (leader_epoch or 0),
            current.partition_epoch if partition_epoch is None and current is not None else (partition_epoch or 0),
            tuple(BrokerState(r, (epochs or {}).get(r, -1)) for r in isr), recovery)
        return self.core.alter_partition(leader, self.epoch(leader) if broker_epoch is None else broker_epoch,
                                         [request]).response
