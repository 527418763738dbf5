"""KafkaConfig / LogConfig: Kafka's defaults (ServerConfigs, ReplicationConfigs, LogConfig) and clear errors
for impossible values."""

import pytest

from kafkasim.broker.config import GIB, MIB, KafkaConfig, LogConfig
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig


def test_kafka_defaults():
    log = LogConfig()
    assert (log.segment_bytes, log.segment_ms, log.segment_jitter_ms) == (GIB, 604_800_000, 0)
    assert (log.max_message_bytes, log.min_insync_replicas) == (1_048_588, 1)
    assert (log.max_offset_index_entries, log.max_time_index_entries) == (1_310_720, 873_813)
    broker = KafkaConfig()
    assert broker.replica_lag_time_max_ms == 30_000
    assert broker.isr_expiration_interval_ms == 15_000
    assert broker.fetch_max_bytes == 55 * MIB
    assert (broker.producer_purgatory_purge_interval_requests, broker.fetch_purgatory_purge_interval_requests) == (
        1000,
        1000,
    )
    # replica.fetch.* are read by the replica fetcher only: its own config, not KafkaConfig.
    fetcher = ReplicaFetcherConfig()
    assert (fetcher.wait_max_ms, fetcher.max_bytes) == (500, MIB)


def test_invalid_values_name_the_field():
    with pytest.raises(ValueError, match=r"LogConfig.segment_bytes must be > 0, got 0"):
        LogConfig(segment_bytes=0)
    with pytest.raises(ValueError, match=r"LogConfig.segment_jitter_ms must be >= 0, got -1"):
        LogConfig(segment_jitter_ms=-1)
    with pytest.raises(ValueError, match=r"KafkaConfig.replica_lag_time_max_ms must be > 0"):
        KafkaConfig(replica_lag_time_max_ms=0)
