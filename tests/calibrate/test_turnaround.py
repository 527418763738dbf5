"""A follower's turnaround read off a request log (kafkasim.calibrate.turnaround), and the request log's gaps as
statistics a fit reproduces (kafkasim.calibrate.targets.with_request_log)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kafkasim.calibrate.fit import fit
from kafkasim.calibrate.targets import REQUEST_LOG_STATISTICS, statistics, targets, with_request_log
from kafkasim.calibrate.turnaround import LONGEST_MS, follower_turnarounds, produce_queues_in_turnarounds
from kafkasim.run import run_scenario
from kafkasim.scenario import load_scenario, with_overrides

from .test_completion import _as_a_whole_millisecond_log
from .test_fit import SCENARIO


def _log(rows: list[tuple[str, str, int, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["api", "client", "broker", "start_ms", "end_ms"])


def test_the_turnaround_is_from_a_followers_response_to_its_next_fetch_of_the_same_leader() -> None:
    log = _log([
        ("FetchFollower", "follower-1", 0, 0.25, 4.125),
        ("FetchFollower", "follower-1", 0, 5.125, 10.25),  # 1 ms after the response before it
        ("FetchFollower", "follower-1", 0, 10.75, 11.375),  # 0.5 ms
        ("FetchFollower", "follower-1", 1, 4.5, 4.875),  # another leader's: its own sequence
        ("FetchFollower", "follower-1", 1, 5.125, 7.5),  # 0.25 ms
        ("FetchFollower", "follower-2", 0, 0.125, 1.25),
        ("FetchFollower", "follower-2", 0, 1.25 + LONGEST_MS + 1, 60.0),  # too long for a turnaround
        ("FetchConsumer", "consumer-1", 0, 2.0, 2.5),
        ("FetchConsumer", "consumer-1", 0, 2.75, 3.125),
    ])
    assert sorted(follower_turnarounds(log).tolist()) == pytest.approx([0.25, 0.5, 1.0])
    assert follower_turnarounds(log.drop(columns=["end_ms"])).size == 0
    assert follower_turnarounds(log.assign(start_ms=log["start_ms"].round(), end_ms=log["end_ms"].round())).size == 0


def test_a_simulated_followers_turnaround_grows_by_two_trips_of_its_link() -> None:
    """The follower link's latency lies twice in a turnaround (the response out, the next fetch back); the
    request log's gaps then become statistics a fit reproduces, and a whole-millisecond log has none."""
    scenario = load_scenario(SCENARIO)
    short, long = (run_scenario(with_overrides(scenario, [f"followers.link.latency={ms}ms"])) for ms in (0.1, 0.6))
    medians = [float(np.median(follower_turnarounds(r.requests))) for r in (short, long)]
    assert medians[1] - medians[0] == pytest.approx(2 * 0.5, abs=0.05)
    assert medians[0] > 2 * 0.1
    got = statistics(with_request_log(short.summary, short.requests))
    assert {key: got[key][0] for key in REQUEST_LOG_STATISTICS} == {key: "request log" for key in REQUEST_LOG_STATISTICS}
    assert got["FetchFollower turnaround p50"][1] == pytest.approx(medians[0])
    assert set(REQUEST_LOG_STATISTICS) <= {t.key for t in targets(with_request_log(short.summary, short.requests))}
    whole = statistics(with_request_log(short.summary, _as_a_whole_millisecond_log(short.requests)))
    # Differences of two requests' times need fine line times; a phase of one request's breakdown does not.
    timed = {"consumer completion p50", "follower update p50", "FetchFollower turnaround p50",
             "Produce queue in a turnaround p50", "Produce read after a response p50", "Produce after idle p50"}
    assert timed < set(REQUEST_LOG_STATISTICS) and not timed & set(whole)
    assert set(REQUEST_LOG_STATISTICS) - timed == {"fetch read p50"} <= set(whole)
    assert not set(REQUEST_LOG_STATISTICS) & set(statistics(short.summary))  # a summary.json has none


def test_a_fit_takes_one_request_log_per_measured_run() -> None:
    scenario = load_scenario(SCENARIO)
    with pytest.raises(ValueError, match="1 request logs for 2 measured runs: one per run"):
        fit(scenario, [{}, {}], requests=[_log([])])


def test_a_produce_that_arrives_while_a_follower_of_its_leader_turns_around_is_counted() -> None:
    """A produce's queue wait counts when it arrived at a leader between one of that leader's followers' answer and
    its next fetch: the followers' JVMs at work then (kafkasim.calibrate.turnaround)."""
    rows = [
        ("FetchFollower", "follower-1", 0, 0.0, 1.0, 0.01),
        ("FetchFollower", "follower-1", 0, 1.5, 4.0, 0.01),  # a turnaround from 1.0 to 1.5
        ("FetchFollower", "follower-1", 0, 4.25, 9.0, 0.01),  # from 4.0 to 4.25
        ("FetchFollower", "follower-2", 0, 0.0, 6.0, 0.01),
        ("FetchFollower", "follower-2", 0, 6.5, 8.0, 0.01),  # from 6.0 to 6.5
        ("FetchFollower", "follower-1", 1, 0.0, 2.0, 0.01),
        ("FetchFollower", "follower-1", 1, 3.0, 5.0, 0.01),  # another leader's: from 2.0 to 3.0
        ("FetchFollower", "follower-2", 0, 8.0 + LONGEST_MS + 1, 70.0, 0.01),  # no turnaround: too long
        ("Produce", "producer-1", 0, 1.25, 1.4, 0.11),  # inside follower-1's first
        ("Produce", "producer-1", 0, 2.0, 2.1, 0.02),  # outside: both followers' fetches in flight
        ("Produce", "producer-1", 0, 2.5, 2.6, 0.03),  # outside (broker 1's turnaround is another leader's)
        ("Produce", "producer-1", 0, 4.1, 4.2, 0.12),  # inside follower-1's second
        ("Produce", "producer-1", 0, 6.25, 6.3, 0.13),  # inside follower-2's
        ("Produce", "producer-1", 0, 30.0, 30.1, 0.04),  # outside: follower-2's long gap is no turnaround
        ("Produce", "producer-1", 1, 2.5, 2.6, 0.14),  # inside broker 1's
    ]
    log = pd.DataFrame(rows, columns=["api", "client", "broker", "start_ms", "end_ms", "RequestQueueTimeMs"])
    log[["start_ms", "end_ms"]] += 0.3  # off whole milliseconds, as a fine log's times are
    assert sorted(produce_queues_in_turnarounds(log).tolist()) == pytest.approx([0.11, 0.12, 0.13, 0.14])
    assert produce_queues_in_turnarounds(log.drop(columns=["RequestQueueTimeMs"])).size == 0
    whole = log.assign(start_ms=log["start_ms"].round(), end_ms=log["end_ms"].round())
    assert produce_queues_in_turnarounds(whole).size == 0
