"""Kafka keys default to Kafka's values (ServerConfigs, LogConfig, ProducerConfig, ConsumerConfig); inherited
values are resolved."""

from __future__ import annotations

from kafkasim.scenario import ConsumerConfig, ProducerConfig, load_scenario
from kafkasim.scenario.broker import BrokerConfig
from kafkasim.sim.distributions import sampler_from_spec

from .samples import FULL, MINIMAL

MIB = 1024 * 1024


def test_broker_defaults_are_kafkas() -> None:
    b = BrokerConfig()
    assert (b.num_network_threads, b.num_io_threads, b.queued_max_requests) == (3, 8, 500)
    assert b.replica_lag_time_max_ms == 30_000
    assert b.min_insync_replicas == 1
    assert b.default_replication_factor == 1
    assert b.fetch_max_bytes == 55 * MIB
    assert b.message_max_bytes == 1_048_588
    assert b.producer_purgatory_purge_interval_requests == 1000
    assert b.fetch_purgatory_purge_interval_requests == 1000
    assert b.log_segment_bytes == 1024 * MIB
    assert b.log_roll_ms == 604_800_000
    assert b.log_roll_jitter_ms == 0
    assert b.log_index_size_max_bytes == 10 * MIB
    assert b.log_index_interval_bytes == 4096


def test_topic_defaults_come_from_the_broker_defaults() -> None:
    t = load_scenario(MINIMAL).topics[0]
    assert (t.partitions, t.replication_factor, t.min_insync_replicas) == (1, 1, 1)
    assert (t.segment_bytes, t.segment_ms, t.segment_jitter_ms) == (1024 * MIB, 604_800_000, 0)
    assert (t.segment_index_bytes, t.index_interval_bytes, t.max_message_bytes) == (10 * MIB, 4096, 1_048_588)


def test_replica_fetcher_defaults_are_kafkas() -> None:
    b = BrokerConfig()
    assert b.num_replica_fetchers == 1
    assert b.replica_fetch_wait_max_ms == 500
    assert b.replica_fetch_min_bytes == 1
    assert b.replica_fetch_max_bytes == MIB
    assert b.replica_fetch_response_max_bytes == 10 * MIB
    assert b.replica_fetch_backoff_ms == 1000


def test_producer_defaults_are_kafkas() -> None:
    p = ProducerConfig(name="p", topic="t", rate=10.0)
    assert p.acks == -1  # "all"
    assert p.linger_ms == 5  # Kafka 4.0 (KIP-1030)
    assert p.batch_size == 16_384
    assert p.max_in_flight_requests_per_connection == 5
    assert p.request_timeout_ms == 30_000
    assert p.delivery_timeout_ms == 120_000


def test_consumer_defaults_are_kafkas() -> None:
    c = ConsumerConfig(name="c", topic="t")
    assert c.fetch_min_bytes == 1
    assert c.fetch_max_wait_ms == 500
    assert c.max_partition_fetch_bytes == MIB
    assert c.fetch_max_bytes == 50 * MIB
    assert c.request_timeout_ms == 30_000


def test_scenario_level_defaults() -> None:
    s = load_scenario(MINIMAL)
    assert s.seed == 0
    assert s.warmup == 0.0
    assert s.sample_interval == 100.0
    assert s.clock.mode == "virtual"
    assert s.invariants is True
    assert s.producers == [] and s.consumers == [] and s.faults == []


def test_topics_inherit_the_brokers_settings_unless_they_set_their_own() -> None:
    s = load_scenario(FULL)
    orders, audit = s.topics
    assert orders.min_insync_replicas == 2  # from broker.min.insync.replicas
    assert audit.min_insync_replicas == 1  # its own
    assert orders.segment_bytes == 64 * MIB  # from broker log.segment.bytes
    assert audit.segment_bytes == MIB
    assert orders.segment_ms == 3_600_000
    assert audit.partitions == 1


def test_inherited_values_are_not_marked_as_written() -> None:
    orders = load_scenario(FULL).topics[0]
    assert "min_insync_replicas" not in orders.model_fields_set
    assert "replication_factor" in orders.model_fields_set


def test_every_endpoint_gets_its_effective_link() -> None:
    s = load_scenario(FULL)
    default = s.network.default_link
    producer = s.producers[0]
    assert producer.link == default
    assert producer.link is not None and sampler_from_spec(producer.link.latency_for("from_broker")).mean == 1.0
    # The followers' own latency replaces the default in both directions; the default's bandwidth stays.
    follower_link = s.followers.link
    assert follower_link is not None
    assert sampler_from_spec(follower_link.latency_for("to_broker")).mean == 2.0
    assert sampler_from_spec(follower_link.latency_for("from_broker")).mean == 2.0
    assert follower_link.bandwidth_for("to_broker") == 125e6
    assert follower_link.bandwidth_for("from_broker") == 1.25e9


def test_followers_are_numbered_from_one_up_to_the_largest_replication_factor() -> None:
    s = load_scenario(FULL)
    assert s.max_replication_factor == 3
    assert s.follower_ids == [1, 2]
    assert s.target_kind("follower-2") == "follower"
    assert s.target_kind("follower-3") is None
    assert s.target_kind("consumer-1") == "consumer"


def test_default_delivery_timeout_is_raised_to_linger_plus_request_timeout_as_kafka_does() -> None:
    text = MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s, linger.ms: 1000, request.timeout.ms: 200000}\n"
    assert load_scenario(text).producers[0].delivery_timeout_ms == 201_000


def test_acks_all_and_minus_one_are_the_same() -> None:
    for acks in ("all", -1, "-1", "ALL"):
        text = MINIMAL + f"producers:\n  - {{name: p, topic: t, rate: 1/s, acks: {acks}}}\n"
        assert load_scenario(text).producers[0].acks == -1
    text = MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s, acks: 0}\n"
    assert load_scenario(text).producers[0].acks == 0


def test_kafka_ms_and_bytes_keys_take_bare_integers_or_units() -> None:
    text = MINIMAL + "consumers:\n  - {name: c, topic: t, fetch.max.wait.ms: 2s, fetch.min.bytes: 1KiB}\n"
    c = load_scenario(text).consumers[0]
    assert (c.fetch_max_wait_ms, c.fetch_min_bytes) == (2000, 1024)
    text = MINIMAL + "consumers:\n  - {name: c, topic: t, fetch.max.wait.ms: 2000, fetch.min.bytes: '1024'}\n"
    c = load_scenario(text).consumers[0]
    assert (c.fetch_max_wait_ms, c.fetch_min_bytes) == (2000, 1024)


def test_values_are_canonical_numbers() -> None:
    s = load_scenario(FULL)
    assert s.duration == 120_000.0 and isinstance(s.duration, float)
    assert s.producers[1].rate == 5.0
    assert s.network.default_link.bandwidth == 1.25e9
    assert sampler_from_spec(s.broker.costs.request).mean == 0.05
    assert sampler_from_spec(s.producers[0].record_size).mean > 1024
    assert isinstance(s.broker.replica_lag_time_max_ms, int) and s.broker.replica_lag_time_max_ms == 10_000


def test_code_can_build_a_scenario_from_attribute_names_and_canonical_numbers() -> None:
    from kafkasim.scenario import Scenario, TopicConfig

    topic = TopicConfig(name="t", replication_factor=3)
    producer = ProducerConfig(name="p", topic="t", rate=100.0, linger_ms=10)
    a = Scenario(
        name="a",
        description="d",
        duration=1000.0,
        topics=[topic],
        producers=[producer],
        broker=BrokerConfig(min_insync_replicas=2),
    )
    b = Scenario(name="b", description="d", duration=1000.0, topics=[topic], producers=[producer])
    assert a.topics[0].min_insync_replicas == 2
    # resolving `a` did not leak into the shared instances or into `b`
    assert b.topics[0].min_insync_replicas == 1
    assert topic.min_insync_replicas == 1 and producer.link is None
    assert a.producers[0].link == a.network.default_link
