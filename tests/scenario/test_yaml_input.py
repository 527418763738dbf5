"""How scenario YAML is read: YAML 1.2 core-schema scalars, no explicit tags, no booleans for numbers, a
depth limit checked before anything recurses, and the line and column of a byte that is not UTF-8."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkasim.scenario import ScenarioError, load_scenario, with_overrides
from kafkasim.scenario.yaml_source import load_yaml

BASE = """\
name: minimal
description: one topic, nothing else
duration: 10s
topics: [{name: t}]
"""


def _with(line: str) -> str:
    """BASE with `line` as its line 5 (a key BASE has is taken out of its first four lines)."""
    key = line.split(":", 1)[0]
    kept = [x for x in BASE.splitlines() if not x.startswith(key + ":")]
    kept += [""] * (4 - len(kept))  # keep `line` on line 5
    return "\n".join([*kept, line]) + "\n"


def _problem(text: str) -> str:
    with pytest.raises(ScenarioError) as e:
        load_scenario(text)
    return str(e.value)


# --- YAML 1.2 core schema -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("042", 42),  # YAML 1.1: octal 34
        ("0o17", 15),
        ("0x1F", 31),
        ("-7", -7),
        ("1e3", 1000.0),  # YAML 1.1 (PyYAML): the string '1e3'
        ("1.5", 1.5),
        (".inf", float("inf")),
        ("true", True),
        ("False", False),
        ("~", None),
        ("null", None),
        ("1:30", "1:30"),  # YAML 1.1: sexagesimal 90
        ("yes", "yes"),  # YAML 1.1: true
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("1_000", "1_000"),  # YAML 1.1: 1000
        ("0b101", "0b101"),  # YAML 1.1: 5
        ("2001-12-14", "2001-12-14"),  # YAML 1.1: a date
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("=", "="),
        ("190:20:30.15", "190:20:30.15"),
    ],
)
def test_plain_scalars_resolve_as_yaml_1_2_core_says(text: str, value: object) -> None:
    assert load_yaml(f"k: {text}\n", "<t>").data == {"k": value}


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("seed: 1:30", "<string>:5: seed: expected an integer, got text '1:30'"),
        ("seed: true", "<string>:5: seed: expected an integer, got true"),
        ("seed: 1_000", "seed: expected an integer, got text '1_000'"),
        ("seed: '42'", "seed: expected an integer, got text '42'"),
        ("seed: 4.0", "seed: expected an integer, got 4.0"),
        ("invariants: yes", "invariants: expected true or false, got text 'yes'"),
        ("invariants: 1", "invariants: expected true or false, got 1"),
        ("clock: {mode: wallclock, speed: true}", "clock.speed: expected a number, got true"),
    ],
)
def test_yaml_1_1_forms_and_booleans_for_numbers_are_refused(line: str, fragment: str) -> None:
    assert fragment in _problem(_with(line))


def test_a_leading_zero_is_decimal() -> None:
    assert load_scenario(_with("seed: 042")).seed == 42


@pytest.mark.parametrize(
    ("yaml_text", "fragment"),
    [
        ("topics: [{name: t, partitions: true}]", "topics[0].partitions: expected an integer, got true"),
        ("topics: [{name: t, replication.factor: false}]", "topics[0].replication.factor: expected an integer"),
        ("broker: {num.io.threads: true}", "broker.num.io.threads: expected an integer, got true"),
        ("broker: {queued.max.requests: true}", "broker.queued.max.requests: expected an integer"),
        ("broker: {message.max.bytes: true}", "broker.message.max.bytes: expected a number of bytes, got true"),
        ("topics: [{name: t, segment.ms: true}]", "topics[0].segment.ms: expected a number of milliseconds"),
    ],
)
def test_booleans_are_refused_wherever_a_number_is_expected(yaml_text: str, fragment: str) -> None:
    assert fragment in _problem(_with(yaml_text))


# --- explicit tags ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "tag"),
    [
        ("name: !!binary aGVsbG8=", "!!binary"),
        ("name: !!str hello", "!!str"),
        ("seed: !!int 3", "!!int"),
        ("seed: !!float 3", "!!float"),
        ("description: !!timestamp 2001-12-14", "!!timestamp"),
        ("name: !foo hello", "!foo"),
        ("name: ! hello", "!"),
        ("name: !<tag:example.com,2024:x> hello", "!<tag:example.com,2024:x>"),
        ("broker: !!map {num.io.threads: 4}", "!!map"),
        ("topics: !!seq [{name: t}]", "!!seq"),
        ("broker: !local {num.io.threads: 4}", "!local"),
        ("name: !!python/object/apply:os.system [echo]", "!!python/object/apply:os.system"),
    ],
)
def test_every_explicit_tag_is_refused_with_its_line(line: str, tag: str) -> None:
    message = _problem(_with(line))
    assert message.startswith("<string>:5:"), message
    assert f"explicit tag {tag!r}" in message, message


def test_a_tag_nested_deep_inside_is_refused_at_its_line() -> None:
    text = _with("topics:\n  - name: t\n    partitions: !!int 3")
    assert "<string>:7:17: invalid YAML: explicit tag '!!int' is not allowed" in _problem(text)


# --- nesting depth ------------------------------------------------------------------------------------------


def _deep(form: str, n: int) -> str:
    if form == "flow sequence":
        return "name: " + "[" * n + "]" * n + "\n"
    if form == "flow mapping":
        return "name: " + "{a: " * n + "1" + "}" * n + "\n"
    if form == "block sequence":
        return "name:\n  " + "- " * n + "x\n"
    if form == "explicit keys":
        return "name:\n  " + "? " * n + "x\n"
    raise ValueError(form)


FORMS = ["flow sequence", "flow mapping", "block sequence", "explicit keys"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n", [41, 2_000])
def test_deep_nesting_is_refused_in_process(form: str, n: int) -> None:
    message = _problem(_deep(form, n))
    assert "nested too deeply (at most 40 levels)" in message, message
    assert re.match(r"<string>:[12]:\d+: invalid YAML: nested too deeply", message), message


def test_forty_levels_are_read() -> None:
    assert load_yaml("k: " + "[" * 39 + "]" * 39 + "\n", "<t>").data is not None


# --- not UTF-8 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where", "byte"),
    [
        (b"name: caf\xe9\n", "1:10", "0xe9"),
        (b"name: x\ndescription: ok\n  \xff\xfe\n", "3:3", "0xff"),
        ("name: \u00e9t\u00e9\nseed: 1\n# \u00e9\x80".encode("utf-8").replace(b"\xc2\x80", b"\x80"), "3:4", "0x80"),
        (b"\xff\xfen\x00a\x00", "1:1", "0xff"),
    ],
)
def test_a_file_that_is_not_utf8_names_the_line_and_column_of_the_first_bad_byte(
    tmp_path: Path, data: bytes, where: str, byte: str
) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(data)
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert str(e.value) == f"{path}:{where}: not UTF-8 text (byte {byte})"


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("seed=true", "--set seed=true: seed: expected an integer, got true"),
        ("seed=1:30", "seed: expected an integer, got text '1:30'"),
        ("invariants=yes", "invariants: expected true or false, got text 'yes'"),
        ("topics[0].partitions=true", "topics[0].partitions: expected an integer, got true"),
        ("name=!!binary aGVsbG8=", "invalid YAML: explicit tag '!!binary' is not allowed"),
        ("broker=!!map {num.io.threads: 4}", "invalid YAML: explicit tag '!!map' is not allowed"),
        ("name=" + "[" * 50 + "]" * 50, "nested too deeply (at most 40 levels)"),
    ],
)
def test_set_overrides_follow_the_same_rules(override: str, fragment: str) -> None:
    scenario = load_scenario(BASE)
    with pytest.raises(ScenarioError) as e:
        with_overrides(scenario, [override])
    assert fragment in str(e.value), str(e.value)


@pytest.mark.parametrize(("override", "seed"), [("seed=042", 42), ("seed=0x1F", 31), ("seed=0o17", 15)])
def test_set_overrides_read_numbers_as_yaml_1_2(override: str, seed: int) -> None:
    assert with_overrides(load_scenario(BASE), [override]).seed == seed


@pytest.mark.parametrize("override", ["name=" + "[" * 30_000 + "]" * 30_000, "name=" + "x" * 5000, "x" * 5000 + "=1"])
def test_a_long_set_argument_is_shortened_in_the_message(override: str) -> None:
    # Found by test_fuzz_hostile: the whole 60 KB argument was echoed on one line.
    with pytest.raises(ScenarioError) as e:
        with_overrides(load_scenario(BASE), [override])
    assert all(len(line) < 300 for line in str(e.value).splitlines()), str(e.value)[:500]
    assert str(e.value).startswith(f"--set {override[:20]}")


@pytest.mark.parametrize(
    ("text", "where", "code"),
    [
        ("name: x\ndescription: a\x07b\n", "2:15", "07"),
        # libyaml reports a byte offset: characters of two bytes before the bad one must not shift the line.
        ("name: x\ndescription: " + "\u00e9" * 11 + "\n\u00e9\u00e9\x07b\n", "3:3", "07"),
        ("name: x\x00", "1:8", "00"),
    ],
)
def test_a_control_character_is_refused_at_its_line_and_column(text: str, where: str, code: str) -> None:
    assert _problem(text) == f"<string>:{where}: invalid YAML: control character #x{code} is not allowed"


# --- merge keys -----------------------------------------------------------------------------------------

MERGED = """\
name: merged
description: a link shared by merging
duration: 10s
topics: [{name: t}]
network:
  default_link: &link {latency: 2ms}
producers:
  - name: p
    topic: t
    rate: 1/s
    link:
      <<: *link
      bandwidth: 1Gbit/s
"""


def test_a_merge_key_is_refused_at_its_line() -> None:
    # YAML 1.1's `<<` was honoured (the producer got latency 2ms) although the files are YAML 1.2.
    assert _problem(MERGED) == (
        "<string>:12:7: producers[0].link: invalid YAML: merge key '<<' is YAML 1.1, not part of the YAML 1.2 that "
        "scenario files are (allowed: write the keys out, or repeat a whole value with an anchor and an alias, e.g. "
        "`link: *shared`)")
    # What the message suggests reads.
    s = load_scenario(MERGED.replace("    link:\n      <<: *link\n      bandwidth: 1Gbit/s\n", "    link: *link\n"))
    assert s.producers[0].link == s.network.default_link


def test_a_quoted_merge_key_and_a_merge_value_are_text() -> None:
    assert load_yaml('"<<": 1\n', "f").data == {"<<": 1}
    assert load_yaml("a: <<\n", "f").data == {"a": "<<"}  # was "could not determine a constructor"
    assert "unknown key '<<'" in _problem(BASE + '"<<": 1\n')
