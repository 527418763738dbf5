"""Safe YAML loading that remembers the line of every key and refuses duplicate keys.

PyYAML's `safe_load` silently keeps the last of two equal keys and forgets where things were. We compose
the node graph with a `yaml.SafeLoader` subclass (safe tags only) and build plain data from it ourselves,
so every key path gets its line and a duplicate key is an error naming both lines.

Plain scalars resolve by YAML 1.2's core schema, not PyYAML's YAML 1.1 rules, which silently change
values: `042` is 42 (not octal 34), `1:30`, `yes`, `on`, `1_000`, `0b101` and dates stay text (not 90,
true, 1000, 5 and a date). Explicit tags (`!!str`, `!!binary`, `!foo`, ...) are refused: a scenario is
plain YAML. So are YAML 1.1's merge keys (`<<: *defaults`), which YAML 1.2 dropped: a plain `<<` key is
refused at its line (PyYAML would merge it), a `<<` value is the text "<<". Anchors and aliases, which
repeat a whole value (`link: *shared`), are YAML 1.2 and kept. Mapping keys are taken as written
(`node.value`).

Before anything is composed, one pass over libyaml's events (an iterative parser) checks the nesting
depth and the tags: PyYAML's composer recurses once per level, and a file nested some 30 000 levels deep
overflows the C stack (a segfault) before any depth check on the composed nodes could run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.events import CollectionEndEvent, CollectionStartEvent, NodeEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kafkasim.scenario.errors import Loc, Problem, ScenarioError, format_path

YAML_TAG_PREFIX = "tag:yaml.org,2002:"
# Aliases can make a small file expand exponentially ("billion laughs"); a scenario is a few hundred nodes,
# and a reasonable use of aliases (a shared link for every client) repeats a few thousand at most.
MAX_NODES = 100_000
MAX_ALIASED_NODES = 10_000
MAX_DEPTH = 40
MERGE_KEY_REFUSED = ("invalid YAML: merge key '<<' is YAML 1.1, not part of the YAML 1.2 that scenario files are "
                     "(allowed: write the keys out, or repeat a whole value with an anchor and an alias, "
                     "e.g. `link: *shared`)")


# libyaml's parser with PyYAML's SafeConstructor (CSafeLoader) is twenty times faster than the pure-Python
# SafeLoader and just as safe; both give nodes with line marks.
_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LineLoader(_SafeBase):  # type: ignore[valid-type,misc]
    """A SafeLoader used only to compose nodes (with their marks) and to construct scalars safely, with
    YAML 1.2 core-schema resolution of plain scalars."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution); the int rule comes before the
# float rule so that "7" is an int. Everything else is a string.
_CORE_RESOLVERS: list[tuple[str, str, str]] = [
    ("null", r"~|null|Null|NULL|", "~nN"),
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (
        "float",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        "-+0123456789.",
    ),
]
for _name, _pattern, _first in _CORE_RESOLVERS:
    _chars: list[str | None] = list(_first) + ([None] if _name == "null" else [])
    LineLoader.add_implicit_resolver(YAML_TAG_PREFIX + _name, re.compile(rf"(?:{_pattern})\Z"), _chars)


def _construct_core_int(loader: yaml.SafeLoader, node: ScalarNode) -> int:
    # SafeConstructor.construct_yaml_int reads YAML 1.1: a leading 0 means octal, `:` base 60.
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


LineLoader.add_constructor(YAML_TAG_PREFIX + "int", _construct_core_int)


def _shown_tag(tag: str) -> str:
    """A tag as the author wrote it: `!!binary`, `!foo`, `!`, or the verbatim `!<tag:...>`."""
    if tag.startswith(YAML_TAG_PREFIX):
        return "!!" + tag[len(YAML_TAG_PREFIX) :]
    return tag if tag.startswith("!") else f"!<{tag}>"


def _problem_at(file: str, event: yaml.Event, message: str) -> Problem:
    mark = event.start_mark
    if mark is None:  # pragma: no cover - libyaml marks every event
        return Problem(file, None, "", message)
    return Problem(file, mark.line + 1, "", message, mark.column + 1)


def _prescan(text: str, file: str) -> None:
    """Walk libyaml's events (no recursion): refuse nesting deeper than MAX_DEPTH as soon as it is seen, and
    every explicit tag, each at its line."""
    depth = 0
    problems: list[Problem] = []
    for event in yaml.parse(text, Loader=LineLoader):
        tag = getattr(event, "tag", None) if isinstance(event, NodeEvent) else None  # an alias has no tag
        if tag is not None:
            message = f"invalid YAML: explicit tag {_shown_tag(tag)!r} is not allowed (write plain values)"
            problems.append(_problem_at(file, event, message))
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                message = f"invalid YAML: nested too deeply (at most {MAX_DEPTH} levels)"
                raise ScenarioError([*problems, _problem_at(file, event, message)])
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
    if problems:
        raise ScenarioError(problems)


@dataclass
class Source:
    """Plain data of one YAML document plus the line of every key path in it."""

    data: Any
    file: str
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """Line of `loc`, or of its nearest ancestor that exists (a missing key is reported at its parent)."""
        for n in range(len(loc), -1, -1):
            line = self.lines.get(loc[:n])
            if line is not None:
                return line
        return None


def load_yaml(text: str, file: str) -> Source:
    """Parse one YAML document; raise ScenarioError for broken YAML, duplicate keys and unsafe tags."""
    loader = LineLoader(text)
    try:
        _prescan(text, file)
        node = loader.get_single_node()
        if node is None:
            return Source(None, file, {(): 1})
        builder = _Builder(loader, file)
        data = builder.build(node, (), 0)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        what = " ".join(s for s in (e.context, e.problem) if s)
        raise ScenarioError([Problem(file, line, "", f"invalid YAML: {what}")]) from None
    except yaml.reader.ReaderError as e:
        # A control character: no mark, only a position (libyaml's: a byte offset into the UTF-8 text).
        code = e.character if isinstance(e.character, int) else ord(str(e.character)[:1] or "\0")
        message = f"invalid YAML: control character #x{code:02x} is not allowed"
        raise ScenarioError([_at_position(file, text, e.position, message)]) from None
    except yaml.YAMLError as e:
        raise ScenarioError([Problem(file, None, "", f"invalid YAML: {e}".splitlines()[0])]) from None
    except RecursionError:
        raise ScenarioError([Problem(file, None, "", "invalid YAML: nested too deeply")]) from None
    finally:
        loader.dispose()
    if builder.problems:
        raise ScenarioError(builder.problems)
    return Source(data, file, builder.lines)


def _at_position(file: str, text: str, position: object, message: str) -> Problem:
    if not isinstance(position, int):
        return Problem(file, None, "", message)
    index = position
    if _SafeBase is not yaml.SafeLoader:  # libyaml counts bytes
        index = len(text.encode("utf-8")[:position].decode("utf-8", errors="ignore"))
    line_start = text.rfind("\n", 0, index) + 1
    return Problem(file, text.count("\n", 0, index) + 1, "", message, index - line_start + 1)


class _Builder:
    def __init__(self, loader: LineLoader, file: str) -> None:
        self.loader = loader
        self.file = file
        self.lines: dict[Loc, int] = {}
        self.problems: list[Problem] = []
        self.nodes = 0
        self.seen: set[int] = set()
        self.aliased = 0

    def _fail(self, node: Node, loc: Loc, message: str) -> None:
        self.problems.append(Problem(self.file, node.start_mark.line + 1, format_path(loc), message))

    def build(self, node: Node, loc: Loc, depth: int) -> Any:
        self.nodes += 1
        if id(node) in self.seen:
            self.aliased += 1
        else:
            self.seen.add(id(node))
        if self.nodes > MAX_NODES or self.aliased > MAX_ALIASED_NODES or depth > MAX_DEPTH:
            # Depth is checked on the events already; aliases can still nest a shallow-looking document.
            what = f"nested too deeply (at most {MAX_DEPTH} levels)" if depth > MAX_DEPTH else (
                "too large (aliases expand to too many values)"
            )
            raise ScenarioError([Problem(self.file, node.start_mark.line + 1, format_path(loc), f"document is {what}")])
        self.lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, MappingNode):
            return self._mapping(node, loc, depth)
        if isinstance(node, SequenceNode):
            return [self.build(item, (*loc, i), depth + 1) for i, item in enumerate(node.value)]
        return self._scalar(node, loc)

    def _scalar(self, node: Node, loc: Loc) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError:
            raise  # an unsafe or unknown tag: reported as invalid YAML with its line
        except (ValueError, OverflowError) as e:
            # Constructors of ints with thousands of digits, impossible dates, bad base64 raise plain errors.
            reason = "too many digits" if "digits" in str(e) else str(e).splitlines()[0][:80]
            self._fail(node, loc, f"cannot read value: {reason}")
            return None

    def _mapping(self, node: MappingNode, loc: Loc, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        key_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.value == "<<" and not key_node.style:  # plain, not "<<"
                mark = key_node.start_mark
                self.problems.append(
                    Problem(self.file, mark.line + 1, format_path(loc), MERGE_KEY_REFUSED, mark.column + 1))
                continue
            if not isinstance(key_node, ScalarNode):
                self._fail(key_node, loc, "a key must be a plain word, not a list or mapping")
                continue
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in key_line:
                self._fail(key_node, (*loc, key), f"duplicate key (first defined on line {key_line[key]})")
                continue
            key_line[key] = line
            self.lines[(*loc, key)] = line
            out[key] = self.build(value_node, (*loc, key), depth + 1)
        return out
