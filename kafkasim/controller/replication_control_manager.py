"""Kafka's ``ReplicationControlManager``: topics, partitions, and what broker state changes do to them.

Every method *generates* records from the current state and returns them; nothing changes until the
controller replays the batch (``replay_*``), exactly like Kafka's ``generateRecordsAndResult`` then
``replay``. So all partitions of one event are decided against the same state.

* ``handle_broker_fenced`` (session expiry, SHUTDOWN_NOW): for every partition with the broker in its ISR,
  remove it; re-elect if it led; then ``BrokerRegistrationChangeRecord(fence)``.
* ``handle_broker_in_controlled_shutdown``: ``BrokerRegistrationChangeRecord(in controlled shutdown)`` first,
  then the same ISR removal and re-election.
* ``handle_broker_unfenced``: ``BrokerRegistrationChangeRecord(unfence)``, then an election for every
  partition with **no leader** (the broker being unfenced is acceptable though not yet unfenced in the
  registrations). It never re-adds the broker to an ISR: that is the leader's AlterPartition.
* ``alter_partition``: the leader's ISR change, validated in Kafka's order (``validateAlterPartitionData``).
* ``handle_broker_shutdown``: a new incarnation of a broker registers (``ClusterControlManager.registerBroker``'s
  ``BrokerShutdownHandler``). After an unclean shutdown (no clean-shutdown epoch) with ELR on, it leaves every
  ISR and ELR it is in and cannot lead them (``handleBrokerUncleanShutdown``); otherwise it leaves every ISR as
  if fenced.
* ``set_min_insync_replicas``: the topic's min.insync.replicas changes; with ELR on a ``ClearElrRecord``
  empties its partitions' ELR and last known ELR (``ConfigurationControlManager.createClearElrRecordsAsNeeded``).

Eligible leader replicas (KIP-966) follow ``eligible.leader.replicas.version`` (``FeatureControlManager
.isElrFeatureEnabled``): 1, Kafka 4.1+'s default for a new cluster, or 0, Kafka 4.0's.

The per-partition work is ``generateLeaderAndIsrUpdates``: ``isAcceptableLeader(r) = r != brokerToRemove and
(r == brokerToAdd or isActive(r))``, ``targetIsr = isr - {brokerToRemove}``, election ONLINE, or UNCLEAN when
the topic has ``unclean.leader.election.enable``. Partitions are visited in sorted (topic, partition) order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kafkasim.broker.alter_partition import AlterPartitionRequest, AlterPartitionResponse, BrokerState
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.metadata import (
    LEADER_RECOVERY_RECOVERED,
    LEADER_RECOVERY_RECOVERING,
    NO_LEADER,
    BrokerHeartbeatReply,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.broker_heartbeat_manager import (
    BrokerControlState,
    BrokerHeartbeatRequest,
)
from kafkasim.controller.cluster_control_manager import ClusterControlManager
from kafkasim.controller.partition_change_builder import Election, PartitionChangeBuilder
from kafkasim.controller.records import (
    FENCE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
    merge,
)

MAX_ELECTIONS_PER_IMBALANCE = 1000
"""``ReplicationControlManager.maxElectionsPerImbalance``: partitions one unclean-election pass handles."""


class ReplicationControlManager:
    """Kafka's ``ReplicationControlManager`` (no reassignment)."""

    __slots__ = ("cluster_control", "eligible_leader_replicas_enabled", "_partitions", "_topics", "_unclean",
                 "_min_isr", "_isr_index", "_elr_index", "_leaderships", "_leaderless", "_imbalanced",
                 "isr_shrinks", "isr_expands", "elections")

    def __init__(self, cluster_control: ClusterControlManager, eligible_leader_replicas_enabled: bool = True) -> None:
        self.cluster_control = cluster_control
        self.eligible_leader_replicas_enabled = eligible_leader_replicas_enabled
        self._partitions: dict[TopicPartition, PartitionRegistration] = {}
        self._topics: dict[str, int] = {}
        self._unclean: dict[str, bool] = {}
        self._min_isr: dict[str, int] = {}  # min.insync.replicas as configured (the effective one is capped)
        # Kafka's BrokersToIsrs: which partitions have a broker in their ISR, and how many it leads.
        self._isr_index: dict[int, set[TopicPartition]] = {}
        # Kafka's BrokersToElrs: which partitions have a broker in their ELR.
        self._elr_index: dict[int, set[TopicPartition]] = {}
        self._leaderships: dict[int, int] = {}
        self._leaderless = 0  # partitions with leader -1 (asked after every controller event)
        self._imbalanced: set[TopicPartition] = set()  # leader != replicas[0] (Kafka's imbalancedPartitions)
        # The ISR changes the controller makes itself (fencing, controlled shutdown, elections), one per
        # partition record: a leader's IsrShrinksPerSec / IsrExpandsPerSec never counts them.
        self.isr_shrinks = 0
        self.isr_expands = 0
        # The leaders the controller elected, by how (PartitionChangeBuilder.elected): "clean", "ELR",
        # "unclean", "last known leader".
        self.elections: dict[str, int] = {"clean": 0, "ELR": 0, "unclean": 0, "last known leader": 0}

    # ----- reads
    def partition(self, topic_partition: TopicPartition) -> PartitionRegistration | None:
        return self._partitions.get(topic_partition)

    def partitions(self) -> dict[TopicPartition, PartitionRegistration]:
        return dict(sorted(self._partitions.items()))

    def has_leaderships(self, broker_id: int) -> bool:
        """Kafka's ``BrokersToIsrs.hasLeaderships``."""
        return self._leaderships.get(broker_id, 0) > 0

    def partitions_with_broker_in_isr(self, broker_id: int) -> list[TopicPartition]:
        return sorted(self._isr_index.get(broker_id, ()))

    def partitions_with_broker_in_elr(self, broker_id: int) -> list[TopicPartition]:
        """Kafka's ``BrokersToElrs.partitionsWithBrokerInElr``."""
        return sorted(self._elr_index.get(broker_id, ()))

    def elr_sizes(self) -> dict[TopicPartition, int]:
        """How many eligible leader replicas each partition that has some holds (sorted)."""
        found: dict[TopicPartition, int] = {}
        for broker in self._elr_index.values():
            for tp in broker:
                found[tp] = found.get(tp, 0) + 1
        return dict(sorted(found.items()))

    def effective_min_isr(self, topic: str) -> int:
        """Kafka's ``getTopicEffectiveMinIsr``: min.insync.replicas, at most the replication factor."""
        first = self._partitions.get(TopicPartition(topic, 0))  # Kafka: topic.parts.get(0).replicas.length
        return min(self._min_isr.get(topic, 1), len(first.replicas) if first is not None else 1)

    def set_min_insync_replicas(self, topic: str, value: int, records: list[MetadataRecord]) -> None:
        """A topic's min.insync.replicas changes (Kafka: IncrementalAlterConfigs). With ELR on the partitions'
        ELR and last known ELR are cleared (``createClearElrRecordsAsNeeded``); it acts at once, like the
        config record it follows."""
        if topic not in self._topics:
            raise KeyError(f"unknown topic {topic!r}")
        if value < 1:
            raise ValueError(f"min.insync.replicas must be at least 1, got {value}")
        if self._min_isr.get(topic) == value:
            return  # Kafka writes no ConfigRecord, hence no ClearElrRecord, for an unchanged value
        self._min_isr[topic] = value
        if self.eligible_leader_replicas_enabled:
            records.append(ClearElrRecord(topic))

    def partitions_with_no_leader(self) -> list[TopicPartition]:
        return sorted(tp for tp, p in self._partitions.items() if p.leader == NO_LEADER)

    def are_some_partitions_leaderless(self) -> bool:
        """Kafka's ``areSomePartitionsLeaderless``."""
        return self._leaderless > 0

    def unclean_leader_election_enabled(self, topic: str) -> bool:
        """``unclean.leader.election.enable`` for the topic (Kafka's
        ``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic``)."""
        return self._unclean.get(topic, False)

    def set_unclean_leader_election(self, topic: str, enabled: bool) -> None:
        """A topic config change (Kafka: IncrementalAlterConfigs). It acts at the next election, or at the
        periodic ``maybeElectUncleanLeaders`` pass for partitions already offline."""
        if topic not in self._topics:
            raise KeyError(f"unknown topic {topic!r}")
        self._unclean[topic] = enabled

    # ----- topic creation
    def create_topic(
        self, name: str, assignment: Sequence[tuple[int, ...]], unclean_leader_election_enable: bool = False,
        min_insync_replicas: int = 1,
    ) -> list[MetadataRecord]:
        """Kafka's ``createTopic`` with a manual assignment (the placement): partition i gets ``assignment[i]``,
        ISR = its active replicas in replica order, leader = the first of them, epochs 0."""
        if name in self._topics:
            raise KafkaError(Errors.INVALID_REQUEST, f"Topic '{name}' already exists.")
        if not assignment:
            raise KafkaError(Errors.INVALID_REQUEST, f"Topic '{name}' needs at least one partition.")
        records: list[MetadataRecord] = [TopicRecord(name)]
        for index, replicas in enumerate(assignment):
            if not replicas or len(set(replicas)) != len(replicas):
                raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                 f"Topic '{name}' partition {index}: replicas {list(replicas)} must be distinct "
                                 "and non-empty.")
            isr = tuple(r for r in replicas if self.cluster_control.is_active(r))
            if not isr:
                raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                 f"All brokers specified in the manual partition assignment for partition {index} "
                                 "are fenced or in controlled shutdown.")
            records.append(PartitionRecord(TopicPartition(name, index), tuple(replicas), isr, isr[0]))
        self._unclean[name] = unclean_leader_election_enable
        self._min_isr[name] = min_insync_replicas
        return records

    # ----- broker state changes
    def _builder(
        self, partition: PartitionRegistration, tp: TopicPartition, is_acceptable_leader: Callable[[int], bool],
    ) -> PartitionChangeBuilder:
        return PartitionChangeBuilder(partition, tp, is_acceptable_leader, self.effective_min_isr(tp.topic),
                                      self.eligible_leader_replicas_enabled)

    def _count(self, partition: PartitionRegistration, record: PartitionChangeRecord,
               builder: PartitionChangeBuilder) -> None:
        """The controller's own ISR changes and the kind of each election it made."""
        if record.isr is not None:
            self.isr_shrinks += len(record.isr) < len(partition.isr)
            self.isr_expands += len(record.isr) > len(partition.isr)
        if builder.elected:
            self.elections[builder.elected] += 1

    def _generate_leader_and_isr_updates(
        self, broker_to_remove: int, broker_to_add: int, partitions: Iterable[TopicPartition],
        records: list[MetadataRecord], election: Election | None = None,
        broker_with_unclean_shutdown: int = NO_LEADER,
    ) -> None:
        """Kafka's ``generateLeaderAndIsrUpdates``: ``broker_with_unclean_shutdown`` leaves the ISR and the
        ELR and may not lead."""
        is_active = self.cluster_control.is_active
        removed = (broker_to_remove, broker_with_unclean_shutdown)

        def is_acceptable_leader(r: int) -> bool:
            return r not in removed and (r == broker_to_add or is_active(r))

        for tp in partitions:
            partition = self._partitions[tp]
            builder = self._builder(partition, tp, is_acceptable_leader)
            if election is not None:
                builder.set_election(election)
            elif self.unclean_leader_election_enabled(tp.topic):
                builder.set_election(Election.UNCLEAN)
            if broker_with_unclean_shutdown != NO_LEADER:
                builder.set_unclean_shutdown_replicas((broker_with_unclean_shutdown,))
            builder.set_target_isr([r for r in partition.isr if r not in removed])
            record = builder.build()
            if record is not None:
                records.append(record)
                self._count(partition, record, builder)

    def handle_broker_fenced(self, broker_id: int, records: list[MetadataRecord]) -> None:
        registration = self.cluster_control.registration(broker_id)
        if registration is None:
            raise KeyError(f"Can't find broker registration for broker {broker_id}")
        self._generate_leader_and_isr_updates(broker_id, NO_LEADER, self.partitions_with_broker_in_isr(broker_id),
                                              records)
        records.append(BrokerRegistrationChangeRecord(broker_id, registration.epoch, fenced=FENCE))

    def handle_broker_unfenced(self, broker_id: int, broker_epoch: int, records: list[MetadataRecord]) -> None:
        records.append(BrokerRegistrationChangeRecord(broker_id, broker_epoch, fenced=UNFENCE))
        self._generate_leader_and_isr_updates(NO_LEADER, broker_id, self.partitions_with_no_leader(), records)

    def handle_broker_in_controlled_shutdown(
        self, broker_id: int, broker_epoch: int, records: list[MetadataRecord],
    ) -> None:
        if not self.cluster_control.in_controlled_shutdown(broker_id):
            records.append(BrokerRegistrationChangeRecord(broker_id, broker_epoch, in_controlled_shutdown=True))
        self._generate_leader_and_isr_updates(broker_id, NO_LEADER, self.partitions_with_broker_in_isr(broker_id),
                                              records)

    def handle_broker_shutdown(self, broker_id: int, is_clean_shutdown: bool, records: list[MetadataRecord]) -> None:
        """Kafka's ``handleBrokerShutdown``, for a new incarnation registering: after an unclean shutdown with
        ELR on, the broker leaves every ISR and ELR it is in (its unflushed records may be gone); otherwise it
        leaves every ISR as if fenced."""
        if self.eligible_leader_replicas_enabled and not is_clean_shutdown:
            self._generate_leader_and_isr_updates(NO_LEADER, NO_LEADER, self.partitions_with_broker_in_isr(broker_id),
                                                  records, broker_with_unclean_shutdown=broker_id)
            # Kafka visits the ELR partitions as they are before this event's records are replayed.
            self._generate_leader_and_isr_updates(NO_LEADER, NO_LEADER, self.partitions_with_broker_in_elr(broker_id),
                                                  records, broker_with_unclean_shutdown=broker_id)
        else:
            self._generate_leader_and_isr_updates(broker_id, NO_LEADER, self.partitions_with_broker_in_isr(broker_id),
                                                  records)

    def process_broker_heartbeat(
        self, request: BrokerHeartbeatRequest, register_broker_record_offset: int, records: list[MetadataRecord],
    ) -> BrokerHeartbeatReply:
        """Kafka's ``processBrokerHeartbeat``: the state transition, its records, then ``touch``."""
        broker_id = request.broker_id
        self.cluster_control.check_broker_epoch(broker_id, request.broker_epoch)
        heartbeat_manager = self.cluster_control.heartbeat_manager
        states = heartbeat_manager.calculate_next_broker_state(
            broker_id, request, register_broker_record_offset, self.has_leaderships(broker_id))
        nxt = states.next
        if states.current is not nxt:
            if nxt is BrokerControlState.FENCED or nxt is BrokerControlState.SHUTDOWN_NOW:
                self.handle_broker_fenced(broker_id, records)
            elif nxt is BrokerControlState.UNFENCED:
                self.handle_broker_unfenced(broker_id, request.broker_epoch, records)
            else:
                self.handle_broker_in_controlled_shutdown(broker_id, request.broker_epoch, records)
        heartbeat_manager.touch(broker_id, nxt.fenced, request.current_metadata_offset)
        return BrokerHeartbeatReply(
            is_caught_up=request.current_metadata_offset >= register_broker_record_offset,
            is_fenced=nxt.fenced, in_controlled_shutdown=nxt.in_controlled_shutdown,
            should_shut_down=nxt.should_shut_down)

    def maybe_fence_one_stale_broker(self, records: list[MetadataRecord]) -> int | None:
        """Kafka's ``maybeFenceOneStaleBroker``: fence the broker with the oldest expired session, if any (one
        per controller event)."""
        heartbeat_manager = self.cluster_control.heartbeat_manager
        broker_id = heartbeat_manager.find_one_stale_broker()
        if broker_id is None:
            return None
        self.handle_broker_fenced(broker_id, records)
        heartbeat_manager.fence(broker_id)
        return broker_id

    def maybe_elect_unclean_leaders(self, records: list[MetadataRecord]) -> bool:
        """Kafka's ``maybeElectUncleanLeaders``: an UNCLEAN election for leaderless partitions of topics that
        allow it, until ``MAX_ELECTIONS_PER_IMBALANCE`` records. True: there may be more to do (rerun soon)."""
        for tp in self.partitions_with_no_leader():
            if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
                break
            if self.unclean_leader_election_enabled(tp.topic):
                self._generate_leader_and_isr_updates(NO_LEADER, NO_LEADER, (tp,), records,
                                                      election=Election.UNCLEAN)
        return len(records) >= MAX_ELECTIONS_PER_IMBALANCE

    def are_partition_leaders_imbalanced(self) -> bool:
        """Kafka's ``arePartitionLeadersImbalanced``: some partition is not led by its preferred replica."""
        return bool(self._imbalanced)

    def maybe_balance_partition_leaders(self, records: list[MetadataRecord]) -> bool:
        """Kafka's ``maybeBalancePartitionLeaders``: a PREFERRED election (leader := replicas[0] if it is in the
        ISR and active) for imbalanced partitions, until ``MAX_ELECTIONS_PER_IMBALANCE`` records. True: there
        may be more to do (rerun soon)."""
        is_active = self.cluster_control.is_active
        for tp in sorted(self._imbalanced):
            if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
                break
            partition = self._partitions[tp]
            builder = self._builder(partition, tp, is_active).set_election(Election.PREFERRED)
            record = builder.build()
            if record is not None:
                records.append(record)
                self._count(partition, record, builder)
        return len(records) >= MAX_ELECTIONS_PER_IMBALANCE

    # ----- AlterPartition
    def alter_partition(
        self, broker_id: int, broker_epoch: int, partitions: Sequence[AlterPartitionRequest],
        records: list[MetadataRecord],
    ) -> list[AlterPartitionResponse]:
        """Kafka's ``alterPartition``. Raises ``KafkaError(STALE_BROKER_EPOCH)`` for the whole request."""
        self.cluster_control.check_broker_epoch(broker_id, broker_epoch)
        is_active = self.cluster_control.is_active
        responses: list[AlterPartitionResponse] = []
        for data in partitions:
            tp = data.topic_partition
            partition = self._partitions.get(tp)
            error = self._validate_alter_partition_data(broker_id, partition, data)
            if error is not Errors.NONE or partition is None:
                responses.append(AlterPartitionResponse(tp, error))
                continue
            builder = self._builder(partition, tp, is_active)
            if self.unclean_leader_election_enabled(tp.topic):
                builder.set_election(Election.UNCLEAN)
            builder.set_target_isr([s.broker_id for s in data.new_isr_with_epochs])
            builder.set_target_leader_recovery_state(data.leader_recovery_state)
            record = builder.build()
            if record is not None:
                records.append(record)
                partition = merge(partition, record)
                if record.leader != broker_id and record.leader != -2:
                    # Kafka: only a completed reassignment may move the leader here.
                    responses.append(AlterPartitionResponse(tp, Errors.NEW_LEADER_ELECTED))
                    continue
            responses.append(AlterPartitionResponse(
                tp, Errors.NONE, partition.leader, partition.isr, partition.leader_recovery_state,
                partition.leader_epoch, partition.partition_epoch))
        return responses

    def _validate_alter_partition_data(
        self, broker_id: int, partition: PartitionRegistration | None, data: AlterPartitionRequest,
    ) -> Errors:
        """Kafka's ``validateAlterPartitionData``, in Kafka's order."""
        if partition is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        # A higher epoch than the controller's: this node is probably no longer the active controller.
        if data.leader_epoch > partition.leader_epoch or data.partition_epoch > partition.partition_epoch:
            return Errors.NOT_CONTROLLER
        if data.leader_epoch < partition.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if broker_id != partition.leader:
            return Errors.INVALID_REQUEST
        if data.partition_epoch < partition.partition_epoch:
            return Errors.INVALID_UPDATE_VERSION
        new_isr = [s.broker_id for s in data.new_isr_with_epochs]
        # Kafka: Replicas.validateIsr -- members are replicas, no duplicates; and the ISR keeps the leader.
        if len(set(new_isr)) != len(new_isr) or any(r not in partition.replicas for r in new_isr):
            return Errors.INVALID_REQUEST
        if partition.leader not in new_isr:
            return Errors.INVALID_REQUEST
        if data.leader_recovery_state == LEADER_RECOVERY_RECOVERING and len(new_isr) > 1:
            return Errors.INVALID_REQUEST
        if (partition.leader_recovery_state == LEADER_RECOVERY_RECOVERED
                and data.leader_recovery_state == LEADER_RECOVERY_RECOVERING):
            return Errors.INVALID_REQUEST
        if self._ineligible_replicas_for_isr(data.new_isr_with_epochs):
            return Errors.INELIGIBLE_REPLICA
        return Errors.NONE

    def _ineligible_replicas_for_isr(self, states: Iterable[BrokerState]) -> list[int]:
        """Kafka's ``ineligibleReplicasForIsr``: not registered, in controlled shutdown, fenced, or a broker
        epoch other than the registration's."""
        ineligible: list[int] = []
        for state in states:
            registration = self.cluster_control.registration(state.broker_id)
            if (registration is None or registration.in_controlled_shutdown or registration.fenced
                    or (state.broker_epoch != -1 and registration.epoch != state.broker_epoch)):
                ineligible.append(state.broker_id)
        return ineligible

    # ----- replay
    def replay_topic(self, record: TopicRecord) -> None:
        self._topics[record.name] = self._topics.get(record.name, 0)
        self._unclean.setdefault(record.name, False)

    def replay_partition(self, record: PartitionRecord) -> PartitionRegistration:
        registration = PartitionRegistration(record.replicas, record.isr, record.leader, record.leader_epoch,
                                             record.partition_epoch)
        self._topics[record.topic_partition.topic] = self._topics.get(record.topic_partition.topic, 0) + 1
        self._set(record.topic_partition, None, registration)
        return registration

    def replay_clear_elr(self, record: ClearElrRecord) -> list[tuple[TopicPartition, PartitionRegistration]]:
        """Kafka's ``replay(ClearElrRecord)`` (``removeTopicElrs``): each partition of the topic (every topic:
        ``topic`` None) with an ELR or last known ELR gets both emptied, through ``merge`` (partition epoch +1).
        The partitions changed, with their new registrations."""
        changed: list[tuple[TopicPartition, PartitionRegistration]] = []
        for tp, old in sorted(self._partitions.items()):
            if (record.topic is None or tp.topic == record.topic) and (old.elr or old.last_known_elr):
                new = merge(old, PartitionChangeRecord(tp, elr=(), last_known_elr=()))
                self._set(tp, old, new)
                changed.append((tp, new))
        return changed

    def replay_partition_change(self, record: PartitionChangeRecord) -> PartitionRegistration:
        tp = record.topic_partition
        old = self._partitions[tp]
        new = merge(old, record)
        self._set(tp, old, new)
        return new

    def _set(self, tp: TopicPartition, old: PartitionRegistration | None, new: PartitionRegistration) -> None:
        if new.elr and not set(new.elr).isdisjoint(new.isr):
            # Kafka's updatePartitionInfo logs "has overlapping ISR ... and ELR": a broken rule, here an error.
            raise AssertionError(f"{tp}: ISR {list(new.isr)} and ELR {list(new.elr)} overlap")
        if old is not None:
            for r in old.elr:
                self._elr_index[r].discard(tp)
            for r in old.isr:
                self._isr_index[r].discard(tp)
            if old.leader != NO_LEADER:
                self._leaderships[old.leader] -= 1
            else:
                self._leaderless -= 1
        for r in new.isr:
            self._isr_index.setdefault(r, set()).add(tp)
        for r in new.elr:
            self._elr_index.setdefault(r, set()).add(tp)
        if new.leader != NO_LEADER:
            self._leaderships[new.leader] = self._leaderships.get(new.leader, 0) + 1
        else:
            self._leaderless += 1
        if new.replicas and new.leader == new.replicas[0]:
            self._imbalanced.discard(tp)
        else:
            self._imbalanced.add(tp)
        self._partitions[tp] = new
