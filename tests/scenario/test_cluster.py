"""The `cluster:` section, `replica_assignment`, per-broker overrides, broker fault targets, and the
replica fetcher configs that moved from `followers:` to `broker:` (Kafka's ReplicationConfigs).

Every bad input is one `file:line: key.path: message` problem saying what is allowed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.scenario import Problem, ScenarioError, load_scenario, with_overrides

from .samples import MINIMAL, ROOT

CLUSTER = """\
name: c
description: a cluster
duration: 10s
cluster:
  brokers: 3
topics:
  - name: t
    partitions: 6
    replication.factor: 3
"""


def only(text: str) -> Problem:
    with pytest.raises(ScenarioError) as info:
        load_scenario(text)
    problems = info.value.problems
    assert len(problems) == 1, problems
    return problems[0]


def test_a_cluster_section_loads_with_its_defaults() -> None:
    s = load_scenario(CLUSTER)
    assert s.cluster is not None
    assert s.cluster.brokers == 3 and s.cluster.racks is None and s.cluster.overrides == []
    assert (s.cluster.nic.bandwidth_in, s.cluster.nic.bandwidth_out) == (1.25e9, 1.25e9)
    assert s.broker_ids == [0, 1, 2]
    assert s.follower_ids == []
    assert s.target_kind("broker-2") == "broker"
    assert s.target_kind("broker-3") is None and s.target_kind("follower-1") is None


def test_without_a_cluster_the_brokers_are_the_leader_and_its_followers() -> None:
    s = load_scenario(MINIMAL.replace("- name: t", "- {name: t, replication.factor: 3}"))
    assert s.cluster is None
    assert s.broker_ids == [0, 1, 2] and s.follower_ids == [1, 2]
    assert s.target_kind("broker-1") is None and s.target_kind("follower-1") == "follower"
    assert s.broker_for(2) == s.broker


def test_overrides_apply_to_their_broker_only() -> None:
    text = CLUSTER.replace("  brokers: 3\n", """\
  brokers: 3
  racks: [r1, r1, r2]
  nic: {bandwidth: 1Gbit/s, out: 100MB/s}
  overrides:
    - broker: 2
      num.io.threads: 2
      replica.fetch.max.bytes: 64KiB
      costs: {request: 1ms}
""") + "broker:\n  num.io.threads: 6\n  num.network.threads: 5\n  costs: {append_per_kib: 9us}\n"
    s = load_scenario(text)
    assert s.cluster is not None
    assert s.cluster.rack_of(0) == "r1" and s.cluster.rack_of(2) == "r2"
    assert (s.cluster.nic.bandwidth_in, s.cluster.nic.bandwidth_out) == (125e6, 100e6)
    b0, b2 = s.broker_for(0), s.broker_for(2)
    assert (b0.num_io_threads, b0.num_network_threads, b0.replica_fetch_max_bytes) == (6, 5, 1024 * 1024)
    assert (b2.num_io_threads, b2.num_network_threads, b2.replica_fetch_max_bytes) == (2, 5, 64 * 1024)
    # A partial costs override keeps the broker's other costs.
    assert b2.costs.request.value == 1.0
    assert b2.costs.append_per_kib.value == b0.costs.append_per_kib.value == pytest.approx(0.009)
    with pytest.raises(KeyError):
        s.broker_for(3)


def test_a_broker_override_follows_a_set_of_the_broker_default() -> None:
    text = CLUSTER.replace("  brokers: 3\n", "  brokers: 3\n  overrides: [{broker: 1, num.io.threads: 2}]\n")
    s = with_overrides(load_scenario(text), ["broker.num.network.threads=7"])
    assert (s.broker_for(1).num_network_threads, s.broker_for(1).num_io_threads) == (7, 2)


def test_a_dumped_cluster_scenario_loads_back_equal() -> None:
    from kafkasim.scenario import dump_scenario

    text = CLUSTER.replace("  brokers: 3\n", "  brokers: 3\n  overrides: [{broker: 1, costs: {request: 1ms}}]\n")
    text = text.replace("    partitions: 6\n    replication.factor: 3\n", "    replica_assignment: [[0, 1], [1, 2]]\n")
    s = load_scenario(text)
    assert load_scenario(dump_scenario(s)) == s
    assert (s.topics[0].partitions, s.topics[0].replication_factor) == (2, 2)


# --- the replica fetcher configs are broker configs --------------------------------------------------------


def test_replica_fetch_keys_in_followers_name_their_new_place(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL + "followers:\n  replica.fetch.max.bytes: 16KiB\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path}:7: followers.replica.fetch.max.bytes: moved to broker.replica.fetch.max.bytes (a broker config in Kafka)"
    )


def test_a_set_of_a_moved_key_names_its_new_place() -> None:
    with pytest.raises(ScenarioError) as info:
        with_overrides(load_scenario(MINIMAL), ["followers.replica.fetch.wait.max.ms=100"])
    assert str(info.value) == (
        "--set followers.replica.fetch.wait.max.ms=100: followers.replica.fetch.wait.max.ms: moved to "
        "broker.replica.fetch.wait.max.ms (a broker config in Kafka)"
    )


def test_replica_fetch_keys_are_broker_configs() -> None:
    s = load_scenario(MINIMAL + "broker:\n  replica.fetch.wait.max.ms: 100\n  num.replica.fetchers: 4\n")
    assert (s.broker.replica_fetch_wait_max_ms, s.broker.num_replica_fetchers) == (100, 4)


def test_the_moved_error_exits_2_from_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL + "followers:\n  replica.fetch.wait.max.ms: 100\n")
    result = _cli("validate", str(path))
    assert result.returncode == 2
    assert f"{path}:7: followers.replica.fetch.wait.max.ms: moved to broker.replica.fetch.wait.max.ms" in result.stderr


# --- every bad cluster input ---------------------------------------------------------------------------


def _cluster(lines: str) -> str:
    return CLUSTER.replace("  brokers: 3\n", lines)


@pytest.mark.parametrize(
    ("text", "line", "path", "message"),
    [
        (_cluster("  brokers: 0\n"), 5, "cluster.brokers", "0 is out of range (allowed: 1 to 64)"),
        (_cluster("  brokers: 65\n"), 5, "cluster.brokers", "65 is out of range (allowed: 1 to 64)"),
        (_cluster("  brokers: 3\n  racks: [a, b]\n"), 6, "cluster.racks",
         "lists 2 rack(s) for 3 broker(s) (allowed: one rack name per broker, in id order)"),
        (_cluster("  brokers: 3\n  racks: [a, b, 'c d']\n"), 6, "cluster.racks[2]",
         "'c d' is not a valid rack name (allowed: 1 to 100 letters, digits, '.', '_', '-')"),
        (_cluster("  brokers: 3\n  overrides: [{broker: 3, num.io.threads: 1}]\n"), 6, "cluster.overrides[0].broker",
         "broker 3 does not exist (allowed: 0 to 2, the cluster's brokers)"),
        (_cluster("  brokers: 3\n  overrides:\n    - {broker: 1, num.io.threads: 1}\n    - {broker: 1}\n"), 8,
         "cluster.overrides[1].broker",
         "broker 1 is already overridden by overrides[0] (allowed: one entry per broker)"),
        (_cluster("  brokers: 3\n  overrides:\n    - broker: 1\n      num.io.thread: 1\n"), 8,
         "cluster.overrides[0].num.io.thread", "unknown key 'num.io.thread', did you mean 'num.io.threads'?"),
        (_cluster("  brokers: 3\n  overrides: [{broker: 1}]\n  nic: {bandwidth: fast}\n"), 7, "cluster.nic.bandwidth",
         "'fast' is not a bandwidth (write a number and a unit, e.g. '10Gbit/s'; units: bit/s, Kbit/s, Mbit/s, "
         "Gbit/s, B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s)"),
        (_cluster("  brokers: 3\n  nic: {in: 1Gbit/s, out: 0bit/s}\n"), 6, "cluster.nic.out", None),
        (_cluster("  brokers: 3\n  overrides:\n    - broker: 1\n      replica.lag.time.max.ms: 100\n"), 7,
         "cluster.overrides[0].replica.fetch.wait.max.ms", "must be <= replica.lag.time.max.ms (100), as Kafka requires"),
        (_cluster("  brokers: 2\n"), 9, "topics[0].replication.factor",
         "3 > cluster.brokers 2 for topic 't': Kafka's placer refuses it (INVALID_REPLICATION_FACTOR; allowed: 1 to 2)"),
    ],
)
def test_bad_cluster_input(text: str, line: int, path: str, message: str | None) -> None:
    p = only(text)
    assert (p.file, p.line, p.path) == ("<string>", line, path), p
    if message is not None:
        assert p.message == message
    else:
        assert "allowed" in p.message


def test_a_cluster_wide_key_cannot_be_overridden_per_broker() -> None:
    p = only(_cluster("  brokers: 3\n  overrides:\n    - broker: 1\n      log.segment.bytes: 1MiB\n"))
    assert (p.line, p.path) == (8, "cluster.overrides[0].log.segment.bytes")
    assert p.message.startswith("is a topic default (segment.bytes), set in broker: for every broker (overridable "
                                "per broker: num.network.threads, num.io.threads,")


def test_the_default_replication_factor_is_checked_against_the_brokers() -> None:
    text = _cluster("  brokers: 2\n").replace("    replication.factor: 3\n", "") + "broker:\n  default.replication.factor: 3\n"
    p = only(text)
    assert (p.line, p.path) == (10, "broker.default.replication.factor")


def test_min_insync_replicas_above_the_replication_factor_is_refused_in_a_cluster() -> None:
    p = only(CLUSTER + "    min.insync.replicas: 4\n")
    assert p.path == "topics[0].min.insync.replicas"
    assert p.message.startswith("4 > replication.factor 3 of topic 't'")


# --- replica_assignment --------------------------------------------------------------------------------


def _assigned(assignment: str, more: str = "") -> str:
    return CLUSTER.replace("    partitions: 6\n    replication.factor: 3\n", f"{more}    replica_assignment: {assignment}\n")


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (_assigned("[[0, 1], [1, 3]]"), "topics[0].replica_assignment[1][1]",
         "broker 3 does not exist (allowed: 0 to 2, the cluster's brokers)"),
        (_assigned("[[0, 1], [1, 1]]"), "topics[0].replica_assignment[1][1]",
         "broker 1 appears twice; a partition's replicas are distinct brokers, as Kafka requires"),
        (_assigned("[[0, 1], [1, 2, 0]]"), "topics[0].replica_assignment[1]",
         "3 replica(s), but partition 0 has 2: every partition of a topic has the same replication factor, as Kafka "
         "requires"),
        (_assigned("[[0, 1], []]"), "topics[0].replica_assignment[1]", "needs at least 1 item(s)"),
        (_assigned("[]"), "topics[0].replica_assignment", "needs at least 1 item(s)"),
        (_assigned("[[0, 1]]", "    partitions: 2\n"), "topics[0].partitions",
         "2, but replica_assignment lists 1 partition(s) (allowed: leave partitions out, or make them agree)"),
        (_assigned("[[0, 1]]", "    replication.factor: 3\n"), "topics[0].replication.factor",
         "3, but replica_assignment gives partition 0 2 replica(s) (allowed: leave replication.factor out, or make "
         "them agree)"),
        (_assigned("[[0, -1]]"), "topics[0].replica_assignment[0][1]",
         "broker -1 does not exist (allowed: 0 to 2, the cluster's brokers)"),
    ],
)
def test_bad_replica_assignment(text: str, path: str, message: str) -> None:
    p = only(text)
    assert (p.path, p.message) == (path, message)
    assert p.line is not None and p.line >= 7


def test_replica_assignment_needs_a_cluster() -> None:
    p = only(MINIMAL.replace("- name: t", "- {name: t, replica_assignment: [[0]]}"))
    assert (p.line, p.path) == (5, "topics[0].replica_assignment")
    assert p.message.startswith("needs a cluster: section")


# --- fault targets -------------------------------------------------------------------------------------


FAULTS = CLUSTER + "producers: [{name: p, topic: t, rate: 1/s}]\n"


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("{type: pause, target: broker-3, at: 1s, duration: 1s}", "unknown target 'broker-3', did you mean 'broker-2'?"),
        ("{type: pause, target: follower-1, at: 1s, duration: 1s}",
         "a cluster's brokers are named broker-<id>, not follower-<id> (allowed: broker-0, broker-1, broker-2, p)"),
        ("{type: slow_disk, target: p, at: 1s, duration: 1s, factor: 2}", "a slow_disk fault applies to brokers only, not a producer"),
    ],
)
def test_bad_fault_targets_in_a_cluster(fault: str, message: str) -> None:
    p = only(FAULTS + f"faults: [{fault}]\n")
    assert (p.line, p.path, p.message) == (11, "faults[0].target", message)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        # `$` matches before a final newline: these validated, then the run failed with a traceback.
        (r'"broker-0\n"', "unknown target 'broker-0\\n', did you mean 'broker-0'?"),
        (r'"broker-2\n"', "unknown target 'broker-2\\n', did you mean 'broker-2'?"),
        ("broker-01", "unknown target 'broker-01', did you mean 'broker-1'?"),
    ],
)
def test_a_broker_target_is_exactly_a_brokers_name(target: str, message: str) -> None:
    p = only(FAULTS + f"faults: [{{type: crash, target: {target}, at: 1s}}]\n")
    assert (p.line, p.path, p.message) == (11, "faults[0].target", message)


# The follower names the run knows: no newline, no leading zero, no digits of other scripts (all three
# validated, then the run failed with a traceback).
@pytest.mark.parametrize("target", [r'"follower-2\n"', "follower-02", '"follower-\u0662"'])
def test_a_follower_target_is_exactly_a_followers_name(target: str) -> None:
    text = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 3}")
    p = only(text + f"faults: [{{type: crash, target: {target}, at: 1s}}]\n")
    assert (p.line, p.path) == (6, "faults[0].target")
    assert p.message.startswith("unknown target ") and p.message.endswith("did you mean 'follower-2'?"), p.message


def test_a_rack_name_ends_where_it_ends() -> None:
    p = only(_cluster('  brokers: 3\n  racks: [a, b, "c\\n"]\n'))
    assert (p.path, p.message) == ("cluster.racks[2]", "'c\\n' is not a valid rack name (allowed: 1 to 100 letters, "
                                                       "digits, '.', '_', '-')")


def test_broker_targets_need_a_cluster() -> None:
    text = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 2}")
    p = only(text + "faults: [{type: pause, target: broker-1, at: 1s, duration: 1s}]\n")
    assert p.message == ("broker-<id> targets need a cluster: section; without one the brokers are the leader "
                         "and its followers (allowed: follower-1)")


def test_broker_faults_are_accepted() -> None:
    faults = [
        "{type: pause, target: broker-0, at: 1s, duration: 1s}",
        "{type: slow_disk, target: broker-1, at: 1s, duration: 1s, factor: 5}",
        "{type: link_delay, target: broker-2, at: 1s, duration: 1s, extra: 1ms}",
        "{type: link_drop, target: broker-2, at: 3s, duration: 1s}",
    ]
    s = load_scenario(FAULTS + f"faults: [{', '.join(faults)}]\n")
    assert [s.target_kind(f.target) for f in s.faults] == ["broker"] * 4


def test_client_names_broker_id_are_reserved() -> None:
    p = only(CLUSTER + "producers: [{name: broker-1, topic: t, rate: 1/s}]\n")
    assert (p.path, p.message) == ("producers[0].name", "names 'broker-<id>' are reserved for the brokers")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkasim", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})


def test_validate_accepts_a_crash_of_a_leader(tmp_path: Path) -> None:
    # Leader failover is simulated: a crash of a broker that leads partitions is a scenario like any other
    # (it was refused before the controller elected new leaders).
    path = tmp_path / "s.yaml"
    path.write_text(_assigned("[[0, 1], [1, 0]]") + "faults:\n  - {type: crash, target: broker-1, at: 1s}\n")
    result = _cli("validate", str(path))
    assert result.returncode == 0, result.stderr
