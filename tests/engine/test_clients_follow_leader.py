"""Clients follow a leader change (Kafka's ``Metadata`` refresh on NOT_LEADER_OR_FOLLOWER / a disconnect, the
producer's ``Sender`` re-routing its batches, the consumer's ``AbstractFetch`` moving a partition to its new
leader after KIP-320 validation). The leader here is paused past ``broker.session.timeout.ms``: the
controller fences it and elects another replica; when the old leader resumes it applies the change, answers
its parked requests NOT_LEADER_OR_FOLLOWER, and the clients refresh their metadata and go to the new leader."""

from __future__ import annotations

from kafkasim.run import run_scenario

from .support import scenario

LEADER = 1  # the striped placement's leader of t-0 on 3 brokers


def _paused_leader_run():
    s = scenario(
        duration="40s",
        cluster={"brokers": 3},
        faults=[{"type": "pause", "target": f"broker-{LEADER}", "at": "5s", "duration": "20s"}],
        consumers=[{"name": "c1", "topic": "t"}],
    )
    return run_scenario(s)


def test_producer_and_consumer_move_to_the_new_leader() -> None:
    result = _paused_leader_run()
    req = result.requests
    late = req[req["client_send_ms"] > 26_000]
    for client in ("p1", "c1"):
        rows = late[late["client"] == client]
        assert len(rows) > 50
        # After the old leader resumed and refused them, every request goes to the new leader and succeeds.
        assert set(rows["broker"]) == {2} and set(rows["error_name"].astype(str)) == {"NONE"}
    refused = req[(req["client"] == "p1") & (req["error_name"].astype(str) == "NOT_LEADER_OR_FOLLOWER")]
    assert len(refused) >= 1 and set(refused["broker"]) == {LEADER}
    records = result.records
    # acks=all with retries: every batch is acknowledged (the stalled ones after the old leader's refusal),
    # but those still in flight when the run ends.
    outcome = records["outcome"].astype(str)
    assert set(outcome) <= {"acknowledged", "pending"}
    assert (records[outcome == "pending"]["first_intended_ms"] >= result.summary["simulated_duration_ms"] - 10).all()
    assert records["attempts"].max() == 2
    # And consumed: the consumer validated its position with the new leader and read on.
    acked_before_end = records[records["ack_ms"] < 39_000]
    assert len(acked_before_end) > 300 and acked_before_end["first_consumed_ms"].notna().all()


def test_a_paused_broker_does_not_answer_metadata_requests() -> None:
    """Clients' Metadata requests were answered by the lowest-id live broker even while it was paused (a
    stopped JVM answers nothing; Kafka's client asks its leastLoadedNode). Its answers were right only
    because the simulator's copy of its metadata cache is updated as deltas arrive, not when the stopped
    broker applies them; now another broker answers. Broker 0, the lowest id, is paused 4-34 s; the leader,
    broker 1, crashes at 5 s, so the producer refreshes its metadata again and again; the controller elects
    broker 2 some 7-9 s later and the producer finds it."""
    s = scenario(
        duration="40s",
        cluster={"brokers": 3},
        faults=[{"type": "pause", "target": "broker-0", "at": "4s", "duration": "30s"},
                {"type": "crash", "target": f"broker-{LEADER}", "at": "5s"}],
    )
    result = run_scenario(s)
    req = result.requests
    # Broker 0 is stopped and fenced too: ISR {2} is below min.insync.replicas 2, so broker 2 refuses the
    # acks=all produces NOT_ENOUGH_REPLICAS (retried) -- the point is that the producer found broker 2.
    moved = req[(req["client"] == "p1") & (req["broker"] == 2)]
    assert len(moved) and 5_000 + 7_000 < moved["client_send_ms"].min() < 5_000 + 9_000 + 1_100
    assert "NOT_ENOUGH_REPLICAS" in set(moved[moved["client_send_ms"] < 34_000]["error_name"].astype(str))
