"""``ReplicaManager``: the leader broker's produce and fetch paths and its partitions (Kafka's
``ReplicaManager.appendRecords``, ``fetchMessages``, ``readFromLog``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafkasim.broker.action_queue import ActionQueue
from kafkasim.broker.alter_partition import AlterPartitionManager
from kafkasim.broker.applied_delta import AppliedDelta, FollowerFetchStart, initial_fetch_offset
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.delayed_fetch import DelayedFetch, FetchResponseCallback
from kafkasim.broker.delayed_produce import DelayedProduce, ProduceResponseCallback
from kafkasim.broker.disk import Disk
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import (
    FetchParams,
    FetchPartitionStatus,
    LogReadResult,
    PartitionData,
    out_of_range_result,
)
from kafkasim.broker.log import LeaderHwChange, Log, LogAppendInfo
from kafkasim.broker.log_offset_metadata import UNKNOWN_OFFSET_METADATA
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.metadata import NO_LEADER, MetadataDelta, PartitionRegistration
from kafkasim.broker.metrics import BrokerMetrics
from kafkasim.broker.observer import BrokerObserver
from kafkasim.broker.partition import DelayedOperations, Partition
from kafkasim.broker.partition_listeners import PartitionListeners
from kafkasim.broker.produce import PartitionResponse, ProducePartitionStatus
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.session_reads.partition_changes import PartitionChanges
from kafkasim.purgatory import (
    DelayedOperationPurgatory,
    GroupWatchStrategy,
    TopicPartitionOperationKey,
    new_purgatory_timer,
)

if TYPE_CHECKING:
    from kafkasim.timer import Time

VALID_ACKS: Final = (-1, 0, 1)

__all__ = ["VALID_ACKS", "AppliedDelta", "FollowerFetchStart", "ReplicaManager", "initial_fetch_offset"]


class ReplicaManager:
    """The partitions this broker hosts, the Produce and Fetch purgatories, and the action queue.

    The engine drives it like KafkaApis does: ``append_records`` / ``fetch_messages`` per request, then
    ``try_complete_actions()`` at the end of every request; ``maybe_shrink_isr()`` every
    ``config.isr_expiration_interval_ms``; ``produce_purgatory.advance_clock()`` and
    ``fetch_purgatory.advance_clock()`` from its expiration reaper.
    """

    __slots__ = (
        "broker_id",
        "disk",
        "config",
        "time",
        "alter_partition_manager",
        "produce_purgatory",
        "fetch_purgatory",
        "metrics",
        "action_queue",
        "fenced_brokers",
        "shutting_down_brokers",
        "in_controlled_shutdown",
        "observer",
        "partition_changes",
        "_partitions",
        "_offline_partitions",
        "_known_partitions",
        "_operation_keys",
        "_listeners",
        "_seed",
    )

    def __init__(
        self,
        broker_id: int,
        config: KafkaConfig,
        time: Time,
        *,
        alter_partition_manager: AlterPartitionManager,
        produce_purgatory: DelayedOperationPurgatory | None = None,
        fetch_purgatory: DelayedOperationPurgatory | None = None,
        partition_changes: PartitionChanges | None = None,
        rng: random.Random | None = None,
        observer: BrokerObserver | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.time = time
        self.alter_partition_manager = alter_partition_manager
        self.produce_purgatory = produce_purgatory or self._new_purgatory("Produce")
        self.fetch_purgatory = fetch_purgatory or self._new_purgatory("Fetch")
        self.metrics = BrokerMetrics()
        self.action_queue = ActionQueue()
        # The run's invariant checks (None in unit tests): leadership taken, acks=all partitions settled.
        self.observer = observer
        # Brokers the (simulated) controller has fenced: not ISR-eligible (KRaft's isReplicaIsrEligible).
        self.fenced_brokers: set[int] = set()
        # Brokers in controlled shutdown (the metadata cache's isBrokerShuttingDown): not ISR-eligible either.
        self.shutting_down_brokers: set[int] = set()
        # This process began a controlled shutdown (Kafka 4.x's ReplicaManager.isInControlledShutdown, set by
        # beginControlledShutdown; not read from the metadata: a restarted process must not inherit the
        # in-controlled-shutdown registration of the incarnation before it).
        self.in_controlled_shutdown = False
        self._partitions: dict[TopicPartition, Partition] = {}
        self._offline_partitions: set[TopicPartition] = set()
        # The metadata cache's view: partitions that exist in the cluster, hosted here or not.
        self._known_partitions: set[TopicPartition] = set()
        self._operation_keys: dict[TopicPartition, TopicPartitionOperationKey] = {}
        # Every change of a hosted partition a parked DelayedFetch's verdict depends on, as it happens.
        self.partition_changes = partition_changes if partition_changes is not None else PartitionChanges()
        self._listeners = PartitionListeners(broker_id, self.partition_changes, observer, self._partitions)
        # One draw, then per-partition streams named after the partition: adding a partition does not
        # change another partition's segment jitter.
        self._seed = rng.getrandbits(64) if rng is not None else 0
        # The broker's disk, which the logs it creates flush to (set by the BrokerServer when the run models
        # flushes: kafkasim.broker.disk); None: flushing left to the OS, at no cost.
        self.disk: Disk | None = None

    def _new_purgatory(self, name: str) -> DelayedOperationPurgatory:
        config = self.config
        return DelayedOperationPurgatory(
            name,
            new_purgatory_timer(config.purgatory_timer, name, self.time),
            broker_id=self.broker_id,
            purge_interval=(config.producer_purgatory_purge_interval_requests if name == "Produce"
                            else config.fetch_purgatory_purge_interval_requests),
            # Not Kafka's: a fetch parked on a large session watches its partitions as one KeyGroup
            # (kafkasim.broker.session_reads).
            group_watch_strategy=GroupWatchStrategy() if name == "Fetch" else None,
        )

    def begin_controlled_shutdown(self) -> None:
        """Kafka's ``ReplicaManager.beginControlledShutdown`` (called by ``BrokerServer.shutdown`` before the
        lifecycle manager asks the controller): from now on a partition this broker follows stops fetching
        once it has no leader or this broker is out of its ISR (``applyLocalFollowersDelta``)."""
        self.in_controlled_shutdown = True

    def restart(self) -> None:
        """The broker process starts again over the same logs (it crashed). Everything in memory is gone:
        the parked operations (never answered: their clients saw the connection reset), the actions queued,
        every partition's leadership and replica states (``Partition.restart``); the logs stay, and the
        metadata image the broker loads next makes it leader or follower again (``apply_delta``)."""
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        self.produce_purgatory = self._new_purgatory("Produce")
        self.fetch_purgatory = self._new_purgatory("Fetch")
        self.action_queue = ActionQueue()
        self.in_controlled_shutdown = False
        for tp, partition in self._partitions.items():
            partition.restart(DelayedOperations(self.operation_key(tp), self.produce_purgatory, self.fetch_purgatory))

    # ------------------------------------------------------------------------------------ partitions

    def create_partition(
        self, topic_partition: TopicPartition, *, log_config: LogConfig | None = None, log_start_offset: int = 0
    ) -> Partition:
        """Host ``topic_partition`` here with an empty log (not leader until ``make_leader``)."""
        if topic_partition in self._partitions:
            raise ValueError(f"broker {self.broker_id} already hosts partition {topic_partition}")
        listeners = self._listeners
        on_change = listeners.on_change(topic_partition)
        log = Log(
            log_config or self.config.log,
            self.time,
            log_start_offset=log_start_offset,
            rng=random.Random(f"{self._seed}:{topic_partition}"),
            name=str(topic_partition),
            on_change=on_change,
            producer_id_expiration_ms=self.config.producer_id_expiration_ms,
            on_roll=listeners.on_roll(topic_partition),
            on_high_watermark_segment=listeners.on_high_watermark_segment(topic_partition),
            disk=self.disk,
        )
        partition = Partition(
            topic_partition,
            self.broker_id,
            self.config,
            self.time,
            log,
            self.alter_partition_manager,
            delayed_operations=DelayedOperations(
                self.operation_key(topic_partition), self.produce_purgatory, self.fetch_purgatory
            ),
            metrics=self.metrics,
            is_replica_isr_eligible=self._is_replica_isr_eligible,
            on_change=on_change,
        )
        self._partitions[topic_partition] = partition
        self._offline_partitions.discard(topic_partition)
        self._known_partitions.add(topic_partition)
        on_change()
        return partition

    def make_leader(
        self,
        topic_partition: TopicPartition,
        *,
        replicas: Sequence[int],
        isr: Iterable[int] | None = None,
        leader_epoch: int = 0,
        partition_epoch: int = 0,
    ) -> Partition:
        """Lead ``topic_partition`` (created if needed) with the given replicas and ISR (default: all)."""
        partition = self._partitions.get(topic_partition) or self.create_partition(topic_partition)
        partition.make_leader(leader_epoch, replicas if isr is None else isr, replicas, partition_epoch)
        self._listeners.became_leader(topic_partition, partition)
        return partition

    def make_follower(
        self,
        topic_partition: TopicPartition,
        *,
        leader: int,
        replicas: Sequence[int],
        leader_epoch: int,
        partition_epoch: int,
    ) -> Partition:
        """Hand leadership to ``leader``: parked produces and fetches complete with NOT_LEADER_OR_FOLLOWER."""
        partition = self.get_partition_or_exception(topic_partition)
        partition.make_follower(leader, leader_epoch, (), replicas, partition_epoch)
        self.complete_delayed_operations_when_not_partition_leader(topic_partition)
        return partition

    def stop_replica(self, topic_partition: TopicPartition, *, delete: bool = False) -> None:
        """Stop hosting the partition: parked operations complete with NOT_LEADER_OR_FOLLOWER, or with
        UNKNOWN_TOPIC_OR_PARTITION when ``delete`` also removes it from the cluster (topic deletion)."""
        self._stop_partitions({topic_partition: delete}, AppliedDelta())

    def mark_partition_offline(self, topic_partition: TopicPartition) -> None:
        """Its log directory failed: requests get KAFKA_STORAGE_ERROR; parked operations complete."""
        if self._partitions.pop(topic_partition, None) is not None:
            self._offline_partitions.add(topic_partition)
        self.partition_changes.record(topic_partition)
        self.complete_delayed_operations_when_not_partition_leader(topic_partition)

    def complete_delayed_operations_when_not_partition_leader(self, topic_partition: TopicPartition) -> None:
        key = self.operation_key(topic_partition)
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    def _is_replica_isr_eligible(self, broker_id: int) -> bool:
        # KRaft's Partition.isReplicaIsrEligible: not fenced and not shutting down in the metadata cache.
        return broker_id not in self.fenced_brokers and broker_id not in self.shutting_down_brokers

    # ------------------------------------------------------------------------------------- metadata

    def apply_delta(
        self, delta: MetadataDelta, *, log_config_for: Callable[[TopicPartition], LogConfig] | None = None
    ) -> AppliedDelta:
        """Act on one committed metadata delta (Kafka's ``ReplicaManager.applyDelta``), in Kafka's order:
        the broker registrations first (the metadata cache is updated before ``applyDelta`` runs, so ISR
        eligibility reads the new image), then deletions (``stopPartitions``), new leaders
        (``applyLocalLeadersDelta``), new followers (``applyLocalFollowersDelta``).

        The fetchers are the caller's (the server's ``ReplicaFetcherManager``; this layer runs no thread):
        the result says which partitions leave their fetcher and which start fetching where. Partitions
        named in the delta that this broker does not host yet are created (``getOrCreatePartition``) with
        ``log_config_for(tp)`` (default: the broker's log config)."""
        result = AppliedDelta()
        local = self.broker_id
        for broker_id, broker in delta.brokers.items():
            if broker.fenced:
                self.fenced_brokers.add(broker_id)
            else:
                self.fenced_brokers.discard(broker_id)
            if broker.in_controlled_shutdown:
                self.shutting_down_brokers.add(broker_id)
            else:
                self.shutting_down_brokers.discard(broker_id)
        # TopicsDelta.localChanges: deleted partitions, and partitions this broker no longer replicates.
        deletes: dict[TopicPartition, bool] = {tp: True for tp in delta.deleted if tp in self._partitions}
        leaders: dict[TopicPartition, PartitionRegistration] = {}
        followers: dict[TopicPartition, PartitionRegistration] = {}
        for tp, registration in delta.partitions.items():
            if tp in delta.deleted:
                continue
            self._known_partitions.add(tp)
            if local not in registration.replicas:
                if tp in self._partitions:
                    deletes[tp] = False
            elif registration.leader == local:
                leaders[tp] = registration
            else:
                followers[tp] = registration
        for tp in delta.deleted:
            self._known_partitions.discard(tp)
        if deletes:
            self._stop_partitions(deletes, result)
        if leaders:
            self._apply_local_leaders_delta(leaders, result, log_config_for)
        if followers:
            self._apply_local_followers_delta(followers, result, log_config_for)
        return result

    def _get_or_create_partition(
        self, tp: TopicPartition, log_config_for: Callable[[TopicPartition], LogConfig] | None
    ) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            partition = self.create_partition(tp, log_config=log_config_for(tp) if log_config_for else None)
        return partition

    def _stop_partitions(self, partitions: Mapping[TopicPartition, bool], result: AppliedDelta) -> None:
        """Kafka's ``ReplicaManager.stopPartitions``: fetchers first, then the partitions leave the map (their
        logs with them: ``delete`` is True for a deleted topic), then parked operations complete."""
        result.fetchers_to_remove.extend(partitions)
        for tp, delete in partitions.items():
            self._partitions.pop(tp, None)
            if delete:
                self._known_partitions.discard(tp)
            self.partition_changes.record(tp)
            result.stopped.append(tp)
            self.complete_delayed_operations_when_not_partition_leader(tp)

    def _apply_local_leaders_delta(
        self,
        leaders: Mapping[TopicPartition, PartitionRegistration],
        result: AppliedDelta,
        log_config_for: Callable[[TopicPartition], LogConfig] | None,
    ) -> None:
        """Kafka's ``ReplicaManager.applyLocalLeadersDelta``: stop fetching them all, then
        ``Partition.makeLeader`` each (ignored if its partition epoch is older than the local one)."""
        result.fetchers_to_remove.extend(leaders)
        listeners = self._listeners
        for tp, registration in leaders.items():
            partition = self._get_or_create_partition(tp, log_config_for)
            listeners.isr_from_metadata(tp, registration)
            partition.make_leader(
                registration.leader_epoch, registration.isr, registration.replicas, registration.partition_epoch
            )
            if partition.is_leader and partition.partition_epoch == registration.partition_epoch:
                result.leaders.append(tp)
                listeners.became_leader(tp, partition)

    def _apply_local_followers_delta(
        self,
        followers: Mapping[TopicPartition, PartitionRegistration],
        result: AppliedDelta,
        log_config_for: Callable[[TopicPartition], LogConfig] | None,
    ) -> None:
        """Kafka's ``ReplicaManager.applyLocalFollowersDelta``: ``Partition.makeFollower`` for each (no
        truncation here: it happens on the first fetch, from the diverging epoch); a partition whose leader
        epoch is new restarts fetching from its leader at ``initialFetchOffset`` (none if it has no
        leader), and its parked operations complete (``completeDelayedOperationsWhenNotPartitionLeader``).
        In controlled shutdown, a partition without a leader or without this broker in its ISR stops."""
        to_start: dict[TopicPartition, Partition] = {}
        to_stop: dict[TopicPartition, bool] = {}
        local = self.broker_id
        for tp, registration in followers.items():
            partition = self._get_or_create_partition(tp, log_config_for)
            is_new_leader_epoch = partition.make_follower(
                registration.leader,
                registration.leader_epoch,
                registration.isr,
                registration.replicas,
                registration.partition_epoch,
            )
            result.followers.append(tp)
            if self.in_controlled_shutdown and (registration.leader == NO_LEADER or local not in registration.isr):
                to_stop[tp] = False
            elif is_new_leader_epoch:
                to_start[tp] = partition
        if to_start:
            # Stopping the fetchers first initializes the fetch position correctly (Kafka's comment).
            result.fetchers_to_remove.extend(to_start)
            for tp, partition in to_start.items():
                leader = partition.leader_replica_id
                if leader is not None and leader != NO_LEADER:
                    result.fetchers_to_add[tp] = FollowerFetchStart(
                        leader, partition.leader_epoch, initial_fetch_offset(partition.log)
                    )
            for tp in to_start:
                self.complete_delayed_operations_when_not_partition_leader(tp)
        if to_stop:
            # Kafka's stopPartitions with delete = false: the fetcher goes, the partition stays.
            result.fetchers_to_remove.extend(to_stop)
            for tp in to_stop:
                result.stopped.append(tp)
                self.complete_delayed_operations_when_not_partition_leader(tp)

    def operation_key(self, topic_partition: TopicPartition) -> TopicPartitionOperationKey:
        key = self._operation_keys.get(topic_partition)
        if key is None:
            key = self._operation_keys[topic_partition] = TopicPartitionOperationKey(
                topic_partition.topic, topic_partition.partition
            )
        return key

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]:
        return self._partitions

    def get_partition_or_error(self, topic_partition: TopicPartition) -> Partition | Errors:
        partition = self._partitions.get(topic_partition)
        if partition is not None:
            return partition
        if topic_partition in self._offline_partitions:
            return Errors.KAFKA_STORAGE_ERROR
        if topic_partition in self._known_partitions:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION

    def get_partition_or_exception(self, topic_partition: TopicPartition) -> Partition:
        partition = self._partitions.get(topic_partition)
        if partition is not None:
            return partition
        error = self.get_partition_or_error(topic_partition)
        assert isinstance(error, Errors)
        raise KafkaError(error, f"partition {topic_partition} on broker {self.broker_id}")

    # --------------------------------------------------------------------------------------- produce

    def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries_per_partition: Mapping[TopicPartition, Sequence[RecordBatch]],
        response_callback: ProduceResponseCallback,
    ) -> None:
        """Kafka's ``ReplicaManager.appendRecords``. ``response_callback`` runs exactly once: now (acks 0/1,
        invalid acks, every partition failed) or when the DelayedProduce completes or expires."""
        if required_acks not in VALID_ACKS:
            response_callback(
                {tp: PartitionResponse(Errors.INVALID_REQUIRED_ACKS) for tp in entries_per_partition}
            )
            return
        local_results = self._append_to_local_log(entries_per_partition, required_acks)
        produce_status: dict[TopicPartition, ProducePartitionStatus] = {}
        failed = 0
        for tp, (info, error, message) in local_results.items():
            if error is not Errors.NONE:
                failed += 1
            produce_status[tp] = ProducePartitionStatus(
                info.last_offset + 1,
                PartitionResponse(
                    error, info.first_offset, info.last_offset, info.log_append_time, info.log_start_offset, message
                ),
            )
        self._add_complete_purgatory_action(local_results)
        if required_acks == -1 and entries_per_partition and failed < len(entries_per_partition):
            operation = DelayedProduce(timeout_ms, required_acks, produce_status, self, response_callback)
            # Watched on every partition of the request, failed ones included (as Kafka's ``appendRecords``).
            keys = [self.operation_key(tp) for tp in entries_per_partition]
            self.produce_purgatory.try_complete_else_watch(operation, keys)
        else:
            response_callback({tp: status.response_status for tp, status in produce_status.items()})

    def _append_to_local_log(
        self, entries_per_partition: Mapping[TopicPartition, Sequence[RecordBatch]], required_acks: int
    ) -> dict[TopicPartition, tuple[LogAppendInfo, Errors, str]]:
        results: dict[TopicPartition, tuple[LogAppendInfo, Errors, str]] = {}
        for tp, records in entries_per_partition.items():
            try:
                partition = self.get_partition_or_exception(tp)
                results[tp] = (partition.append_records_to_leader(records, required_acks), Errors.NONE, "")
            except KafkaError as e:
                results[tp] = (LogAppendInfo(-1, -1), e.error, str(e))
        return results

    def _add_complete_purgatory_action(
        self, local_results: Mapping[TopicPartition, tuple[LogAppendInfo, Errors, str]]
    ) -> None:
        # Kafka's ActionQueue (ReplicaManager.addCompletePurgatoryAction): deferred to the end of the request;
        # HW increased => Produce then Fetch, HW same => Fetch only (the new LEO may satisfy parked follower
        # fetches), failed => nothing.
        changes = [(self.operation_key(tp), info.leader_hw_change) for tp, (info, _, _) in local_results.items()]

        def complete_purgatories() -> None:
            for key, change in changes:
                if change is LeaderHwChange.INCREASED:
                    self.produce_purgatory.check_and_complete(key)
                    self.fetch_purgatory.check_and_complete(key)
                elif change is LeaderHwChange.SAME:
                    self.fetch_purgatory.check_and_complete(key)

        self.action_queue.add(complete_purgatories)

    def try_complete_actions(self) -> int:
        """Run the deferred post-append checks; the engine calls this at the end of every request."""
        return self.action_queue.try_complete_actions()

    # ----------------------------------------------------------------------------------------- fetch

    def fetch_messages(
        self,
        params: FetchParams,
        fetch_infos: Sequence[tuple[TopicPartition, PartitionData]],
        response_callback: FetchResponseCallback,
    ) -> None:
        """Kafka's ``ReplicaManager.fetchMessages``: answer now if there is no wait, nothing asked,
        ``min_bytes`` already readable, or an error / diverging epoch; otherwise park a DelayedFetch watched
        on every partition."""
        read_at = self.partition_changes.sequence
        results = self.read_from_log(params, fetch_infos, read_from_purgatory=False)
        bytes_readable = 0
        error_or_diverging = False
        for _, result in results:
            bytes_readable += result.info.size_in_bytes
            if result.error is not Errors.NONE or result.diverging_epoch is not None:
                error_or_diverging = True
        if params.max_wait_ms <= 0 or not fetch_infos or bytes_readable >= params.min_bytes or error_or_diverging:
            response_callback(results)
            return
        # As Kafka's fetchMessages: the fetch offset metadata is frozen here, at arrival
        # (FetchPartitionStatus).
        statuses = [
            (tp, FetchPartitionStatus(result.info.fetch_offset_metadata, fetch_info))
            for (tp, fetch_info), (_, result) in zip(fetch_infos, results, strict=True)
        ]
        operation = DelayedFetch(params, statuses, self, response_callback, read_results=results, read_at=read_at)
        self.fetch_purgatory.try_complete_else_watch(operation, [self.operation_key(tp) for tp, _ in statuses])

    def read_from_log(
        self,
        params: FetchParams,
        fetch_infos: Sequence[tuple[TopicPartition, PartitionData]],
        read_from_purgatory: bool,
    ) -> list[tuple[TopicPartition, LogReadResult]]:
        """Kafka's ``ReplicaManager.readFromLog``: read each partition in request order within
        ``params.max_bytes`` overall; only the first non-empty partition may exceed the limits (min one
        message). A follower read (not from purgatory) updates the follower's fetch state, which may raise the
        HW and complete parked operations right here. (A parked fetch's completion read may reuse an
        earlier read's answers: ``kafkasim.broker.reread_from_log``, not Kafka's.)"""
        limit_bytes = params.max_bytes
        hard_max_bytes_limit = params.hard_max_bytes_limit
        min_one_message = not hard_max_bytes_limit
        # Simulated time does not move during the call: one fetch time for every partition.
        fetch_time_ms = self.time.milliseconds()
        update_fetch_state = not read_from_purgatory
        read = self._read
        results = []
        for tp, fetch_info in fetch_infos:
            result = read(
                params, tp, fetch_info, limit_bytes, min_one_message, update_fetch_state, fetch_time_ms,
                hard_max_bytes_limit,
            )
            size = result.info.size_in_bytes
            if size > 0:
                min_one_message = False
            limit_bytes = max(0, limit_bytes - size)
            results.append((tp, result))
        return results

    def _read(
        self,
        params: FetchParams,
        tp: TopicPartition,
        fetch_info: PartitionData,
        limit_bytes: int,
        min_one_message: bool,
        update_fetch_state: bool,
        fetch_time_ms: int,
        hard_max_bytes_limit: bool,
    ) -> LogReadResult:
        adjusted_max_bytes = min(fetch_info.max_bytes, limit_bytes)
        try:
            partition = self._partitions.get(tp)
            if partition is None:
                partition = self.get_partition_or_exception(tp)
            read_info = partition.fetch_records(
                params, fetch_info, fetch_time_ms, adjusted_max_bytes, min_one_message, update_fetch_state
            )
            fetched = read_info.fetched_data
            if not hard_max_bytes_limit and fetched.first_entry_incomplete:
                # A batch larger than the limit and min-one-message not allowed any more: empty, so the
                # client moves on instead of failing with RecordTooLarge.
                fetched = FetchDataInfo(fetched.fetch_offset_metadata)
            return LogReadResult(
                fetched,
                Errors.NONE,
                read_info.diverging_epoch,
                read_info.high_watermark,
                read_info.log_start_offset,
                read_info.log_end_offset,
                read_info.last_stable_offset,
                fetch_info.log_start_offset,
                fetch_time_ms,
            )
        except KafkaError as e:
            if e.error is Errors.OFFSET_OUT_OF_RANGE:
                return out_of_range_result(self.get_partition_or_exception(tp).log)
            return LogReadResult(FetchDataInfo(UNKNOWN_OFFSET_METADATA), e.error)

    # ------------------------------------------------------------------------------------------- ISR

    def maybe_shrink_isr(self) -> None:
        """The ``isr-expiration`` task body: every hosted partition checks for out-of-sync followers."""
        for partition in list(self._partitions.values()):
            partition.maybe_shrink_isr()

    def __repr__(self) -> str:
        return (
            f"ReplicaManager(broker={self.broker_id}, partitions={len(self._partitions)}, "
            f"produce={self.produce_purgatory!r}, fetch={self.fetch_purgatory!r})"
        )

