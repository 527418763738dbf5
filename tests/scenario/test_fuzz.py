"""1 100 malformed scenarios, generated deterministically by mutating a valid one.

Every one must raise ScenarioError (never another exception), with a short message whose problems carry a
line number and point at the key (or line) that was broken.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from kafkasim.scenario import ScenarioError, load_scenario
from kafkasim.scenario.errors import Loc, format_path
from kafkasim.scenario.scenario import Scenario
from kafkasim.scenario.structure import keys, resolve
from kafkasim.scenario.yaml_source import load_yaml

from .samples import FULL, assert_readable, copy_data, walk

CASES = 1100
SEED = 20_241_121
BASE = load_yaml(FULL, "<base>").data  # keys as written (`on`/`off` stay keys)

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass
class Case:
    kind: str
    text: str
    # The problems must include one whose path is at/under this path, or whose path contains it.
    path: str | None = None
    # ... or one on this line (negative: on this line or later).
    line: int | None = None
    # Where `path` is in the document, to accept a problem reported on its line.
    loc: Loc | None = None


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def _get(data: Any, loc: Loc) -> Any:
    for part in loc:
        data = data[part]
    return data


def _set(data: Any, loc: Loc, value: Any) -> None:
    _get(data, loc[:-1])[loc[-1]] = value


LEAVES = [(loc, v) for loc, v in walk(BASE) if loc and not isinstance(v, dict | list)]
MAPPINGS = [loc for loc, v in walk(BASE) if isinstance(v, dict)]

DURATION = re.compile(r"^\d+(\.\d+)?(us|ms|s|m|h|d)$")
SIZE = re.compile(r"^\d+(\.\d+)?(B|KB|MB|GB|KiB|MiB|GiB)$")
RATE = re.compile(r"^\d+/[smh]$")
ENUM_KEYS = {"type", "mode", "partitioner", "pattern", "direction", "arrival"}
NAME_KEYS = {"name", "topic", "target"}


def _bad_values(loc: Loc, value: Any) -> list[Any]:
    """Replacements that cannot be valid where `value` stands."""
    key = next((p for p in reversed(loc) if isinstance(p, str)), "")
    bad: list[Any] = [{"bogus_key": 1}, [1, 2]]
    if isinstance(value, bool):
        return [*bad, "maybe", 17]
    if isinstance(value, int | float):
        bad += ["abc", -7]
        if key != "weights":  # weights are relative: any finite size is fine
            bad += [10**30, float("inf")]
        return bad
    if not isinstance(value, str):
        return bad
    if DURATION.match(value):
        bad += ["-5s", "5 parsecs", "1e20s", "1e999999s"]
        if not key.endswith(".ms"):  # Kafka's .ms keys take bare integers; simulator durations need a unit
            bad += [5, 2.5]
    elif SIZE.match(value):
        bad += ["-1KiB", "5000000GiB", "1.5B", "12 furlongs"]
        if not key.endswith(".bytes"):
            bad += [1024]
    elif RATE.match(value):
        bad += ["-5/s", "5000", 5000, "1e12/s", "5/fortnight"]
    elif key in ENUM_KEYS:
        bad += [value[:-1] + "x", value.upper() + "_", ""]
    elif key in NAME_KEYS:
        bad += ["no such thing!", ""]
        if key != "name":  # renaming a client is fine; referring to a missing one is not
            bad += [value + "-missing"]
    elif key == "acks":
        bad += ["some", 2]
    return bad


def _data_case(kind: str, data: Any, loc: Loc) -> Case:
    return Case(kind, _dump(data), path=format_path(loc), loc=loc)


def gen_bad_value(rng: random.Random) -> Case:
    loc, value = rng.choice(LEAVES)
    data = copy_data(BASE)
    _set(data, loc, rng.choice(_bad_values(loc, value)))
    return _data_case("bad value", data, loc)


REQUIRED: list[Loc] = [
    ("name",),
    ("description",),
    ("duration",),
    ("topics",),
    ("topics", 0, "name"),
    ("producers", 0, "name"),
    ("producers", 0, "topic"),
    ("producers", 1, "rate"),
    ("consumers", 0, "topic"),
    ("faults", 0, "target"),
    ("faults", 0, "at"),
    ("faults", 0, "type"),
    ("faults", 1, "factor"),
    ("faults", 3, "extra"),
    ("controller", "link_latency", "p99"),
    ("broker", "costs", "read_per_kib", "low"),
    ("network", "default_link", "latency", "median"),
    ("producers", 0, "arrival", "on"),
]


def gen_missing_key(rng: random.Random) -> Case:
    loc = rng.choice(REQUIRED)
    data = copy_data(BASE)
    del _get(data, loc[:-1])[loc[-1]]
    return _data_case("missing key", data, loc)


def _typo(rng: random.Random, word: str) -> str:
    i = rng.randrange(len(word))
    edits = [
        word[:i] + word[i + 1 :],  # drop
        word[:i] + word[i] + word[i:],  # double
        word[:i] + rng.choice("xqz") + word[i:],  # insert
        word + "s",
    ]
    if i + 1 < len(word):
        edits.append(word[:i] + word[i + 1] + word[i] + word[i + 2 :])  # swap
    return rng.choice(edits)


def gen_unknown_key(rng: random.Random) -> Case:
    while True:
        loc = rng.choice(MAPPINGS)
        data = copy_data(BASE)
        mapping = _get(data, loc)
        valid = set(keys(resolve(Scenario, loc).models)) | set(keys(resolve(Scenario, (*loc, "x")).models))
        if mapping and rng.random() < 0.7:
            old = rng.choice(list(mapping))
            new = _typo(rng, old)
            if new in valid or new in mapping or not new:
                continue
            rebuilt = {(new if k == old else k): v for k, v in mapping.items()}
            mapping.clear()
            mapping.update(rebuilt)
        else:
            new = rng.choice(["bogus", "timeout", "speed_factor", "retries"])
            if new in valid:
                continue
            mapping[new] = 1
        return _data_case("unknown key", data, (*loc, new))


def gen_cross_field(rng: random.Random) -> Case:
    data = copy_data(BASE)
    choice = rng.randrange(8)
    if choice == 0:
        data["topics"][0]["min.insync.replicas"] = rng.randint(4, 40)
        return _data_case("min.insync > RF", data, ("topics", 0, "min.insync.replicas"))
    if choice == 1:
        data["topics"][0]["replication.factor"] = 1  # inherits broker min.insync.replicas 2
        return _data_case("min.insync > RF", data, ("broker", "min.insync.replicas"))
    if choice == 2:
        data["producers"][rng.randrange(2)]["topic"] = rng.choice(["order", "ordres", "x", "audits"])
        return Case("unknown topic", _dump(data), path="].topic")
    if choice == 3:
        i = rng.randrange(len(data["faults"]))
        data["faults"][i]["target"] = rng.choice(["follower-3", "follower-0", "producer-9", "broker"])
        return _data_case("unknown target", data, ("faults", i, "target"))
    if choice == 4:
        data["consumers"][0]["name"] = rng.choice(["producer-1", "producer-2", "follower-1"])
        return _data_case("name clash", data, ("consumers", 0, "name"))
    if choice == 5:
        data["warmup"] = rng.choice(["2m", "3m", "1h"])
        return _data_case("warmup >= duration", data, ("warmup",))
    if choice == 6:
        i = rng.randrange(len(data["faults"]))
        data["faults"][i]["at"] = rng.choice(["2m", "10m"])
        return _data_case("fault after the end", data, ("faults", i, "at"))
    data["broker"]["replica.fetch.wait.max.ms"] = rng.choice([10_001, 20_000, "1m"])
    return _data_case("fetch wait > lag time", data, ("broker", "replica.fetch.wait.max.ms"))


KEY_LINE = re.compile(r"^(\s*)([A-Za-z_.]+): \S")


def gen_duplicate_key(rng: random.Random) -> Case:
    lines = FULL.splitlines()
    candidates = [i for i, line in enumerate(lines) if KEY_LINE.match(line)]
    i = rng.choice(candidates)
    lines.insert(i + 1, lines[i])
    return Case("duplicate key", "\n".join(lines) + "\n", line=i + 2)


BREAKERS: list[Callable[[str], str]] = [
    lambda line: line + " [",
    lambda line: line + ' "unterminated',
    lambda line: "\t" + line.strip() + ": 1",
    lambda line: line + "\n: :",
    lambda line: line + "\n  - - {",
    lambda line: line + " {a: 1",
    lambda line: line + "\n*undefined_alias",
    lambda line: line + "\n!!python/object:os.system x: 1",
    lambda line: line + "\nkey: \x07",
]


def gen_broken_yaml(rng: random.Random) -> Case:
    lines = FULL.splitlines()
    # Not the description block: text there is just text.
    i = rng.choice([i for i, line in enumerate(lines) if i > 4 and (KEY_LINE.match(line) or "- " in line)])
    lines[i] = rng.choice(BREAKERS)(lines[i])
    # The break can only be noticed at or after the damaged line (an unclosed bracket: at the end).
    return Case("broken YAML", "\n".join(lines) + "\n", line=-(i + 1))


def gen_odd_document(rng: random.Random) -> Case:
    n = rng.randrange(8)
    if n == 0:
        return Case("empty", rng.choice(["", "\n", "# only a comment\n", "~\n", "---\n"]), line=1)
    if n == 1:
        return Case("top-level list", "- " + "\n- ".join(FULL.splitlines()[:3]) + "\n", line=1)
    if n == 2:
        return Case("top-level scalar", rng.choice(["42\n", "hello\n", "'name: x'\n"]), line=1)
    if n == 3:
        return Case("two documents", FULL + "---\n" + FULL, line=-1)
    if n == 4:
        depth = rng.randint(50, 300)
        return Case("deep nesting", "name: " + "[" * depth + "]" * depth + "\n", line=1)
    if n == 5:
        digits = rng.randint(5000, 20_000)
        return Case("huge integer", FULL.replace("seed: 7", "seed: 1" + "0" * digits), path="seed")
    if n == 6:
        return Case("huge float", FULL.replace("speed: 0.5", "speed: 1e999"), path="clock.speed")
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    return Case("alias bomb", "\n".join(bomb) + "\n", line=-1)


GENERATORS = [
    gen_bad_value,
    gen_bad_value,
    gen_missing_key,
    gen_unknown_key,
    gen_unknown_key,
    gen_cross_field,
    gen_duplicate_key,
    gen_broken_yaml,
    gen_odd_document,
]


@functools.cache
def generate_cases() -> list[Case]:
    rng = random.Random(SEED)
    return [GENERATORS[i % len(GENERATORS)](rng) for i in range(CASES)]


def _points_at(case: Case, error: ScenarioError) -> bool:
    problems = error.problems
    if case.path is not None:
        p = case.path
        if any(q.path == p or q.path.startswith((p + ".", p + "[")) or p in q.path for q in problems):
            return True
        line = load_yaml(case.text, "<check>").lines.get(case.loc) if case.loc is not None else None
        return line is not None and any(q.line == line for q in problems)
    if case.line is not None and case.line < 0:  # at or after this line
        return any(q.line is not None and q.line >= -case.line for q in problems)
    return any(q.line == case.line for q in problems)


def test_the_base_scenario_is_valid() -> None:
    load_scenario(_dump(BASE))


def test_generator_makes_enough_distinct_cases() -> None:
    cases = generate_cases()
    assert len(cases) >= 1000
    assert len({c.text for c in cases}) >= 600
    assert len({c.kind for c in cases}) >= 15


@pytest.mark.parametrize("chunk", range(4))
def test_every_malformed_scenario_is_a_short_located_scenario_error(chunk: int) -> None:
    cases = generate_cases()[chunk::4]
    for case in cases:
        try:
            load_scenario(case.text)
        except ScenarioError as e:
            message = str(e)
            context = f"{case.kind}:\n{case.text[:2000]}\n---\n{message}"
            assert_readable(message, context, max_line=300)
            assert all(p.line is not None for p in e.problems), context
            assert _points_at(case, e), context
        else:
            pytest.fail(f"{case.kind}: no ScenarioError for\n{case.text}")
