"""The failover swimlane: one produce batch across a leader change, its facts read off a real leader-crash
run's tables; runs without such a batch get no figure."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from kafkasim.record.result import RunResult
from kafkasim.report import write_figures
from kafkasim.report.failover_story import build_failover_story
from kafkasim.report.failover_swimlane import failover_swimlane_figure
from kafkasim.report.html import render_report
from kafkasim.report.skip import SkipFigure
from kafkasim.run import run_scenario
from tests.engine import support
from tests.engine.support import consumer, producer, scenario

CRASH_MS = 5_000.0


@functools.cache
def leader_crash() -> RunResult:
    """broker-1 leads t-0 and crashes at 5 s (Kafka 4.x: fenced 7-9 s later, a new leader elected)."""
    return run_scenario(support.leader_crash("16s"))


@functools.cache
def lost_responses() -> RunResult:
    """Batches retried after a lost response: more than one attempt, but the leader never moves."""
    return run_scenario(scenario(
        duration="3s",
        producers=[producer("p1", **{"request.timeout.ms": 500})],
        consumers=[consumer("c1")],
        faults=[{"type": "connection_reset", "target": "p1", "at": "1000.5ms"}],  # a produce in flight
    ))


def test_the_story_of_a_batch_across_a_leader_crash_matches_the_tables() -> None:
    result = leader_crash()
    story = build_failover_story(result.requests, result.records, result.timeseries)
    batch = result.records.set_index("batch_id").loc[story.batch_id]
    requests = result.requests.set_index("request_id")
    first, last = requests.loc[story.first.request_id], requests.loc[story.last.request_id]
    # The batch's first and last sends are the records table's first_request_id and request_id.
    assert (story.first.request_id, story.last.request_id) == (batch["first_request_id"], batch["request_id"])
    assert story.attempts == batch["attempts"] == 2 and story.offset == batch["offset"]
    # Attempt 1: to broker-1, the leader, as it crashed; its connection was reset.
    assert story.old_leader == story.first.broker == first["broker"] == 1
    assert story.first.error_name == first["error_name"] == "NETWORK_EXCEPTION"
    assert story.first.send_ms == first["client_send_ms"] and CRASH_MS - 100 <= story.first.send_ms <= CRASH_MS
    # The leader moved: the first LeaderId sample naming the new leader, 7-9 s after the crash (fencing).
    leader = result.timeseries[(result.timeseries["metric"] == "LeaderId") & (result.timeseries["entity"] == "t-0")]
    named = leader[leader["value"] == story.new_leader]["time_ms"]
    assert story.leader_moved_ms == named[named > story.first.send_ms].min()
    assert CRASH_MS + 7_000 <= story.leader_moved_ms <= CRASH_MS + 9_100
    # The last attempt went to the new leader after it moved, and was acknowledged there.
    assert story.new_leader == story.last.broker == last["broker"] != 1
    assert story.leader_moved_ms - 50 <= story.last.send_ms == last["client_send_ms"] == batch["send_ms"]
    assert last["error_name"] == "NONE" and story.ack_ms == batch["ack_ms"] == last["client_receive_ms"]
    # The producer's metadata refreshes in between (MetadataAgeMs): backing off up to retry.backoff.max.ms,
    # and the last one is when attempt 2 went (KIP-951: a new leader skips the retry backoff).
    refreshes = np.array(story.refreshes_ms)
    assert len(refreshes) >= 5 and (np.diff(refreshes) <= 1_000 * 1.2 + 1).all()
    # (The new leader is a broker the producer had no connection to: attempt 2 waits for its TCP handshake,
    # one round trip, ~1 ms here.)
    assert story.found_leader_ms <= story.last.send_ms <= story.found_leader_ms + 5
    # The caption tells it in words with those times and brokers.
    caption = story.caption
    for text in (f"Attempt 1 at {story.first.send_ms / 1000:.3f} s to broker 1", "NETWORK_EXCEPTION",
                 f"from broker 1 to broker {story.new_leader} by {story.leader_moved_ms / 1000:.3f} s",
                 f"Attempt 2 at {story.last.send_ms / 1000:.3f} s to broker {story.new_leader}",
                 f"acknowledged at {story.ack_ms / 1000:.3f} s"):
        assert text in caption


def test_a_leader_crash_run_draws_the_figure_and_the_report_tells_its_story(tmp_path: Path) -> None:
    result = leader_crash()
    figure = failover_swimlane_figure(result.requests, result.records, result.timeseries)
    assert isinstance(figure, Figure)
    paths = write_figures(result.requests, result.records, result.timeseries, result.summary, tmp_path, dpi=40)
    assert tmp_path / "figures" / "failover_swimlane.png" in paths
    story = build_failover_story(result.requests, result.records, result.timeseries)
    page = render_report(result, {p.stem: p.read_bytes() for p in paths})
    assert 'id="figure-failover_swimlane"' in page and story.sentences()[1] in page


@pytest.mark.parametrize("run", [lost_responses], ids=["retried-without-a-leader-change"])
def test_retries_without_a_leader_change_get_no_figure(run, tmp_path: Path) -> None:
    result = run()
    assert (result.records["attempts"] >= 2).any()  # retried, but to the same leader
    with pytest.raises(SkipFigure, match="no batch was retried across a leader change"):
        build_failover_story(result.requests, result.records, result.timeseries)
    assert failover_swimlane_figure(result.requests, result.records, result.timeseries) is None


def test_a_run_without_a_retried_batch_gets_no_figure(tmp_path: Path) -> None:
    # A follower crash (the leader never moves): every batch goes once.
    result = run_scenario(scenario(
        duration="3s",
        producers=[producer("p1")],
        faults=[{"type": "crash", "target": "follower-2", "at": "1s", "restart_after": "1s"}],
    ))
    assert (result.records["attempts"] <= 1).all()  # 0: still queued when the run ended
    with pytest.raises(SkipFigure, match="no batch needed more than one attempt"):
        build_failover_story(result.requests, result.records, result.timeseries)
    paths = write_figures(result.requests, result.records, result.timeseries, result.summary, tmp_path, dpi=40)
    assert "failover_swimlane" not in {p.stem for p in paths} and "produce_swimlane" in {p.stem for p in paths}
    assert 'id="figure-failover_swimlane"' not in render_report(result, {p.stem: p.read_bytes() for p in paths})


def test_a_result_written_before_first_request_id_gets_no_figure() -> None:
    result = leader_crash()
    with pytest.raises(SkipFigure, match="no first_request_id"):
        build_failover_story(result.requests, result.records.drop(columns="first_request_id"), result.timeseries)
