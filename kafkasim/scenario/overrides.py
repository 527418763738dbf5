"""`key.path=value` overrides of a validated scenario (the CLI's --set, sweep grids).

Paths use the file's keys, Kafka's dots included: `broker.num.io.threads=4`,
`topics[0].min.insync.replicas=2`, `producers[producer-1].rate=2000/s` (a list item by index or by name),
`network.default_link.latency={type: lognormal, median: 1ms, p99: 5ms}`. Values are YAML.

The override is applied to what the author wrote (`exclude_unset`), not to the resolved scenario, so
`broker.min.insync.replicas=2` still reaches every topic that inherits it.
"""

from __future__ import annotations

import re
from typing import Any

from kafkasim.scenario.errors import Problem, ScenarioError, format_path, unknown_message
from kafkasim.scenario.load import validate_data
from kafkasim.scenario.scenario import Scenario
from kafkasim.scenario.structure import DISCRIMINATORS, field_type, is_list, is_model, keys, members, tags
from kafkasim.scenario.units import format_duration
from kafkasim.scenario.yaml_source import load_yaml

_TOKEN = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
_INDEX = re.compile(r"-?[0-9]+")  # ASCII digits: str.isdigit() also takes other scripts' digits and "²"


class _OverrideError(Exception):
    def __init__(self, message: str, path: list[str | int] | None = None) -> None:
        self.message = message
        self.path = format_path(path or [])


def shortened(scenario: Scenario, duration_ms: float, *, warmup_share: float = 0.5) -> Scenario:
    """``scenario`` run for ``duration_ms`` instead: its warm-up at most ``warmup_share`` of that, and its gauges
    sampled at least once more, at the end (a scenario that samples them once a run, as
    scenarios/calibration_base.yaml does, would otherwise be refused: sample_interval longer than duration)."""
    warmup = min(float(scenario.warmup), duration_ms * warmup_share)
    interval = min(float(scenario.sample_interval), duration_ms)
    return with_overrides(scenario, [f"duration={format_duration(duration_ms)}", f"warmup={format_duration(warmup)}",
                                     f"sample_interval={format_duration(interval)}"])


def with_overrides(scenario: Scenario, overrides: list[str]) -> Scenario:
    """A copy of ``scenario`` with `key.path=value` overrides applied (the CLI's --set); ScenarioError on any
    problem. A function beside the parser rather than a ``Scenario`` method, so that the model does not import
    the loader that imports it."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    applied: list[tuple[str, str]] = []  # (override text, its path as written in the file)
    problems: list[Problem] = []
    for text in overrides:
        label = f"--set {_shown(text)}"
        try:
            key_path, value = _parse(text, label)
            path = _assign(data, Scenario, key_path, value)
            applied.append((text, format_path(path)))
        except _OverrideError as e:
            problems.append(Problem(label, None, e.path, e.message))
        except ScenarioError as e:  # the value is not valid YAML
            problems.extend(Problem(label, None, p.path, p.message) for p in e.problems)
    if problems:
        raise ScenarioError(problems)
    try:
        return validate_data(data, file="--set")
    except ScenarioError as e:
        raise ScenarioError([_blame(p, applied) for p in e.problems]) from None


def _blame(problem: Problem, applied: list[tuple[str, str]]) -> Problem:
    """Name the override that caused a problem; otherwise say which overrides led to it."""
    for text, path in reversed(applied):
        if problem.path == path or problem.path.startswith((path + ".", path + "[")):
            return Problem(f"--set {_shown(text)}", None, problem.path, problem.message)
    texts = ", ".join(_shown(t) for t, _ in applied)
    return Problem(f"--set {_shown(texts)}", None, problem.path, problem.message)


def _shown(text: str, limit: int = 80) -> str:
    """An override as the author typed it, cut short: a message line stays readable for a 60 KB argument."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse(text: str, label: str) -> tuple[str, Any]:
    key_path, sep, raw = text.partition("=")
    if not sep or not key_path.strip():
        raise _OverrideError("expected key.path=value, e.g. broker.num.io.threads=4")
    if len(key_path) > 1000:
        raise _OverrideError("key path is too long (at most 1000 characters)")
    return key_path.strip(), load_yaml(raw, label).data


def _tokens(key_path: str) -> list[tuple[str, bool]]:
    """`topics[0].segment.ms` -> [("topics", False), ("0", True), ("segment", False), ("ms", False)]."""
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in _TOKEN.finditer(key_path):
        gap = key_path[pos : m.start()]
        if gap not in ("", "."):
            raise _OverrideError(f"cannot read key path {_shown(key_path)!r}")
        out.append((m.group(1), True) if m.group(1) is not None else (m.group(2), False))
        pos = m.end()
    if pos != len(key_path) or not out:
        raise _OverrideError(f"cannot read key path {_shown(key_path)!r}")
    return out


def _assign(data: dict[str, Any], root: Any, key_path: str, value: Any) -> list[str | int]:
    tokens = _tokens(key_path)
    node: Any = data
    types: list[Any] = [root]
    path: list[str | int] = []
    i = 0
    while i < len(tokens):
        alternatives = [m for t in types for m in members(t)]
        lists = [a for a in alternatives if is_list(a)]
        if lists:
            index = _index(node, tokens[i][0], path)
            path.append(index)
            types = [lists[0].__args__[0]]
            i += 1
            if i == len(tokens):
                node[index] = value
                return path
            node = node[index]
            continue
        models = [m for m in alternatives if is_model(m)]
        if not models or not isinstance(node, dict):
            raise _OverrideError("has no keys to set", path)
        valid = keys(models)
        # Kafka keys contain dots: take the longest run of tokens that spells a valid key.
        for n in range(len(tokens) - i, 0, -1):
            run = tokens[i : i + n]
            if any(bracket for _, bracket in run):
                continue
            key = ".".join(t for t, _ in run)
            if key in valid:
                break
        else:
            rest = ".".join(t for t, _ in tokens[i:])
            moved = next((m.moved_keys[rest] for m in models if rest in getattr(m, "moved_keys", {})), None)
            if moved is not None:
                raise _OverrideError(f"moved to {moved} (a broker config in Kafka)", [*path, rest])
            raise _OverrideError(unknown_message("key", _shown(rest), valid), [*path, rest])
        path.append(key)
        i += n
        if i == len(tokens):
            node[key] = value
            return path
        child_type = field_type(models, key)
        types = [child_type]
        node[key] = _container(node.get(key), members(child_type), path)
        node = node[key]
    return path


def _container(current: Any, alternatives: list[Any], path: list[str | int]) -> Any:
    """The mapping or list to descend into, created when the author left the key out."""
    if isinstance(current, dict | list):
        return current
    if any(is_list(a) for a in alternatives):
        return []
    if current is None:
        return {}
    # A shorthand such as `clock: wallclock` stands for {mode: wallclock}; expand it so a following
    # `clock.speed=0.5` adds to it. Other shorthands ("5ms" for a constant) cannot take keys.
    for model in (a for a in alternatives if is_model(a)):
        for disc in DISCRIMINATORS:
            if disc in model.model_fields and isinstance(current, str) and current in tags(model):
                return {disc: current}
    raise _OverrideError(f"is {current!r}, which has no keys; set the whole value instead", path)


def _index(node: Any, token: str, path: list[str | int]) -> int:
    """The position in a list that `token` names: an index, or the `name` of one of its items."""
    items = node if isinstance(node, list) else []
    where = format_path(path)
    if not items:
        shown = token if _INDEX.fullmatch(token) else repr(token)
        raise _OverrideError(f"has no item {shown}: the list is empty (allowed: set the whole list, e.g. "
                             f"{where}=[...])", path)
    positions = "0" if len(items) == 1 else f"0 to {len(items) - 1}"
    if _INDEX.fullmatch(token):
        index = int(token)
        if not 0 <= index < len(items):
            raise _OverrideError(f"has no item {index} (allowed: {positions})", path)
        return index
    names = {item["name"]: i for i, item in reversed(list(enumerate(items)))
             if isinstance(item, dict) and isinstance(item.get("name"), str)}
    if token in names:
        return names[token]
    if not names:
        raise _OverrideError(f"{token!r} is not an index, and the items of {where} have no names (allowed: "
                             f"{positions})", path)
    raise _OverrideError(unknown_message("name", token, list(names)), path)
