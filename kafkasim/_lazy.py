"""Lazy re-exports for a package's ``__init__``: each name is imported from its module on first use (PEP 562),
so importing the package stays cheap (no SimPy, pandas or pydantic until a name is used)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of `package`: `sources` maps each lazy name to the module it comes from."""

    def __getattr__(name: str) -> Any:
        module = sources.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(module), name)

    return __getattr__
