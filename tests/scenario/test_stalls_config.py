"""The scenario's `stalls:` blocks (broker, per-broker override, producer, consumer): presets, overrides, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.scenario import ScenarioError, dump_scenario, load_scenario
from kafkasim.scenario.distributions import DurationConstant, DurationExponential, DurationLogNormal
from kafkasim.scenario.overrides import with_overrides
from tests.cli.support import call

BASE = """\
name: s
description: stalls
duration: 2s
cluster:
  brokers: 3
topics:
  - name: t
producers:
  - {name: p, topic: t, rate: 10/s}
"""


def test_stalls_are_off_by_default() -> None:
    s = load_scenario(BASE)
    assert s.broker.stalls is None and s.producers[0].stalls is None
    assert all(s.broker_for(b).stalls is None for b in s.broker_ids)


def test_a_preset_resolves_and_its_fields_can_be_overridden_one_by_one() -> None:
    s = load_scenario(BASE + "broker:\n  stalls: {preset: jvm-g1-young, pause: 5ms}\n")
    stalls = s.broker.stalls
    assert stalls is not None and stalls.enabled
    assert stalls.interval == DurationExponential(mean=1000.0)  # the preset's
    assert stalls.pause == DurationConstant(value=5.0)  # the override
    assert load_scenario(BASE + "broker:\n  stalls: {preset: jvm-g1-young}\n").broker.stalls.pause == (  # type: ignore[union-attr]
        DurationLogNormal(median=12.0, p99=35.0))


def test_resolved_stalls_dump_and_load_back_equal_and_set_keeps_the_preset() -> None:
    s = load_scenario(BASE + "broker:\n  stalls: {preset: jvm-g1-young}\n")
    again = load_scenario(dump_scenario(s))
    assert again == s
    changed = with_overrides(s, ["broker.stalls.pause=20ms"])
    assert changed.broker.stalls is not None
    assert changed.broker.stalls.pause == DurationConstant(value=20.0)
    assert changed.broker.stalls.interval == DurationExponential(mean=1000.0)


def test_an_override_replaces_the_block_and_an_empty_one_spares_its_broker() -> None:
    text = BASE.replace("  brokers: 3\n", "  brokers: 3\n  overrides:\n    - {broker: 1, stalls: {}}\n"
                        "    - {broker: 2, stalls: {interval: 3s, pause: 1ms}}\n")
    s = load_scenario(text + "broker:\n  stalls: {interval: 1s, pause: 10ms}\n")
    assert s.broker_for(0).stalls == s.broker.stalls
    off = s.broker_for(1).stalls
    assert off is not None and not off.enabled
    mine = s.broker_for(2).stalls
    assert mine is not None and mine.interval == DurationConstant(value=3000.0)
    assert load_scenario(dump_scenario(s)) == s


def test_clients_take_stalls() -> None:
    s = load_scenario(BASE.replace("rate: 10/s}", "rate: 10/s, stalls: {preset: jvm-g1-young}}")
                      + "consumers:\n  - {name: c, topic: t, stalls: {interval: 2s, pause: 4ms}}\n")
    assert s.producers[0].stalls is not None and s.producers[0].stalls.enabled
    assert s.consumers[0].stalls is not None and s.consumers[0].stalls.pause == DurationConstant(value=4.0)


@pytest.mark.parametrize(("block", "path", "words"), [
    ("{interval: 1s}", "broker.stalls.pause", "is required beside interval"),
    ("{pause: 1ms}", "broker.stalls.interval", "is required beside pause"),
    ("{preset: zgc}", "broker.stalls.preset", "jvm-g1-young"),
    ("{interval: 0.5ms, pause: 1ms}", "broker.stalls.interval", ">= 1 ms between stall starts"),
    ("{interval: {type: exponential, mean: 0.1ms}, pause: 1ms}", "broker.stalls.interval", "too short"),
    ("{interval: 1s, pause: 1ms, gc: g1}", "broker.stalls.gc", ""),
])
def test_bad_stalls_are_reported_with_their_path(block: str, path: str, words: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(BASE + f"broker:\n  stalls: {block}\n")
    problems = info.value.problems
    assert len(problems) == 1, problems
    assert problems[0].path == path and problems[0].line == 11
    assert words in problems[0].message


def test_a_bad_stalls_block_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("rate: 10/s}", "rate: 10/s, stalls: {interval: 1s}}"))
    assert call("run", path, "--out", tmp_path / "out", "--no-figures", "--no-progress") == 2
    err = capsys.readouterr().err
    assert f"{path}:9: producers[0].stalls.pause: is required beside interval" in err


@pytest.mark.parametrize(("key", "host", "words"), [
    ("machine_stalls", "machine", "is the machine's beside machine_stalls"),
    # The one process every client runs in (kafkasim's load driver: every client in one JVM).
    ("clients_stalls", "clients", "is the clients' process's beside clients_stalls"),
])
def test_a_shared_processs_stalls_take_the_same_block_and_reserve_its_name(
        key: str, host: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = load_scenario(BASE + f"{key}: {{preset: jvm-g1-young, pause: 5ms}}\n")
    stalls = getattr(s, key)
    assert stalls is not None and stalls.pause == DurationConstant(value=5.0)
    assert s.broker.stalls is None and s.producers[0].stalls is None and getattr(load_scenario(BASE), key) is None
    assert load_scenario(dump_scenario(s)) == s
    assert getattr(with_overrides(load_scenario(BASE), [f"{key}={{interval: 2s, pause: 4ms}}"]), key) == \
        getattr(load_scenario(BASE + f"{key}: {{interval: 2s, pause: 4ms}}\n"), key)
    with pytest.raises(ScenarioError) as info:
        load_scenario(BASE + f"{key}: {{interval: 1s}}\n")
    assert [(p.path, p.line) for p in info.value.problems] == [(f"{key}.pause", 10)]
    # A client named after the process would share its stall rows and random streams.
    named = BASE.replace("{name: p,", f"{{name: {host},")
    assert load_scenario(named).producers[0].name == host  # free without the process's stalls
    assert load_scenario(named + f"{key}: {{}}\n").producers[0].name == host  # or with none on
    path = tmp_path / "s.yaml"
    path.write_text(named + f"{key}: {{interval: 1s, pause: 1ms}}\n")
    assert call("run", path, "--out", tmp_path / "out", "--no-figures", "--no-progress") == 2
    assert f"{path}:9: producers[0].name: name '{host}' {words}" in capsys.readouterr().err


def test_a_brokers_stalls_can_come_every_so_many_requests_and_dump_and_load_back() -> None:
    s = load_scenario(BASE + "broker:\n  stalls: {every_requests: 600, pause: {type: lognormal, median: 12ms, "
                             "p99: 25ms}}\n")
    stalls = s.broker.stalls
    assert stalls is not None and stalls.enabled and stalls.every_requests == 600 and stalls.interval is None
    assert load_scenario(dump_scenario(s)) == s
    # A preset's interval gives way to the count; its pause stays.
    preset = load_scenario(BASE + "broker:\n  stalls: {preset: jvm-g1-young, every_requests: 600}\n").broker.stalls
    assert preset is not None and preset.interval is None and preset.pause == DurationLogNormal(median=12.0, p99=35.0)
    assert load_scenario(dump_scenario(load_scenario(
        BASE + "broker:\n  stalls: {preset: jvm-g1-young, every_requests: 600}\n"))).broker.stalls == preset

    # A follower's count, beside the leader's or alone, with a pause of its own.
    both = load_scenario(BASE + "broker:\n  stalls: {every_requests: 600, every_fetches: 1100, pause: 11ms, "
                                "fetch_pause: {type: lognormal, median: 4ms, p99: 15ms}}\n")
    assert both.broker.stalls is not None and both.broker.stalls.counts == {"every_requests": 600,
                                                                            "every_fetches": 1100}
    assert both.broker.stalls.fetch_pause == DurationLogNormal(median=4.0, p99=15.0)
    assert load_scenario(dump_scenario(both)) == both
    alone = load_scenario(BASE + "broker:\n  stalls: {preset: jvm-g1-young, every_fetches: 900}\n").broker.stalls
    assert alone is not None and alone.enabled and alone.interval is None and alone.counts == {"every_fetches": 900}


@pytest.mark.parametrize(("text", "path", "words"), [
    (BASE + "broker:\n  stalls: {every_requests: 600, interval: 1s, pause: 1ms}\n", "broker.stalls.every_requests",
     "is given beside interval"),
    (BASE + "broker:\n  stalls: {every_requests: 600}\n", "broker.stalls.pause", "is required beside every_requests"),
    (BASE + "broker:\n  stalls: {every_requests: 0, pause: 1ms}\n", "broker.stalls.every_requests", ""),
    (BASE + "machine_stalls: {every_requests: 600, pause: 1ms}\n", "machine_stalls.every_requests",
     "is a broker's only"),
    (BASE.replace("rate: 10/s}", "rate: 10/s, stalls: {every_requests: 10, pause: 1ms}}"),
     "producers[0].stalls.every_requests", "a client handles no requests"),
    (BASE + "broker:\n  stalls: {every_fetches: 600, interval: 1s, pause: 1ms}\n", "broker.stalls.every_fetches",
     "is given beside interval"),
    (BASE + "broker:\n  stalls: {every_fetches: 600}\n", "broker.stalls.pause", "is required beside every_fetches"),
    (BASE + "broker:\n  stalls: {every_fetches: 0, pause: 1ms}\n", "broker.stalls.every_fetches", ""),
    (BASE + "broker:\n  stalls: {every_requests: 600, pause: 1ms, fetch_pause: 1ms}\n", "broker.stalls.fetch_pause",
     "is given without every_fetches"),
    (BASE + "broker:\n  stalls: {interval: 1s, pause: 1ms, fetch_pause: 1ms}\n", "broker.stalls.fetch_pause",
     "is given without every_fetches"),
    (BASE + "machine_stalls: {every_fetches: 600, pause: 1ms}\n", "machine_stalls.every_fetches",
     "is a broker's only"),
    (BASE + "clients_stalls: {every_requests: 600, pause: 1ms}\n", "clients_stalls.every_requests",
     "is a broker's only"),
    (BASE + "clients_stalls: {every_fetches: 600, pause: 1ms}\n", "clients_stalls.every_fetches",
     "is a broker's only"),
    (BASE.replace("rate: 10/s}", "rate: 10/s, stalls: {every_fetches: 10, pause: 1ms}}"),
     "producers[0].stalls.every_fetches", "has no replica fetchers"),
])
def test_every_requests_and_every_fetches_are_a_brokers_and_replace_interval(text: str, path: str, words: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(text)
    problems = info.value.problems
    assert len(problems) == 1, problems
    assert problems[0].path == path and words in problems[0].message
