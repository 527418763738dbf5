"""Walking the scenario's model classes along a key path (for error messages and --set overrides).

pydantic reports locations such as `("faults", 0, "pause", "duration")`, where "pause" is the tag of the
union member that was tried, not a key of the file. `resolve` maps such a location back to the path the
author wrote and tells which models can sit there, so an unknown key can be compared with the valid ones.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from kafkasim.scenario.errors import Loc

DISCRIMINATORS = ("type", "mode")


def _strip(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def members(tp: Any) -> list[Any]:
    """The alternatives of a (possibly Annotated, possibly Optional) union, without None."""
    tp = _strip(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [m for arg in get_args(tp) for m in members(arg) if m is not type(None)]
    return [tp]


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def is_list(tp: Any) -> bool:
    return get_origin(tp) is list


def models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every model reachable from it through its fields (list items and unions included)."""
    seen: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for info in model.model_fields.values():
            for tp in members(info.annotation):
                inner = list(get_args(tp)) if is_list(tp) else [tp]
                todo += [m for i in inner for m in members(i) if is_model(m)]
    return seen


def tags(model: type[BaseModel]) -> list[str]:
    """Discriminator values of a union member (`type: Literal["pause"]` -> ["pause"])."""
    for name in DISCRIMINATORS:
        field = model.model_fields.get(name)
        if field is not None and get_origin(field.annotation) is Literal:
            return [str(v) for v in get_args(field.annotation)]
    return []


def keys(models: Sequence[type[BaseModel]]) -> list[str]:
    """Keys a file may write at a place where any of `models` can stand, in declaration order."""
    out: list[str] = []
    for m in models:
        for name, field in m.model_fields.items():
            key = field.alias or name
            if key not in out:
                out.append(key)
    return out


def field_info(models: Sequence[type[BaseModel]], key: str) -> FieldInfo | None:
    for m in models:
        for name, field in m.model_fields.items():
            if key in (field.alias, name):
                return field
    return None


def field_type(models: Sequence[type[BaseModel]], key: str) -> Any | None:
    for m in models:
        for name, field in m.model_fields.items():
            if key in (field.alias, name):
                return field.annotation
    return None


@dataclass
class Place:
    """Where a location points: the path as written in the file, and the types that can stand there."""

    path: Loc
    types: list[Any]

    @property
    def models(self) -> list[type[BaseModel]]:
        return [t for t in self.types if is_model(t)]

    @property
    def union_tags(self) -> list[str]:
        models = self.models
        return [tag for m in models for tag in tags(m)] if len(models) > 1 else []


def resolve(root: type[BaseModel], loc: Sequence[str | int]) -> Place:
    path: list[str | int] = []
    current: list[Any] = [root]
    for part in loc:
        alternatives = [m for t in current for m in members(t)]
        models = [m for m in alternatives if is_model(m)]
        if isinstance(part, int):
            lists = [a for a in alternatives if is_list(a)]
            path.append(part)
            current = [get_args(lists[0])[0]] if lists else []
            continue
        if len(models) > 1:
            tagged = [m for m in models if part in tags(m)]
            if tagged:  # a union member's tag: not part of the file's path
                current = tagged
                continue
        path.append(part)
        found = field_type(models, part)
        current = [found] if found is not None else []
    flat = [m for t in current for m in members(t)]
    return Place(tuple(path), flat)
