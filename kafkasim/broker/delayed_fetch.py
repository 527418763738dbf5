"""``DelayedFetch``: a fetch waiting for ``min_bytes`` of new data, a segment roll, an error or its max
wait (Kafka's ``DelayedFetch``, with the 3.8+ offset comparison of KAFKA-16452)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import FetchParams, FetchPartitionStatus, LogReadResult
from kafkasim.broker.log import FetchIsolation
from kafkasim.broker.log_offset_metadata import UNKNOWN_OFFSET_METADATA
from kafkasim.broker.records import TopicPartition
from kafkasim.purgatory import DelayedOperation

if TYPE_CHECKING:
    from kafkasim.broker.replica_manager import ReplicaManager

FetchResponseCallback = Callable[[list[tuple[TopicPartition, LogReadResult]]], None]

# The errors DelayedFetch turns into an immediate completion (cases A-E); others escape, as in Kafka.
_COMPLETING_ERRORS = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.FENCED_LEADER_EPOCH,
    }
)


class DelayedFetch(DelayedOperation):
    """A parked fetch. Its ``start_offset_metadata`` per partition is frozen at arrival, as Kafka's
    ``ReplicaManager.fetchMessages`` builds ``FetchPartitionStatus`` once.

    Worked example of the 3.8+ segment-roll rule: a follower parked at LEO ``(40, 0, 400)``. The leader
    rolls and appends: LEO ``(50, 40, 100)``. 40 < 50 and segment 0 is older than 40, so Case F completes
    it. Had nothing been appended after the roll, the LEO would be ``(40, 40, 0)``: equal offsets, so
    nothing happens, although the segments differ.
    """

    __slots__ = ("params", "fetch_partition_status", "replica_manager", "response_callback")

    def __init__(
        self,
        params: FetchParams,
        fetch_partition_status: Sequence[tuple[TopicPartition, FetchPartitionStatus]],
        replica_manager: ReplicaManager,
        response_callback: FetchResponseCallback,
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.params = params
        self.fetch_partition_status = fetch_partition_status
        self.replica_manager = replica_manager
        self.response_callback = response_callback

    def try_complete(self) -> bool:
        """Kafka's ``DelayedFetch.tryComplete``, in request order; its cases (Kafka's own letters, which label
        the comments below) complete the fetch when: A/B this broker is no longer the leader or the replica
        is gone, C the partition is unknown, D its log is offline, E the requested leader epoch is fenced,
        F the fetch offset is beyond the end or the end moved to a newer segment (truncation, segment
        roll), G the bytes accumulated over all partitions reach ``min_bytes`` (after the loop), H a
        follower's last fetched epoch diverged from the log.

        This runs for every parked fetch on every append and HW move (several times per request), so the
        common paths are inlined; each shortcut is noted where it is taken and gives Kafka's answer."""
        params = self.params
        isolation = params.isolation
        fetch_only_leader = params.fetch_only_leader
        accumulated_size = 0
        get_partition_or_exception = self.replica_manager.get_partition_or_exception
        for topic_partition, status in self.fetch_partition_status:
            fetch_offset = status.start_offset_metadata
            fetch_info = status.fetch_info
            fetch_message_offset = fetch_offset.message_offset
            try:
                if fetch_message_offset == -1 and fetch_offset == UNKNOWN_OFFSET_METADATA:
                    continue  # e.g. a preferred-read-replica answer: the partition is ignored
                partition = get_partition_or_exception(topic_partition)  # Cases A, B, C, D
                # Case E: Partition.fetch_offset_snapshot's validation, without building the snapshot tuple.
                log = partition.local_log_with_epoch_or_throw(fetch_info.current_leader_epoch, fetch_only_leader)
                # Materialised on every check, as Log.fetch_offset_snapshot does (it caches full metadata).
                high_watermark = log.fetch_high_watermark_metadata()
                if isolation is FetchIsolation.LOG_END:
                    end_offset = log.log_end_offset_metadata
                else:
                    end_offset = high_watermark  # HIGH_WATERMARK, and TXN_COMMITTED (LSO = HW here)
                end_message_offset = end_offset.message_offset
                # DelayedFetch.tryComplete (3.8+): equal message offsets fall through -- never Case F, even
                # when the two describe the same offset on different segments after a roll. Followers
                # (LOG_END) thus ignore HW moves: only the LEO matters to them.
                if fetch_message_offset > end_message_offset:
                    # Case F: the leader truncated, or a consumer fetched beyond the HW.
                    return self.force_complete()
                if fetch_message_offset < end_message_offset:
                    if fetch_offset.on_older_segment(end_offset):
                        # Case F: the end moved to a newer segment (roll) -- respond now with what there is.
                        return self.force_complete()
                    if fetch_offset.on_same_segment(end_offset):
                        # Case G's accumulation, capped by the partition's max bytes.
                        bytes_available = end_offset.position_diff(fetch_offset)
                        accumulated_size += min(bytes_available, fetch_info.max_bytes)
                    # Either side message-only: counts for nothing.
                last_fetched_epoch = fetch_info.last_fetched_epoch
                if last_fetched_epoch >= 0:
                    # Case H: the log diverged from the follower while it waited (truncation). The partition
                    # owns the lookup and its shortcut (Case E above did the epoch validation it relies on).
                    error, epoch, epoch_end_offset = partition.last_fetched_epoch_end(
                        fetch_info.current_leader_epoch, last_fetched_epoch
                    )
                    if error is not Errors.NONE or epoch_end_offset == -1 or epoch == -1:
                        return self.force_complete()
                    if epoch < last_fetched_epoch or epoch_end_offset < fetch_info.fetch_offset:
                        return self.force_complete()
            except KafkaError as e:
                if e.error in _COMPLETING_ERRORS:
                    return self.force_complete()
                raise
        if accumulated_size >= params.min_bytes:
            return self.force_complete()  # Case G
        return False

    def on_expiration(self) -> None:
        self.replica_manager.metrics.record_fetch_expiration(self.params.is_from_follower)

    def on_complete(self) -> None:
        """Kafka's ``DelayedFetch.onComplete``: re-read with the original fetch offsets: the response holds
        what was appended while parked and the offsets current now; a follower's fetch state is not updated a
        second time."""
        fetch_infos = [(tp, status.fetch_info) for tp, status in self.fetch_partition_status]
        results = self.replica_manager.read_from_log(self.params, fetch_infos, read_from_purgatory=True)
        self.response_callback(results)

    def __repr__(self) -> str:
        return (
            f"DelayedFetch(replicaId={self.params.replica_id}, minBytes={self.params.min_bytes}, "
            f"{list(self.fetch_partition_status)!r}, completed={self.is_completed})"
        )
