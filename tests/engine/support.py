"""Small scenarios for engine tests, written like scenario files (Kafka keys, human units)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.record.result import RunResult
from kafkasim.scenario import Scenario
from kafkasim.scenario.load import validate_data

# Deterministic links and costs: every latency below is then exact arithmetic, not a distribution.
FIXED_LINK = {"latency": "0.5ms", "bandwidth": "10Gbit/s"}
STARTUP_MS = 3_100.0
"""A restarted broker's start-up at broker.startup's defaults: it registers process_start (2.3 s) after the
restart and loads its logs log_load (0.8 s) later; it is unfenced and fetches right after that."""


def scenario(**sections: Any) -> Scenario:
    """A one-topic scenario (RF 3, min ISR 2, one acks=all producer at 20/s, no consumer) with overrides.

    Keyword arguments replace whole top-level sections (``producers=[...]``); ``topic=`` updates the topic.
    """
    data: dict[str, Any] = {
        "name": "engine-test",
        "description": "engine test",
        "seed": 1,
        "duration": "3s",
        "warmup": "500ms",
        "sample_interval": "50ms",
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 3, "min.insync.replicas": 2}],
        "network": {"default_link": dict(FIXED_LINK)},
        "producers": [producer("p1")],
        "consumers": [],
    }
    topic = sections.pop("topic", None)
    if topic:
        data["topics"][0].update(topic)
    data.update(copy.deepcopy(sections))
    return validate_data(data)


def producer(name: str, **config: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": name, "topic": "t", "acks": "all", "rate": "20/s", "arrival": "constant",
                            "record_size": "100B", "linger.ms": 0}
    base.update(config)
    return base


def consumer(name: str, **config: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": name, "topic": "t"}
    base.update(config)
    return base


def after_warmup(result: RunResult, api: str, client: str | None = None) -> pd.DataFrame:
    rows = result.requests
    warmup = float(result.summary["warmup_ms"])
    rows = rows[(rows["api"] == api) & (rows["client_send_ms"] >= warmup)]
    if client is not None:
        rows = rows[rows["client"] == client]
    return rows


def median(rows: pd.DataFrame, column: str) -> float:
    values = rows[column].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    assert values.size, f"no finite {column} values"
    return float(np.median(values))


def gauge(result: RunResult, metric: str, entity: str) -> pd.DataFrame:
    ts = result.timeseries
    rows = ts[(ts["metric"] == metric) & (ts["entity"] == entity)]
    return rows.sort_values("time_ms")


def leader_crash(duration: str) -> Scenario:
    """3 brokers; broker-1, the striped placement's leader of t-0, crashes at 5 s and restarts at 20 s (Kafka
    4.x: fenced 7-9 s after the crash, a new leader elected); an acks=all producer at 50/s and a consumer;
    the controller's link a constant 0.5 ms."""
    return scenario(
        duration=duration,
        cluster={"brokers": 3},
        controller={"link_latency": {"type": "constant", "value": "0.5ms"}},
        producers=[producer("p1", rate="50/s")],
        consumers=[consumer("c1")],
        faults=[{"type": "crash", "target": "broker-1", "at": "5s", "restart_after": "15s"}],
    )
