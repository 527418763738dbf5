"""Network partitions in whole runs: who notices a cut, when, and through which Kafka mechanism.

* a follower cut off from its leader only (still heartbeating) leaves the ISR through the leader's
  ``isr-expiration`` task (``Partition.maybeShrinkIsr``, ``replica.lag.time.max.ms`` 30 s), not through
  fencing;
* a broker cut off from the controller only keeps replicating but is fenced
  ``broker.session.timeout.ms`` after its last heartbeat got through (``BrokerHeartbeatManager``);
* a leader cut off from the controller is fenced and replaced, but it learns so only when the cut ends: until
  then it is a "zombie" that still leads in its own eyes, and its acks=all produces cannot complete;
* a producer cut off from its leader notices nothing until ``request.timeout.ms`` (REQUEST_TIMED_OUT), then
  retries (``NetworkClient.handleTimedOutRequests``, ``Sender``);
* an AlterPartition lost in a short cut from the controller is sent again after
  ``controller.socket.timeout.ms`` (``NodeToControllerRequestThread``).
"""

from __future__ import annotations

import math

import numpy as np

from kafkasim.run import run_scenario
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario

from .support import consumer, gauge, producer, scenario

FIXED_CONTROLLER = {"link_latency": {"type": "constant", "value": "0.5ms"}}


def _changes(result, metric: str, entity: str) -> list[tuple[float, float]]:
    rows = gauge(result, metric, entity)
    values = rows["value"].to_numpy(dtype=float)
    times = rows["time_ms"].to_numpy(dtype=float)
    return [(float(times[i]), float(values[i])) for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]


def _partition(at: str, sides: list[list[str]], duration: str | None = None) -> dict:
    fault: dict = {"type": "network_partition", "at": at, "sides": sides}
    if duration is not None:
        fault["duration"] = duration
    return fault


def test_a_follower_cut_from_its_leader_only_leaves_the_isr_by_isr_expiration_not_by_fencing() -> None:
    s = scenario(duration="75s", controller=FIXED_CONTROLLER,
                 faults=[_partition("5s", [["broker-2"], ["broker-0"]], duration="60s")])
    result = run_scenario(s)
    (_, three), (out, two), (back, three_again) = _changes(result, "IsrSize", "t-0")
    assert (three, two, three_again) == (3.0, 2.0, 3.0)
    # Still heartbeating, so never fenced (that would be 7-9 s after the cut). The leader's isr-expiration check
    # runs every replica.lag.time.max.ms / 2 (15 s) and removes a follower that has not caught up for 30 s:
    # 30 to 45 s after the cut, through an AlterPartition the controller commits (isr_shrinks counts it).
    assert 5_000 + 30_000 <= out <= 5_000 + 45_000 + 100
    counters = result.summary["counters"]
    assert counters["isr_shrinks"] == 1 and counters["isr_expands"] == 1
    # The follower's fetches into the cut time out after replica.socket.timeout.ms (30 s), not before.
    fetches = result.requests[result.requests["client"] == "follower-2"]
    timed_out = fetches[fetches["error_name"] == "REQUEST_TIMED_OUT"]
    assert len(timed_out) >= 1 and bool(timed_out["client_timeout"].all())
    first_lost = float(timed_out["client_send_ms"].min())
    later = fetches[fetches["client_send_ms"] > first_lost]["client_send_ms"].to_numpy(dtype=float)
    assert later.size and later.min() >= first_lost + 30_000
    # Reconnected at 65 s: it catches up and the leader adds it back.
    assert 65_000 < back < 65_000 + 3_000


def test_a_broker_cut_from_the_controller_only_is_fenced_after_its_session_and_keeps_replicating() -> None:
    s = scenario(duration="40s", controller=FIXED_CONTROLLER,
                 faults=[_partition("5s", [["broker-2"], ["controller"]], duration="20s")])
    result = run_scenario(s)
    (_, three), (out, two), (back, three_again) = _changes(result, "IsrSize", "t-0")
    assert (three, two, three_again) == (3.0, 2.0, 3.0)
    # Its last heartbeat got through at most 2 s before the cut: fenced by the controller's first periodic check
    # (every 9000 / 8 = 1125 ms, Kafka 4.3's maybeFenceStaleBroker) after its session ended 9 s after it
    # (no AlterPartition from the leader: isr_shrinks stays 0).
    assert 5_000 + 7_000 <= out <= 5_000 + 9_000 + 1_125 + 100
    counters = result.summary["counters"]
    assert counters["isr_shrinks"] == 0 and counters["isr_expands"] == 1
    # Its link to the leader was never cut: it fetched all along.
    fetches = result.requests[result.requests["client"] == "follower-2"]
    assert set(fetches["error_name"]) == {"NONE"}
    assert np.diff(fetches["client_send_ms"].to_numpy(dtype=float)).max() < 1_000
    # After the cut its heartbeats get through again: unfenced, and the leader adds it back.
    assert 25_000 < back < 25_000 + 2_000


def test_a_leader_cut_from_the_controller_is_replaced_but_learns_it_only_when_the_cut_ends() -> None:
    s = scenario(duration="60s", controller=FIXED_CONTROLLER, producers=[producer("p1", **{"request.timeout.ms": "10s"})],
                 faults=[_partition("5s", [["broker-0"], ["controller"]], duration="40s")])
    result = run_scenario(s)
    new_leader = _changes(result, "LeaderCount", "broker-1")
    zombie = _changes(result, "LeaderCount", "broker-0")
    # Fenced 7-10.1 s after the cut (session 9 s, then the periodic check, every 1125 ms); broker 1 (the first
    # replica in the ISR) leads from then on.
    assert [v for _, v in new_leader] == [0.0, 1.0] and 5_000 + 7_000 <= new_leader[1][0] <= 5_000 + 9_000 + 1_125 + 100
    # The metadata that says so waits for the end of the cut: until 45 s broker 0 still leads in its own eyes.
    assert [v for _, v in zombie] == [1.0, 0.0] and 45_000 <= zombie[1][0] <= 45_100
    # Its followers now fetch from broker 1, so the zombie's acks=all produces cannot complete: they time out
    # (those due to time out before the cut ends; a later one is answered NOT_LEADER_OR_FOLLOWER when the
    # zombie applies the metadata and stops leading).
    produces = result.requests[(result.requests["client"] == "p1") & (result.requests["broker"] == 0)]
    stuck = produces[(produces["client_send_ms"] > new_leader[1][0]) & (produces["client_send_ms"] < 45_000 - 10_000)]
    assert len(stuck) and set(stuck["error_name"]) <= {"REQUEST_TIMED_OUT", "NETWORK_EXCEPTION"}
    assert "REQUEST_TIMED_OUT" in set(stuck["error_name"])


def test_a_producer_cut_from_its_leader_times_out_at_request_timeout_and_retries() -> None:
    s = scenario(duration="12s", producers=[producer("p1", **{"request.timeout.ms": "2s"})],
                 faults=[_partition("5s", [["p1"], ["broker-0"]], duration="3s")])
    result = run_scenario(s)
    sent = result.requests[(result.requests["client"] == "p1") & (result.requests["client_send_ms"] >= 5_000)]
    sent = sent.sort_values("client_send_ms")
    first = sent.iloc[0]
    # No RST: the first request into the cut fails only by its own timeout; the others in flight on the same
    # connection fail with it, as timed out too (NetworkClient.processTimeoutDisconnection ->
    # cancelInFlightRequests(timedOut=true)), when the client closes the connection.
    assert first["error_name"] == "REQUEST_TIMED_OUT" and bool(first["client_timeout"])
    in_flight = sent[(sent["client_send_ms"] > first["client_send_ms"]) & (sent["client_send_ms"] < 5_000 + 2_000)]
    assert len(in_flight) and set(in_flight["error_name"]) == {"REQUEST_TIMED_OUT"}
    # The retry needs a new connection: the Sender starts one when a batch is ready again (after the retry
    # backoff, retry.backoff.ms 100 +-20 %, longer than the reconnect backoff), its SYN is lost in the cut,
    # and the kernel's retransmission 1 s after the connect gets through once the cut is over.
    retry = sent[sent["client_send_ms"] >= 5_000 + 2_000].iloc[0]
    assert 8_000 <= retry["client_send_ms"] <= first["client_send_ms"] + 2_000 + 120 + 1_000 + 20
    # Every record is acknowledged in the end (but those in flight when the run ends); those caught in the
    # cut after more than one attempt.
    records = result.records
    settled = records[records["first_intended_ms"] < 12_000 - 100]
    assert set(settled["outcome"].astype(str)) == {"acknowledged"}
    caught = records[(records["first_intended_ms"] >= 5_000) & (records["first_intended_ms"] < 5_250)]
    assert len(caught) and bool((caught["attempts"] >= 2).all())
    assert float(caught["ack_ms"].min()) >= 8_000  # not before the cut ended


def test_a_client_cut_from_one_broker_keeps_its_links_to_the_others() -> None:
    s = scenario(
        duration="10s",
        cluster={"brokers": 3},
        topic={"partitions": 2, "replica_assignment": [[0, 1, 2], [1, 2, 0]]},
        producers=[producer("p1", **{"request.timeout.ms": "1s", "partitioner": "round_robin"})],
        consumers=[consumer("c1", **{"request.timeout.ms": "2s"})],
        faults=[_partition("2s", [["p1", "c1"], ["broker-1"]], duration="3s")],
    )
    result = run_scenario(s)
    rows = result.requests
    for client, api in (("p1", "Produce"), ("c1", "FetchConsumer")):
        mine = rows[(rows["client"] == client) & (rows["api"] == api)]
        received = mine[(mine["client_receive_ms"] >= 2_000) & (mine["client_receive_ms"] < 5_000)]
        # Broker 0 is on no side: its answers keep coming. Nothing from broker 1 gets through.
        assert (received["broker"] == 0).sum() > 10, client
        assert (received["broker"] == 1).sum() == 0, client
        assert (mine[mine["client_receive_ms"] >= 5_000]["broker"] == 1).sum() > 0, client  # reached again
    lost = rows[(rows["client"] == "p1") & (rows["broker"] == 1) & (rows["client_send_ms"] >= 2_000)
                & (rows["client_send_ms"] < 5_000)]
    assert len(lost) and set(lost["error_name"]) <= {"REQUEST_TIMED_OUT", "NETWORK_EXCEPTION"}
    # The replication between the brokers was not cut: no fetch of a follower failed.
    followers = rows[rows["api"] == "FetchFollower"]
    assert set(followers["error_name"]) == {"NONE"}


def test_an_alter_partition_lost_in_a_short_controller_cut_is_sent_again_after_the_socket_timeout() -> None:
    # broker-2 never fetches from the leader again (cut from 1 s to the end); at the leader's first isr-expiration
    # check after 31 s (every 15 s at its process's own phase) it proposes to remove it, while the leader itself
    # is cut from the controller (from 0.5 s before that check, for 2.5 s: shorter than its session, so it is
    # not fenced). The AlterPartition is lost; NodeToControllerRequestThread sends it again
    # controller.socket.timeout.ms (30 s) later, and the ISR shrinks then.
    def of(faults: list[dict]) -> Scenario:
        return scenario(duration="80s", controller=FIXED_CONTROLLER, faults=faults)

    started = Engine(of([])).components.brokers[0]._started_ms  # the phase is the seed's, whatever the faults
    check = started + 15_000.0 * math.ceil((31_000.0 - started) / 15_000.0)
    result = run_scenario(of([_partition("1s", [["broker-2"], ["broker-0"]]),
                              _partition(f"{check - 500:g}ms", [["broker-0"], ["controller"]], duration="2.5s")]))
    changes = _changes(result, "IsrSize", "t-0")
    assert [v for _, v in changes] == [3.0, 2.0]
    assert check + 30_000 <= changes[1][0] <= check + 30_000 + 200
    counters = result.summary["counters"]
    assert counters["isr_shrinks"] == 1 and counters["alter_partition_requests"] == 1
