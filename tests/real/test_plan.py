"""What a real run is planned from, without Java: the records it sends are the simulated run's, what it cannot
take is refused with one line, what it ignores is listed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kafkasim import load_scenario, run_scenario
from kafkasim.clients.accumulator import RECORD_BATCH_OVERHEAD_BYTES
from kafkasim.real import netns
from kafkasim.real.config_map import kafka_configs, not_applied, refusals
from kafkasim.real.link_proxies import LinkProxies
from kafkasim.real.runner import FaultAction, FaultSchedule, fault_actions
from kafkasim.real.schedule import planned_records
from kafkasim.run.cluster_layout import cluster_layout
from kafkasim.scenario import Scenario, with_overrides

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, overrides", [
    ("quickstart", ["duration=3s"]),
    ("nic_bound_cluster", ["duration=2s"]),  # round-robin over 3 partitions, 3 000 records/s
])
def test_the_schedule_is_the_simulated_runs_records(name: str, overrides: list[str]) -> None:
    scenario = with_overrides(load_scenario(ROOT / f"scenarios/{name}.yaml"), overrides)
    planned = list(planned_records(scenario, scenario.producers[0], scenario.seed))
    records = run_scenario(scenario).records
    # Every batch of the simulated run starts with a record of the schedule, at the same intended time, on the
    # same partition, and the batches hold exactly the scheduled records.
    assert int(records["record_count"].sum()) == len(planned)
    intended = {round(r.intended_ms, 6): r for r in planned}
    for first, partition in zip(records["first_intended_ms"], records["partition"], strict=True):
        record = intended[round(float(first), 6)]
        assert record.partition in (-1, int(partition))
    sizes = np.array([r.size for r in planned])
    assert int(records["size_bytes"].sum()) == int(sizes.sum()) + RECORD_BATCH_OVERHEAD_BYTES * len(records)


def test_what_a_real_cluster_cannot_take_is_refused_one_line_each() -> None:
    scenario = load_scenario(ROOT / "scenarios/slow_follower_isr_shrink.yaml")
    assert [line.split(":")[0] for line in refusals(scenario)] == ["faults[0] (slow_disk follower-2)"]
    # Its resets go through the producers' own proxies (kafkasim.real.link_proxies).
    assert refusals(load_scenario(ROOT / "scenarios/idempotence_and_a_lost_response.yaml")) == []
    scenario = load_scenario(ROOT / "scenarios/segment_roll_wakes_fetches.yaml")
    assert [line.split(":")[0] for line in refusals(scenario)] == ["topics[0].segment.bytes"]
    assert refusals(load_scenario(ROOT / "scenarios/leader_crash.yaml")) == []
    assert all("\n" not in line for line in refusals(load_scenario(ROOT / "scenarios/unclean_election_loses_acks1.yaml")))


def test_simulator_only_knobs_are_listed_and_kafka_keys_pass_through() -> None:
    scenario = load_scenario(ROOT / "scenarios/acks_compared.yaml")
    notes = not_applied(scenario)
    assert notes[0].startswith("broker.costs") and any("own link" in n for n in notes)
    assert "controller.metadata_apply" not in notes
    applied = not_applied(with_overrides(scenario, ["controller.metadata_apply=5ms"]))
    assert "controller.metadata_apply" in applied
    assert not any("connection_layout" in n for n in notes)
    drawn = not_applied(with_overrides(scenario, ["broker.connection_layout=random"]))
    assert any(n.startswith("broker.connection_layout (a real broker's Acceptor") for n in drawn)
    configs = kafka_configs(scenario, cluster_layout(scenario, seed=scenario.seed))
    assert sorted(configs.brokers) == [0, 1, 2]
    assert configs.brokers[1]["replica.fetch.wait.max.ms"] == "500"
    assert configs.controller["broker.session.timeout.ms"] == "9000"
    assert configs.topics == [{"name": "events", "replicas": [[0, 1, 2]],
                               "config": configs.topics[0]["config"]}]
    assert configs.topics[0]["config"]["min.insync.replicas"] == "2"
    assert [p["acks"] for p in configs.producers] == ["0", "1", "all"]
    assert configs.producers[2]["client.id"] == "acks-all" and "partitioner" not in configs.producers[2]


def test_topics_get_the_placers_replicas_for_the_seed() -> None:
    scenario = load_scenario(ROOT / "scenarios/nic_bound_cluster.yaml")
    layout = cluster_layout(scenario, seed=scenario.seed)
    configs = kafka_configs(scenario, layout)
    assert configs.topics[0]["replicas"] == [list(layout.replicas[tp]) for tp in layout.partitions_by_topic["clicks"]]


_DELAYED = """
name: delayed
description: link_delay faults of every kind a real cluster takes
duration: 5s
cluster:
  brokers: 3
topics:
  - {name: t, replication.factor: 3}
producers:
  - {name: slow-writer, topic: t, acks: all, rate: 10/s}
  - {name: writer, topic: t, acks: all, rate: 10/s}
consumers:
  - {name: reader, topic: t}
faults:
"""


def _delayed(tmp_path: Path, faults: str) -> Scenario:
    path = tmp_path / "delayed.yaml"
    path.write_text(_DELAYED + faults, encoding="utf-8")
    return load_scenario(path)


def test_a_link_delay_runs_with_a_constant_of_whole_milliseconds_and_no_partition(tmp_path: Path) -> None:
    ok = _delayed(tmp_path, "  - {type: link_delay, target: broker-2, at: 1s, duration: 1s, extra: 20ms}\n"
                            "  - {type: link_delay, target: slow-writer, at: 1s, duration: 1s, extra: 5ms,"
                            " direction: to_broker}\n")
    assert refusals(ok) == []
    refused = _delayed(tmp_path, "  - {type: link_delay, target: reader, at: 1s, duration: 1s,"
                                 " extra: {type: uniform, low: 1ms, high: 9ms}}\n"
                                 "  - {type: link_delay, target: writer, at: 1s, duration: 1s, extra: 2.5ms}\n"
                                 "  - {type: network_partition, at: 1s, duration: 1s,"
                                 " sides: [[broker-0], [broker-1, broker-2]]}\n")
    lines = [line for line in refusals(refused) if "link_delay" in line]
    assert [line.split(":")[0] for line in lines] == ["faults[0] (link_delay reader)", "faults[0] (link_delay reader)",
                                                      "faults[1] (link_delay writer)", "faults[1] (link_delay writer)"]
    assert "uniform distribution" in lines[0] and "whole number of milliseconds" in lines[2]
    assert "network namespace" in lines[1] and all("\n" not in line for line in lines)


class _FakeToxiproxy:
    """What LinkProxies asks of Toxiproxy, recorded (the real one: tests/real/test_toxiproxy.py)."""

    def __init__(self) -> None:
        self.proxies: dict[str, str] = {}
        self.toxics: dict[tuple[str, str], tuple[str, int]] = {}
        self.resets: list[str] = []

    def add_proxy(self, name: str, upstream: str, listen_host: str = "127.0.0.1", listen_port: int = 0) -> int:
        self.proxies[name] = upstream
        return listen_port

    def add_latency(self, proxy: str, name: str, stream: str, latency_ms: int, jitter_ms: int = 0) -> None:
        assert (proxy, name) not in self.toxics
        self.toxics[(proxy, name)] = (stream, latency_ms)

    def remove_toxic(self, proxy: str, name: str) -> None:
        del self.toxics[(proxy, name)]

    def reset(self, proxy: str) -> None:
        self.resets.append(proxy)


def test_proxied_targets_get_a_listener_on_every_broker_behind_a_proxy(tmp_path: Path) -> None:
    scenario = _delayed(tmp_path, "  - {type: link_delay, target: broker-2, at: 1s, duration: 1s, extra: 20ms}\n"
                                  "  - {type: link_delay, target: slow-writer, at: 1s, duration: 1s, extra: 5ms,"
                                  " direction: to_broker}\n"
                                  "  - {type: link_delay, target: broker-2, at: 3s, duration: 1s, extra: 7ms,"
                                  " direction: from_broker}\n")
    fake = _FakeToxiproxy()
    proxies = LinkProxies(fake, scenario, [0, 1, 2])  # type: ignore[arg-type]
    listeners = proxies.extra_listeners()
    # One listener per proxied target on every broker, advertised as the proxy that forwards to it.
    assert [name for name, _, _ in listeners[0]] == ["PROXIED0", "PROXIED1"]
    for b, entries in listeners.items():
        for name, port, advertised in entries:
            assert fake.proxies[f"{name.lower()}-broker-{b}"] == f"127.0.0.1:{port}"
            assert advertised == proxies.listeners["broker-2" if name == "PROXIED0" else "slow-writer"].proxy_ports[b]
    # broker-2's fetchers use its listener; the producer starts from its proxies; the others go direct.
    assert proxies.inter_broker_listeners() == {2: "PROXIED0"}
    assert proxies.bootstrap("slow-writer") == ",".join(f"127.0.0.1:{entries[1][2]}" for entries in listeners.values())
    assert proxies.bootstrap("writer") is None and proxies.bootstrap("reader") is None
    # A fault's toxics: its direction(s) on every proxy of its target, removed at its end.
    faults = scenario.faults
    proxies.delay_on(0, faults[0])  # type: ignore[arg-type]
    proxies.delay_on(2, faults[2])  # type: ignore[arg-type]
    assert fake.toxics[("proxied0-broker-1", "faults-0-upstream")] == ("upstream", 20)
    assert fake.toxics[("proxied0-broker-1", "faults-0-downstream")] == ("downstream", 20)
    assert fake.toxics[("proxied0-broker-0", "faults-2-downstream")] == ("downstream", 7)
    assert len(fake.toxics) == 3 * 3
    proxies.delay_off(0, faults[0])  # type: ignore[arg-type]
    assert sorted(fake.toxics) == [(f"proxied0-broker-{b}", "faults-2-downstream") for b in range(3)]
    proxies.delay_on(1, faults[1])  # type: ignore[arg-type]
    assert fake.toxics[("proxied1-broker-0", "faults-1-upstream")] == ("upstream", 5)


def test_a_connection_reset_closes_every_connection_of_its_targets_proxies_at_its_instant(tmp_path: Path) -> None:
    """A reset of a client (its connections to every broker) or of a follower (its fetchers'): the target gets
    its own proxies like a delayed one, and the reset closes each of them at ``at``; other clients go direct."""
    scenario = _delayed(tmp_path, "  - {type: connection_reset, target: slow-writer, at: 2s}\n"
                                  "  - {type: link_delay, target: slow-writer, at: 1s, duration: 1s, extra: 5ms}\n"
                                  "  - {type: connection_reset, target: reader, at: 3s}\n")
    assert refusals(scenario) == []
    fake = _FakeToxiproxy()
    proxies = LinkProxies(fake, scenario, [0, 1, 2])  # type: ignore[arg-type]
    assert sorted(proxies.listeners) == ["reader", "slow-writer"]  # one listener each, the delay's shared
    assert proxies.bootstrap("writer") is None and proxies.bootstrap("reader") is not None
    actions = fault_actions(scenario, _FakeCluster(), None, proxies)  # type: ignore[arg-type]
    resets = [a for a in actions if "connection_reset" in a.label]
    assert [(a.at_ms, a.label) for a in resets] == [(2000.0, "faults[0] connection_reset slow-writer"),
                                                    (3000.0, "faults[2] connection_reset reader")]
    resets[0].act()
    assert fake.resets == ["proxied0-broker-0", "proxied0-broker-1", "proxied0-broker-2"]
    resets[1].act()
    assert fake.resets[3:] == ["proxied1-broker-0", "proxied1-broker-1", "proxied1-broker-2"]
    # A broker's every connection cannot be reset through proxies of its own.
    broker = _delayed(tmp_path, "  - {type: connection_reset, target: broker-1, at: 2s}\n")
    assert [line.split(":")[0] for line in refusals(broker)] == ["faults[0] (connection_reset broker-1)"]


class _FakeCluster:
    brokers = {0: None, 1: None, 2: None}


class _FakeNetwork:
    def __init__(self) -> None:
        self.log: list[tuple[str, str, str]] = []
        self.batches = 0

    def cut_each(self, pairs: list[tuple[str, str]]) -> None:
        self.batches += 1
        self.log += [("cut", a, b) for a, b in pairs]

    def heal_each(self, pairs: list[tuple[str, str]]) -> None:
        self.batches += 1
        self.log += [("heal", a, b) for a, b in pairs]


def test_a_link_drop_cuts_the_clients_links_to_every_broker_in_its_direction_for_its_outage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns, "unavailable_reason", lambda: None)
    path = tmp_path / "drop.yaml"
    path.write_text(_DELAYED.replace("  - {name: writer, topic: t, acks: all, rate: 10/s}\n", "")
                    .replace("consumers:\n  - {name: reader, topic: t}\n", "")
                    + "  - {type: link_drop, target: slow-writer, at: 1s, duration: 100ms}\n"
                    + "  - {type: link_drop, target: slow-writer, at: 2s, duration: 1s, direction: from_broker}\n",
                    encoding="utf-8")
    scenario = load_scenario(path)
    assert refusals(scenario) == []
    network = _FakeNetwork()
    actions = fault_actions(scenario, _FakeCluster(), network)  # type: ignore[arg-type]
    assert [(a.at_ms, a.label) for a in actions] == [
        (1000.0, "faults[0] link_drop slow-writer"), (1100.0, "faults[0] link_drop slow-writer: up again"),
        (2000.0, "faults[1] link_drop slow-writer"), (3000.0, "faults[1] link_drop slow-writer: up again")]
    assert actions[1].follows is actions[0] and actions[3].follows is actions[2]
    actions[0].act()
    both = [("cut", "clients", f"broker-{b}") for b in range(3)] + [("cut", f"broker-{b}", "clients") for b in range(3)]
    assert network.log == both
    actions[1].act()
    assert network.log[6:] == [("heal", a, b) for _, a, b in both]
    # Each direction's rule in one `ip -batch`: a 100 ms outage's six directions go down (and up) together.
    assert network.batches == 2
    del network.log[:]
    actions[2].act()
    assert network.log == [("cut", f"broker-{b}", "clients") for b in range(3)]


def test_a_faults_end_waits_for_its_start_to_be_applied_and_then_its_length() -> None:
    """A fault's end counts its length from when its start was applied, not from time 0: a start applied late
    (one `ip` per direction on a loaded machine once took most of a 100 ms outage) must not shorten the
    fault. Both instants are kept for run-info.json."""
    log: list[tuple[str, float]] = []

    def start() -> None:
        log.append(("start", time.monotonic()))
        time.sleep(0.15)  # applied 150 ms after it began

    def end() -> None:
        log.append(("end", time.monotonic()))

    cut = FaultAction(0.0, "cut", start)
    heal = FaultAction(100.0, "heal", end, cut)
    schedule = FaultSchedule([cut, heal], time.time() * 1000.0)
    schedule.start()
    assert heal.finished.wait(5.0)
    schedule.stop(5.0)
    assert [name for name, _ in log] == ["start", "end"] and not schedule.errors
    assert log[1][1] - log[0][1] >= 0.15 + 0.1 - 0.005, log
    assert cut.applied_ms - cut.done_ms >= 150 - 5 and heal.done_ms >= cut.applied_ms + 100 - 1


def test_a_cancelled_schedule_runs_no_end_whose_start_is_under_way() -> None:
    started = threading.Event()
    ended: list[str] = []
    cut = FaultAction(0.0, "cut", lambda: (started.set(), time.sleep(0.2)))  # type: ignore[func-returns-value]
    heal = FaultAction(50.0, "heal", lambda: ended.append("heal"), cut)
    schedule = FaultSchedule([cut, heal], time.time() * 1000.0)
    schedule.start()
    assert started.wait(5.0)
    schedule.stop(5.0)
    assert ended == [] and not schedule.errors
