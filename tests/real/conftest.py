"""Fixtures of the real-cluster tests (marked ``real``): Kafka's jars and Java, or a skip that says why, and
the differential suite's agreement table.

On a machine without Java (or Maven and no cached jars) the tests skip with the reason. ``.ci/run`` sets
``KAFKASIM_REAL_KAFKA_REQUIRED=1``: there a missing Java, Maven or jar fails the suite instead of skipping it.

Every differential assertion adds a row to the agreement table (what was compared, kafkasim's value, the
real cluster's, the tolerance, the verdict): tests/conftest.py prints it at the end of the session.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from kafkasim.real.kafka_libs import KafkaLibs, RealKafkaUnavailable, locate
from kafkasim.real.toxiproxy import server_binary

REQUIRED_ENV = "KAFKASIM_REAL_KAFKA_REQUIRED"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The tests that start Kafka (they take its jars): `-m real` selects them, `-m "not real"` leaves them out.
    # They run one after another in one pytest-xdist worker (tests/conftest.py: the session's runs are shared,
    # and two clusters at once would time each other), while the other worker runs the rest of the suite.
    for item in items:
        if {"kafka_libs", "toxiproxy_server"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real)


@pytest.fixture(scope="session")
def kafka_libs() -> KafkaLibs:
    try:
        return locate(progress=lambda line: print(line, flush=True))
    except RealKafkaUnavailable as exc:
        _unavailable("the real cluster cannot run", "no real Kafka here", exc)


@pytest.fixture(scope="session")
def toxiproxy_server() -> Path:
    """toxiproxy-server, built from its Go module into the user cache the first time (kafkasim.real.toxiproxy);
    a skip saying why without Go, a failure in CI."""
    try:
        return server_binary(progress=lambda line: print(line, flush=True))
    except RealKafkaUnavailable as exc:
        _unavailable("Toxiproxy cannot be built", "no Toxiproxy here", exc)


def _unavailable(in_ci: str, elsewhere: str, exc: RealKafkaUnavailable) -> NoReturn:
    """What a real-cluster test does without what it needs: fail in CI (it must run there), skip elsewhere."""
    if os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{REQUIRED_ENV}=1 and {in_ci}: {exc}", pytrace=False)
    pytest.skip(f"{elsewhere}: {exc}")
