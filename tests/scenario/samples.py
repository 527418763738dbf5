"""Scenario texts shared by the scenario tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafkasim.scenario.errors import Loc

ROOT = Path(__file__).resolve().parents[2]

MINIMAL = """\
name: minimal
description: one topic, nothing else
duration: 10s
topics:
  - name: t
"""

# Every section and every form the format offers, valid.
FULL = """\
name: full
description: |
  Uses every section.
  Two lines.
seed: 7
duration: 2m
warmup: 5s
sample_interval: 250ms
clock: {mode: wallclock, speed: 0.5}
invariants: false
broker:
  num.io.threads: 4
  num.network.threads: 2
  queued.max.requests: 100
  replica.lag.time.max.ms: 10s
  min.insync.replicas: 2
  fetch.max.bytes: 55MiB
  log.segment.bytes: 64MiB
  replica.fetch.wait.max.ms: 250
  replica.fetch.max.bytes: 512KiB
  costs:
    request: 50us
    append_per_kib: {type: exponential, mean: 5us}
    read_per_kib: {type: uniform, low: 1us, high: 3us}
    network_read: {type: empirical, values: [5us, 10us, 50us], weights: [90, 9, 1]}
topics:
  - name: orders
    partitions: 3
    replication.factor: 3
    segment.ms: 1h
  - name: audit
    replication.factor: 2
    min.insync.replicas: 1
    segment.bytes: 1MiB
controller:
  link_latency: {type: lognormal, median: 5ms, p99: 20ms}
followers:
  costs:
    append: 30us
  link:
    latency: 2ms
    to_broker: {bandwidth: 1Gbit/s}
producers:
  - name: producer-1
    topic: orders
    acks: 1
    linger.ms: 0
    batch.size: 32KiB
    rate: 5000/s
    arrival: {type: on_off, on: 1s, off: 4s, pattern: constant}
    record_size: {type: lognormal, median: 1KiB, p99: 16KiB}
    partitioner: round_robin
  - name: producer-2
    topic: audit
    rate: 300/m
    arrival: constant
consumers:
  - name: consumer-1
    topic: orders
    fetch.min.bytes: 1KiB
    fetch.max.wait.ms: 100
    link: {latency: {type: lognormal, median: 20ms, p99: 80ms}}
network:
  default_link:
    latency: {type: lognormal, median: 0.5ms, p99: 2ms}
    bandwidth: 10Gbit/s
    from_broker: {latency: 1ms}
faults:
  - {type: pause, target: follower-2, at: 10s, duration: 40s}
  - {type: slow_disk, target: follower-1, at: 5s, duration: 20s, factor: 10}
  - {type: crash, target: follower-1, at: 50s, restart_after: 10s}
  - {type: link_delay, target: consumer-1, at: 5s, duration: 2s, extra: 50ms}
  - {type: link_drop, target: producer-2, at: 5s, duration: 1s, direction: to_broker}
  - {type: network_partition, at: 20s, duration: 5s, sides: [[broker-2], [broker-0, producer-2, controller]]}
  - {type: network_partition, at: 60s, sides: [[consumer-1], [broker-0]]}
"""


def copy_data(data: Any) -> Any:
    """A deep copy of plain JSON-like data (a loaded scenario); much faster than copy.deepcopy."""
    return json.loads(json.dumps(data))


def walk(node: Any, loc: Loc = ()) -> Iterator[tuple[Loc, Any]]:
    """Every node of plain data with its key path, parents first."""
    yield loc, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, (*loc, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, (*loc, i))


# Words that mean a library's message leaked through instead of kafkasim's own.
LEAKED = ("pydantic", "http", "Traceback", "input_value", "For further information")


def assert_readable(message: str, context: str, max_line: int) -> None:
    """A refusal a person can read: 1 to 19 lines, none longer than `max_line`, no library internals."""
    lines = message.splitlines()
    assert 1 <= len(lines) < 20, context
    assert all(len(line) < max_line for line in lines), context
    for leaked in LEAKED:
        assert leaked not in message, context
