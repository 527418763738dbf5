"""``Partition``: leader epoch, ISR state machine, follower tracking and the leader's HW (Kafka's
``kafka.cluster.Partition``).

Kafka's ``Partition`` guards all of this with a read/write lock; the simulator runs one thing at a time, so
there are no locks, but the order of steps (and where AlterPartition answers re-enter) is Kafka's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from kafkasim.broker.alter_partition import AlterPartitionManager, LeaderAndIsr
from kafkasim.broker.config import KafkaConfig
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import NO_EPOCH, EpochEndOffset, FetchParams, LogReadInfo, PartitionData
from kafkasim.broker.log import LeaderHwChange, Log, LogAppendInfo, LogOffsetSnapshot
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.metrics import BrokerMetrics
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica import Replica

if TYPE_CHECKING:
    from kafkasim.timer import Time


# ---------------------------------------------------------------------------------------------- ISR states


class CommittedPartitionState:
    """The ISR the controller committed; nothing in flight."""

    __slots__ = ("isr",)
    is_inflight = False

    def __init__(self, isr: frozenset[int]) -> None:
        self.isr = isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr

    def __repr__(self) -> str:
        return f"CommittedPartitionState(isr={sorted(self.isr)})"


class PendingExpandIsr:
    """Expansion sent, not yet committed: the new member already counts for the HW (Kafka's
    ``PendingExpandIsr``: its ``maximalIsr`` includes the new member)."""

    __slots__ = ("new_in_sync_replica_id", "sent_leader_and_isr", "last_committed_state", "maximal_isr")
    is_inflight = True

    def __init__(
        self, new_in_sync_replica_id: int, sent_leader_and_isr: LeaderAndIsr, last_committed_state: CommittedPartitionState
    ) -> None:
        self.new_in_sync_replica_id = new_in_sync_replica_id
        self.sent_leader_and_isr = sent_leader_and_isr
        self.last_committed_state = last_committed_state
        self.maximal_isr = last_committed_state.isr | {new_in_sync_replica_id}

    @property
    def isr(self) -> frozenset[int]:
        return self.last_committed_state.isr

    def __repr__(self) -> str:
        return f"PendingExpandIsr(new={self.new_in_sync_replica_id}, isr={sorted(self.isr)})"


class PendingShrinkIsr:
    """Shrink sent, not yet committed: the leaving members still count for the HW (Kafka's
    ``PendingShrinkIsr``: its ``maximalIsr`` is the old ISR)."""

    __slots__ = ("out_of_sync_replica_ids", "sent_leader_and_isr", "last_committed_state")
    is_inflight = True

    def __init__(
        self,
        out_of_sync_replica_ids: frozenset[int],
        sent_leader_and_isr: LeaderAndIsr,
        last_committed_state: CommittedPartitionState,
    ) -> None:
        self.out_of_sync_replica_ids = out_of_sync_replica_ids
        self.sent_leader_and_isr = sent_leader_and_isr
        self.last_committed_state = last_committed_state

    @property
    def isr(self) -> frozenset[int]:
        return self.last_committed_state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.last_committed_state.isr

    def __repr__(self) -> str:
        return f"PendingShrinkIsr(outOfSync={sorted(self.out_of_sync_replica_ids)}, isr={sorted(self.isr)})"


PartitionState = CommittedPartitionState | PendingExpandIsr | PendingShrinkIsr


# ------------------------------------------------------------------------------------- delayed operations


class _Purgatory(Protocol):
    def check_and_complete(self, key: Hashable) -> int: ...


class DelayedOperations:
    """The purgatories a partition wakes up, with its watch key (Kafka's ``DelayedOperations``).

    DeleteRecords, ShareFetch and the remote-storage purgatories are not simulated.
    """

    __slots__ = ("key", "produce", "fetch")

    def __init__(self, key: Hashable, produce: _Purgatory | None, fetch: _Purgatory | None) -> None:
        self.key = key
        self.produce = produce
        self.fetch = fetch

    def check_and_complete_all(self) -> None:
        """Kafka's ``Partition.tryCompleteDelayedRequests``: after a follower-driven (or AlterPartition,
        makeLeader) HW increase: Fetch, Produce.

        Kafka 4.0 swallows an exception per purgatory (KAFKA-17240); here an exception is a simulator bug
        and is left to surface."""
        if self.fetch is not None:
            self.fetch.check_and_complete(self.key)
        if self.produce is not None:
            self.produce.check_and_complete(self.key)


def _always_eligible(broker_id: int) -> bool:
    return True


# -------------------------------------------------------------------------------------------------- Partition


class Partition:
    """One partition hosted on this broker, normally as leader.

    Worked example (RF 3, ISR {0,1,2}, broker 0 leads, min ISR 2): a produce appends 10..19 (LEO 20; HW
    stays 10 because followers are at 10). Follower 1 fetches at 20: HW = min(20, 20, LEO of 2 = 10) = 10.
    Follower 2 fetches at 20: HW = 20, which completes the waiting acks=all produce (HW >= 20).
    """

    __slots__ = (
        "topic_partition",
        "local_broker_id",
        "config",
        "time",
        "log",
        "alter_partition_manager",
        "delayed_operations",
        "metrics",
        "is_replica_isr_eligible",
        "_on_change",
        "_replica_lag_time_max_ms",
        "_min_insync_replicas",
        "_leader_replica_id",
        "_leader_epoch",
        "_partition_epoch",
        "_leader_epoch_start_offset",
        "_remote_replicas",
        "_assignment",
        "_partition_state",
    )

    def __init__(
        self,
        topic_partition: TopicPartition,
        local_broker_id: int,
        config: KafkaConfig,
        time: Time,
        log: Log,
        alter_partition_manager: AlterPartitionManager,
        *,
        delayed_operations: DelayedOperations | None = None,
        metrics: BrokerMetrics | None = None,
        is_replica_isr_eligible: Callable[[int], bool] | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.topic_partition = topic_partition
        self.local_broker_id = local_broker_id
        self.config = config
        self.time = time
        self.log = log
        self.alter_partition_manager = alter_partition_manager
        self.delayed_operations = delayed_operations or DelayedOperations(topic_partition, None, None)
        self.metrics = metrics if metrics is not None else BrokerMetrics()
        # KRaft: replica known, broker not fenced nor shutting down (the engine decides; default: all).
        self.is_replica_isr_eligible = is_replica_isr_eligible or _always_eligible
        # Told when the leader or leader epoch changes (ReplicaManager's PartitionChanges; the log reports its
        # own changes).
        self._on_change = on_change
        self._replica_lag_time_max_ms = config.replica_lag_time_max_ms
        self._min_insync_replicas = log.config.min_insync_replicas
        self._leader_replica_id: int | None = None
        # Kafka starts below the initial epochs (0) so the first makeLeader is a new epoch.
        self._leader_epoch = -1
        self._partition_epoch = -1
        self._leader_epoch_start_offset: int | None = None
        self._remote_replicas: dict[int, Replica] = {}
        self._assignment: tuple[int, ...] = ()
        self._partition_state: PartitionState = CommittedPartitionState(frozenset())

    def restart(self, delayed_operations: DelayedOperations) -> None:
        """A new broker process over the same log: Kafka creates the ``Partition`` again when the metadata
        image is applied, so nothing held in memory survives -- leadership, epochs (the first ``makeLeader`` /
        ``makeFollower`` is a new epoch locally), follower states, the ISR and an ISR change in flight. The log
        stays (with its high watermark: a simplification, Kafka reads it from the checkpoint)."""
        self.delayed_operations = delayed_operations
        self._leader_replica_id = None
        self._leader_epoch = -1
        self._partition_epoch = -1
        self._leader_epoch_start_offset = None
        self._remote_replicas = {}
        self._assignment = ()
        self._partition_state = CommittedPartitionState(frozenset())
        if self._on_change is not None:
            self._on_change()

    # -------------------------------------------------------------------------------------------- state

    @property
    def is_leader(self) -> bool:
        # The hot methods below compare the two fields themselves (a property read is a function call).
        return self._leader_replica_id == self.local_broker_id

    @property
    def leader_replica_id(self) -> int | None:
        return self._leader_replica_id

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @property
    def partition_epoch(self) -> int:
        return self._partition_epoch

    @property
    def leader_epoch_start_offset(self) -> int | None:
        return self._leader_epoch_start_offset

    @property
    def partition_state(self) -> PartitionState:
        return self._partition_state

    @property
    def isr(self) -> frozenset[int]:
        """The committed ISR (what min ISR on append and the shrink check use)."""
        return self._partition_state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The committed ISR plus a pending expansion (what the HW and acks use)."""
        return self._partition_state.maximal_isr

    @property
    def assignment(self) -> tuple[int, ...]:
        return self._assignment

    def remote_replica(self, broker_id: int) -> Replica | None:
        """The leader's view of follower ``broker_id`` (None if it is not a follower of this leader)."""
        return self._remote_replicas.get(broker_id)

    @property
    def remote_replicas(self) -> tuple[Replica, ...]:
        return tuple(self._remote_replicas.values())

    def get_replica(self, replica_id: int) -> Replica | None:
        return self._remote_replicas.get(replica_id)

    @property
    def replication_factor(self) -> int:
        return len(self._assignment)

    @property
    def effective_min_isr(self) -> int:
        """3.7+: ``min.insync.replicas`` capped by the replication factor (Kafka's
        ``Partition.effectiveMinIsr``, KAFKA-15583)."""
        return min(self._min_insync_replicas, len(self._remote_replicas) + 1)

    @property
    def is_under_min_isr(self) -> bool:
        return self._leader_replica_id == self.local_broker_id and len(self._partition_state.isr) < self.effective_min_isr

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # ----------------------------------------------------------------------------------- leadership

    def make_leader(
        self, leader_epoch: int, isr: Iterable[int], replicas: Sequence[int], partition_epoch: int
    ) -> bool:
        """Become (or stay) leader (Kafka's ``Partition.makeLeader``); returns True iff this broker was not
        leader before.

        A new leader epoch records the epoch start offset (the LEO) and resets every follower's state; the
        same epoch (an ISR or assignment change) keeps them. An older partition epoch is ignored."""
        if partition_epoch < self._partition_epoch:
            return False
        if self.local_broker_id not in replicas:
            raise ValueError(
                f"{self.topic_partition}: broker {self.local_broker_id} cannot lead, it is not in the "
                f"replicas {list(replicas)}"
            )
        now = self.time.milliseconds()
        is_new_leader = not self.is_leader
        is_new_leader_epoch = leader_epoch > self._leader_epoch
        isr_set = frozenset(isr)
        self._update_assignment_and_isr(replicas, is_leader=True, isr=isr_set)
        if is_new_leader_epoch:
            start_offset = self.log.log_end_offset
            self.log.maybe_assign_epoch_start_offset(leader_epoch, start_offset)
            for replica in self._remote_replicas.values():
                replica.reset_replica_state(now, start_offset, is_new_leader, replica.broker_id in isr_set)
            self._leader_epoch_start_offset = start_offset
            self._leader_epoch = leader_epoch
        self._leader_replica_id = self.local_broker_id
        self._partition_epoch = partition_epoch
        if self._on_change is not None:
            self._on_change()
        # The ISR may be down to the leader alone: the HW can move now.
        if self.maybe_increment_leader_hw(now):
            self.try_complete_delayed_requests()
        return is_new_leader

    def make_follower(
        self, leader: int, leader_epoch: int, isr: Iterable[int], replicas: Sequence[int], partition_epoch: int
    ) -> bool:
        """Become a follower of ``leader``; returns True iff the leader epoch is new. The caller
        (ReplicaManager) then completes parked operations, which fail with NOT_LEADER_OR_FOLLOWER."""
        if partition_epoch < self._partition_epoch:
            return False
        is_new_leader_epoch = leader_epoch > self._leader_epoch
        self._leader_replica_id = leader
        self._leader_epoch = leader_epoch
        self._leader_epoch_start_offset = None
        self._partition_epoch = partition_epoch
        self._update_assignment_and_isr(replicas, is_leader=False, isr=frozenset())
        if self._on_change is not None:
            self._on_change()
        return is_new_leader_epoch

    def _update_assignment_and_isr(self, replicas: Sequence[int], is_leader: bool, isr: frozenset[int]) -> None:
        self._assignment = tuple(replicas)
        if is_leader:
            followers = [r for r in replicas if r != self.local_broker_id]
            self._remote_replicas = {r: self._remote_replicas.get(r) or Replica(r) for r in followers}
        else:
            self._remote_replicas = {}
        self._partition_state = CommittedPartitionState(isr)

    # ------------------------------------------------------------------------------------- produce

    def append_records_to_leader(self, records: Sequence[RecordBatch], required_acks: int) -> LogAppendInfo:
        """Leader append (Kafka's ``Partition.appendRecordsToLeader``): NOT_ENOUGH_REPLICAS is judged on the
        *committed* ISR and only for acks = -1; acks 0/1 are appended even under min ISR."""
        if self._leader_replica_id != self.local_broker_id:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"leader not local for partition {self.topic_partition} on broker {self.local_broker_id}",
            )
        min_isr = self.effective_min_isr
        if len(self._partition_state.isr) < min_isr and required_acks == -1:
            raise KafkaError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"the size of the current ISR {sorted(self._partition_state.isr)} is insufficient to satisfy "
                f"the min.isr requirement of {min_isr} for partition {self.topic_partition}",
            )
        info = self.log.append_as_leader(records, self._leader_epoch)
        # The ISR may be {leader}: then this append alone moves the HW.
        hw_increased = self.maybe_increment_leader_hw(self.time.milliseconds())
        info.leader_hw_change = LeaderHwChange.INCREASED if hw_increased else LeaderHwChange.SAME
        return info

    def append_records_to_follower_or_future_replica(self, records: Sequence[RecordBatch]) -> LogAppendInfo:
        """Follower append of the leader's batches, offsets and epochs unchanged (Kafka's
        ``Partition.appendRecordsToFollowerOrFutureReplica`` -> ``UnifiedLog.appendAsFollower``)."""
        if self._leader_replica_id == self.local_broker_id:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"partition {self.topic_partition} is led by broker {self.local_broker_id}: no follower append",
            )
        return self.log.append_as_follower(records)

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, Errors]:
        """DelayedProduce's question (Kafka's ``Partition.checkEnoughReplicasReachOffset``): has the HW
        reached ``required_offset``? The min-ISR check here is on the *maximal* ISR."""
        if self._leader_replica_id != self.local_broker_id:
            return False, Errors.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if self.effective_min_isr <= len(self._partition_state.maximal_isr):
                return True, Errors.NONE
            return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, Errors.NONE

    # -------------------------------------------------------------------------------- high watermark

    def maybe_increment_leader_hw(self, current_time_ms: int | None = None) -> bool:
        """Kafka's ``Partition.maybeIncrementLeaderHW``: HW = min LEO over the leader, the *maximal* ISR and
        caught-up ISR-eligible followers outside it; frozen while under min ISR (3.7+, KAFKA-15583). True iff
        the HW "increased"."""
        if self.is_under_min_isr:
            return False
        if current_time_ms is None:
            current_time_ms = self.time.milliseconds()
        log = self.log
        leader_end = log.log_end_offset_metadata
        leader_end_offset = leader_end.message_offset
        new_high_watermark = leader_end
        maximal_isr = self._partition_state.maximal_isr
        max_lag = self._replica_lag_time_max_ms
        for replica in self._remote_replicas.values():
            replica_end = replica.log_end_offset_metadata
            if replica_end.message_offset < new_high_watermark.message_offset and (
                replica.broker_id in maximal_isr
                or (
                    replica.is_caught_up(leader_end_offset, current_time_ms, max_lag)
                    and self.is_replica_isr_eligible(replica.broker_id)
                )
            ):
                new_high_watermark = replica_end
        return log.maybe_increment_high_watermark(new_high_watermark) is not None

    def try_complete_delayed_requests(self) -> None:
        self.delayed_operations.check_and_complete_all()

    # ---------------------------------------------------------------------------------- follower fetch

    def update_follower_fetch_state(
        self,
        replica: Replica,
        follower_fetch_offset_metadata: LogOffsetMetadata,
        follower_start_offset: int,
        follower_fetch_time_ms: int,
        leader_end_offset: int,
        broker_epoch: int = -1,
    ) -> None:
        """Kafka's ``Partition.updateFollowerFetchState``: record the fetch, maybe expand the ISR, and if the
        follower's LEO moved maybe raise the HW -- completing parked Fetch and Produce operations
        synchronously if it did."""
        previous_end_offset = replica.log_end_offset
        replica.update_fetch_state(
            follower_fetch_offset_metadata, follower_start_offset, follower_fetch_time_ms, leader_end_offset, broker_epoch
        )
        self.maybe_expand_isr(replica)
        if (
            previous_end_offset != replica.log_end_offset
            and self._leader_replica_id == self.local_broker_id
            and self.maybe_increment_leader_hw(follower_fetch_time_ms)
        ):
            self.try_complete_delayed_requests()

    def fetch_records(
        self,
        params: FetchParams,
        fetch_partition_data: PartitionData,
        fetch_time_ms: int,
        max_bytes: int,
        min_one_message: bool,
        update_fetch_state: bool,
    ) -> LogReadInfo:
        """Validate, read, and for a follower update its fetch state (unless re-reading from purgatory or
        the epochs diverged) with the LEO captured before the read (Kafka's ``Partition.fetchRecords``)."""
        log = self.local_log_with_epoch_or_throw(fetch_partition_data.current_leader_epoch, params.fetch_only_leader)
        if not params.is_from_follower:
            return self._read_records(log, fetch_partition_data, max_bytes, params, min_one_message)
        replica = self._follower_replica_or_throw(params.replica_id, fetch_partition_data)
        read_info = self._read_records(log, fetch_partition_data, max_bytes, params, min_one_message)
        if update_fetch_state and read_info.diverging_epoch is None:
            self.update_follower_fetch_state(
                replica,
                read_info.fetched_data.fetch_offset_metadata,
                fetch_partition_data.log_start_offset,
                fetch_time_ms,
                read_info.log_end_offset,
                params.replica_epoch,
            )
        return read_info

    def _read_records(
        self, log: Log, data: PartitionData, max_bytes: int, params: FetchParams, min_one_message: bool
    ) -> LogReadInfo:
        # Kafka's Partition.readRecords: HW, log start, LEO and LSO are captured *before* the read, so appends
        # racing a fetch do not keep a follower out of sync, and a follower learns a new HW one round later.
        initial_high_watermark, initial_log_start_offset, initial_log_end_offset, initial_last_stable_offset = (
            log.read_offsets()
        )
        last_fetched_epoch = data.last_fetched_epoch
        if last_fetched_epoch >= 0:
            error, end_epoch, end_offset = self.last_fetched_epoch_end(data.current_leader_epoch, last_fetched_epoch)
            if error is not Errors.NONE:
                raise KafkaError(error, f"{self.topic_partition}: last fetched epoch lookup failed")
            if end_offset == -1 or end_epoch == -1:
                raise KafkaError(
                    Errors.OFFSET_OUT_OF_RANGE,
                    f"{self.topic_partition}: could not determine the end offset of the last fetched epoch "
                    f"{last_fetched_epoch}",
                )
            if data.fetch_offset < initial_log_start_offset:
                raise KafkaError(
                    Errors.OFFSET_OUT_OF_RANGE,
                    f"{self.topic_partition}: fetch offset {data.fetch_offset} is below the log start offset "
                    f"{initial_log_start_offset}",
                )
            if end_epoch < last_fetched_epoch or end_offset < data.fetch_offset:
                return LogReadInfo(
                    FetchDataInfo.empty(data.fetch_offset),
                    EpochEndOffset(Errors.NONE, end_epoch, end_offset),
                    initial_high_watermark,
                    initial_log_start_offset,
                    initial_log_end_offset,
                    initial_last_stable_offset,
                )
        fetched = log.read(data.fetch_offset, max_bytes, params.isolation, min_one_message)
        return LogReadInfo(
            fetched,
            None,
            initial_high_watermark,
            initial_log_start_offset,
            initial_log_end_offset,
            initial_last_stable_offset,
        )

    def _check_current_leader_epoch(self, remote_leader_epoch: int) -> Errors:
        if remote_leader_epoch == NO_EPOCH:
            return Errors.NONE
        if self._leader_epoch > remote_leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if self._leader_epoch < remote_leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        return Errors.NONE

    def local_log_with_epoch_or_throw(self, current_leader_epoch: int, require_leader: bool) -> Log:
        if (current_leader_epoch == NO_EPOCH or current_leader_epoch == self._leader_epoch) and (
            not require_leader or self._leader_replica_id == self.local_broker_id
        ):
            # The common case, checked first (no epoch, or the current one: _check_current_leader_epoch has
            # nothing to say): this runs for every fetch and parked check.
            return self.log
        error = self._check_current_leader_epoch(current_leader_epoch)
        if error is Errors.NONE and require_leader and not self.is_leader:
            error = Errors.NOT_LEADER_OR_FOLLOWER
        if error is not Errors.NONE:
            raise KafkaError(
                error,
                f"{self.topic_partition}: request epoch {current_leader_epoch}, local epoch {self._leader_epoch}, "
                f"leader {self._leader_replica_id}",
            )
        return self.log

    def _follower_replica_or_throw(self, replica_id: int, data: PartitionData) -> Replica:
        replica = self._remote_replicas.get(replica_id)
        if replica is None:
            error = Errors.UNKNOWN_LEADER_EPOCH if data.current_leader_epoch != NO_EPOCH else Errors.NOT_LEADER_OR_FOLLOWER
            raise KafkaError(
                error, f"{self.topic_partition}: replica {replica_id} is not a replica (assignment {self._assignment})"
            )
        return replica

    def fetch_offset_snapshot(self, current_leader_epoch: int, fetch_only_from_leader: bool) -> LogOffsetSnapshot:
        """The offsets a parked DelayedFetch compares against; raises like a fetch would (Kafka's
        ``Partition.fetchOffsetSnapshot``)."""
        return self.local_log_with_epoch_or_throw(current_leader_epoch, fetch_only_from_leader).fetch_offset_snapshot()

    def last_fetched_epoch_end(self, current_leader_epoch: int, last_fetched_epoch: int) -> tuple[Errors, int, int]:
        """Where a follower's last fetched epoch ends in this log: the divergence check of a follower fetch
        (Kafka's ``Partition.fetchRecords`` -> ``lastOffsetForLeaderEpoch``, and ``DelayedFetch.tryComplete``
        Case H, both with ``fetchOnlyFromLeader = false``).

        The common case, checked first: the last fetched epoch is the log's latest, so it ends at the LEO
        (``LeaderEpochFileCache.endOffsetFor``), and the caller has already passed the current-leader-epoch
        validation (``localLogWithEpochOrThrow``, as in ``fetchOffsetSnapshot``) that
        ``last_offset_for_leader_epoch`` would repeat. The caller must have done that validation with the
        same ``current_leader_epoch``. Returns (error, epoch, end offset), an ``EpochEndOffset``'s fields (a
        plain tuple: DelayedFetch asks on every parked check)."""
        log = self.log
        if log.leader_epoch_cache.latest_epoch == last_fetched_epoch:
            return Errors.NONE, last_fetched_epoch, log.log_end_offset
        return self.last_offset_for_leader_epoch(current_leader_epoch, last_fetched_epoch, fetch_only_from_leader=False)

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int, fetch_only_from_leader: bool
    ) -> EpochEndOffset:
        """Where ``leader_epoch`` ends in this log (OffsetsForLeaderEpoch; DelayedFetch Case H)."""
        error = self._check_current_leader_epoch(current_leader_epoch)
        if error is Errors.NONE and fetch_only_from_leader and not self.is_leader:
            error = Errors.NOT_LEADER_OR_FOLLOWER
        if error is not Errors.NONE:
            return EpochEndOffset(error)
        found = self.log.end_offset_for_epoch(leader_epoch)
        if found is None:
            return EpochEndOffset(Errors.NONE)
        return EpochEndOffset(Errors.NONE, found[0], found[1])

    # ------------------------------------------------------------------------------------------- ISR

    def _is_follower_in_sync(self, replica: Replica) -> bool:
        # Kafka's Partition.isFollowerInSync: caught up to the HW and to the start of this leader epoch; lag
        # time is not checked.
        end = replica.log_end_offset
        start = self._leader_epoch_start_offset
        return end >= self.log.high_watermark and start is not None and end >= start

    def _can_add_replica_to_isr(self, replica_id: int) -> bool:
        state = self._partition_state
        return not state.is_inflight and replica_id not in state.isr and self.is_replica_isr_eligible(replica_id)

    def maybe_expand_isr(self, replica: Replica) -> None:
        """Propose adding ``replica`` to the ISR once it is in sync (Kafka's ``Partition.maybeExpandIsr``)."""
        if self._leader_replica_id != self.local_broker_id or not self._can_add_replica_to_isr(replica.broker_id):
            return
        if not self._is_follower_in_sync(replica):
            return
        state = self._partition_state
        assert isinstance(state, CommittedPartitionState)  # not in flight
        sent = LeaderAndIsr(
            self.local_broker_id,
            self._leader_epoch,
            tuple(sorted(state.isr | {replica.broker_id})),
            self._partition_epoch,
        )
        proposed = PendingExpandIsr(replica.broker_id, sent, state)
        self._partition_state = proposed
        self._isr_changed()
        self._submit_alter_partition(proposed)

    def get_out_of_sync_replicas(self, max_lag_ms: int) -> list[int]:
        """ISR members (other than the leader) not caught up within ``max_lag_ms``; none while in flight."""
        state = self._partition_state
        if state.is_inflight:
            return []
        now = self.time.milliseconds()
        leader_end_offset = self.log.log_end_offset
        out_of_sync = []
        for replica_id in sorted(state.isr):
            if replica_id == self.local_broker_id:
                continue
            replica = self._remote_replicas.get(replica_id)
            if replica is None or not replica.is_caught_up(leader_end_offset, now, max_lag_ms):
                out_of_sync.append(replica_id)
        return out_of_sync

    def maybe_shrink_isr(self) -> None:
        """Propose removing out-of-sync followers (Kafka's ``Partition.maybeShrinkIsr``). The engine calls
        this every ``replica.lag.time.max.ms / 2``; the HW does not move until the shrink is committed."""
        if not self.is_leader:
            return
        out_of_sync = self.get_out_of_sync_replicas(self._replica_lag_time_max_ms)
        if not out_of_sync:
            return
        state = self._partition_state
        assert isinstance(state, CommittedPartitionState)
        removed = frozenset(out_of_sync)
        sent = LeaderAndIsr(
            self.local_broker_id, self._leader_epoch, tuple(sorted(state.isr - removed)), self._partition_epoch
        )
        proposed = PendingShrinkIsr(removed, sent, state)
        self._partition_state = proposed
        self._isr_changed()
        self._submit_alter_partition(proposed)

    def _isr_changed(self) -> None:
        # Recorded like a leadership change: a fetch session whose clock this partition's follower takes its
        # times from (Replica.clock, kafkasim.broker.session_reads) must read it again, so
        # Partition.maybeExpandIsr runs on its next fetch.
        if self._on_change is not None:
            self._on_change()

    def _submit_alter_partition(self, proposed: PendingExpandIsr | PendingShrinkIsr) -> None:
        def on_response(result: LeaderAndIsr | Errors) -> None:
            self._handle_alter_partition_response(proposed, result)

        self.alter_partition_manager.submit(self.topic_partition, proposed.sent_leader_and_isr, on_response)

    def _handle_alter_partition_response(
        self, proposed: PendingExpandIsr | PendingShrinkIsr, result: LeaderAndIsr | Errors
    ) -> None:
        """Kafka's ``Partition.handleAlterPartitionUpdate`` and ``handleAlterPartitionError``."""
        if self._partition_state is not proposed:
            # Stale: leadership or the ISR changed some other way meanwhile.
            return
        if isinstance(result, Errors):
            if self._handle_alter_partition_error(proposed, result):
                self._submit_alter_partition(proposed)
            return
        if result.leader_epoch != self._leader_epoch or result.partition_epoch < self._partition_epoch:
            self.metrics.failed_isr_updates += 1
            return
        self._partition_state = CommittedPartitionState(frozenset(result.isr))
        self._isr_changed()
        self._partition_epoch = result.partition_epoch
        if isinstance(proposed, PendingExpandIsr):
            self.metrics.isr_expands += 1
        else:
            self.metrics.isr_shrinks += 1
        # A shrink may unblock the HW (the slow follower no longer counts).
        if self.maybe_increment_leader_hw():
            self.try_complete_delayed_requests()

    def _handle_alter_partition_error(self, proposed: PendingExpandIsr | PendingShrinkIsr, error: Errors) -> bool:
        """Returns True iff the same request should be sent again."""
        self.metrics.failed_isr_updates += 1
        if error in (Errors.OPERATION_NOT_ATTEMPTED, Errors.INELIGIBLE_REPLICA):
            self._partition_state = proposed.last_committed_state
            self._isr_changed()
            return False
        # Wait for new metadata (a new leader epoch / assignment), no retry.
        return error not in (
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            Errors.UNKNOWN_TOPIC_ID,
            Errors.FENCED_LEADER_EPOCH,
            Errors.INVALID_UPDATE_VERSION,
            Errors.INVALID_REQUEST,
            Errors.NEW_LEADER_ELECTED,
        )

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic_partition}, leader={self._leader_replica_id}, epoch={self._leader_epoch}, "
            f"{self._partition_state!r}, hw={self.log.high_watermark}, leo={self.log.log_end_offset})"
        )
