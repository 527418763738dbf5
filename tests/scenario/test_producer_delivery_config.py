"""The producer's delivery keys: Kafka's defaults, ``KafkaProducer.configureDeliveryTimeout`` and
``ProducerConfig.postProcessAndValidateIdempotenceConfigs`` (explicit conflicts are errors, defaulted
idempotence turns off silently and the resolved scenario shows it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.scenario import ScenarioError, load_scenario, with_overrides
from kafkasim.scenario.clients import ProducerConfig

from .samples import MINIMAL

INT_MAX = 2_147_483_647


def _producer(keys: str) -> ProducerConfig:
    return load_scenario(MINIMAL + f"producers:\n  - {{name: p, topic: t, rate: 1/s{keys}}}\n").producers[0]


def _error(tmp_path: Path, keys: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL + f"producers:\n  - {{name: p, topic: t, rate: 1/s{keys}}}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return [str(p).replace(str(path), "s.yaml") for p in info.value.problems]


def test_delivery_defaults_are_kafkas() -> None:
    """ProducerConfig's defaults: retries Integer.MAX_VALUE, retry.backoff.ms 100, retry.backoff.max.ms 1000,
    enable.idempotence true, delivery.timeout.ms 120000, buffer.memory 32 MiB, max.block.ms 60000."""
    p = _producer("")
    assert (p.buffer_memory, p.max_block_ms) == (32 * 1024 * 1024, 60_000)
    assert (p.retries, p.retry_backoff_ms, p.retry_backoff_max_ms) == (INT_MAX, 100, 1000)
    assert p.enable_idempotence is True and p.delivery_timeout_ms == 120_000


def test_defaulted_idempotence_is_turned_off_by_a_conflicting_setting() -> None:
    """KafkaProducerTest.testAcksAndIdempotenceForIdempotentProducers / testRetriesAndIdempotenceForIdempotentProducers /
    (the defaulted half): acks=1 or retries=0 silently disable idempotence, and the resolved scenario says
    so."""
    assert _producer(", acks: 1").enable_idempotence is False
    assert _producer(", retries: 0").enable_idempotence is False
    assert _producer(", acks: all").enable_idempotence is True
    dumped = _producer(", acks: 1").model_dump(by_alias=True)
    assert dumped["enable.idempotence"] is False


def test_more_than_five_in_flight_with_defaulted_idempotence_is_an_error(tmp_path: Path) -> None:
    """Kafka 4.0+ (ProducerConfig.postProcessAndValidateIdempotenceConfigs, KafkaProducerTest
    .testInflightRequestsAndIdempotenceForIdempotentProducers): max.in.flight.requests.per.connection above 5
    is a ConfigException for an idempotent producer even when idempotence is only the default -- with acks=1
    too; Kafka 3.x turned idempotence off instead. Only an explicit enable.idempotence=false allows it."""
    expected = ["s.yaml:7: producers[0].max.in.flight.requests.per.connection: must be at most 5 for the idempotent "
                "producer, Kafka's default (allowed: 1 to 5; or set enable.idempotence: false)"]
    assert _error(tmp_path, ", max.in.flight.requests.per.connection: 6") == expected
    assert _error(tmp_path, ", acks: 1, max.in.flight.requests.per.connection: 6") == expected
    p = _producer(", enable.idempotence: false, max.in.flight.requests.per.connection: 6")
    assert p.enable_idempotence is False and p.max_in_flight_requests_per_connection == 6


def test_explicit_idempotence_with_a_conflicting_setting_is_an_error(tmp_path: Path) -> None:
    """The same KafkaProducerTest cases, explicit half: enable.idempotence=true with acks=1, retries=0 or
    max.in.flight > 5 is a ConfigException."""
    assert _error(tmp_path, ", enable.idempotence: true, acks: 1") == [
        "s.yaml:7: producers[0].acks: must be all when enable.idempotence is true, otherwise idempotence "
        "cannot be guaranteed (allowed: all, -1)"
    ]
    assert _error(tmp_path, ", enable.idempotence: true, retries: 0") == [
        "s.yaml:7: producers[0].retries: must be non-zero when enable.idempotence is true (allowed: 1 and more)"
    ]
    assert _error(tmp_path, ", enable.idempotence: true, max.in.flight.requests.per.connection: 6") == [
        "s.yaml:7: producers[0].max.in.flight.requests.per.connection: must be at most 5 when "
        "enable.idempotence is true (allowed: 1 to 5)"
    ]
    assert _producer(", enable.idempotence: false, acks: 1").enable_idempotence is False


def test_explicit_delivery_timeout_below_linger_plus_request_timeout_is_an_error(tmp_path: Path) -> None:
    """KafkaProducerTest.testDeliveryTimeoutAndLingerMsConfig: an explicit delivery.timeout.ms below
    linger.ms + request.timeout.ms is a ConfigException; a defaulted one is raised to the sum."""
    problems = _error(tmp_path, ", delivery.timeout.ms: 1000, request.timeout.ms: 2000")
    assert len(problems) == 1 and problems[0].startswith("s.yaml:7: producers[0].delivery.timeout.ms: must be >=")
    assert _producer(", linger.ms: 1000, request.timeout.ms: 200000").delivery_timeout_ms == 201_000


def test_the_resolved_scenario_leaves_the_derived_keys_to_kafka_and_loads_back_equal() -> None:
    """The raised delivery.timeout.ms and the silently disabled idempotence are what Kafka derives from the
    other keys: the dump leaves them out (written, they would become explicit) and loads back equal."""
    from kafkasim.scenario.load import dump_scenario

    text = MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s, acks: 1, linger.ms: 1000, request.timeout.ms: 200000}\n"
    scenario = load_scenario(text)
    assert not scenario.producers[0].enable_idempotence and scenario.producers[0].delivery_timeout_ms == 201_000
    dumped = dump_scenario(scenario)
    assert "enable.idempotence" not in dumped and "delivery.timeout.ms" not in dumped
    assert load_scenario(dumped) == scenario
    explicit = load_scenario(MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s, enable.idempotence: true}\n")
    assert "enable.idempotence: true" in dump_scenario(explicit)  # what the author set stays


def test_a_dumped_scenario_still_takes_acks_1_as_kafka_would() -> None:
    """Regression (the sweep notebook): a resolved acks=all scenario, dumped and loaded back, refused
    `producers[0].acks=1` because the defaulted enable.idempotence=true had become explicit."""
    from kafkasim.scenario.load import dump_scenario

    base = load_scenario(MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s}\n")
    again = with_overrides(load_scenario(dump_scenario(base)), ["producers[0].acks=1", "producers[0].request.timeout.ms=200000"])
    assert not again.producers[0].enable_idempotence and again.producers[0].delivery_timeout_ms == 200_005
