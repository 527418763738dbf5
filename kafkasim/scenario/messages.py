"""pydantic's validation errors rewritten as short scenario problems (no raw dumps, no URLs)."""

from __future__ import annotations

import re
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from kafkasim.scenario.errors import Loc, Problem, allowed_list, format_path, suggest, unknown_message
from kafkasim.scenario.ranges import allowed, plain, quantity
from kafkasim.scenario.structure import Place, field_info, keys, resolve
from kafkasim.scenario.yaml_source import Source


def show(value: Any) -> str:
    """A value as the author wrote it, short."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and abs(value) >= 1e15:
        return "a huge number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"text {show(value)}"
    return show(value)


_SIMPLE: dict[str, str] = {
    "missing": "required key is missing",
    "string_too_short": "must not be empty",
    "finite_number": "must be a finite number",
    "int_from_float": "expected an integer, got {input}",
    "int_type": "expected an integer, got {input}",
    "int_parsing": "expected an integer, got {input}",
    "float_type": "expected a number, got {input}",
    "float_parsing": "expected a number, got {input}",
    "bool_type": "expected true or false, got {input}",
    "bool_parsing": "expected true or false, got {input}",
    "string_type": "expected text, got {input}",
    "model_type": "expected a mapping (key: value), got {input}",
    "model_attributes_type": "expected a mapping (key: value), got {input}",
    "dict_type": "expected a mapping (key: value), got {input}",
    "list_type": "expected a list, got {input}",
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "too_short": "needs at least {min_length} item(s)",
    "too_long": "allows at most {max_length} items",
    "string_too_long": "is too long (at most {max_length} characters)",
    "string_pattern_mismatch": "{value} is not a valid name (allowed: letters, digits, '.', '_', '-'; "
    "starting with a letter or digit)",
}


_RANGE_KINDS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _number(x: Any) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return str(x)


def _message(err: dict[str, Any], place: Place, parent: Place) -> tuple[Loc, str]:
    """The author's path of the problem and a short message saying what is wrong and what is allowed."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    path = place.path
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        return path, unknown_message("key", key, keys(parent.models))
    if kind == "union_tag_invalid":
        disc = str(ctx.get("discriminator", "'type'")).strip("'")
        tag = value.get(disc) if isinstance(value, dict) else ctx.get("tag")
        if not isinstance(tag, str):  # pydantic's ctx holds str(tag): a null is not a type named 'None'
            return (*path, disc), f"expected text, got {show(tag)} (allowed: {allowed_list(place.union_tags)})"
        return (*path, disc), unknown_message(disc, tag, place.union_tags)
    if kind == "union_tag_not_found":
        disc = str(ctx.get("discriminator", "'type'")).strip("'")
        if isinstance(value, dict):
            # pydantic stops at the missing tag; a misspelt tag key is the likelier story, so say that.
            for key in value:
                if key not in keys(place.models) and suggest(str(key), [disc]) == disc:
                    return (*path, key), unknown_message("key", str(key), [disc])
        return (*path, disc), f"required key is missing (allowed: {allowed_list(place.union_tags)})"
    if kind == "literal_error":
        found = re.findall(r"'([^']*)'|(-?\d+)", str(ctx.get("expected", "")))
        choices = [a or b for a, b in found]
        near = suggest(value, choices) if isinstance(value, str) else None
        hint = f", did you mean {near!r}?" if near else f" (allowed: {allowed_list(choices)})"
        return path, f"got {show(value)}{hint}"
    if kind in _RANGE_KINDS and path and isinstance(path[-1], str) and isinstance(value, int | float):
        info = field_info(parent.models, path[-1])
        text = allowed(info) if info is not None else None
        if info is not None and text is not None:
            q = quantity(info)
            shown = q.show(value) if q is not None else plain(value)
            return path, f"{shown} is out of range (allowed: {text})"
    template = _SIMPLE.get(kind)
    if template is not None:
        fields = {k: _number(v) for k, v in ctx.items()}
        return path, template.format(input=_kind(value), value=show(value), **fields)
    msg = str(err.get("msg", kind)).splitlines()[0]
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return path, msg[:200]


def problems_from(error: ValidationError, root: type[BaseModel], source: Source | None, file: str) -> list[Problem]:
    """Every error of `error` as a Problem with the file's line, the author's key path and a short message."""
    items: list[tuple[Loc, str]] = []
    for err in error.errors(include_url=False):
        if err["type"] == "scenario_checks":
            base = tuple(err["loc"])
            items += [(resolve(root, base + tuple(loc)).path, msg) for loc, msg in err["ctx"]["problems"]]
        else:
            loc = tuple(err["loc"])
            place = resolve(root, loc)
            parent = resolve(root, loc[:-1]) if loc else place
            items.append(_message(cast(dict[str, Any], err), place, parent))
    found: list[Problem] = []
    for path, message in _without_echoes(items):
        line = source.line_of(path) if source is not None else None
        problem = Problem(file, line, format_path(path), message)
        if problem not in found:
            found.append(problem)
    found.sort(key=lambda p: p.line or 0)
    return found


_DID_YOU_MEAN = re.compile(r"^unknown key '.*', did you mean '(.*)'\?$")


def _without_echoes(items: list[tuple[Loc, str]]) -> list[tuple[Loc, str]]:
    """Drop "X is missing" when a misspelt sibling already says "did you mean X?": one mistake, one line."""
    meant = set()
    for path, message in items:
        m = _DID_YOU_MEAN.match(message)
        if m and path:
            meant.add((*path[:-1], m.group(1)))
    return [(path, message) for path, message in items if not (message.startswith("required key") and path in meant)]
