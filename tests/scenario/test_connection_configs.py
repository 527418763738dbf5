"""The connection keys: a producer's and a consumer's ``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms`` /
``socket.connection.setup.timeout.ms`` / ``socket.connection.setup.timeout.max.ms`` (CommonClientConfigs, with
``postProcessReconnectBackoffConfigs``), and a broker's ``socket.connection.setup.timeout.*`` (ServerConfigs:
its replica fetchers' NetworkClient, which has no reconnect backoff)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.network.cluster_connection_states import ConnectionConfig
from kafkasim.run.build import connection_config_of, replica_fetcher_config_of
from kafkasim.scenario import ScenarioError, dump_scenario, load_scenario
from kafkasim.scenario.clients import ConsumerConfig, ProducerConfig

from .samples import MINIMAL


def _producer(keys: str) -> ProducerConfig:
    return load_scenario(MINIMAL + f"producers:\n  - {{name: p, topic: t, rate: 1/s{keys}}}\n").producers[0]


def _consumer(keys: str) -> ConsumerConfig:
    return load_scenario(MINIMAL + f"consumers:\n  - {{name: c, topic: t{keys}}}\n").consumers[0]


def _error(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return [str(p).replace(str(path), "s.yaml") for p in info.value.problems]


def test_the_defaults_are_kafkas() -> None:
    """ProducerConfig / ConsumerConfig: reconnect.backoff.ms 50, reconnect.backoff.max.ms 1000; CommonClientConfigs:
    socket.connection.setup.timeout.ms 10 s, .max.ms 30 s; ServerConfigs: the same setup timeouts."""
    for client in (_producer(""), _consumer("")):
        assert connection_config_of(client) == ConnectionConfig(50.0, 1000.0, 10_000.0, 30_000.0)
    fetcher = replica_fetcher_config_of(load_scenario(MINIMAL).broker)
    assert fetcher.connection == ConnectionConfig(0.0, 0.0, 10_000.0, 30_000.0)


def test_the_keys_take_durations() -> None:
    p = _producer(", reconnect.backoff.ms: 100ms, reconnect.backoff.max.ms: 2s, "
                  "socket.connection.setup.timeout.ms: 5s, socket.connection.setup.timeout.max.ms: 1m")
    assert connection_config_of(p) == ConnectionConfig(100.0, 2000.0, 5000.0, 60_000.0)
    c = _consumer(", socket.connection.setup.timeout.ms: 2000")
    assert c.socket_connection_setup_timeout_ms == 2000


def test_reconnect_backoff_alone_disables_the_exponential_backoff() -> None:
    """CommonClientConfigs.postProcessReconnectBackoffConfigs: reconnect.backoff.ms set and reconnect.backoff.max.ms
    not: the max becomes reconnect.backoff.ms, and the resolved scenario says so."""
    for client in (_producer(", reconnect.backoff.ms: 200"), _consumer(", reconnect.backoff.ms: 200")):
        assert (client.reconnect_backoff_ms, client.reconnect_backoff_max_ms) == (200, 200)
    both = _producer(", reconnect.backoff.ms: 200, reconnect.backoff.max.ms: 5000")
    assert (both.reconnect_backoff_ms, both.reconnect_backoff_max_ms) == (200, 5000)
    resolved = load_scenario(dump_scenario(load_scenario(
        MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s, reconnect.backoff.ms: 200}\n")))
    assert resolved.producers[0].reconnect_backoff_max_ms == 200


def test_a_negative_value_is_refused_with_its_place(tmp_path: Path) -> None:
    problems = _error(tmp_path, MINIMAL + "producers:\n  - {name: p, topic: t, rate: 1/s, reconnect.backoff.ms: -1}\n")
    assert len(problems) == 1 and problems[0].startswith("s.yaml:7: producers[0].reconnect.backoff.ms:")
    problems = _error(tmp_path, MINIMAL + "consumers:\n  - {name: c, topic: t, socket.connection.setup.timeout.max.ms: -5}\n")
    assert len(problems) == 1 and problems[0].startswith("s.yaml:7: consumers[0].socket.connection.setup.timeout.max.ms:")
    problems = _error(tmp_path, MINIMAL + "broker:\n  socket.connection.setup.timeout.ms: -1\n")
    assert len(problems) == 1 and problems[0].startswith("s.yaml:7: broker.socket.connection.setup.timeout.ms:")


def test_the_broker_keys_set_its_replica_fetchers_setup_timeout_per_broker() -> None:
    scenario = load_scenario(MINIMAL.replace("topics:\n  - name: t\n", "topics:\n  - {name: t, replication.factor: 3}\n")
                             + "cluster:\n  brokers: 3\n  overrides:\n    - {broker: 2, socket.connection.setup.timeout.ms: 3s}\n"
                             + "broker:\n  socket.connection.setup.timeout.max.ms: 40s\n")
    assert replica_fetcher_config_of(scenario.broker_for(0)).connection == ConnectionConfig(0.0, 0.0, 10_000.0, 40_000.0)
    assert replica_fetcher_config_of(scenario.broker_for(2)).connection == ConnectionConfig(0.0, 0.0, 3_000.0, 40_000.0)
    # Kafka has no broker reconnect.backoff.ms (BrokerBlockingSender passes 0): the key is refused there.
    with pytest.raises(ScenarioError, match=r"broker\.reconnect\.backoff\.ms"):
        load_scenario(MINIMAL + "broker:\n  reconnect.backoff.ms: 100\n")
