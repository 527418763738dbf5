"""The figures read what the engine writes: a short real run gives every figure and a full swimlane story."""

from __future__ import annotations

import pytest

from kafkasim.report import (
    isr_size_figure,
    latency_cdf_figure,
    latency_histogram_figure,
    log_offsets_figure,
    purgatory_figure,
    request_breakdown_figure,
)
from kafkasim.report.swimlane_story import build_story

SCENARIO = """
name: report-smoke
description: A short acks=all run, RF 3, one consumer; the report's figures must all build from it.
seed: 7
duration: 1500ms
warmup: 300ms
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
    arrival: poisson
    record_size: 1KiB
consumers:
  - name: consumer-1
    topic: orders
"""


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    from kafkasim import load_scenario, run_scenario

    return run_scenario(load_scenario(SCENARIO))


def test_every_figure_builds_from_a_real_run(result) -> None:  # type: ignore[no-untyped-def]
    r = result
    assert r.summary["warmup_ms"] == 300
    for figure in (latency_cdf_figure(r.requests, r.records, r.summary),
                   latency_histogram_figure(r.requests, r.summary),
                   request_breakdown_figure(r.requests, r.summary),
                   log_offsets_figure(r.timeseries, r.summary),
                   isr_size_figure(r.timeseries, r.summary),
                   purgatory_figure(r.timeseries, r.summary)):
        assert figure is not None


def test_swimlane_story_of_a_real_acks_all_produce(result) -> None:  # type: ignore[no-untyped-def]
    story = build_story(result.requests, result.records, result.timeseries, result.summary)
    lanes = {lane.name.split("\n")[0]: lane for lane in story.lanes}
    assert {"producer-1", "follower-1", "follower-2", "consumer-1"} <= set(lanes)
    for follower in ("follower-1", "follower-2"):
        labels = [s.label for s in lanes[follower].spans if s.label]
        assert any("returns offset" in label for label in labels), labels
    assert "orders-0 HW" in story.hw_text
