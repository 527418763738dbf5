"""Shared fixtures for sweep tests: one SparkSession for the whole test session (Spark starts in ~10 s)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kafkasim.sweep.java import JavaNotFoundError, check_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BASE_SCENARIO = Path(__file__).with_name("base.yaml").read_text(encoding="utf-8")


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    """A directory with base.yaml (a valid scenario) for sweep files to refer to."""
    (tmp_path / "base.yaml").write_text(BASE_SCENARIO, encoding="utf-8")
    return tmp_path


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    try:
        check_java()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    from kafkasim.sweep.session import build_spark_session, stop_spark_session

    session = build_spark_session("local[2]", write_class_archive=True)
    yield session
    stop_spark_session(session)  # and its JVM, by process id
    from kafkasim.sweep.session import remove_spark_log

    remove_spark_log()  # as a sweep does with the session it started
