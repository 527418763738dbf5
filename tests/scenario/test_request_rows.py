"""A run keeps every request row, so a scenario whose requests would not fit is refused before it starts, as
one with too many records is (issue 26, item 5: an accepted day of an idle cluster whose followers fetch
with `replica.fetch.wait.max.ms: 0` needed ~137 M rows; with 100 such consumers ~6.8 G). The message
names the key that drives the count, the estimate and the cap. tests/engine/test_request_rows_estimate.py
checks the estimate against what runs record."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.scenario import ScenarioError, load_scenario, with_overrides
from kafkasim.scenario.scenario import MAX_REQUEST_ROWS

IDLE_DAY = """\
name: idle-day
description: an idle cluster whose followers' fetches are answered at once
duration: 1d
sample_interval: 10s
cluster:
  brokers: 3
broker:
  replica.fetch.wait.max.ms: 0
topics:
  - name: t
    partitions: 1
    replication.factor: 3
"""
QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"


def _refusal(text: str, *overrides: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        with_overrides(load_scenario(text), list(overrides))
    return str(caught.value)


def test_a_day_of_followers_fetching_without_a_wait_is_refused_naming_the_wait() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(IDLE_DAY)
    message = str(caught.value)
    assert message.startswith("<string>:8: broker.replica.fetch.wait.max.ms: a run of 1d would record about "), message
    assert f"more than the {MAX_REQUEST_ROWS:,} a run keeps" in message
    assert "replica.fetch.wait.max.ms 0 answers at once: a fetch per 1.07 ms round trip on 2 fetchers" in message
    assert "(allowed: a shorter duration, or raise replica.fetch.wait.max.ms)" in message
    rows = int(message.split("would record about ")[1].split(" ")[0].replace(",", ""))
    assert 137e6 <= rows <= 1.3 * 137e6  # measured: 137 M (1,586 fetches a simulated second)


def test_the_same_cluster_with_the_broker_default_wait_fits() -> None:
    load_scenario(IDLE_DAY.replace("  replica.fetch.wait.max.ms: 0\n", "  replica.fetch.wait.max.ms: 500\n"))


def test_a_hundred_consumers_without_a_wait_are_refused_naming_the_consumers() -> None:
    consumers = ", ".join(f"{{name: c{i}, topic: t, fetch.max.wait.ms: 0}}" for i in range(100))
    message = _refusal(IDLE_DAY.replace("replica.fetch.wait.max.ms: 0", "replica.fetch.wait.max.ms: 500"),
                       f"consumers=[{consumers}]")
    assert "consumers[0].fetch.max.wait.ms: a run of 1d would record about" in message
    assert "the 100 consumers about" in message and "(most, consumer c0: fetch.max.wait.ms 0 answers at once" in message
    assert "(allowed: a shorter duration, or raise fetch.max.wait.ms, or fewer consumers)" in message


def test_a_parked_fetch_that_returns_at_once_for_lack_of_min_bytes_names_min_bytes() -> None:
    message = _refusal(IDLE_DAY.replace("replica.fetch.wait.max.ms: 0", "replica.fetch.min.bytes: 0"))
    assert "broker.replica.fetch.min.bytes: a run of 1d" in message
    assert "(allowed: a shorter duration, or raise replica.fetch.min.bytes)" in message


def test_a_busy_day_names_the_producers_rate_as_what_drives_the_fetches() -> None:
    # 100 records/s with linger 5 ms: about a batch per record, and each batch a produce, a consumer fetch and
    # two follower fetches (measured over 60 s: 16,435 rows, 23.7 M a day).
    message = _refusal(QUICKSTART.read_text(), "duration=1d", "producers[0].rate=100/s", "sample_interval=10s")
    assert "a run of 1d would record about 35," in message
    assert "the followers about 17," in message and "(a fetch per batch appended, about 17,280,000, on 2 fetchers)" in message
    assert "lower the producers' rates or raise their linger.ms" in message


def test_an_override_of_one_broker_is_named() -> None:
    message = _refusal(IDLE_DAY.replace("replica.fetch.wait.max.ms: 0", "replica.fetch.wait.max.ms: 500"),
                       "cluster={brokers: 3, overrides: [{broker: 1, replica.fetch.wait.max.ms: 0}]}")
    assert "cluster.overrides[0].replica.fetch.wait.max.ms: a run of 1d would record about" in message
