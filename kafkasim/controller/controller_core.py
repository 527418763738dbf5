"""The SimPy-free half of Kafka's ``QuorumController``: one method per controller write event.

Each event generates its records against the current state (``ClusterControlManager``,
``ReplicationControlManager``, ``BrokerHeartbeatManager``), appends them as **one** atomic batch to the
``MetadataLog`` and replays them at once, so the next event sees them (Kafka replays a write event's
records before they are committed). Brokers see a batch only when it is committed (``commit``): the SimPy
``QuorumController`` commits after the append linger; tests call ``commit()`` by hand.

Time comes from a clock with ``milliseconds()`` (``kafkasim.timer.ManualTime`` in tests, like Kafka's
``MockTime``). Deterministic: no wall clock, no randomness, every iteration in sorted order.

Example (RF 3, brokers 0-2 bootstrapped unfenced at t=0, topic "t" with assignment [(0, 1, 2)]): broker 1
heartbeats at 2000, broker 2 at 2000, broker 0 never again. At 9000 + epsilon ``maybe_fence_one_stale_broker``
fences 0: one batch [PartitionChangeRecord(t-0, leader=1, isr=[1, 2]), BrokerRegistrationChangeRecord(0,
fence)]; t-0 gets leader epoch 1, partition epoch 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kafkasim.broker.alter_partition import AlterPartitionReply, AlterPartitionRequest
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.metadata import BrokerRegistration, BrokerRegistrationReply, PartitionRegistration
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.broker_heartbeat_manager import (
    DEFAULT_SESSION_TIMEOUT_MS,
    BrokerHeartbeatManager,
    BrokerHeartbeatRequest,
    ControllerTime,
)
from kafkasim.controller.cluster_control_manager import ClusterControlManager
from kafkasim.controller.metadata_log import MetadataBatch, MetadataImage, MetadataLog
from kafkasim.controller.records import (
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from kafkasim.controller.replication_control_manager import (
    BrokerHeartbeatReply,
    ReplicationControlManager,
)

R = TypeVar("R")

ELIGIBLE_LEADER_REPLICAS_VERSION_DEFAULT = 1
"""``EligibleLeaderReplicasVersion.LATEST_PRODUCTION`` as ``kafka-storage format`` sets it since Kafka 4.1."""


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    """Kafka's ``ControllerResult``: the event's answer and the batch it appended (None: no records). In
    Kafka the answer is sent once that batch is committed."""

    response: R
    batch: MetadataBatch | None


class ControllerCore:
    """Registrations, heartbeats, fencing, elections and AlterPartition over one metadata log."""

    __slots__ = ("time", "heartbeat_manager", "cluster_control", "replication_control", "log")

    def __init__(
        self, time: ControllerTime, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        eligible_leader_replicas_version: int = ELIGIBLE_LEADER_REPLICAS_VERSION_DEFAULT,
    ) -> None:
        """``eligible_leader_replicas_version``: Kafka's feature of that name, 1 (KIP-966's eligible leader
        replicas, the default of a cluster formatted by Kafka 4.1+) or 0 (Kafka 4.0's default)."""
        if eligible_leader_replicas_version not in (0, 1):
            raise ValueError(f"eligible.leader.replicas.version must be 0 or 1, got {eligible_leader_replicas_version}")
        self.time = time
        self.heartbeat_manager = BrokerHeartbeatManager(time, session_timeout_ms)
        self.cluster_control = ClusterControlManager(self.heartbeat_manager)
        self.replication_control = ReplicationControlManager(self.cluster_control,
                                                             eligible_leader_replicas_version >= 1)
        self.log = MetadataLog()

    # ----- reads
    @property
    def image(self) -> MetadataImage:
        """The committed image (what brokers can know)."""
        return self.log.image

    def partition(self, topic_partition: TopicPartition) -> PartitionRegistration | None:
        """The controller's latest registration (committed or not)."""
        return self.replication_control.partition(topic_partition)

    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return self.cluster_control.registration(broker_id)

    # ----- write events
    def _append(self, records: list[MetadataRecord]) -> MetadataBatch | None:
        """Append one atomic batch and replay it (Kafka's ``QuorumController.replay``)."""
        if not records:
            return None
        base = self.log.next_offset
        partitions: dict[TopicPartition, PartitionRegistration] = {}
        brokers: dict[int, BrokerRegistration] = {}
        replication = self.replication_control
        cluster = self.cluster_control
        for i, record in enumerate(records):
            if isinstance(record, PartitionChangeRecord):
                partitions[record.topic_partition] = replication.replay_partition_change(record)
            elif isinstance(record, BrokerRegistrationChangeRecord):
                brokers[record.broker_id] = cluster.replay_change(record)
            elif isinstance(record, PartitionRecord):
                partitions[record.topic_partition] = replication.replay_partition(record)
            elif isinstance(record, RegisterBrokerRecord):
                brokers[record.broker_id] = cluster.replay_register(record, base + i)
            elif isinstance(record, TopicRecord):
                replication.replay_topic(record)
            elif isinstance(record, ClearElrRecord):
                partitions.update(replication.replay_clear_elr(record))
        return self.log.append(tuple(records), partitions, brokers, self.time.milliseconds())

    def bootstrap(self, broker_ids: Iterable[int], racks: dict[int, str | None] | None = None) -> MetadataBatch:
        """A cluster already running when the simulation starts (as loaded from a snapshot): one committed
        batch registering every broker unfenced, each with a fresh session."""
        records: list[MetadataRecord] = []
        base = self.log.next_offset
        for i, broker_id in enumerate(sorted(broker_ids)):
            rack = (racks or {}).get(broker_id)
            records.append(RegisterBrokerRecord(broker_id, f"incarnation-{broker_id}-0", base + i, rack,
                                                fenced=False))
        batch = self._append(records)
        if batch is None:
            raise ValueError("bootstrap needs at least one broker")
        for record in records:
            assert isinstance(record, RegisterBrokerRecord)
            self.heartbeat_manager.touch(record.broker_id, False, batch.last_offset)
        self.log.commit(batch.last_offset)
        return batch

    def register_broker(
        self, broker_id: int, incarnation_id: str, rack: str | None = None, previous_broker_epoch: int = -1,
    ) -> ControllerResult[BrokerRegistrationReply]:
        """Kafka's ``registerBroker``: a new epoch (the offset the event starts writing at); the broker starts
        fenced. A new incarnation first leaves the ISRs (and, after an unclean shutdown with ELR on, the ELRs) of
        its previous one (``BrokerShutdownHandler``); ``previous_broker_epoch`` is the epoch its clean-shutdown
        file holds (-1: none, the process was killed)."""
        cluster = self.cluster_control
        records: list[MetadataRecord] = []
        # Kafka: QuorumController.registerBroker passes offsetControl.nextWriteOffset() as newBrokerEpoch, and
        # ClusterControlManager.registerBroker puts the shutdown records before the RegisterBrokerRecord: the
        # epoch is the offset of the batch's first record, the RegisterBrokerRecord's own offset only when no
        # shutdown record comes first (the heartbeat's catch-up check uses the record's own offset).
        new_broker_epoch = self.log.next_offset
        try:
            new_incarnation = cluster.is_new_incarnation(broker_id, incarnation_id)
            # Kafka checks the registration first, then generates the shutdown records, then the record itself.
            record = cluster.register_broker(broker_id, incarnation_id, new_broker_epoch, rack)
            if new_incarnation:
                self.replication_control.handle_broker_shutdown(
                    broker_id, cluster.is_clean_shutdown(broker_id, previous_broker_epoch), records)
        except KafkaError as e:
            return ControllerResult(BrokerRegistrationReply(-1, e.error), None)
        records.append(record)
        batch = self._append(records)
        return ControllerResult(BrokerRegistrationReply(record.broker_epoch), batch)

    def process_broker_heartbeat(self, request: BrokerHeartbeatRequest) -> ControllerResult[BrokerHeartbeatReply]:
        """Kafka's ``QuorumController.processBrokerHeartbeat``."""
        offset = self.cluster_control.register_broker_record_offset(request.broker_id)
        records: list[MetadataRecord] = []
        try:
            if offset is None:
                raise KafkaError(Errors.STALE_BROKER_EPOCH, f"Broker {request.broker_id} is not registered")
            reply = self.replication_control.process_broker_heartbeat(request, offset, records)
        except KafkaError as e:
            return ControllerResult(BrokerHeartbeatReply(False, True, False, False, e.error), None)
        batch = self._append(records)
        if reply.in_controlled_shutdown:
            # Kafka: processBatchEndOffset -- the shutdown waits for every active broker to reach this offset.
            self.heartbeat_manager.maybe_update_controlled_shutdown_offset(request.broker_id, self.log.end_offset)
        return ControllerResult(reply, batch)

    def maybe_fence_one_stale_broker(self) -> ControllerResult[int | None]:
        """Kafka's ``maybeFenceOneStaleBroker`` event: the fenced broker's id (None: none was stale)."""
        records: list[MetadataRecord] = []
        fenced = self.replication_control.maybe_fence_one_stale_broker(records)
        return ControllerResult(fenced, self._append(records))

    def maybe_elect_unclean_leaders(self) -> ControllerResult[bool]:
        """Kafka's periodic ``electUncleanLeaders`` event: True if partitions were left for a later pass."""
        records: list[MetadataRecord] = []
        more = self.replication_control.maybe_elect_unclean_leaders(records)
        return ControllerResult(more, self._append(records))

    def maybe_balance_partition_leaders(self) -> ControllerResult[bool]:
        """Kafka's periodic ``maybeBalancePartitionLeaders`` event: True if partitions were left for later."""
        records: list[MetadataRecord] = []
        more = self.replication_control.maybe_balance_partition_leaders(records)
        return ControllerResult(more, self._append(records))

    def alter_partition(
        self, broker_id: int, broker_epoch: int, partitions: Sequence[AlterPartitionRequest],
    ) -> ControllerResult[AlterPartitionReply]:
        records: list[MetadataRecord] = []
        try:
            responses = self.replication_control.alter_partition(broker_id, broker_epoch, partitions, records)
        except KafkaError as e:
            return ControllerResult(AlterPartitionReply(e.error), None)
        return ControllerResult(AlterPartitionReply(Errors.NONE, tuple(responses)), self._append(records))

    def create_topic(
        self, name: str, assignment: Sequence[tuple[int, ...]], unclean_leader_election_enable: bool = False,
        min_insync_replicas: int = 1,
    ) -> MetadataBatch:
        records = self.replication_control.create_topic(name, assignment, unclean_leader_election_enable,
                                                        min_insync_replicas)
        batch = self._append(records)
        assert batch is not None
        return batch

    def set_unclean_leader_election(self, topic: str, enabled: bool) -> None:
        self.replication_control.set_unclean_leader_election(topic, enabled)

    def set_min_insync_replicas(self, topic: str, value: int) -> MetadataBatch | None:
        """The topic's min.insync.replicas changes: with ELR on, a ``ClearElrRecord`` (the batch appended)."""
        records: list[MetadataRecord] = []
        self.replication_control.set_min_insync_replicas(topic, value, records)
        return self._append(records)

    def commit(self, offset: int | None = None) -> list[MetadataBatch]:
        """Commit every batch up to ``offset`` (default: everything appended)."""
        return self.log.commit(self.log.end_offset if offset is None else offset)
