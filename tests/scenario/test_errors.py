"""Every problem is reported with file, line, key path and what is allowed; all of them at once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kafkasim.scenario import Problem, ScenarioError, load_scenario, source_file
from kafkasim.scenario.errors import unknown_message
from kafkasim.scenario.source_file import MAX_FILE_BYTES

from .samples import MINIMAL


def problems(text: str | Path) -> list[Problem]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(text)
    return info.value.problems


def only(text: str | Path) -> Problem:
    found = problems(text)
    assert len(found) == 1, found
    return found[0]


def test_error_names_file_line_and_key_path(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL + "broker:\n  num.io.threads: many\n")
    p = only(path)
    assert (p.file, p.line, p.path) == (str(path), 7, "broker.num.io.threads")
    assert str(p) == f"{path}:7: broker.num.io.threads: expected an integer, got text 'many'"


def test_a_string_path_to_an_existing_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL)
    assert load_scenario(str(path)).name == "minimal"


def test_yaml_text_is_reported_as_string() -> None:
    p = only(MINIMAL.replace("duration: 10s", "duration: 10"))
    assert (p.file, p.line, p.path) == ("<string>", 3, "duration")


def test_a_missing_file_is_an_error_not_yaml_text() -> None:
    p = only("scenarios/no-such-file.yaml")
    assert p.message == "file not found"
    p = only(Path("/nonexistent/x.yaml"))
    assert p.file == "/nonexistent/x.yaml"


def test_line_numbers_inside_lists_and_flow_mappings() -> None:
    text = MINIMAL + "producers:\n  - name: p\n    topic: t\n    rate: 5/s\n  - {name: q, topic: t, rate: fast}\n"
    p = only(text)
    assert (p.line, p.path) == (10, "producers[1].rate")


def test_missing_key_is_reported_at_its_parent() -> None:
    text = MINIMAL + "producers:\n  - name: p\n    topic: t\n"
    p = only(text)
    assert (p.line, p.path, p.message) == (7, "producers[0].rate", "required key is missing")


def test_duplicate_keys_are_an_error_naming_both_lines() -> None:
    text = "name: a\ndescription: d\nduration: 10s\nname: b\ntopics: [{name: t}]\n"
    p = only(text)
    assert (p.line, p.path) == (4, "name")
    assert "duplicate key" in p.message and "line 1" in p.message


def test_duplicate_keys_in_nested_mappings() -> None:
    text = MINIMAL + "broker:\n  num.io.threads: 4\n  costs: {request: 1ms}\n  num.io.threads: 5\n"
    p = only(text)
    assert (p.line, p.path) == (9, "broker.num.io.threads")
    assert "first defined on line 7" in p.message


def test_unknown_key_suggests_the_nearest_valid_key() -> None:
    p = only(MINIMAL + "broker:\n  replica.fetch.wait.ms: 500\n")
    assert p.path == "broker.replica.fetch.wait.ms"
    assert p.message == "unknown key 'replica.fetch.wait.ms', did you mean 'replica.fetch.wait.max.ms'?"


def test_unknown_key_without_a_near_match_lists_the_allowed_keys() -> None:
    p = only(MINIMAL + "clock: {mode: virtual, zzz: 1}\n")
    assert p.message == "unknown key 'zzz' (allowed: mode)"


def test_snake_case_spelling_of_a_kafka_key_is_refused_in_files() -> None:
    p = only(MINIMAL + "broker:\n  num_io_threads: 4\n")
    assert "did you mean 'num.io.threads'?" in p.message


def test_several_errors_are_reported_together() -> None:
    text = (
        "name: x\ndescription: d\nduration: 60\nwarmup: -1s\n"
        "topics:\n  - name: t\n    partitions: zero\n"
        "broker:\n  num.io.thread: 8\n"
    )
    found = problems(text)
    assert [(p.line, p.path) for p in found] == [
        (3, "duration"),
        (4, "warmup"),
        (7, "topics[0].partitions"),
        (9, "broker.num.io.thread"),
    ]
    assert "needs a unit" in found[0].message
    assert "must not be negative" in found[1].message
    assert str(ScenarioError(found)).count("\n") == 3


def test_cross_section_problems_are_reported_together() -> None:
    text = (
        "name: x\ndescription: d\nduration: 10s\nwarmup: 10s\n"
        "topics:\n  - {name: t, replication.factor: 2, min.insync.replicas: 3}\n"
        "producers:\n  - {name: p, topic: tt, rate: 1/s}\n"
        "faults:\n  - {type: pause, target: follower-9, at: 1s, duration: 1s}\n"
    )
    found = {p.path: p for p in problems(text)}
    assert set(found) == {"warmup", "topics[0].min.insync.replicas", "producers[0].topic", "faults[0].target"}
    assert found["producers[0].topic"].message == "unknown topic 'tt', did you mean 't'?"
    assert found["producers[0].topic"].line == 8


def test_min_insync_replicas_above_replication_factor_is_refused_and_says_kafka_would_cap_it() -> None:
    p = only(MINIMAL.replace("- name: t", "- {name: t, replication.factor: 2, min.insync.replicas: 3}"))
    assert p.path == "topics[0].min.insync.replicas"
    assert "silently cap" in p.message and "(allowed: 1..2)" in p.message


def test_inherited_min_insync_replicas_above_replication_factor_points_at_the_broker() -> None:
    p = only(MINIMAL + "broker: {min.insync.replicas: 2}\n")
    assert p.path == "broker.min.insync.replicas"
    assert "topic 't'" in p.message and p.line == 6


def test_fault_targets_must_exist_and_fit_the_fault() -> None:
    base = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 2}")
    base += "producers: [{name: p, topic: t, rate: 1/s}]\n"
    p = only(base + "faults: [{type: crash, target: p, at: 1s}]\n")
    assert p.message == "a crash fault applies to followers only, not a producer"
    p = only(base + "faults: [{type: pause, target: follower-2, at: 1s, duration: 1s}]\n")
    assert p.message == "unknown target 'follower-2', did you mean 'follower-1'?"
    load_scenario(base + "faults: [{type: pause, target: follower-1, at: 1s, duration: 1s}]\n")


def test_a_connection_reset_names_an_existing_target_and_is_an_instant() -> None:
    base = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 2}")
    base += "producers: [{name: p, topic: t, rate: 1/s}]\n"
    p = only(base + "faults: [{type: connection_reset, target: q, at: 1s}]\n")
    assert (p.path, p.message) == ("faults[0].target", "unknown target 'q' (allowed: follower-1, p)")
    p = only(base + "faults: [{type: connection_reset, target: p, at: 1s, duration: 1s}]\n")
    assert (p.path, p.message) == ("faults[0].duration", "unknown key 'duration' (allowed: type, target, at)")
    p = only(base + "faults: [{type: connection_reset, target: p, at: 20s}]\n")
    assert p.path == "faults[0].at" and "before the end of the run" in p.message
    fault = load_scenario(base + "faults: [{type: connection_reset, target: follower-1, at: 1s}]\n").faults[0]
    assert fault.type == "connection_reset" and fault.end == fault.at == 1_000.0


def test_unknown_union_type_suggests_and_lists() -> None:
    p = only(MINIMAL + "faults: [{type: pauze, target: x, at: 1s, duration: 1s}]\n")
    assert (p.path, p.message) == ("faults[0].type", "unknown type 'pauze', did you mean 'pause'?")
    p = only(MINIMAL + "broker: {costs: {request: {mean: 1ms}}}\n")
    assert p.path == "broker.costs.request.type"
    assert "allowed: constant, exponential, lognormal, uniform, empirical" in p.message


def test_errors_inside_a_distribution_point_at_the_parameter() -> None:
    p = only(MINIMAL + "controller:\n  link_latency: {type: lognormal, median: 5ms, p99: 1ms}\n")
    assert (p.path, p.message) == ("controller.link_latency.p99", "must be >= median (5.0)")


def test_the_removed_alter_partition_latency_says_where_isr_changes_go_now() -> None:
    p = only(MINIMAL + "broker:\n  alter_partition_latency: 10ms\n")
    assert p.path == "broker.alter_partition_latency"
    assert "was removed" in p.message and "controller.link_latency" in p.message


def test_simulator_durations_need_a_unit_but_kafka_ms_keys_do_not() -> None:
    p = only(MINIMAL + "broker: {costs: {request: 5}}\n")
    assert p.message == "5 needs a unit, e.g. '5ms', or a mapping with a type"
    load_scenario(MINIMAL + "consumers: [{name: c, topic: t, fetch.max.wait.ms: 5}]\n")


def test_huge_numbers_are_refused() -> None:
    assert "too large" in only(MINIMAL.replace("10s", "1e30s")).message
    assert "is out of range (allowed: 1 to 10000)" in only(MINIMAL.replace("- name: t", "- {name: t, partitions: 99999999999999}")).message
    assert only(MINIMAL.replace("10s", "99999999999999999999d")).path == "duration"


def test_broken_yaml_names_the_line() -> None:
    p = only("name: x\ndescription: d\ntopics: [{name: t}\nduration: 1s\n")
    assert p.line is not None and p.message.startswith("invalid YAML")
    assert p.path == ""


def test_unsafe_tags_are_refused() -> None:
    p = only("name: !!python/object/apply:os.system ['echo hi']\n")
    assert p.message.startswith("invalid YAML") and p.line == 1


def test_empty_and_non_mapping_documents() -> None:
    assert "empty" in only("").message
    assert "a list" in only("- a\n- b\n").message


def test_alias_bombs_are_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    p = only("\n".join(lines) + "\n")
    assert "too large" in p.message


def test_on_and_off_keys_stay_keys() -> None:
    # YAML 1.1 reads a bare `on`/`off` as booleans; scenario keys are taken as written.
    text = MINIMAL + "producers: [{name: p, topic: t, rate: 1/s, arrival: {type: on_off, on: 1s, off: 2s}}]\n"
    arrival = load_scenario(text).producers[0].arrival
    assert (arrival.on, arrival.off) == (1000.0, 2000.0)  # type: ignore[union-attr]


def test_messages_are_short_and_free_of_pydantic_internals() -> None:
    text = (
        "name: x\ndescription: d\nduration: [1]\nseed: abc\nclock: 3\ntopics: {}\n"
        "network: {default_link: {bandwidth: fast, latency: {type: uniform}}}\n"
    )
    message = str(ScenarioError(problems(text)))
    assert "pydantic" not in message and "http" not in message and "input_value" not in message
    assert all(len(line) < 200 for line in message.splitlines())


PARTITIONED = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 3}") + (
    "producers: [{name: p, topic: t, rate: 1/s}]\n"
    "faults:\n"
    "  - {type: network_partition, at: 1s, duration: 1s, sides: SIDES}\n"
)
HOSTS = "allowed: broker-0, broker-1, broker-2, p, controller"


def partition_problem(sides: str) -> Problem:
    return only(PARTITIONED.replace("SIDES", sides))


def test_a_network_partition_names_hosts_of_the_scenario() -> None:
    s = load_scenario(PARTITIONED.replace("SIDES", "[[broker-0], [broker-1, broker-2, p, controller]]"))
    fault = s.faults[0]
    assert fault.type == "network_partition" and fault.end == 2_000.0
    assert fault.target == "broker-0 | broker-1, broker-2, p, controller"  # its label in reports
    p = partition_problem("[[broker-0], [brokr-1]]")
    assert (p.line, p.path, p.message) == (8, "faults[0].sides[1][0]", "unknown host 'brokr-1', did you mean 'broker-1'?")
    p = partition_problem("[[broker-0], [zookeeper]]")
    assert p.message == f"unknown host 'zookeeper' ({HOSTS})"
    # Without a cluster the hosts are brokers too: follower-<k> is the fetcher, on broker-<k>.
    p = partition_problem("[[follower-1], [broker-0]]")
    assert (p.path, p.message) == ("faults[0].sides[0][0]",
                                   f"name the host, not the fetcher: follower-1 runs on broker-1 ({HOSTS})")


def test_a_network_partition_has_two_non_empty_sides_without_a_host_on_both() -> None:
    p = partition_problem("[[broker-0], []]")
    assert (p.path, p.message) == ("faults[0].sides[1]", f"is empty: a side names at least one host ({HOSTS})")
    p = partition_problem("[[broker-0, p], [p]]")
    assert p.path == "faults[0].sides[1][0]" and p.message.startswith("p is on both sides: ")
    p = partition_problem("[[broker-0, broker-0], [p]]")
    assert (p.path, p.message) == ("faults[0].sides[0][1]", "broker-0 is listed twice on this side")
    p = partition_problem("[[broker-0]]")
    assert (p.path, p.message) == ("faults[0].sides", "needs at least 2 item(s)")
    p = partition_problem("[[broker-0], [broker-1], [p]]")
    assert (p.path, p.message) == ("faults[0].sides", "allows at most 2 items")
    # Clients and the controller talk only to brokers: a partition between them would cut nothing.
    p = partition_problem("[[p], [controller]]")
    assert (p.path, p.message) == ("faults[0].sides", "cuts nothing: clients and the controller talk only to brokers, "
                                   "so one side must name a broker (allowed: broker-0, broker-1, broker-2)")


def test_a_network_partition_in_a_cluster_names_its_brokers() -> None:
    text = PARTITIONED.replace("name: t", "name: t, partitions: 3").replace(
        "producers:", "cluster: {brokers: 4}\nproducers:")
    load_scenario(text.replace("SIDES", "[[broker-3], [controller]]"))
    p = only(text.replace("SIDES", "[[broker-4], [controller]]"))
    assert p.path == "faults[0].sides[0][0]" and p.message.startswith("unknown host 'broker-4'")
    p = only(text.replace("SIDES", "[[follower-1], [controller]]"))
    assert p.message.startswith("a cluster's brokers are named broker-<id>, not follower-<id>")


def test_a_shutdown_applies_to_brokers_and_not_while_the_broker_is_down() -> None:
    base = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 2}")
    base += "producers: [{name: p, topic: t, rate: 1/s}]\n"
    p = only(base + "faults: [{type: shutdown, target: p, at: 1s}]\n")
    assert p.message == "a shutdown fault applies to followers only, not a producer"
    p = only(base + "faults: [{type: shutdown, target: follower-1, at: 1s, restart_after: 0s}]\n")
    assert p.path == "faults[0].restart_after"
    # A crash, then a shutdown of the same broker before its restart: refused, on the later fault's `at`.
    p = only(base + "faults:\n  - {type: crash, target: follower-1, at: 1s, restart_after: 5s}\n"
                    "  - {type: shutdown, target: follower-1, at: 3s}\n")
    assert (p.path, p.line) == ("faults[1].at", 9)
    assert p.message == ("3s: follower-1 is down then (crash at 1s until 6s); a broker is crashed or shut down "
                         "while it is up (allowed: an `at` after 6s, its restart)")
    p = only(base + "faults:\n  - {type: shutdown, target: follower-1, at: 1s}\n"
                    "  - {type: crash, target: follower-1, at: 8s}\n")
    assert p.message == ("8s: follower-1 is down then (shutdown at 1s until the end of the run); a broker is crashed "
                         "or shut down while it is up (allowed: a restart_after for the shutdown at 1s, and an `at` "
                         "after its restart)")
    load_scenario(base + "faults:\n  - {type: shutdown, target: follower-1, at: 1s, restart_after: 5s}\n"
                         "  - {type: crash, target: follower-1, at: 7s}\n")


CRASHES = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 2}") + "faults:\n"


def _crashes(*faults: str) -> str:
    return CRASHES + "".join(f"  - {{{f}}}\n" for f in faults)


@pytest.mark.parametrize(
    ("faults", "index", "message"),
    [
        # A crash of a crashed broker was accepted and did nothing (its restart_after neither).
        (("type: crash, target: follower-1, at: 1s, restart_after: 5s", "type: crash, target: follower-1, at: 3s"),
         1, "3s: follower-1 is down then (crash at 1s until 6s); a broker is crashed or shut down while it is up "
            "(allowed: an `at` after 6s, its restart)"),
        (("type: crash, target: follower-1, at: 1s", "type: crash, target: follower-1, at: 8s, restart_after: 1s"),
         1, "8s: follower-1 is down then (crash at 1s until the end of the run); a broker is crashed or shut down "
            "while it is up (allowed: a restart_after for the crash at 1s, and an `at` after its restart)"),
        # Listed in any order: the later `at` is the one refused.
        (("type: crash, target: follower-1, at: 3s", "type: crash, target: follower-1, at: 1s, restart_after: 5s"),
         0, "3s: follower-1 is down then (crash at 1s until 6s); a broker is crashed or shut down while it is up "
            "(allowed: an `at` after 6s, its restart)"),
        # At the very instant of the restart: which came first depended on the order of the faults in the file
        # (listed first, the crash found the broker still down and did nothing).
        (("type: crash, target: follower-1, at: 6s", "type: crash, target: follower-1, at: 1s, restart_after: 5s"),
         0, "6s: follower-1 is down then (crash at 1s until 6s); a broker is crashed or shut down while it is up "
            "(allowed: an `at` after 6s, its restart)"),
        (("type: shutdown, target: follower-1, at: 1s, restart_after: 5s", "type: crash, target: follower-1, at: 6s"),
         1, "6s: follower-1 is down then (shutdown at 1s until 6s); a broker is crashed or shut down while it is up "
            "(allowed: an `at` after 6s, its restart)"),
        # A crash refused in between does not hide the long one before it.
        (("type: crash, target: follower-1, at: 1s, restart_after: 8s", "type: crash, target: follower-1, at: 2s, "
          "restart_after: 1s", "type: crash, target: follower-1, at: 7s"),
         2, "7s: follower-1 is down then (crash at 1s until 9s); a broker is crashed or shut down while it is up "
            "(allowed: an `at` after 9s, its restart)"),
    ],
)
def test_a_crash_is_refused_while_the_broker_is_down(faults: tuple[str, ...], index: int, message: str) -> None:
    found = problems(_crashes(*faults))
    assert [p.message for p in found if p.path == f"faults[{index}].at"] == [message], found
    assert all(p.path.endswith(".at") and "is down then" in p.message for p in found)


def test_a_crash_of_a_cluster_broker_that_is_down_is_refused() -> None:
    text = MINIMAL.replace("- name: t", "- {name: t, replication.factor: 3}") + "cluster: {brokers: 3}\nfaults:\n"
    p = only(text + "  - {type: crash, target: broker-2, at: 1s}\n  - {type: crash, target: broker-2, at: 2s}\n")
    assert (p.line, p.path) == (9, "faults[1].at")
    assert p.message.startswith("2s: broker-2 is down then (crash at 1s until the end of the run)")
    # Other brokers, and a crash after the restart, are fine.
    load_scenario(text + "  - {type: crash, target: broker-2, at: 1s, restart_after: 1s}\n"
                         "  - {type: crash, target: broker-1, at: 1500ms}\n  - {type: crash, target: broker-2, at: 2500ms}\n")


def test_a_crash_during_a_pause_and_a_pause_during_a_crash_are_accepted() -> None:
    # Both are modelled (BrokerServer.crash of a paused broker; a pause still in force when it restarts).
    load_scenario(_crashes("type: pause, target: follower-1, at: 1s, duration: 5s",
                           "type: crash, target: follower-1, at: 2s, restart_after: 1s",
                           "type: pause, target: follower-1, at: 2500ms, duration: 5s"))


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        # Printed 19080.877999999997ms.
        (("type: crash, target: follower-1, at: 1s, restart_after: 20s",
          "type: shutdown, target: follower-1, at: 19.080878s"),
         "19080.878ms: follower-1 is down then (crash at 1s until 21s); a broker is crashed or shut down while it is "
         "up (allowed: an `at` after 21s, its restart)"),
        # Printed 1100us, 1100us and 3.3000000000000003ms.
        (("type: crash, target: follower-1, at: 1.1ms, restart_after: 2.2ms", "type: crash, target: follower-1, at: 2ms"),
         "2ms: follower-1 is down then (crash at 1.1ms until 3.3ms); a broker is crashed or shut down while it is up "
         "(allowed: an `at` after 3.3ms, its restart)"),
    ],
)
def test_times_in_messages_have_no_float_noise(faults: tuple[str, ...], message: str) -> None:
    p = only(_crashes(*faults).replace("duration: 10s", "duration: 30s"))
    assert p.message == message


def test_an_out_of_range_duration_is_shown_without_float_noise() -> None:
    p = only(MINIMAL + "sample_interval: 0.000123s\n")  # printed 0.12300000000000001ms
    assert (p.path, p.message) == ("sample_interval", "123us is out of range (allowed: 1ms to 1d)")


def test_a_sample_interval_longer_than_the_run_says_both_and_what_is_allowed() -> None:
    """scenarios/calibration_base.yaml samples once a run (sample_interval = duration): run shorter with `--set
    duration=6s`, it said only "must not be longer than duration", not how long either was."""
    p = only(MINIMAL + "sample_interval: 20s\n")
    assert (p.path, p.message) == ("sample_interval", "20s is longer than duration 10s: at most the duration "
                                                      "(set sample_interval too)")


@pytest.mark.parametrize(
    ("value", "got"),
    [("null", "nothing (null)"), ("5", "5"), ("[pause]", "a list")],
)
def test_a_type_that_is_not_text_is_not_named_like_one(value: str, got: str) -> None:
    # A null type was "unknown type 'None'", a list "unknown type \"['pause']\"".
    p = only(MINIMAL + f"producers: [{{name: p, topic: t, rate: 1/s}}]\nfaults: [{{type: {value}, target: p, at: 1s}}]\n")
    assert (p.path, p.message) == ("faults[0].type", f"expected text, got {got} (allowed: pause, slow_disk, crash, "
                                                     "shutdown, link_delay, link_drop, connection_reset, "
                                                     "half_open, network_partition)")


# --- what is read as a scenario file --------------------------------------------------------------------


def _load_within(path: Path | str, seconds: float = 20.0) -> Problem:
    """The one problem of loading `path`, which must come back promptly (a FIFO with no writer blocked
    forever: it is then opened for writing here, which releases the reader)."""
    outcome: list[object] = []

    def load() -> None:
        try:
            load_scenario(path)
            outcome.append("loaded")
        except ScenarioError as e:
            outcome.append(e.problems)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        with open(path, "wb"):
            pass
        thread.join(seconds)
        pytest.fail(f"loading {path} blocked")
    (found,) = outcome
    assert isinstance(found, list) and len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("as_text", [False, True])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, as_text: bool) -> None:
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    p = _load_within(str(fifo) if as_text else fifo)
    assert (p.file, p.line, p.message) == (str(fifo), None, "is a named pipe (FIFO), not a regular file (allowed: a "
                                                            "scenario YAML file)")


@pytest.mark.parametrize(("device", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_a_device_is_refused_before_it_is_read(device: str, kind: str) -> None:
    # /dev/zero was read until memory ran out.
    p = _load_within(Path(device))
    assert p.message == f"is {kind}, not a regular file (allowed: a scenario YAML file)"


def test_a_directory_is_refused_by_name(tmp_path: Path) -> None:
    assert _load_within(tmp_path).message == "is a directory, not a regular file (allowed: a scenario YAML file)"
    # A one-line string naming it is that directory, not the YAML text "/tmp/...".
    assert _load_within(str(tmp_path)).message.startswith("is a directory")


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(MINIMAL.encode() + b"#" * MAX_FILE_BYTES)
    assert _load_within(path).message == ("is larger than 4 MiB (allowed: a scenario file of at most 4 MiB; a "
                                          "scenario is a few KB)")
    path.write_bytes(MINIMAL.encode() + b"#" * (MAX_FILE_BYTES - len(MINIMAL)))  # exactly the limit: read
    assert load_scenario(path).name == "minimal"


def test_an_unreadable_file_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL)

    def denied(*_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(source_file.os, "open", denied)  # root reads anything: deny it this way
    p = only(path)
    assert (p.file, p.message) == (str(path), "cannot read the file: Permission denied")


@pytest.mark.parametrize(
    ("value", "ms"), [('" 5 "', 5), ('"5\\n"', 5), ('"\\uff15"', None), ('"\\u00b2"', None), ('"\\u00a05"', None)]
)
def test_a_kafka_ms_key_trims_as_kafka_and_reads_ascii_digits(value: str, ms: int | None) -> None:
    # Fullwidth 5 was read as 5, a no-break space was trimmed, and a superscript 2 failed with "invalid literal
    # for int() with base 10".
    text = MINIMAL + f"producers: [{{name: p, topic: t, rate: 1/s, linger.ms: {value}}}]\n"
    if ms is not None:
        assert load_scenario(text).producers[0].linger_ms == ms
        return
    p = only(text)
    assert p.path == "producers[0].linger.ms" and " is not a duration" in p.message, p


def test_an_unknown_name_among_none_does_not_list_nothing() -> None:
    # A list of no candidates rendered as "(allowed: )", as an empty list did for --set items.
    assert unknown_message("name", "x", []) == "unknown name 'x' (there are none here)"
    assert unknown_message("name", "x", ["y"]) == "unknown name 'x' (allowed: y)"
