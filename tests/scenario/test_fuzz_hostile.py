"""Hostile scenario files and command-line arguments, generated deterministically from a seed.

Kinds: zero values of every size and bandwidth key, huge values, deep nesting (flow and block, up to 100 000
levels), YAML 1.1 forms (`042`, `1:30`, `yes`, `1_000`, dates, ...), explicit tags, booleans for numbers,
bytes that are not UTF-8, and hostile `--set`, `--seed` and `--speed` arguments.

What must hold: a scenario either loads or is refused with a ScenarioError whose every problem is located
(`file:line`, or the `--set` that caused it); nothing else is raised. A valid one with a zero size runs.
Through the real command line (subprocesses): no traceback, no crash, exit 0 or 2, and every refusal
names `file:line` (or the argument).

The case counts are parameters: KAFKASIM_FUZZ_CASES (library, default 2000), KAFKASIM_FUZZ_CLI_FILES (files
given to one `kafkasim validate`, default 60), KAFKASIM_FUZZ_CLI_RUNS (`kafkasim run` subprocesses,
default 3), KAFKASIM_FUZZ_SEED.
"""

from __future__ import annotations

import functools
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkasim.run.engine import run_scenario
from kafkasim.scenario import Scenario, ScenarioError, load_scenario, with_overrides
from kafkasim.scenario.errors import Loc
from kafkasim.scenario.ranges import quantity
from kafkasim.scenario.structure import field_info, keys, resolve
from kafkasim.scenario.units import MIN_BANDWIDTH, Quantity, format_size
from kafkasim.scenario.yaml_source import load_yaml

from .samples import FULL, assert_readable, copy_data, walk

ROOT = Path(__file__).resolve().parents[2]
CASES = int(os.environ.get("KAFKASIM_FUZZ_CASES", "2000"))
CLI_FILES = int(os.environ.get("KAFKASIM_FUZZ_CLI_FILES", "60"))
CLI_RUNS = int(os.environ.get("KAFKASIM_FUZZ_CLI_RUNS", "3"))
SEED = int(os.environ.get("KAFKASIM_FUZZ_SEED", "20251124"))
# Zero-size scenarios that validate are also run (in process), this many of them at most.
ZERO_RUNS = int(os.environ.get("KAFKASIM_FUZZ_ZERO_RUNS", "8"))

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
HOLE = "HOSTILE_VALUE_HERE"

BASE: dict[str, Any] = load_yaml(FULL, "<base>").data
# A base that runs quickly: 100 ms simulated, no warm-up, virtual time, no faults (they start later).
RUN_BASE: dict[str, Any] = {
    **copy_data(BASE),
    "duration": "100ms",
    "warmup": "0ms",
    "sample_interval": "50ms",
    "clock": "virtual",
    "faults": [],
}


def _put(data: Any, loc: Loc, value: Any) -> None:
    node = data
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value


def _dump(data: Any, raw: str | None = None) -> str:
    """YAML of `data`; `raw` replaces the HOLE placeholder verbatim (a plain scalar, a tag, a deep list)."""
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000)
    return text if raw is None else text.replace(HOLE, raw, 1)


def _numeric_slots(base: dict[str, Any]) -> list[tuple[Loc, Any]]:
    """Every (mapping, key) where a number stands or could stand, with its field, in `base`."""
    slots = []
    for loc, node in walk(base):
        if not isinstance(node, dict):
            continue
        models = resolve(Scenario, loc).models
        for key in keys(models):
            info = field_info(models, key)
            if info is not None and (quantity(info) is not None or info.annotation in (int, float)):
                slots.append(((*loc, key), info))
    return slots


SLOTS = _numeric_slots(BASE)
RUN_SLOTS = _numeric_slots(RUN_BASE)


def _bandwidth(q: Quantity) -> bool:
    return q.low == MIN_BANDWIDTH


SIZE_SLOTS = [
    (loc, info)
    for loc, info in RUN_SLOTS
    if (q := quantity(info)) is not None and (q.suffix == "bytes" or q.show is format_size or _bandwidth(q))
]
STRING_LEAVES = [loc for loc, v in walk(BASE) if isinstance(v, str) and loc and loc[-1] in ("name", "description")]


@dataclass
class Case:
    kind: str
    text: str | bytes
    # What the refusal must point at: a line (the text's own problem), or None (any located problem).
    line: int | None = None
    column: int | None = None
    must_refuse: bool = False
    runnable: bool = False  # built on RUN_BASE: if it validates, it must run
    overrides: list[str] = field(default_factory=list)


def gen_zero(rng: random.Random) -> Case:
    loc, info = rng.choice(SIZE_SLOTS)
    q = quantity(info)
    assert q is not None
    forms: list[Any]
    if q.suffix == "bytes":
        forms = [0, "0", "0B", "0KiB", "0.0MB"]
    elif _bandwidth(q):
        forms = ["0bit/s", "0Gbit/s", "0B/s", "0.0MiB/s", "0KB/s"]
    else:
        forms = ["0B", "0KiB", "0GB"]
    data = copy_data(RUN_BASE)
    _put(data, loc, rng.choice(forms))
    return Case("zero size", _dump(data), runnable=True)


HUGE: list[Any] = [
    10**12, 10**18, 2**63, 2**64, -(2**63) - 1, 1e308, "1e308", "9" * 5000, "1e30s", "99999999d", "1e9/s",
    "1e6/s", "1e20GiB", "3GiB", "8000000Tbit/s", "2147483648", "1e400", "-1e400", 10**4300,
]


def gen_huge(rng: random.Random) -> Case:
    loc, _ = rng.choice(SLOTS)
    data = copy_data(BASE)
    value = rng.choice(HUGE)
    if isinstance(value, int) and value > 10**4000:
        _put(data, loc, HOLE)
        return Case("huge value", _dump(data, "1" + "0" * rng.randint(4300, 20_000)))
    _put(data, loc, value)
    return Case("huge value", _dump(data))


DEEP: dict[str, Callable[[int], str]] = {
    "flow seq": lambda n: "[" * n + "]" * n,
    "flow map": lambda n: "{a: " * n + "1" + "}" * n,
    "block seq": lambda n: "\n" + "  - " * 1 + "- " * n + "x",
    "explicit keys": lambda n: "\n  " + "? " * n + "x",
}


def gen_deep(rng: random.Random) -> Case:
    form = rng.choice(list(DEEP))
    n = rng.choice([41, 60, 500, 5_000, 30_000, 100_000])
    data = copy_data(BASE)
    loc, _ = rng.choice([*SLOTS, *((s, None) for s in STRING_LEAVES)])
    _put(data, loc, HOLE)
    return Case(f"deep {form}", _dump(data, DEEP[form](n)), must_refuse=True)


YAML11 = ["042", "0o17", "0x1F", "1:30", "190:20:30", "1_000", "0b101", "+12", ".inf", "-.inf", ".nan", ".NaN",
          "yes", "no", "on", "off", "y", "n", "Yes", "OFF", "~", "null", "2001-12-14", "2001-12-14 21:59:43.10 -5",
          "1e3", "=", "<<"]
YAML11_ONLY = {"1:30", "190:20:30", "1_000", "0b101", "yes", "no", "on", "off", "y", "n", "Yes", "OFF", "2001-12-14",
               "2001-12-14 21:59:43.10 -5", "="}
BOOLEANS = ["true", "false", "True", "FALSE"]


def gen_yaml11(rng: random.Random) -> Case:
    loc, _ = rng.choice(SLOTS)
    data = copy_data(BASE)
    _put(data, loc, HOLE)
    form = rng.choice(YAML11)
    # A YAML 1.1-only form where a number stands is text under YAML 1.2: it must never load as a number.
    return Case("YAML 1.1 form", _dump(data, form), must_refuse=form in YAML11_ONLY)


def gen_boolean(rng: random.Random) -> Case:
    loc, _ = rng.choice(SLOTS)
    data = copy_data(BASE)
    _put(data, loc, HOLE)
    return Case("boolean for a number", _dump(data, rng.choice(BOOLEANS)), must_refuse=True)


TAGS = ["!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp", "!!map", "!!seq", "!!set",
        "!!omap", "!foo", "!", "!<tag:example.com,2024:x>", "!!python/object/apply:os.system",
        "!!python/name:os.system", "!local"]
KEY_LINE = re.compile(r"^(\s*(?:- )?)([A-Za-z_.]+):( |$)")


def gen_tag(rng: random.Random) -> Case:
    lines = _dump(BASE).splitlines()
    i = rng.choice([i for i, line in enumerate(lines) if KEY_LINE.match(line)])
    m = KEY_LINE.match(lines[i])
    assert m is not None
    head = lines[i][: m.end(2) + 1]
    rest = lines[i][m.end(2) + 1 :].lstrip()
    tag = rng.choice(TAGS)
    lines[i] = f"{head} {tag} {rest}".rstrip()
    return Case("explicit tag", "\n".join(lines) + "\n", line=i + 1, column=len(head) + 2, must_refuse=True)


BAD_BYTES = [b"\xff", b"\xfe", b"\x80", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf"]


def gen_not_utf8(rng: random.Random) -> Case:
    data = _dump(BASE).encode("utf-8")
    at = rng.randrange(len(data) + 1)
    bad = rng.choice(BAD_BYTES)
    text = data[:at] + bad + data[at:]
    line = data.count(b"\n", 0, at) + 1
    column = at - (data.rfind(b"\n", 0, at) + 1) + 1  # the base is ASCII: bytes are characters
    return Case("not UTF-8", text, line=line, column=column, must_refuse=True)


SET_VALUES = ["0", "0B", "0bit/s", "true", "042", "1:30", "yes", "!!str 5", "!foo x", "[[[[[[]]]]]]", "{a: {b: {c: 1}}}",
              "1e400", "-1", "99999999999999999999", ".inf", "~", "", "'", "[", "1e9/s", "0ms", "1us", "2d", "\t",
              "\x07", "&a [*a]", "*nope", "%YAML 1.1", "--- 3", "a: b: c"]
SET_KEYS = ["seed", "duration", "sample_interval", "topics[0].partitions", "producers[0].rate", "broker.message.max.bytes",
            "broker.replica.fetch.max.bytes", "network.default_link.bandwidth", "clock", "clock.speed", "invariants",
            "producers[producer-1].batch.size", "topics[orders].max.message.bytes", "consumers[0].fetch.max.bytes",
            "topics[9].partitions", "topics[-1].partitions", "nope", "broker..x", "topics[", "=", "a.b.c.d.e.f"]


def gen_set(rng: random.Random) -> Case:
    deep = "[" * 30_000 + "]" * 30_000
    value = deep if rng.random() < 0.03 else rng.choice(SET_VALUES)
    key = rng.choice(SET_KEYS)
    return Case("hostile --set", _dump(RUN_BASE), overrides=[f"{key}={value}"], runnable=True)


GENERATORS = [gen_zero, gen_zero, gen_huge, gen_deep, gen_yaml11, gen_boolean, gen_tag, gen_not_utf8, gen_set]


@functools.cache
def generate(count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    return [GENERATORS[i % len(GENERATORS)](rng) for i in range(count)]


def _load(case: Case, tmp: Path) -> Scenario:
    if isinstance(case.text, bytes):
        path = tmp / "case.yaml"
        path.write_bytes(case.text)
        scenario = load_scenario(path)
    else:
        scenario = load_scenario(case.text)
    return with_overrides(scenario, case.overrides) if case.overrides else scenario


def _check_refusal(case: Case, error: ScenarioError) -> None:
    message = str(error)
    context = f"{case.kind}: {case.overrides}\n{case.text[:600]!r}\n---\n{message}"
    assert_readable(message, context, max_line=400)
    for p in error.problems:
        assert p.line is not None or p.file.startswith("--set "), context
    if case.line is not None:
        assert any(p.line == case.line and p.column == case.column for p in error.problems), context


def _check_case(case: Case, tmp: Path, runs: list[int]) -> None:
    try:
        scenario = _load(case, tmp)
    except ScenarioError as e:
        _check_refusal(case, e)
        return
    assert not case.must_refuse, f"{case.kind} loaded: {case.overrides}\n{case.text[:600]!r}"
    if case.runnable and runs[0] < ZERO_RUNS and case.kind == "zero size":
        runs[0] += 1
        run_scenario(scenario)  # any exception fails the test


@pytest.mark.parametrize("chunk", range(4))
def test_hostile_scenarios_load_or_are_refused_with_located_problems(chunk: int, tmp_path: Path) -> None:
    runs = [0]
    for case in generate(CASES, SEED)[chunk::4]:
        _check_case(case, tmp_path, runs)


def test_the_generator_covers_every_kind() -> None:
    kinds = {c.kind.split(" ")[0] for c in generate(CASES, SEED)}
    assert {"zero", "huge", "deep", "YAML", "boolean", "explicit", "not", "hostile"} <= kinds
    assert len(SIZE_SLOTS) >= 15  # every Kafka size key, record sizes and bandwidths of the base


# --- the real command line ----------------------------------------------------------------------------------


def _cli(*args: str | Path, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kafkasim", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def _assert_clean(result: subprocess.CompletedProcess[str], context: str) -> None:
    assert result.returncode in (0, 2), f"exit {result.returncode}: {context}\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr + result.stdout, f"{context}\n{result.stderr[-3000:]}"


def test_validate_on_hostile_files(tmp_path: Path) -> None:
    cases = [c for c in generate(max(CASES, CLI_FILES * 2), SEED + 1) if not c.overrides][:CLI_FILES]
    paths = []
    for i, case in enumerate(cases):
        path = tmp_path / f"case{i:04d}.yaml"
        path.write_bytes(case.text if isinstance(case.text, bytes) else case.text.encode("utf-8"))
        paths.append(path)
    result = _cli("validate", *paths, cwd=tmp_path)
    _assert_clean(result, "validate")
    problem_lines = [line.strip() for line in result.stderr.splitlines() if line.startswith(("kafkasim: error: ", "  "))]
    for path, case in zip(paths, cases, strict=True):
        ok = f"ok {path}:" in result.stdout
        refused = [line for line in problem_lines if str(path) + ":" in line]
        assert ok != bool(refused), (case.kind, path, result.stderr[-2000:])
        if case.must_refuse:
            assert refused, (case.kind, path)
        for line in refused:
            where = line.removeprefix("kafkasim: error: ")
            assert re.match(rf"{re.escape(str(path))}:\d+(:\d+)?: ", where), line
        if case.line is not None:
            assert any(f"{path}:{case.line}:{case.column}: " in line for line in refused), (case.kind, refused)


SEEDS = ["-1", "1.5", "abc", "1e3", "99999999999999999999999", "0x10", "", " 5", "true", "9223372036854775807"]
SPEEDS = ["0", "-1", "nan", "inf", "1e-9", "1e400", "abc", "0.0009", "1000001", "", "1", "0.01", "1e6"]


def test_run_with_hostile_arguments_and_files(tmp_path: Path) -> None:
    rng = random.Random(SEED + 2)
    base = tmp_path / "base.yaml"
    base.write_text(_dump(RUN_BASE))
    zero = [c for c in generate(max(CASES, 200), SEED + 3) if c.kind == "zero size"]
    sets = [c for c in generate(max(CASES, 200), SEED + 3) if c.kind == "hostile --set"]
    for i in range(CLI_RUNS):
        out = tmp_path / f"out{i}"
        kind = i % 3
        if kind == 0:  # a zero-size file: it runs (exit 0) or is refused at its line
            path = tmp_path / f"zero{i}.yaml"
            case = rng.choice(zero)
            path.write_text(str(case.text))
            args: list[str | Path] = [path]
        elif kind == 1:
            # A valid speed paces the run: 5 ms simulated at 0.01 take half a second.
            args = [base, "--seed", rng.choice(SEEDS), "--speed", rng.choice(SPEEDS), "--set", "duration=5ms",
                    "--set", "sample_interval=1ms"]
        else:
            args = [base, *(x for o in rng.choice(sets).overrides for x in ("--set", o))]
        result = _cli("run", *args, "--no-figures", "--out", out, cwd=tmp_path)
        context = f"run {args}"
        _assert_clean(result, context)
        if result.returncode == 2:
            first = result.stderr.splitlines()[0]
            assert first.startswith("kafkasim: error: "), context
            lines = [first.removeprefix("kafkasim: error: ")] + [x.strip() for x in result.stderr.splitlines()[1:]]
            located = [x for x in lines if re.match(r"(\S+\.yaml:\d+(:\d+)?|--set .*?|--set): ", x)]
            assert located or "'--seed'" in first or "--speed" in first, (context, result.stderr)
