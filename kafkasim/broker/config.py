"""Broker and log configuration with Kafka's defaults (``ServerConfigs``, ``ReplicationConfigs``,
``ServerLogConfigs``, ``LogConfig``).

Frozen and flat so the engine can build one from a scenario and share it across partitions. Only what the
broker's state machines read is here; request-pipeline knobs (``num.io.threads`` ...) belong to the engine.
Field names are Kafka's config names with dots turned into underscores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from kafkasim.purgatory import PURGATORY_TIMER_KINDS, PurgatoryTimerKind

MIB: Final = 1024 * 1024
GIB: Final = 1024 * MIB
# Java's Long.MAX_VALUE: Kafka's default of flush.messages, flush.ms and log.flush.scheduler.interval.ms (never:
# flushing is left to the OS).
LONG_MAX: Final = 2**63 - 1


def _require_positive(owner: str, **values: int) -> None:
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{owner}.{name} must be > 0, got {value}")


def _require_non_negative(owner: str, **values: int) -> None:
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{owner}.{name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level (log) configs: segment rolling, retention, batch size limit, min ISR."""

    segment_bytes: int = GIB  # segment.bytes
    segment_ms: int = 604_800_000  # segment.ms (7 days)
    segment_jitter_ms: int = 0  # segment.jitter.ms
    segment_index_bytes: int = 10 * MIB  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_message_bytes: int = 1_048_588  # max.message.bytes (broker: message.max.bytes)
    min_insync_replicas: int = 1  # min.insync.replicas
    retention_ms: int = 604_800_000  # retention.ms (7 days); negative = no time limit
    retention_bytes: int = -1  # retention.bytes; negative = no size limit
    flush_messages: int = LONG_MAX  # flush.messages: UnifiedLog.append flushes once this many are unflushed
    flush_ms: int = LONG_MAX  # flush.ms: the kafka-log-flusher task flushes a log last flushed this long ago
    # Entries that fit the offset index (8 bytes each) and the time index (12 bytes each); a full index rolls
    # the segment (``LogSegment.shouldRoll``, asked on every append). Derived in __post_init__.
    max_offset_index_entries: int = field(init=False, compare=False, repr=False)
    max_time_index_entries: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        _require_positive(
            "LogConfig",
            segment_bytes=self.segment_bytes,
            segment_ms=self.segment_ms,
            segment_index_bytes=self.segment_index_bytes,
            min_insync_replicas=self.min_insync_replicas,
            flush_messages=self.flush_messages,
        )
        # LogConfig defines max.message.bytes with atLeast(0): 0 is legal and makes every batch a
        # RecordTooLargeException (UnifiedLog.analyzeAndValidateRecords).
        _require_non_negative(
            "LogConfig",
            segment_jitter_ms=self.segment_jitter_ms,
            index_interval_bytes=self.index_interval_bytes,
            max_message_bytes=self.max_message_bytes,
            flush_ms=self.flush_ms,
        )
        object.__setattr__(self, "max_offset_index_entries", self.segment_index_bytes // 8)
        object.__setattr__(self, "max_time_index_entries", self.segment_index_bytes // 12)


@dataclass(frozen=True, slots=True)
class KafkaConfig:
    """Broker-level configs read by ReplicaManager, Partition and the purgatories: the share of Kafka's
    ``KafkaConfig`` (the broker's parsed, immutable configuration) the broker model reads. Built per broker
    from the scenario's ``broker:`` section, ``kafkasim.scenario.broker.BrokerConfig``."""

    log: LogConfig = field(default_factory=LogConfig)
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms; shrink check every half of it
    fetch_max_bytes: int = 55 * MIB  # fetch.max.bytes (caps a fetch request's max_bytes)
    producer_purgatory_purge_interval_requests: int = 1000
    fetch_purgatory_purge_interval_requests: int = 1000
    producer_id_expiration_ms: int = 86_400_000  # producer.id.expiration.ms (ProducerStateManagerConfig)
    # Simulator-only: the purgatories' timer, Kafka's timing wheel or Kafka 0.8's delay queue.
    purgatory_timer: PurgatoryTimerKind = "timing_wheel"

    def __post_init__(self) -> None:
        if self.purgatory_timer not in PURGATORY_TIMER_KINDS:
            raise ValueError(
                f"KafkaConfig.purgatory_timer must be one of {', '.join(PURGATORY_TIMER_KINDS)},"
                f" got {self.purgatory_timer!r}"
            )
        _require_positive(
            "KafkaConfig",
            replica_lag_time_max_ms=self.replica_lag_time_max_ms,
            fetch_max_bytes=self.fetch_max_bytes,
            producer_purgatory_purge_interval_requests=self.producer_purgatory_purge_interval_requests,
            fetch_purgatory_purge_interval_requests=self.fetch_purgatory_purge_interval_requests,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
        )

    @property
    def isr_expiration_interval_ms(self) -> int:
        """How often the engine should call ``ReplicaManager.maybe_shrink_isr`` (Kafka's ``isr-expiration``
        task in ``ReplicaManager.startup``: lag / 2)."""
        return self.replica_lag_time_max_ms // 2
