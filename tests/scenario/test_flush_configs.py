"""The flush configs (flush.messages, flush.ms, log.flush.interval.*, log.flush.scheduler.interval.ms) with
Kafka's names, defaults and inheritance, and the broker's `disk:` costs."""

from __future__ import annotations

from kafkasim.scenario import load_scenario
from kafkasim.scenario.broker import LONG_MAX

from .samples import MINIMAL
from .test_errors import only, problems


def test_flushing_is_left_to_the_os_by_default() -> None:
    s = load_scenario(MINIMAL)
    assert (s.topics[0].flush_messages, s.topics[0].flush_ms) == (LONG_MAX, LONG_MAX)
    b = s.broker
    assert (b.log_flush_interval_messages, b.log_flush_interval_ms, b.log_flush_scheduler_interval_ms) == (
        LONG_MAX, None, LONG_MAX)
    assert (b.disk.fsync.value, b.disk.write_per_kib.value) == (0.2, 0.0005)


def test_topics_inherit_the_broker_s_flush_intervals_and_flush_ms_falls_back_to_the_scheduler_s() -> None:
    text = MINIMAL + "  - name: u\n    flush.messages: 5\n    flush.ms: 2s\nbroker:\n  log.flush.interval.messages: 100\n"
    s = load_scenario(text + "  log.flush.scheduler.interval.ms: 1s\n")
    assert s.broker.log_flush_interval_ms_or_default == 1000
    t, u = s.topics
    assert (t.flush_messages, t.flush_ms, u.flush_messages, u.flush_ms) == (100, 1000, 5, 2000)
    s = load_scenario(text + "  log.flush.scheduler.interval.ms: 1s\n  log.flush.interval.ms: 250\n")
    assert s.topics[0].flush_ms == 250
    assert load_scenario(MINIMAL + "    flush.ms: 9223372036854775807\n").topics[0].flush_ms == LONG_MAX


def test_flush_intervals_below_kafka_s_minimum_are_refused() -> None:
    p = only(MINIMAL + "    flush.messages: 0\n")
    assert str(p) == "<string>:6: topics[0].flush.messages: 0 is out of range (allowed: 1 to 9223372036854775807)"
    p = only(MINIMAL + "broker:\n  log.flush.interval.messages: 0\n")
    assert p.path == "broker.log.flush.interval.messages"
    assert all(p.path.startswith("topics[0].flush.ms") for p in problems(MINIMAL + "    flush.ms: soon\n"))


def test_disk_costs_are_distributions_with_units() -> None:
    p = only(MINIMAL + "broker:\n  disk:\n    fsync: fast\n")
    assert p.path == "broker.disk.fsync.value"
    p = only(MINIMAL + "broker:\n  disk:\n    fsink: 1ms\n")
    assert p.message == "unknown key 'fsink', did you mean 'fsync'?"
    s = load_scenario(MINIMAL + "broker:\n  disk:\n    fsync: {type: lognormal, median: 8ms, p99: 30ms}\n")
    assert s.broker.disk.fsync.median == 8.0


def test_a_broker_s_disk_may_differ_but_the_flush_intervals_are_cluster_wide() -> None:
    cluster = "cluster:\n  brokers: 3\n  overrides:\n    - broker: 1\n"
    s = load_scenario(MINIMAL + cluster + "      disk: {fsync: 8ms}\n")
    assert (s.broker_for(0).disk.fsync.value, s.broker_for(1).disk.fsync.value) == (0.2, 8.0)
    p = only(MINIMAL + cluster + "      log.flush.interval.ms: 5s\n")
    assert "a topic default (flush.ms)" in p.message
