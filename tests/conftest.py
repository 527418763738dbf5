"""Suite-wide: tests that can only run against the interpreted (pure-Python) build; the groups pytest-xdist
keeps on one worker; the differential suite's agreement table.

A few tests reach inside a class to count or break its calls (``monkeypatch.setattr`` on a method). A class
compiled with mypyc is a C type: its methods cannot be replaced, and compiled callers would not see a
replacement anyway. Those tests carry ``@pytest.mark.pure_only``: against the compiled build they are
skipped here and run instead by tests/test_builds.py, in a pure copy of the package.

The suite runs in pytest-xdist workers (pyproject's addopts: ``-n auto --dist loadgroup``). The tests that
start a real Kafka cluster share one worker (``pytest_itemcollected`` below), and so do the Spark tests (one Spark
JVM at a time). Every differential assertion adds a row to the agreement table (what was compared,
kafkasim's value, the real cluster's, the tolerance, the verdict), printed at the end of the session and,
when ``KAFKASIM_AGREEMENT_FILE`` names a file, written there as Markdown (benchmarks/README.md quotes it).
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from kafkasim.compiled import build_fallback, compiled_modules, describe
from tests.real.agreement import SPOOL_ENV, recorded, table

TABLE_ENV = "KAFKASIM_AGREEMENT_FILE"


def pytest_configure(config: pytest.Config) -> None:
    # Ctrl-C as a terminal's Python has it, in the controller and every worker, and so in every child they start
    # (a handled signal is back to its default across exec). A pytest started in the background (`cmd &` in a
    # script: POSIX shells start asynchronous commands with SIGINT ignored) handed an ignored SIGINT to its
    # workers and their children; kafkasim leaves an ignored SIGINT ignored, as Python does, so the Ctrl-C tests
    # failed -- except in the worker that had created a SparkContext, which installs a handler of its own.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # The controlling process (not an xdist worker) names the file every worker's agreement rows go to.
    if not hasattr(config, "workerinput") and SPOOL_ENV not in os.environ:
        fd, path = tempfile.mkstemp(prefix="kafkasim-agreements-", suffix=".jsonl")
        os.close(fd)
        os.environ[SPOOL_ENV] = path
        config.add_cleanup(lambda: (Path(path).unlink(missing_ok=True), os.environ.pop(SPOOL_ENV, None)))


def pytest_report_header(config: pytest.Config) -> str:
    """Which build the suite tests, at the top of every run: an editable build that could not compile (a type
    error mypyc refused) falls back to the pure package silently under uv, and the suite would pass against it."""
    return f"kafkasim: {describe()}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    why = build_fallback()
    if why is not None:  # the header above is not shown under -q (the suite's addopts): say it here too
        terminalreporter.write_line(f"kafkasim: the suite ran against the pure-Python package: the last build could "
                                    f"not compile with mypyc ({why})", red=True, bold=True)
    rows = recorded()
    if not rows:
        return
    terminalreporter.section("kafkasim vs Kafka 4.3.1: agreement table")
    terminalreporter.write_line(table(rows))
    target = os.environ.get(TABLE_ENV)
    if target:
        Path(target).write_text(table(rows) + "\n", encoding="utf-8")


def pytest_itemcollected(item: pytest.Item) -> None:
    # Marked as each test is collected, before any pytest_collection_modifyitems: pytest-xdist reads the
    # xdist_group marks in its own (and needs pytest < 9.2, whose nodeids its loadgroup cannot rewrite).
    if "kafka_libs" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.xdist_group("real-kafka"))
    elif "spark" in item.keywords or "spark" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.xdist_group("spark"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The real-Kafka tests first, then the Spark tests: pytest-xdist hands out work in collection order, so
    # one worker starts on the longest group (mostly waiting for clusters) while the other runs the rest.
    items.sort(key=lambda item: (0 if "kafka_libs" in getattr(item, "fixturenames", ()) else
                                 1 if "spark" in item.keywords or "spark" in getattr(item, "fixturenames", ()) else 2))
    if not compiled_modules():
        return
    skip = pytest.mark.skip(reason="patches or fakes a compiled class: runs in the pure copy (tests/test_builds.py)")
    for item in items:
        if "pure_only" in item.keywords:
            item.add_marker(skip)
