"""Suite-wide: tests that can only run against the interpreted (pure-Python) build.

A few tests reach inside a class to count or break its calls (``monkeypatch.setattr`` on a method). A class
compiled with mypyc is a C type: its methods cannot be replaced, and compiled callers would not see a
replacement anyway. Those tests carry ``@pytest.mark.pure_only``: against the compiled build they are
skipped here and run instead by tests/test_builds.py, in a pure copy of the package.
"""

from __future__ import annotations

import pytest

from kafkasim.compiled import compiled_modules


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not compiled_modules():
        return
    skip = pytest.mark.skip(reason="patches or fakes a compiled class: runs in the pure copy (tests/test_builds.py)")
    for item in items:
        if "pure_only" in item.keywords:
            item.add_marker(skip)
