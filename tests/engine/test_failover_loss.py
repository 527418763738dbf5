"""Kafka's durability promise across leader changes, and what it allows to be lost.

With clean elections (from the ISR) and acks=all, an acknowledged record is on every ISR member, so on any
leader the controller elects next (the TLA+ model's StrongIsr): the checks stop a run whose new leader lacks
it. Where Kafka allows loss -- acks=1, an unclean election (``unclean.leader.election.enable``) -- the records
table counts exactly the acknowledged batches the final leader's log no longer has, and says why.

Leadership moves the way it does in Kafka: a broker paused longer than broker.session.timeout.ms (9 s) stops
heartbeating, the controller fences it and elects another leader; on resume it follows and truncates what
its successor lacks (a diverging epoch, KIP-595).
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkasim.broker.metadata import MetadataDelta, PartitionRegistration
from kafkasim.broker.partition import Partition
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.run.engine import Engine
from kafkasim.run.invariants import InvariantViolation
from kafkasim.scenario.load import validate_data
from kafkasim.sim.calls import Call

from .support import producer, scenario

TP = TopicPartition("t", 0)


def _cluster(acks: Any, *, min_isr: int, unclean: bool, faults: list[dict[str, Any]], rf: int = 3,
             duration: str = "30s", also_acks_1: bool = False, assignment: list[int] | None = None,
             broker: dict[str, Any] | None = None, elr: int | None = None, **producer_config: Any) -> Any:
    """``elr``: ``controller.eligible.leader.replicas.version`` (None: the default, 1)."""
    producers = [{"name": "p", "topic": "t", "acks": acks, "rate": "200/s", "record_size": "100B", **producer_config}]
    if also_acks_1:
        producers.append({"name": "q", "topic": "t", "acks": 1, "rate": "200/s", "record_size": "100B",
                          **producer_config})
    return validate_data({
        "name": "failover", "description": "failover", "seed": 1, "duration": duration, "warmup": "0ms",
        "sample_interval": "100ms",
        "cluster": {"brokers": 3},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": rf, "min.insync.replicas": min_isr,
                    "replica_assignment": [assignment or list(range(rf))], "unclean.leader.election.enable": unclean}],
        "broker": broker or {"replica.lag.time.max.ms": 1000},
        "producers": producers,
        "consumers": [{"name": "c", "topic": "t"}],
        "faults": faults,
        **({} if elr is None else {"controller": {"eligible.leader.replicas.version": elr}}),
    })


# The followers stop copying at 3 s (their fetches are dropped, and they wait out the 30 s request timeout):
# the leader shrinks the ISR to itself; at 6 s the leader stops for 12 s: fenced at ~13 s.
LAGGING_FOLLOWERS_THEN_LEADER_PAUSED = [
    {"type": "link_drop", "target": "broker-1", "at": "3s", "duration": "20s"},
    {"type": "link_drop", "target": "broker-2", "at": "3s", "duration": "20s"},
    {"type": "pause", "target": "broker-0", "at": "6s", "duration": "12s"},
]


def _final_log_ids(engine: Engine, broker: int) -> set[int]:
    log = engine.components.broker(broker).replica_manager.partitions[TP].log
    return {b.batch_id for s in log.segments for b in s.batches}


def _acknowledged(records: Any) -> Any:
    return records[(records["error"] == 0) & records["ack_ms"].notna() & (records["offset"] >= 0)]


def test_an_unclean_election_loses_acknowledged_acks_1_records_and_counts_them_exactly() -> None:
    # Kafka 4.0's rules (no eligible leader replicas): the lagging followers are outside the ISR, and only an
    # unclean election brings the partition back.
    engine = Engine(_cluster(1, min_isr=2, unclean=True, faults=LAGGING_FOLLOWERS_THEN_LEADER_PAUSED, elr=0))
    result = engine.run()
    image = engine.components.controller.image
    leader = image.partitions[TP].leader
    assert leader == 1  # elected uncleanly from outside the ISR {0}
    records = result.records
    acked = _acknowledged(records)
    missing = set(acked["batch_id"]) - _final_log_ids(engine, leader)
    lost = records[records["lost_after_ack"]]
    assert len(missing) > 100
    assert set(lost["batch_id"]) == missing
    assert set(lost["lost_reason"].astype(str)) == {"unclean election"}
    # The old leader truncated them too when it came back as a follower (KIP-595).
    assert not missing & _final_log_ids(engine, 0)
    counted = {"batches": len(missing), "records": int(lost["record_count"].sum()),
               "by_reason": {"unclean election": len(missing)}}
    assert result.summary["lost_after_ack"] == {**counted, "by_producer": {"p": counted}}


def test_an_election_from_the_eligible_replicas_loses_the_same_acks_1_records_cleanly() -> None:
    """Kafka 4.3.1's default: the followers left the ISR while it was below min.insync.replicas, so they are
    eligible leader replicas; at the leader's fence the controller elects broker 1 from them (a clean election,
    ISR [1]) whether or not the topic allows unclean elections. It holds everything below the frozen high
    watermark, not the acks=1 records broker 0 acknowledged alone: the same batches are lost, for that reason."""
    lost_by = {}
    for unclean in (True, False):
        engine = Engine(_cluster(1, min_isr=2, unclean=unclean, faults=LAGGING_FOLLOWERS_THEN_LEADER_PAUSED))
        result = engine.run()
        partition = engine.components.controller.image.partitions[TP]
        assert partition.leader == 1 and partition.leader_recovery_state == 0  # clean: not RECOVERING
        counters = result.summary["counters"]
        assert (counters["controller_elr_elections"], counters["controller_unclean_elections"]) == (1, 0)
        records = result.records
        missing = set(_acknowledged(records)["batch_id"]) - _final_log_ids(engine, 1)
        lost = records[records["lost_after_ack"]]
        assert len(missing) > 100 and set(lost["batch_id"]) == missing
        assert set(lost["lost_reason"].astype(str)) == {"acks=1, leader from the ELR"}
        lost_by[unclean] = missing
    assert lost_by[True] == lost_by[False]


def test_the_same_faults_with_acks_all_and_min_isr_2_lose_nothing() -> None:
    # The ISR of the leader alone is below min.insync.replicas: nothing more is acknowledged (the high
    # watermark is frozen); at the leader's fence the controller elects a follower from the eligible leader
    # replicas, which holds everything acknowledged.
    engine = Engine(_cluster("all", min_isr=2, unclean=False, faults=LAGGING_FOLLOWERS_THEN_LEADER_PAUSED))
    result = engine.run()
    assert engine.invariants is not None
    assert not result.records["lost_after_ack"].any()
    assert "lost_after_ack" not in result.summary  # the quiet case stays quiet
    assert len(_acknowledged(result.records)) > 1000


def test_a_clean_failover_with_acks_all_keeps_every_acknowledged_record() -> None:
    # Followers in sync; the leader stops for 12 s and the controller elects broker 1 from the ISR.
    engine = Engine(_cluster("all", min_isr=2, unclean=False,
                             faults=[{"type": "pause", "target": "broker-0", "at": "5s", "duration": "12s"}]))
    result = engine.run()
    assert engine.components.controller.image.partitions[TP].leader == 1
    acked = _acknowledged(result.records)
    assert set(acked["batch_id"]) <= _final_log_ids(engine, 1)
    assert not result.records["lost_after_ack"].any()
    assert result.summary["counters"]["invariant_checks"] > 1000


def test_acks_1_loses_what_the_new_leader_had_not_copied_in_a_clean_election() -> None:
    # The followers copy 300 ms late (their fetch responses are delayed, well within
    # replica.lag.time.max.ms): when the leader stops, its last ~300 ms of acks=1 appends are on it alone.
    slow = {"type": "constant", "value": "300ms"}
    faults = [{"type": "link_delay", "target": f"broker-{b}", "at": "1s", "duration": "29s", "extra": slow,
               "direction": "from_broker"} for b in (1, 2)]
    faults.append({"type": "pause", "target": "broker-0", "at": "5s", "duration": "12s"})
    engine = Engine(_cluster(1, min_isr=2, unclean=False, faults=faults))
    result = engine.run()
    assert engine.components.controller.image.partitions[TP].leader == 1
    lost = result.records[result.records["lost_after_ack"]]
    missing = set(_acknowledged(result.records)["batch_id"]) - _final_log_ids(engine, 1)
    assert missing and set(lost["batch_id"]) == missing
    assert set(lost["lost_reason"].astype(str)) == {"acks=1"}


def test_a_leader_elected_from_the_isr_without_acknowledged_records_stops_the_run() -> None:
    # A broken controller: broker 2 stopped copying at 800 ms and left the ISR, acks=all produces went on
    # with brokers 0 and 1; at 2 s broker 2 is made leader as if it had been elected from the ISR.
    s = scenario(duration="4s", broker={"replica.lag.time.max.ms": 300, "replica.fetch.wait.max.ms": 100},
                 producers=[producer("p1", rate="200/s")])
    engine = Engine(s, check_invariants=True)
    c = engine.components
    b2 = c.broker(2)
    to_0 = next(f for f in b2.fetchers if f.source_broker == 0)
    Call(engine.env, 800.0, lambda _e: to_0.pause())

    def elect(_e: object) -> None:
        delta = MetadataDelta(1, {TP: PartitionRegistration((0, 1, 2), (0, 1, 2), 2, 1, 5)})
        for broker in c.brokers:
            broker.apply_delta(delta)

    Call(engine.env, 2_000.0, elect)
    with pytest.raises(InvariantViolation, match=r"broker 2 became leader \(leader epoch 1, elected from the "
                                                 r"ISR\) with its log ending at \d+, before offset \d+") as caught:
        engine.run()
    assert caught.value.time_ms == 2_000.0


def test_a_final_leader_missing_an_acknowledged_batch_stops_the_run() -> None:
    # Just before the end, the leader's log silently swaps an acknowledged batch for another one with the
    # same offsets (the HW and log end offset checks cannot see it): the batch is lost though every
    # election was clean, with acks=all and min.insync.replicas 2.
    s = scenario(duration="2s", producers=[producer("p1", rate="200/s")])
    engine = Engine(s, check_invariants=True)

    def corrupt(_e: object) -> None:
        segment = engine.components.broker(0).replica_manager.partitions[TP].log.segments[0]
        batches = segment._batches
        old = batches[5]
        batches[5] = RecordBatch(old.record_count, old.size_in_bytes, old.create_time_ms, 10**9, old.producer,
                                 old.base_offset, old.partition_leader_epoch)

    Call(engine.env, 1_990.0, corrupt)
    with pytest.raises(InvariantViolation, match=r"acknowledged record was lost although every election .* "
                                                 r"is not in the log of broker 0, the final leader"):
        engine.run()


def test_a_retry_written_twice_is_counted_as_duplicated_without_a_consumer() -> None:
    # Idempotence off (acks=1): a response lost on the way back makes the producer send the batch again,
    # and the leader appends it a second time. No consumer reads the copies; the final log shows them.
    s = scenario(
        duration="3s",
        producers=[producer("p1", acks=1, rate="50/s", **{"request.timeout.ms": 200})],
        consumers=[],
        faults=[{"type": "link_drop", "target": "p1", "at": "1s", "duration": "300ms", "direction": "from_broker"}],
    )
    engine = Engine(s)
    result = engine.run()
    log = engine.components.broker(0).replica_manager.partitions[TP].log
    ids = [b.batch_id for seg in log.segments for b in seg.batches]
    twice = {i for i in ids if ids.count(i) > 1}
    assert twice
    records = result.records
    assert set(records.loc[records["outcome"] == "duplicated", "batch_id"]) == twice
    assert result.summary["per_client"]["producers"]["p1"]["outcomes"]["duplicated"] == len(twice)


# The followers copy 300 ms late (the fetch responses to them are delayed, well within
# replica.lag.time.max.ms): at any moment the leader's last ~300 ms of appends are on it alone.
FOLLOWERS_300_MS_BEHIND = [
    {"type": "link_delay", "target": f"broker-{b}", "at": "1s", "duration": "29s",
     "extra": {"type": "constant", "value": "300ms"}, "direction": "from_broker"} for b in (1, 2)
]
LEADER_CRASHES = [{"type": "crash", "target": "broker-0", "at": "5s", "restart_after": "10s"}]


def test_acks_1_and_a_leader_crash_lose_the_acknowledged_records_the_followers_had_not_copied() -> None:
    # Kafka's documentation of acks=1: "the leader will write the record to its local log but will respond
    # without awaiting full acknowledgement from all followers ... if the leader fails immediately after
    # acknowledging the record but before the followers have replicated it then the record will be lost".
    engine = Engine(_cluster(1, min_isr=2, unclean=False, faults=FOLLOWERS_300_MS_BEHIND + LEADER_CRASHES))
    result = engine.run()
    leader = engine.components.controller.image.partitions[TP].leader
    assert leader in (1, 2)  # a clean election from the ISR
    records = result.records
    missing = set(_acknowledged(records)["batch_id"]) - _final_log_ids(engine, leader)
    lost = records[records["lost_after_ack"]]
    assert len(missing) >= 5  # the batches of the last ~300 ms before the crash (200 records/s)
    assert set(lost["batch_id"]) == missing
    assert set(lost["lost_reason"].astype(str)) == {"acks=1"}
    # Acknowledged before the crash, all of them; the restarted broker 0 truncated them (KIP-101/595).
    assert (lost["ack_ms"] < 5_000).all()
    assert not missing & _final_log_ids(engine, 0)
    summary = result.summary["lost_after_ack"]
    assert summary["by_producer"]["p"]["by_reason"] == {"acks=1": len(missing)}
    assert summary["records"] == int(lost["record_count"].sum())


def test_acks_all_min_isr_2_and_the_same_leader_crash_lose_nothing() -> None:
    engine = Engine(_cluster("all", min_isr=2, unclean=False, faults=FOLLOWERS_300_MS_BEHIND + LEADER_CRASHES))
    result = engine.run()
    leader = engine.components.controller.image.partitions[TP].leader
    assert leader in (1, 2)
    acked = _acknowledged(result.records)
    assert len(acked) > 1_000
    assert set(acked["batch_id"]) <= _final_log_ids(engine, leader)
    assert not result.records["lost_after_ack"].any()
    assert "lost_after_ack" not in result.summary
    assert result.summary["counters"]["invariant_checks"] > 1_000


@pytest.mark.pure_only
def test_a_broker_resuming_into_a_leadership_the_controller_has_since_moved_on_is_not_a_new_leader() -> None:
    # Broker 0 (the leader) crashes at 2 s and is fenced ~9 s later; the controller elects broker 2 (next in
    # the replica order) from the ISR -- paused since 6 s, not fenced yet -- at leader epoch 1, then fences it
    # too (~13 s) and elects broker 1 at epoch 2; broker 0, restarted at 12 s, rejoins broker 1's ISR and
    # the high watermark moves on. When broker 2 resumes at 20 s it applies the metadata in order and leads
    # at epoch 1 for a moment: a stale leader, not a successor of broker 1 (its log ends far below broker 1's
    # high watermark), which the checker took for a clean election that lost committed records. Found by
    # benchmarks/failover_stress.py (seeds 4 and 10).
    engine = Engine(_cluster("all", min_isr=2, unclean=False, duration="25s", also_acks_1=True,
                             assignment=[0, 2, 1], **{"request.timeout.ms": 2_000}, faults=[
        {"type": "crash", "target": "broker-0", "at": "2s", "restart_after": "10s"},
        {"type": "pause", "target": "broker-2", "at": "6s", "duration": "14s"},
    ]))
    stale: list[tuple[int, int]] = []
    observer = engine.invariants
    assert observer is not None
    became_leader = observer.became_leader

    def watch(broker_id: int, tp: TopicPartition, partition: Any) -> None:
        image = engine.components.controller.image.partitions[tp]
        if partition.leader_epoch < image.leader_epoch:
            stale.append((broker_id, partition.leader_epoch))
        became_leader(broker_id, tp, partition)

    observer.became_leader = watch  # type: ignore[method-assign]
    result = engine.run()
    assert (2, 1) in stale
    assert engine.components.controller.image.partitions[TP].leader == 1
    assert not result.records.loc[result.records["acks"] == -1, "lost_after_ack"].any()


@pytest.mark.pure_only
def test_a_follower_following_a_new_leader_may_take_a_lower_high_watermark() -> None:
    # Broker 1 leads; broker 2 is cut from brokers 0 and 1 at 5 s: its last fetch brought its log end up to
    # the leader's, but the response that would tell it the high watermark that fetch moved never comes, so
    # its high watermark stays a batch behind broker 1's. Broker 1 crashes at 6 s, broker 0 pauses at
    # 10.4 s; broker 2, back at 14 s, is elected from the ISR when broker 1 is fenced, with its older high
    # watermark -- frozen there, its ISR being below min.insync.replicas once broker 0 is fenced too.
    # Broker 0 resumes at 20.6 s and follows it: Kafka's follower takes the leader's high watermark as it
    # is (``UnifiedLog.updateHighWatermark`` from ``ReplicaFetcherThread.processPartitionData``), lower
    # than the one it had. A decrease the checker must allow after a leader change (and broker 1, back at
    # 21 s, had a higher one as leader). Found by benchmarks/failover_stress.py (seed 34) when a restarted broker
    # served at once: the brokers here restart that way (broker.startup 0) to keep the case's timing.
    engine = Engine(_cluster("all", min_isr=2, unclean=False, duration="25s", assignment=[1, 2, 0],
                             broker={"replica.lag.time.max.ms": 5_000,
                                     "startup": {"process_start": "0ms", "log_load": "0ms"}},
                             **{"request.timeout.ms": 5_000},
                             faults=[
        {"type": "network_partition", "at": "5s", "duration": "9s", "sides": [["broker-2"], ["broker-0", "broker-1"]]},
        {"type": "crash", "target": "broker-1", "at": "6s", "restart_after": "15s"},
        {"type": "pause", "target": "broker-0", "at": "10400ms", "duration": "10200ms"},
    ]))
    c = engine.components
    last: dict[int, int] = {}
    decreases: list[tuple[int, int, int]] = []
    observer = engine.invariants
    assert observer is not None
    replica_high_watermark = observer.replica_high_watermark

    def watch(tp: TopicPartition, broker_id: int, high_watermark: int, log_end_offset: int,
              leader_epoch: int = 0) -> None:
        if high_watermark < last.get(broker_id, -1):
            decreases.append((broker_id, last[broker_id], high_watermark))
        last[broker_id] = high_watermark
        replica_high_watermark(tp, broker_id, high_watermark, log_end_offset, leader_epoch)

    observer.replica_high_watermark = watch  # type: ignore[method-assign]
    result = engine.run()
    assert c.controller.image.partitions[TP].leader == 2
    # Brokers 0 and 1, back from their pause and crash, truncate to broker 2's log and take its lower HW.
    assert {b for b, _, _ in decreases} == {0, 1}
    assert not result.records["lost_after_ack"].any()


@pytest.mark.pure_only
def test_a_new_leader_whose_log_disagrees_with_its_predecessors_below_the_committed_offset_stops_the_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken follower: broker 1 stores a batch under another identity than the leader's (same offsets,
    # so its log end and high watermark look right). acks=all, min.insync.replicas 2; the leader crashes at
    # 5 s and the controller elects broker 1 from the ISR: its log must agree with broker 0's below the
    # committed offset, batch for batch.
    append = Partition.append_records_to_follower_or_future_replica
    swapped: list[int] = []

    def broken(self: Partition, records: Any) -> Any:
        if self.local_broker_id == 1 and not swapped:
            out = []
            for b in records:
                if b.base_offset >= 100 and not swapped:
                    swapped.append(b.base_offset)
                    b = RecordBatch(
                        b.record_count, b.size_in_bytes, b.create_time_ms, 10**9 + b.batch_id, b.producer,
                        b.base_offset, b.partition_leader_epoch, b.producer_id, b.producer_epoch,
                        b.base_sequence,
                    )
                out.append(b)
            records = out
        return append(self, records)

    monkeypatch.setattr(Partition, "append_records_to_follower_or_future_replica", broken)
    engine = Engine(_cluster("all", min_isr=2, unclean=False, duration="20s", faults=LEADER_CRASHES))
    with pytest.raises(InvariantViolation, match=r"broker 1 became leader \(leader epoch 1, elected from the ISR\), "
                                                 r"but its log disagrees with broker 0's \(the previous leader\) "
                                                 r"below the committed offset \d+: at offset \d+ broker 0 has "
                                                 r"batch \d+ .* broker 1 has batch 10+\d+") as caught:
        engine.run()
    assert f"at offset {swapped[0]} broker 0" in str(caught.value)
    assert 12_000 <= caught.value.time_ms <= 15_000  # fenced 7-9 s after the crash
