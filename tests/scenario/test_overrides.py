"""`with_overrides(scenario, ["key.path=value"])`: the CLI's --set."""

from __future__ import annotations

import pytest

from kafkasim.scenario import ScenarioError, load_scenario, with_overrides
from kafkasim.sim.distributions import sampler_from_spec

from .samples import FULL, ROOT


@pytest.fixture(scope="module")
def quickstart():
    return load_scenario(ROOT / "scenarios" / "quickstart.yaml")


def test_kafka_keys_with_dots_and_list_items_by_index_or_name(quickstart) -> None:
    s = with_overrides(quickstart,
        ["broker.num.io.threads=2", "producers[producer-1].rate=2000/s", "topics[0].segment.ms=1h", "seed=7"]
    )
    assert s.broker.num_io_threads == 2
    assert s.producers[0].rate == 2000.0
    assert s.topics[0].segment_ms == 3_600_000
    assert s.seed == 7
    assert quickstart.broker.num_io_threads == 8  # the original is untouched


def test_dotted_index_and_flow_mapping_values(quickstart) -> None:
    s = with_overrides(quickstart, ["network.default_link.latency={type: lognormal, median: 1ms, p99: 5ms}"])
    assert sampler_from_spec(s.network.default_link.latency).mean > 1.0
    # every endpoint that inherits the default link follows it
    assert s.consumers[0].link == s.network.default_link
    s = with_overrides(quickstart, ["producers.0.acks=1"])
    assert s.producers[0].acks == 1


def test_an_overridden_broker_default_reaches_the_topics_that_inherit_it() -> None:
    s = with_overrides(load_scenario(FULL), ["broker.min.insync.replicas=3"])
    assert s.topics[0].min_insync_replicas == 3  # inherited
    assert s.topics[1].min_insync_replicas == 1  # its own value wins


def test_shorthand_then_key(quickstart) -> None:
    s = with_overrides(quickstart, ["clock=wallclock", "clock.speed=0.5"])
    assert (s.clock.mode, s.clock.speed) == ("wallclock", 0.5)  # type: ignore[union-attr]


def test_keys_left_out_can_be_created(quickstart) -> None:
    s = with_overrides(quickstart, ["followers.link.latency=5ms"])
    assert s.followers.link is not None and sampler_from_spec(s.followers.link.latency).mean == 5.0


def _problem(scenario, override: str):
    with pytest.raises(ScenarioError) as info:
        with_overrides(scenario, [override])
    (problem,) = info.value.problems
    return problem


def test_a_bad_value_names_the_override(quickstart) -> None:
    p = _problem(quickstart, "broker.num.io.threads=abc")
    assert p.file == "--set broker.num.io.threads=abc"
    assert str(p) == "--set broker.num.io.threads=abc: broker.num.io.threads: expected an integer, got text 'abc'"


def test_an_unknown_key_suggests(quickstart) -> None:
    p = _problem(quickstart, "broker.replica.fetch.wait.ms=100")
    assert p.message == "unknown key 'replica.fetch.wait.ms', did you mean 'replica.fetch.wait.max.ms'?"


def test_cross_checks_run_after_overrides(quickstart) -> None:
    p = _problem(quickstart, "topics[0].replication.factor=1")
    assert p.path == "topics[0].min.insync.replicas"
    assert p.file == "--set topics[0].replication.factor=1"
    assert "silently cap" in p.message


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("nokey", "expected key.path=value"),
        ("producers[5].rate=1/s", "has no item 5"),
        ("producers[nobody].rate=1/s", "unknown name 'nobody'"),
        ("producers[\u0660].rate=1/s", "unknown name '\u0660'"),  # an index is ASCII digits (it was item 0)
        ("broker..x=1", "cannot read key path"),
        ("broker.num.io.threads=[1", "invalid YAML"),
        ("duration=30", "needs a unit"),
        ("producers[0].record_size.value=2KiB", "has no keys"),
    ],
)
def test_override_problems(quickstart, override: str, fragment: str) -> None:
    p = _problem(quickstart, override)
    assert fragment in p.message
    assert p.file.startswith("--set ")


def test_several_bad_overrides_are_reported_together(quickstart) -> None:
    with pytest.raises(ScenarioError) as info:
        with_overrides(quickstart, ["nokey", "broker.zzz=1"])
    assert len(info.value.problems) == 2


@pytest.mark.parametrize(
    ("scenario", "override", "message"),
    [
        # The items of faults have no names: this said "allowed: None" (one None per fault).
        ("follower_partitioned_from_leader", "faults[network_partition].at=1s",
         "'network_partition' is not an index, and the items of faults have no names (allowed: 0)"),
        # An empty list said "allowed: " (nothing).
        ("quickstart", "faults[x].at=1s", "has no item 'x': the list is empty (allowed: set the whole list, e.g. "
                                          "faults=[...])"),
        ("quickstart", "faults[0].at=1s", "has no item 0: the list is empty (allowed: set the whole list, e.g. "
                                          "faults=[...])"),
        ("quickstart", "cluster.racks[x]=a", "has no item 'x': the list is empty (allowed: set the whole list, e.g. "
                                             "cluster.racks=[...])"),
        ("quickstart", "producers[5].rate=1/s", "has no item 5 (allowed: 0)"),
        ("cluster_slow_broker", "topics[0].replica_assignment[x]=[0]",
         "'x' is not an index, and the items of topics[0].replica_assignment have no names (allowed: 0 to 5)"),
    ],
)
def test_a_list_item_that_is_not_there_says_which_are(scenario: str, override: str, message: str) -> None:
    p = _problem(load_scenario(ROOT / "scenarios" / f"{scenario}.yaml"), override)
    assert p.message == message
