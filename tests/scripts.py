"""A script of the project (docs/make_*.py, hatch_build.py) loaded as a module for its tests: a script is a file,
not a module of a package, so it is loaded from its path."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """The script at `path` as a module named `name` (its file's stem by default), its top level run."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
