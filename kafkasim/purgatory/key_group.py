"""TEMPORARY SHIM (lead's dev only; replaced by the group-watch helper's module)."""
from __future__ import annotations
from collections.abc import Hashable


class KeyGroup(tuple[Hashable, ...]):
    __slots__ = ()
