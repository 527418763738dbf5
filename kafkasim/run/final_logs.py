"""Each partition's final log at the end of a run, for the records' loss and duplicate accounting
(``kafkasim.record.log_audit``).

The final leader of a partition is the newest leader anyone knows of: the controller's (its committed
image), or a broker's that leads at a higher leader epoch (a leadership set on the brokers directly, as
some tests do). A partition left without a leader is read on the broker Kafka's controller would elect
when it returns (``PartitionChangeBuilder.electAnyLeader``): its last ISR member (without eligible leader
replicas the ISR is never left empty), else its first eligible leader replica, else its last known leader.
The elections come from replaying the controller's metadata log: a ``PartitionChangeRecord`` that sets a
leader with ``leaderRecoveryState`` RECOVERING is unclean (an unclean election or the last known leader,
both "using an unclean election" in Kafka's log); one that sets a leader from the previous ELR, outside the
ISR, is an election "using ELR".
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kafkasim.broker.metadata import NO_LEADER
from kafkasim.controller.metadata_log import election_kind, partition_changes
from kafkasim.record.log_audit import FinalLog

if TYPE_CHECKING:
    from kafkasim.broker.records import TopicPartition
    from kafkasim.run.cluster import Cluster


def elections(c: Cluster) -> tuple[dict[TopicPartition, list[float]], dict[TopicPartition, list[float]]]:
    """When the controller elected an unclean leader, and a leader from the ELR, per partition (the times it
    appended the records)."""
    unclean: dict[TopicPartition, list[float]] = {}
    elr: dict[TopicPartition, list[float]] = {}
    for batch, changes in partition_changes(c.controller.core.log.batches):
        for record, before in changes:
            kind = election_kind(record, before)
            if kind == "unclean":
                unclean.setdefault(record.topic_partition, []).append(batch.append_ms)
            elif kind == "ELR":
                elr.setdefault(record.topic_partition, []).append(batch.append_ms)
    return unclean, elr


def final_leader(c: Cluster, tp: TopicPartition) -> int:
    """The broker whose log is ``tp``'s at the end of the run (NO_LEADER if none can be named)."""
    registration = c.controller.image.partitions.get(tp)
    epoch, leader = (registration.leader_epoch, registration.leader) if registration is not None else (-1, NO_LEADER)
    for broker in c.brokers:
        partition = broker.replica_manager.partitions.get(tp)
        if partition is not None and partition.is_leader and partition.leader_epoch > epoch:
            epoch, leader = partition.leader_epoch, broker.broker_id
    if leader == NO_LEADER and registration is not None:
        waiting = registration.isr or registration.elr or registration.last_known_elr
        if waiting:
            leader = waiting[0]
    return leader


def final_logs(c: Cluster) -> dict[tuple[str, int], FinalLog]:
    """Every partition's final leader's log, by batch identity."""
    unclean, elr = elections(c)
    out: dict[tuple[str, int], FinalLog] = {}
    for partitions in c.partitions_by_topic.values():
        for tp in partitions:
            leader = final_leader(c, tp)
            if leader == NO_LEADER:
                continue
            partition = c.broker(leader).replica_manager.partitions.get(tp)
            if partition is None:
                continue
            log = partition.log
            copies = Counter(batch.batch_id for segment in log.segments for batch in segment.batches)
            out[(tp.topic, tp.partition)] = FinalLog(
                leader, log.log_start_offset, copies, partition.effective_min_isr, tuple(unclean.get(tp, ())),
                tuple(elr.get(tp, ())),
            )
    return out
