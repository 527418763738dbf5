"""The records table names the requests of a batch's first and last send (`first_request_id`, `request_id`),
so a retried batch's attempts can be followed in the requests table (the failover swimlane reads them)."""

from __future__ import annotations

from kafkasim.run import run_scenario

from .support import leader_crash


def test_a_batch_retried_across_a_leader_crash_names_both_of_its_requests() -> None:
    result = run_scenario(leader_crash("16s"))
    records, requests = result.records, result.requests.set_index("request_id")
    sent = records[records["attempts"] >= 1]
    once = sent[sent["attempts"] == 1]
    assert len(once) > 100 and (once["first_request_id"] == once["request_id"]).all()
    retried = sent[sent["attempts"] == 2]
    assert len(retried) >= 1
    for _, batch in retried.iterrows():
        first, last = requests.loc[batch["first_request_id"]], requests.loc[batch["request_id"]]
        # Attempt 1 went to the crashed leader (broker-1) and failed when its connection was reset;
        # the last one went to the new leader and carried the acknowledgement.
        assert (first["client"], first["broker"], first["error_name"]) == ("p1", 1, "NETWORK_EXCEPTION")
        assert (last["client"], last["error_name"]) == ("p1", "NONE") and last["broker"] != 1
        assert first["client_send_ms"] < last["client_send_ms"] == batch["send_ms"]
        assert last["client_receive_ms"] == batch["ack_ms"]
    # A batch never sent (none here, but the column says so) would have -1 in both.
    assert (records.loc[records["attempts"] == 0, ["request_id", "first_request_id"]] == -1).all().all()
