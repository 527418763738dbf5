import pytest

from kafkasim.run.invariants import InvariantChecker, InvariantViolation


def test_violation_message_says_when_where_and_which_request():
    err = InvariantViolation("boom", time_ms=12.5, partition="orders-0", request_id=7)
    assert str(err) == "invariant violated at t=12.500 ms, partition orders-0, request 7: boom"
    assert (err.time_ms, err.partition, err.request_id, err.message) == (12.5, "orders-0", 7, "boom")


def test_high_watermark_never_decreases_nor_exceeds_leo():
    c = InvariantChecker()
    c.on_high_watermark("orders-0", 5, 5, 5, 1.0)
    c.on_high_watermark("orders-0", 5, 9, 9, 2.0)
    with pytest.raises(InvariantViolation, match="decreased from 9 to 8") as info:
        c.on_high_watermark("orders-0", 9, 8, 10, 3.0)
    assert info.value.partition == "orders-0" and info.value.time_ms == 3.0
    with pytest.raises(InvariantViolation, match="high watermark 11 exceeds the log end offset 10"):
        c.on_high_watermark("orders-0", 9, 11, 10, 4.0)


def test_delayed_operation_completes_once():
    c = InvariantChecker()
    c.on_complete(3, 1.0)
    c.on_complete(100_000, 1.0)
    with pytest.raises(InvariantViolation, match="delayed operation 3 completed twice"):
        c.on_complete(3, 2.0)


def test_every_request_has_exactly_one_outcome():
    c = InvariantChecker()
    c.on_request(0, 0.0, deadline_ms=30_000)
    c.on_request(1, 0.0, deadline_ms=30_000)
    c.on_response(0, 5.0)
    c.on_client_timeout(1, 30_000.0)
    with pytest.raises(InvariantViolation, match="second outcome \\(response\\)") as info:
        c.on_response(1, 30_001.0)  # a late response after the client gave up
    assert info.value.request_id == 1
    with pytest.raises(InvariantViolation, match="second outcome"):
        c.on_response(0, 6.0)
    with pytest.raises(InvariantViolation, match="response for a request never sent"):
        c.on_response(42, 6.0)
    with pytest.raises(InvariantViolation, match="request id used twice"):
        c.on_request(0, 7.0)


def test_at_end_flags_only_requests_past_their_deadline():
    c = InvariantChecker()
    c.on_request(0, 0.0, deadline_ms=100.0)
    c.on_request(1, 950.0, deadline_ms=1950.0)  # still legitimately in flight at the end
    assert c.outstanding == 2
    with pytest.raises(InvariantViolation, match="1 request\\(s\\) got neither .*: 0$"):
        c.at_end(1000.0)
    c.on_response(0, 1000.0)
    c.at_end(1000.0)


def _partition(c, isr=(0, 1, 2), min_isr=2):
    c.register_partition("t-0", isr, min_isr)
    for r in isr:
        c.on_log_end("t-0", r, 0, 0.0)


def test_acks_all_requires_every_isr_replica_to_have_the_data():
    c = InvariantChecker()
    _partition(c)
    c.on_log_end("t-0", 0, 10, 1.0)
    c.on_log_end("t-0", 1, 10, 2.0)
    c.on_acked("t-0", 10, 1, 2.0)  # acks=1: the leader alone is enough
    with pytest.raises(InvariantViolation, match="ISR replica 2's log ends at 0") as info:
        c.on_acked("t-0", 10, -1, 2.0, request_id=5)
    assert info.value.request_id == 5
    c.on_isr_change("t-0", [0, 1], 3.0)  # replica 2 dropped out: no longer needed
    c.on_acked("t-0", 10, -1, 3.0)


def test_acks_all_never_acknowledged_under_min_isr():
    c = InvariantChecker()
    _partition(c, isr=(0, 1, 2), min_isr=2)
    c.on_isr_change("t-0", [0], 1.0)
    c.on_log_end("t-0", 0, 5, 1.0)
    with pytest.raises(InvariantViolation, match="smaller than min ISR 2"):
        c.on_acked("t-0", 5, -1, 2.0)


def test_isr_replica_keeps_acknowledged_data_until_it_leaves_the_isr():
    c = InvariantChecker()
    _partition(c)
    for r in (0, 1, 2):
        c.on_log_end("t-0", r, 10, 1.0)
    c.on_acked("t-0", 10, -1, 1.0)
    with pytest.raises(InvariantViolation, match="replica 1 is in the ISR but its log now ends at 7"):
        c.on_log_end("t-0", 1, 7, 2.0)
    c.on_isr_change("t-0", [0, 2], 3.0)
    c.on_log_end("t-0", 1, 7, 4.0)  # out of the ISR: truncation is allowed


def test_a_crashed_isr_replica_counts_toward_min_isr_but_need_not_keep_acknowledged_data():
    # Kafka's Partition.checkEnoughReplicasReachOffset compares min.insync.replicas with the maximal ISR,
    # which keeps a crashed follower until the leader removes it; the crashed follower's unflushed data may
    # be gone when it restarts, so it is not held to the acknowledged offsets.
    c = InvariantChecker()
    _partition(c, isr=(0, 1, 2), min_isr=3)
    for r in (0, 1, 2):
        c.on_log_end("t-0", r, 10, 1.0)
    c.on_isr_change("t-0", [0, 1, 2], 2.0, may_lose_data=[1])
    c.on_log_end("t-0", 0, 20, 3.0)
    c.on_log_end("t-0", 2, 20, 3.0)
    c.on_acked("t-0", 20, -1, 3.0)  # maximal ISR {0, 1, 2} still has 3 members
    c.on_log_end("t-0", 1, 4, 4.0)  # its restart truncated it: not a violation
    with pytest.raises(InvariantViolation, match="replica 2 is in the ISR but its log now ends at 15"):
        c.on_log_end("t-0", 2, 15, 5.0)  # the others still must keep it
    c.on_isr_change("t-0", [0, 2], 6.0)  # now really removed
    with pytest.raises(InvariantViolation, match=r"ISR \[0, 2\] smaller than min ISR 3"):
        c.on_acked("t-0", 20, -1, 7.0)


def test_disabled_checker_checks_nothing():
    c = InvariantChecker(enabled=False)
    c.on_high_watermark("t-0", 9, 1, 0, 0.0)
    c.on_complete(1)
    c.on_complete(1)
    c.on_response(5, 0.0)
    c.at_end(1e9)
    assert c.checks == 0


def test_a_follower_replicas_high_watermark_is_checked_too():
    # CheckedRunObserver.replica_high_watermark: a follower's HW (set by its fetcher from the leader's)
    # must not decrease while it follows one leader epoch, nor pass its own log end offset.
    import simpy

    from kafkasim.broker.records import TopicPartition
    from kafkasim.record.recorder import Recorder
    from kafkasim.run.observer import CheckedRunObserver

    observer = CheckedRunObserver(simpy.Environment(), {}, Recorder(), {})
    tp = TopicPartition("t", 0)
    observer.replica_high_watermark(tp, 1, 10, 12, 0)
    observer.replica_high_watermark(tp, 2, 5, 5, 0)  # another replica: its own history
    observer.replica_high_watermark(tp, 1, 10, 10, 0)  # unchanged: nothing to check
    with pytest.raises(InvariantViolation, match="exceeds the log end offset 11"):
        observer.replica_high_watermark(tp, 1, 12, 11, 0)
    with pytest.raises(InvariantViolation, match="decreased from 10 to 9"):
        observer.replica_high_watermark(tp, 1, 9, 12, 0)


def test_a_followers_high_watermark_may_step_back_once_when_it_follows_a_new_leader():
    """Found by fuzzing leader crashes (a random cluster scenario): a new leader starts from the HW it last
    learned as a follower (Partition.makeLeader), behind the old leader's; its followers copy it
    (UnifiedLog.maybeUpdateHighWatermark sets the follower's HW to the leader's, lower or not). The checker
    stopped the run with "high watermark decreased"; within the new epoch the HW is monotone again."""
    import simpy

    from kafkasim.broker.records import TopicPartition
    from kafkasim.record.recorder import Recorder
    from kafkasim.run.observer import CheckedRunObserver

    observer = CheckedRunObserver(simpy.Environment(), {}, Recorder(), {})
    tp = TopicPartition("t", 0)
    observer.replica_high_watermark(tp, 3, 3874, 3874, 0)
    observer.replica_high_watermark(tp, 3, 3874, 3875, -1)  # it truncates on the new leader's answer
    observer.replica_high_watermark(tp, 3, 3763, 3874, 1)  # the new leader (epoch 1) is behind: allowed
    observer.replica_high_watermark(tp, 3, 3800, 3874, 1)
    with pytest.raises(InvariantViolation, match="decreased from 3800 to 3790"):
        observer.replica_high_watermark(tp, 3, 3790, 3874, 1)
    with pytest.raises(InvariantViolation, match="exceeds the log end offset 3874"):
        observer.replica_high_watermark(tp, 3, 3875, 3874, 2)  # a new epoch still may not pass the LEO


def test_a_new_leader_knows_the_log_ends_its_followers_already_reported():
    """Found by fuzzing leader crashes: when a new leader registered the partition, the checker forgot the
    replicas' log ends; a follower that already held everything and appended nothing more then looked
    empty ("ISR replica 1's log ends at -1") at the next acks=all acknowledgement."""
    c = InvariantChecker()
    c.register_partition("tp", {0, 1, 2}, 2)
    for replica in (0, 1, 2):
        c.on_log_end("tp", replica, 10, 1.0)
    c.register_partition("tp", {1, 2}, 2)  # broker 0 crashed; broker 1 leads
    c.on_acked("tp", 10, -1, 2.0)  # both hold offsets up to 10: nothing to report
    c.on_log_end("tp", 1, 12, 3.0)
    with pytest.raises(InvariantViolation, match="ISR replica 2's log ends at 10"):
        c.on_acked("tp", 12, -1, 4.0)


@pytest.mark.pure_only  # fakes the Partition that the compiled observer types
def test_a_leader_elected_again_at_a_newer_epoch_is_followed_at_that_epoch():
    """Found by failover stress --unclean seed 152 (issue 26): broker 2 led, was fenced, and was elected again
    (uncleanly, leader epoch 3) while still holding the same Partition; the checker took that for "still the
    leader" and kept epoch 0. Broker 0, back from a pause, then applied the superseded epoch 1 and led for a
    moment (a stale leader, ``Partition.makeLeader`` from old metadata): the checker took it for broker 2's
    clean successor and stopped the run ("log ending at 0, before offset 716, the high watermark of broker 2")."""
    from types import SimpleNamespace

    import simpy

    from kafkasim.broker.records import TopicPartition
    from kafkasim.record.recorder import Recorder
    from kafkasim.run.observer import CheckedRunObserver

    def partition(epoch: int, end: int, hw: int) -> SimpleNamespace:
        log = SimpleNamespace(log_start_offset=0, log_end_offset=end, segments=[])
        return SimpleNamespace(leader_epoch=epoch, maximal_isr={0, 1, 2}, effective_min_isr=1,
                               high_watermark=hw, log_end_offset=end, log=log)

    observer = CheckedRunObserver(simpy.Environment(), {}, Recorder(), {})
    tp = TopicPartition("t", 0)
    on_broker_2 = partition(0, 716, 716)
    observer.became_leader(2, tp, on_broker_2)
    on_broker_2.leader_epoch = 3
    on_broker_2.maximal_isr = {2}
    observer.isr_from_metadata(2, tp, (2,), unclean=True)
    observer.became_leader(2, tp, on_broker_2)
    observer.became_leader(0, tp, partition(1, 0, 0))  # stale: epoch 1 < 3, not a successor
    # Broker 2 at epoch 3 is the leader followed: a clean successor must hold its committed offsets.
    with pytest.raises(InvariantViolation, match="before offset 716, the high watermark of broker 2"):
        observer.became_leader(1, tp, partition(4, 700, 700))
