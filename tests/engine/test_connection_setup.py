"""Connection set-up across a cut (issue 26 item 9): a client whose connection timed out in a network partition
cannot connect again until the cut ends, so it sends nothing into the cut.

Kafka's NetworkClient closes a connection whose request timed out (``handleTimedOutRequests``: every request
in flight on it fails as timed out) and marks the node DISCONNECTED (``ClusterConnectionStates.disconnected``:
``reconnect.backoff.ms``). The next connection must complete a TCP handshake first: its SYNs are lost in the
cut (the kernel retransmits them 1, 2, 3, 4, 5, 7 s... after the connect), so it stays CONNECTING until
``socket.connection.setup.timeout.ms`` (10 s +-20 %, then 20 s, 30 s) closes it, and the node is backed off
again. Only once a SYN gets through after the cut is the node READY and the next request sent.
"""

from __future__ import annotations

import pandas as pd

from kafkasim.run import run_scenario

from .support import consumer, producer, scenario

BROKERS = ["broker-0", "broker-1", "broker-2"]
CUT_START, CUT_END = 5_000.0, 15_000.0


def _cut(hosts: list[str], at: str, duration: str) -> dict:
    return {"type": "network_partition", "at": at, "sides": [hosts, BROKERS if hosts[0] not in BROKERS else
                                                               [b for b in BROKERS if b not in hosts]],
            "duration": duration}


def _rows(result, client: str, api: str) -> pd.DataFrame:
    rows = result.requests
    return rows[(rows["client"] == client) & (rows["api"] == api)].sort_values("client_send_ms")


def test_a_producer_cut_from_every_broker_sends_nothing_into_the_cut() -> None:
    """Issue 26 item 9's example: a producer cut from all three brokers of a cluster from 5 s to 15 s, its
    request timeout 1 s. Before the fix it sent 34 Produce requests into the cut: a new connection was
    established at once after every timeout, whatever the network."""
    s = scenario(
        duration="25s",
        cluster={"brokers": 3},
        topic={"partitions": 3},
        producers=[producer("p1", rate="50/s", **{"request.timeout.ms": "1s", "partitioner": "round_robin"})],
        faults=[_cut(["p1"], "5s", "10s")],
    )
    result = run_scenario(s)
    produces = _rows(result, "p1", "Produce")
    sent = produces["client_send_ms"].to_numpy(dtype=float)
    # The requests sent before the connections time out (~6 s) are lost in the cut; nothing goes out after.
    into_cut = produces[(sent >= CUT_START) & (sent < CUT_END)]
    assert len(into_cut) and float(into_cut["client_send_ms"].max()) < CUT_START + 1_000 + 100
    # Every request in flight on a timed-out connection fails as timed out (NetworkClient.cancelInFlightRequests
    # with timedOut: Sender.handleProduceResponse answers REQUEST_TIMED_OUT), not NETWORK_EXCEPTION.
    lost = produces[(sent >= CUT_START - 50) & (sent < CUT_END)]
    lost = lost[lost["error_name"] != "NONE"]
    assert len(lost) >= len(into_cut) and set(lost["error_name"]) == {"REQUEST_TIMED_OUT"}
    # The first request after the cut waits for a handshake that gets through: a SYN retransmission, or a new
    # attempt after the setup timeout (10 s +-20 %) and the reconnect backoff.
    after = sent[sent >= CUT_END]
    assert len(after) and CUT_END <= after.min() <= CUT_START + 1_000 + 12_000 + 500
    # Each batch caught in the cut took two attempts (the lost one and the one after the cut); batches made
    # after the last request went into the cut, one, after it. All were acknowledged.
    records = result.records
    settled = records[records["first_intended_ms"] < 25_000 - 1_000]
    assert set(settled["outcome"].astype(str)) == {"acknowledged"}
    assert int(settled["attempts"].max()) == 2
    made_in_cut = settled[(settled["created_ms"] > float(into_cut["client_send_ms"].max()))
                          & (settled["created_ms"] < CUT_END)]
    assert len(made_in_cut) and set(made_in_cut["attempts"]) == {1}
    assert float(made_in_cut["send_ms"].min()) >= CUT_END


def test_a_consumer_cut_from_every_broker_fetches_nothing_into_the_cut() -> None:
    """The consumer's fetches (AbstractFetch: a node in reconnect backoff is skipped, a fetch to a node goes out
    once ConsumerNetworkClient finds it ready): before the fix it connected again at once after each timeout and
    fetched into the cut every ~1.1 s."""
    s = scenario(
        duration="25s",
        cluster={"brokers": 3},
        topic={"partitions": 3},
        producers=[producer("p1", rate="50/s", partitioner="round_robin")],
        consumers=[consumer("c1", **{"request.timeout.ms": "1s"})],
        faults=[_cut(["c1"], "5s", "10s")],
    )
    result = run_scenario(s)
    fetches = _rows(result, "c1", "FetchConsumer")
    sent = fetches["client_send_ms"].to_numpy(dtype=float)
    # The fetches in flight when the cut starts time out within request.timeout.ms; nothing is sent after.
    assert not ((sent > CUT_START + 1_000 + 200) & (sent < CUT_END)).any()
    failed = fetches[(fetches["error_name"] != "NONE")]
    assert len(failed) and set(failed["error_name"]) == {"REQUEST_TIMED_OUT"}
    after = sent[sent >= CUT_END]
    assert len(after) and CUT_END <= after.min() <= CUT_START + 1_000 + 12_000 + 500
    # Everything produced is consumed in the end.
    records = result.records
    early = records[records["first_intended_ms"] < 25_000 - 2_000]
    assert len(early) and early["consumed_ms:c1"].notna().all()


def test_a_follower_cut_from_its_leader_fetches_nothing_into_the_cut_after_its_fetch_timed_out() -> None:
    """The replica fetcher (BrokerBlockingSender.sendRequest: NetworkClientUtils.awaitReady connects first;
    a failed connection closes the client, and the partitions back off replica.fetch.backoff.ms): before the
    fix, 1 s after its fetch timed out it sent the next one into the cut."""
    s = scenario(duration="55s", faults=[_cut(["broker-2"], "5s", "40s")])
    result = run_scenario(s)
    fetches = _rows(result, "follower-2", "FetchFollower")
    sent = fetches["client_send_ms"].to_numpy(dtype=float)
    timed_out = fetches[fetches["error_name"] == "REQUEST_TIMED_OUT"]
    assert len(timed_out) == 1 and float(timed_out["client_send_ms"].iloc[0]) < CUT_START + 600
    # Nothing between the timeout (30 s after the lost fetch) and the end of the cut at 45 s.
    assert not ((sent > CUT_START + 600) & (sent < 45_000)).any()
    # Back once a handshake gets through (a setup timeout of 10 s +-20 %, then replica.fetch.backoff.ms).
    after = sent[sent >= 45_000]
    assert len(after) and after.min() <= 36_000 + 12_000 + 1_000 + 500


def test_a_refused_connection_whose_reset_is_lost_in_a_cut_times_out_and_the_producer_comes_back() -> None:
    """Found by failover stress seed 1's liveness check: a producer silent ~26 s after every fault healed.
    Its leader crashed, and a cut between them began while it was reconnecting: the SYN (or the refusing
    RST) was lost, and the attempt neither completed nor failed -- the producer waited on it for ever, even
    after the broker restarted and led again. Kafka's NetworkClient closes such a connection after
    socket.connection.setup.timeout.ms (10 s +-20 %) and connects again after reconnect.backoff.ms."""
    crash_at, restart_after, cut_at, cut_for = 5_000.0, 5_000.0, 5_030.0, 3_000.0
    s = scenario(
        duration="30s",
        cluster={"brokers": 2},
        topics=[{"name": "t", "partitions": 1, "replica_assignment": [[0]], "min.insync.replicas": 1}],
        producers=[producer("p1", rate="50/s")],
        faults=[
            {"type": "crash", "target": "broker-0", "at": f"{crash_at:g}ms", "restart_after": f"{restart_after:g}ms"},
            {"type": "network_partition", "at": f"{cut_at:g}ms", "sides": [["broker-0"], ["p1"]],
             "duration": f"{cut_for:g}ms"},
        ],
    )
    result = run_scenario(s)
    sent = _rows(result, "p1", "Produce")["client_send_ms"].to_numpy(dtype=float)
    back = sent[sent > crash_at]
    # The attempt made in the cut times out at most 12 s after it began (plus the reconnect backoff, at most
    # 1.2 s), and the producer sends again; before the fix it never did.
    assert len(back) and float(back.min()) <= cut_at + cut_for + 12_000 + 1_200
    records = result.records
    settled = records[records["first_intended_ms"] < 30_000 - 1_000]
    assert set(settled["outcome"].astype(str)) == {"acknowledged"}
