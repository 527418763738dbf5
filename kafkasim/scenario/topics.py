"""Topics: partition count, replication and Kafka's topic-level log configs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.broker import (
    INT32_MAX,
    LONG_MAX,
    MAX_BROKERS,
    MAX_PARTITIONS,
    MAX_REPLICATION_FACTOR,
    BrokerConfig,
)
from kafkasim.scenario.units import KafkaBytes, KafkaMs

# Kafka's legal topic names (Topic.validate): at most 249 of these characters.
TOPIC_NAME_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"

# Topic key -> the broker key it defaults to, as in Kafka (LogConfig's server defaults).
INHERITED_FROM_BROKER: dict[str, str] = {
    "partitions": "num_partitions",
    "replication_factor": "default_replication_factor",
    "min_insync_replicas": "min_insync_replicas",
    "segment_bytes": "log_segment_bytes",
    "segment_ms": "log_roll_ms",
    "segment_jitter_ms": "log_roll_jitter_ms",
    "segment_index_bytes": "log_index_size_max_bytes",
    "index_interval_bytes": "log_index_interval_bytes",
    "max_message_bytes": "message_max_bytes",
    "retention_ms": "log_retention_ms",
    "retention_bytes": "log_retention_bytes",
    "unclean_leader_election_enable": "unclean_leader_election_enable",
    "flush_messages": "log_flush_interval_messages",
    "flush_ms": "log_flush_interval_ms_or_default",
}

# One partition's replicas in a replica_assignment: broker ids, preferred leader first.
# Broker ids are checked against cluster.brokers (Scenario validation), with the cluster's range in the message.
Replicas = Annotated[list[int], Field(min_length=1, max_length=MAX_BROKERS)]


class TopicConfig(ScenarioModel):
    """A topic. Without `cluster:` broker 0 leads every partition and brokers 1..replication.factor-1 follow;
    with it, Kafka's placer (StripedReplicaPlacer) or `replica_assignment` says which brokers hold each one.

    Keys left out take the broker's value (`num.partitions`, `default.replication.factor`,
    `min.insync.replicas`, `log.segment.bytes`, ...), as a topic created without overrides does in Kafka.
    After validation every key holds its effective value; the defaults shown are Kafka's broker defaults.
    """

    name: str = Field(pattern=TOPIC_NAME_PATTERN)
    """Kafka topic name: letters, digits, '.', '_', '-'."""
    partitions: int = Field(default=1, ge=1, le=MAX_PARTITIONS)
    """Partitions of the topic (at most 10,000 over all topics)."""
    replication_factor: int = Field(default=1, alias="replication.factor", ge=1, le=MAX_REPLICATION_FACTOR)
    min_insync_replicas: int = Field(default=1, alias="min.insync.replicas", ge=1, le=INT32_MAX)
    """Must be <= replication.factor here (Kafka would silently cap it, KAFKA-15583)."""
    unclean_leader_election_enable: bool = Field(default=False, alias="unclean.leader.election.enable")
    """Whether the controller may elect a replica outside the ISR when no ISR member can lead
    (PartitionChangeBuilder's UNCLEAN election): the partition comes back sooner and loses what its new
    leader lacks, acknowledged records included."""
    segment_bytes: KafkaBytes = Field(default=1024**3, alias="segment.bytes", ge=14, le=INT32_MAX)
    """Roll when the active segment would exceed this (LogSegment.shouldRoll). Kafka 4.0 requires at least 1MiB;
    we allow small segments (down to Kafka's older limit of 14 bytes) so rolls can be watched."""
    segment_ms: KafkaMs = Field(default=604_800_000, alias="segment.ms", ge=1)
    """Roll a non-empty segment older than this (LogSegment.shouldRoll)."""
    segment_jitter_ms: KafkaMs = Field(default=0, alias="segment.jitter.ms", ge=0)
    segment_index_bytes: KafkaBytes = Field(default=10 * 1024 * 1024, alias="segment.index.bytes", ge=4, le=INT32_MAX)
    index_interval_bytes: KafkaBytes = Field(default=4096, alias="index.interval.bytes", ge=0, le=INT32_MAX)
    max_message_bytes: KafkaBytes = Field(default=1_048_588, alias="max.message.bytes", ge=0, le=INT32_MAX)
    retention_ms: Literal[-1] | KafkaMs = Field(default=604_800_000, alias="retention.ms")
    """Delete a segment once its newest record is older than this; -1 = no time limit. Checked every
    `log.retention.check.interval.ms`, only for segments wholly below the HW."""
    retention_bytes: Literal[-1] | KafkaBytes = Field(default=-1, alias="retention.bytes")
    """Delete the oldest segments while the partition's log stays at least this big without them;
    -1 = no size limit. Per partition, as in Kafka."""
    flush_messages: int = Field(default=LONG_MAX, alias="flush.messages", ge=1, le=LONG_MAX)
    """Flush the log once this many messages lie above its last flush (UnifiedLog.append, on the appending
    thread: 1 = an fsync per append per partition). Long.MAX_VALUE (the default): flushing left to the OS."""
    flush_ms: Literal[9223372036854775807] | KafkaMs = Field(default=LONG_MAX, alias="flush.ms")
    """Flush the log when its last flush is this old, checked by the log flusher every
    `log.flush.scheduler.interval.ms` (LogManager.flushDirtyLogs). Long.MAX_VALUE (the default): never."""

    replica_assignment: list[Replicas] | None = Field(default=None, min_length=1, max_length=MAX_PARTITIONS)
    """Only with `cluster:`: each partition's replicas (broker ids, preferred leader first), as CreateTopics'
    manual assignment (`[[1, 2, 0], [2, 0, 1]]`): one list per partition, every list the same length (the
    replication factor), distinct ids of existing brokers. Absent: Kafka's placer decides."""

    def inherit(self, broker: BrokerConfig) -> None:
        """Fill the keys the author left out with the broker's values, without marking them as set.

        Called once by Scenario validation. Unset keys stay unset (`model_fields_set`), so an override of
        a broker default (`--set broker.min.insync.replicas=2`) still reaches every topic that inherits it.
        """
        assignment = self.replica_assignment
        for key, broker_key in INHERITED_FROM_BROKER.items():
            if assignment and key == "partitions" and key not in self.model_fields_set:
                object.__setattr__(self, key, len(assignment))
            elif assignment and key == "replication_factor" and key not in self.model_fields_set:
                object.__setattr__(self, key, len(assignment[0]))
            elif key not in self.model_fields_set:
                object.__setattr__(self, key, getattr(broker, broker_key))
