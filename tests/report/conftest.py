"""Fixtures: the hand-made acks=all run of timeline.py as the engine's four outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest

from .timeline import WARMUP_MS, build_run, records_frame, requests_frame, timeseries_frame


@dataclass(frozen=True)
class Tables:
    requests: pd.DataFrame
    records: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict[str, Any]


def build_tables() -> Tables:
    run = build_run()
    return Tables(requests_frame(run.requests), records_frame(run.records), timeseries_frame(run),
                  {"warmup_ms": WARMUP_MS})


@pytest.fixture()
def tables() -> Tables:
    return build_tables()
