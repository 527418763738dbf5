"""A leadership change in a cluster run, delivered to every broker as a metadata delta
(``BrokerServer.apply_delta``, Kafka's ``ReplicaManager.applyDelta``): the old leader becomes a follower
and truncates, on a diverging epoch, the tail its successor never had (KIP-595); the other follower moves
its partition to the new leader's fetcher thread; the new leader stops fetching it and leads at epoch 1.

Layout as tests/engine/test_cluster.py: 3 brokers, partitions t-0..t-5 with replicas in ring order, so
t-0 is led by 0 and followed by 1 and 2.
"""

from __future__ import annotations

from kafkasim.broker.metadata import MetadataDelta, PartitionRegistration
from kafkasim.broker.records import TopicPartition
from kafkasim.run.engine import Engine
from kafkasim.sim.calls import Call

from .support import consumer, producer, scenario
from .test_cluster import _layout

TP0 = TopicPartition("t", 0)


def _batches(log):  # type: ignore[no-untyped-def]
    return [(b.base_offset, b.partition_leader_epoch, b.batch_id) for s in log.segments for b in s.batches]


def test_leader_change_truncates_the_old_leaders_unreplicated_tail() -> None:
    s = scenario(
        duration="2s",
        topic={"partitions": 6},
        producers=[producer("p1", acks=1, rate="600/s", partitioner="round_robin")],
        consumers=[consumer("c1")],
    )
    engine = Engine(s, layout=_layout(), check_invariants=True)
    c = engine.components
    b0, b1, b2 = c.broker(0), c.broker(1), c.broker(2)
    to_0 = [next(f for f in b.fetchers if f.source_broker == 0) for b in (b1, b2)]
    seen: dict[str, object] = {}

    def stall(_e: object) -> None:
        # Brokers 1 and 2 stop copying from broker 0: its acks=1 appends from now on are only on broker 0.
        for thread in to_0:
            thread.pause()

    def elect(_e: object) -> None:
        seen["old_leo"] = b0.replica_manager.partitions[TP0].log_end_offset
        seen["new_leo"] = b1.replica_manager.partitions[TP0].log_end_offset
        delta = MetadataDelta(1, {TP0: PartitionRegistration((0, 1, 2), (0, 1, 2), 1, 1, 1)})
        for broker in (b1, b0, b2):
            broker.apply_delta(delta)
        for thread in to_0:
            thread.resume()
        seen["b0_threads"] = {f.source_broker: f.started for f in b0.fetchers}

    Call(engine.env, 800.0, stall)
    Call(engine.env, 1000.0, elect)
    engine.run()

    assert seen["old_leo"] > seen["new_leo"]  # type: ignore[operator]
    old, new, other = (b.replica_manager.partitions[TP0] for b in (b0, b1, b2))
    assert new.is_leader and new.leader_epoch == 1 and new.leader_epoch_start_offset == seen["new_leo"]
    assert not old.is_leader and old.leader_replica_id == 1 and old.leader_epoch == 1
    # Broker 0 now fetches t-0 from broker 1 (it led only t-0 and t-3 before; a thread toward 1 existed
    # for t-1 and t-4), and broker 1 no longer fetches t-0.
    assert TP0 in next(f for f in b0.fetchers if f.source_broker == 1).partitions
    assert all(TP0 not in f.partitions for f in b1.fetchers)
    assert TP0 in next(f for f in b2.fetchers if f.source_broker == 1).partitions
    # The old leader truncated its tail on a diverging epoch and then copied the new leader's log.
    thread_0_to_1 = next(f for f in b0.fetchers if f.source_broker == 1)
    assert thread_0_to_1.truncations == 1
    # (The producer, which routes by the leadership it started with, keeps writing t-0 to broker 0, which
    # now refuses: the new leader's log does not grow.)
    assert old.log_end_offset == new.log_end_offset == other.log_end_offset == seen["new_leo"]
    assert _batches(old.log) == _batches(new.log) == _batches(other.log)
    # The new leader, which led t-1 and t-4 already, runs its purgatory tasks; nothing broke an invariant.
    assert b1.reaper_passes > 0


def test_a_broker_leading_for_the_first_time_starts_its_tasks_and_the_old_leader_a_fetcher() -> None:
    """One partition led by broker 0 (no ``cluster:``), followers 1 and 2 lead nothing. Leadership moves to
    broker 1: it stops fetching (its only fetcher thread, now idle, is shut down: Kafka's
    ``shutdownIdleFetcherThreads``) and starts its expiration reapers and isr-expiration task; broker 0,
    which had no fetcher thread, creates one toward broker 1 and starts it at once
    (``addFetcherForPartitions``)."""
    s = scenario(duration="1500ms", producers=[producer("p1", acks=1, rate="300/s")], consumers=[])
    engine = Engine(s, check_invariants=True)
    c = engine.components
    b0, b1 = c.broker(0), c.broker(1)
    tp = next(iter(b0.replica_manager.partitions))
    assert b0.fetchers == [] and b1.reaper_passes == 0
    old_thread = b1.fetchers[0]

    def elect(_e: object) -> None:
        delta = MetadataDelta(1, {tp: PartitionRegistration((0, 1, 2), (0, 1, 2), 1, 1, 1)})
        for broker in c.brokers:
            broker.apply_delta(delta)

    Call(engine.env, 500.0, elect)
    engine.run()
    assert b1.fetchers == [] and old_thread.crashed  # shut down
    assert b1.reaper_passes > 0 and b1.replica_manager.partitions[tp].is_leader
    (thread,) = b0.fetchers
    assert thread.started and thread.source_broker == 1 and tp in thread.partitions
    assert b0.replica_manager.partitions[tp].log_end_offset == b1.replica_manager.partitions[tp].log_end_offset


def test_a_paused_broker_applies_a_delta_when_its_pause_ends() -> None:
    """A stop-the-world pause stops the broker's metadata publisher too: a delta reaching a paused broker
    is applied when the pause ends (BrokerServer.apply_delta defers it, returning None)."""
    s = scenario(duration="1000ms", producers=[producer("p1", acks=1, rate="300/s")], consumers=[])
    engine = Engine(s)
    c = engine.components
    b1 = c.broker(1)
    tp = next(iter(c.broker(0).replica_manager.partitions))
    seen: list[object] = []
    delta = MetadataDelta(1, {tp: PartitionRegistration((0, 1, 2), (0, 1, 2), 1, 1, 1)})

    def elect(_e: object) -> None:
        seen.append(c.broker(0).apply_delta(delta))
        seen.append(b1.apply_delta(delta))
        seen.append(b1.replica_manager.partitions[tp].is_leader)

    Call(engine.env, 400.0, lambda _e: b1.pause())
    Call(engine.env, 500.0, elect)
    Call(engine.env, 700.0, lambda _e: seen.append(b1.replica_manager.partitions[tp].is_leader))
    Call(engine.env, 700.0, lambda _e: b1.resume())
    Call(engine.env, 700.0, lambda _e: seen.append(b1.replica_manager.partitions[tp].is_leader))
    engine.run()
    assert seen[0] is not None and seen[1] is None
    assert seen[2:] == [False, False, True]
