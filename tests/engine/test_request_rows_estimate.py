"""The scenario's estimate of a run's request rows (kafkasim.scenario.request_rows, which the scenario's checks
compare with MAX_REQUEST_ROWS) never counts fewer than a run records, and not many more: per producer,
consumer and the followers, for idle fetchers (parked, or looping at the round trip) and busy ones."""

from __future__ import annotations

from typing import Any

import pytest

from kafkasim.run import run_scenario
from kafkasim.scenario import request_rows

from .support import consumer, producer, scenario

LOGNORMAL = {"latency": {"type": "lognormal", "median": "0.5ms", "p99": "2ms"}}

CASES: dict[str, tuple[dict[str, Any], float]] = {
    # name: (scenario sections, how many times the actual rows the estimate may be)
    "idle cluster, followers without a wait": (
        {"duration": "1s", "cluster": {"brokers": 3}, "broker": {"replica.fetch.wait.max.ms": 0}, "producers": [],
         "network": {"default_link": LOGNORMAL}}, 1.3),
    "idle consumer without a wait": (
        {"duration": "1s", "producers": [], "consumers": [consumer("c", **{"fetch.max.wait.ms": 0})]}, 1.3),
    "idle, parked fetches": ({"duration": "3s", "producers": [], "consumers": [consumer("c")]}, 1.3),
    "busy, one partition": (
        {"duration": "2s", "producers": [producer("p", rate="1000/s", arrival="poisson", **{"linger.ms": 5})],
         "consumers": [consumer("c")], "network": {"default_link": LOGNORMAL}}, 4.0),
    "busy cluster, round robin and acks=0": (
        {"duration": "1s", "cluster": {"brokers": 3}, "topic": {"partitions": 6},
         "producers": [producer("rr", rate="2000/s", partitioner="round_robin"),
                       producer("zero", acks=0, rate="500/s", arrival="poisson")],
         "consumers": [consumer("c")]}, 4.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_estimate_is_above_what_a_run_records_and_not_far_above(name: str) -> None:
    sections, most = CASES[name]
    s = scenario(**sections)
    requests = run_scenario(s).requests
    estimate = request_rows.estimate(s)
    clients = requests.groupby("client").size().to_dict()
    followers = int((requests["api"] == "FetchFollower").sum())
    for part in estimate:
        actual = followers if part.kind == "followers" else clients.get(part.who.split(" ", 1)[1], 0)
        assert part.rows >= actual, f"{part.who}: estimated {part.rows:,.0f}, recorded {actual:,}"
    total = request_rows.total(s)
    assert len(requests) <= total <= most * len(requests), f"estimated {total:,.0f}, recorded {len(requests):,}"
