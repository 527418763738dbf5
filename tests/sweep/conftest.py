"""Shared fixtures for sweep tests: one SparkSession for the whole test session (Spark starts in ~10 s)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kafkasim.sweep.java import JavaNotFoundError, check_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BASE_SCENARIO = """\
name: sweep-base
description: A small acks=all scenario for sweep tests.
seed: 7
duration: 10s
warmup: 1s
topics:
  - name: orders
    partitions: 1
    replication.factor: 3
    min.insync.replicas: 2
producers:
  - name: producer-1
    topic: orders
    acks: all
    rate: 1000/s
    record_size: 1KiB
consumers:
  - name: consumer-1
    topic: orders
"""


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
    from kafkasim.sweep.session import build_spark_session

    session = build_spark_session("local[2]")
    yield session
    session.stop()
