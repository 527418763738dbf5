"""DelayedFetch re-evaluates only the partitions that changed since its last check, and its completion
re-reads only the partitions that changed or had something to read; Kafka's ``DelayedFetch.tryComplete`` and
``onComplete`` walk and read them all. Property: on random histories (appends with and without the
action queue's deferred checks, HW moves, rolls, truncations, log start moves, leader epoch changes,
leadership moving away and back, partitions stopped, deleted, marked offline and re-created; follower and
consumer fetches over several partitions, with and without leader epochs, with min_bytes above one
partition's bytes) every check -- a direct ``try_complete``, a purgatory ``check_and_complete`` for any key,
the action queue -- completes exactly the fetches that Kafka's walk, written out below from Kafka's source,
says are complete at that moment, and answers what Kafka's full re-read answers at that moment.

The generator is ``random_history``: ``uv run python -m tests.broker.test_delayed_fetch_incremental SEED``
prints one history's steps.
"""

from __future__ import annotations

import random
import sys

import pytest

from kafkasim.broker.delayed_fetch import DelayedFetch
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import FetchParams, LogReadResult, PartitionData
from kafkasim.broker.log import UNKNOWN_OFFSET_METADATA, FetchIsolation
from kafkasim.broker.partition import Partition
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.broker.session_reads.partition_changes import PartitionChanges

from .support import Broker, Reply, batch

REPLICAS = [0, 1, 2]
_COMPLETING = {
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.KAFKA_STORAGE_ERROR,
    Errors.FENCED_LEADER_EPOCH,
}


def kafka_try_complete(rm: ReplicaManager, op: DelayedFetch) -> bool:
    """Kafka's ``DelayedFetch.tryComplete`` (3.8+), every partition in request order, without completing:
    True iff it would complete the fetch now."""
    params = op.params
    accumulated = 0
    for tp, status in op.fetch_partition_status:
        fetch_offset = status.start_offset_metadata
        info = status.fetch_info
        try:
            if fetch_offset == UNKNOWN_OFFSET_METADATA:
                continue
            partition = rm.get_partition_or_exception(tp)
            snapshot = partition.fetch_offset_snapshot(info.current_leader_epoch, params.fetch_only_leader)
            end = snapshot.log_end_offset if params.isolation is FetchIsolation.LOG_END else snapshot.high_watermark
            if fetch_offset.message_offset > end.message_offset:
                return True  # Case F
            if fetch_offset.message_offset < end.message_offset:
                if fetch_offset.on_older_segment(end):
                    return True  # Case F
                if fetch_offset.on_same_segment(end):
                    accumulated += min(end.position_diff(fetch_offset), info.max_bytes)
            if info.last_fetched_epoch >= 0:  # Case H
                e = partition.last_offset_for_leader_epoch(
                    info.current_leader_epoch, info.last_fetched_epoch, fetch_only_from_leader=False
                )
                if e.error is not Errors.NONE or e.end_offset == -1 or e.leader_epoch == -1:
                    return True
                if e.leader_epoch < info.last_fetched_epoch or e.end_offset < info.fetch_offset:
                    return True
        except KafkaError as error:
            if error.error in _COMPLETING:
                return True  # Cases A-E
            raise
    return accumulated >= params.min_bytes  # Case G


class Checked:
    """Wraps ``DelayedFetch.try_complete`` so that every check, whatever triggers it (a purgatory
    ``check_and_complete`` for any key, the action queue, a follower's HW move inside its own fetch, the
    two-phase ``try_complete_else_watch``, a direct call), is compared with Kafka's walk at that moment."""

    def __init__(self) -> None:
        self.checks = 0
        self.completed = 0
        self.original = DelayedFetch.try_complete

    def __call__(self, op: DelayedFetch) -> bool:
        was_completed = op.is_completed
        rm = op.replica_manager
        expected = kafka_try_complete(rm, op) and not was_completed
        # Kafka's onComplete reads every partition again (a purgatory read changes nothing).
        infos = [(tp, status.fetch_info) for tp, status in op.fetch_partition_status]
        expected_response = _fields(rm.read_from_log(op.params, infos, read_from_purgatory=True))
        answer = self.original(op)
        assert answer is expected, f"Kafka's walk answers {expected} for {op!r}"
        if answer:
            reply = op.response_callback
            assert isinstance(reply, Reply)
            assert _fields(reply.value) == expected_response
        self.checks += 1
        self.completed += answer
        return answer


def _fields(results: list[tuple[TopicPartition, LogReadResult]]) -> list[tuple]:
    return [
        (tp, r.error, r.diverging_epoch, r.high_watermark, r.log_start_offset, r.log_end_offset,
         r.last_stable_offset, r.follower_log_start_offset, r.fetch_time_ms, r.info.fetch_offset_metadata,
         tuple(r.info.records), r.info.size_in_bytes, r.info.partial_batch)
        for tp, r in results
    ]


@pytest.fixture
def checked(monkeypatch) -> Checked:
    wrapper = Checked()
    monkeypatch.setattr(DelayedFetch, "try_complete", lambda op: wrapper(op))
    return wrapper


class History:
    """One random history on a leader broker (id 0, replicas 0, 1, 2) with 1-5 partitions."""

    def __init__(self, seed: int, window: int | None, verbose: bool = False) -> None:
        self.rng = random.Random(seed)
        self.verbose = verbose
        self.tps = [TopicPartition("t", p) for p in range(self.rng.randint(1, 5))]
        # Small segments (rolls), and a PartitionChanges window small enough to fall back to the full walk.
        self.broker = Broker(partitions=self.tps, segment_bytes=self.rng.choice([400, 1000, 100_000]))
        self.rm = self.broker.rm
        if window is not None:
            self.rm = self.broker.rm = ReplicaManager(
                0, self.broker.config, self.broker.time, alter_partition_manager=self.broker.controller,
                partition_changes=PartitionChanges(window),
            )
            for tp in self.tps:
                self.rm.make_leader(tp, replicas=REPLICAS)
        self.epoch = 0  # every leadership change takes a new, higher leader epoch
        self.parked: list[tuple[DelayedFetch, Reply]] = []

    def say(self, *what: object) -> None:
        if self.verbose:
            print(*what)

    def leader(self, tp: TopicPartition) -> Partition | None:
        partition = self.rm.partitions.get(tp)
        return partition if partition is not None and partition.is_leader else None

    def live(self) -> list[tuple[DelayedFetch, Reply]]:
        self.parked = [(op, reply) for op, reply in self.parked if not op.is_completed]
        return self.parked

    def park(self) -> None:
        """A follower or consumer fetch over a random subset of the partitions, in random order."""
        rng = self.rng
        tps = rng.sample(self.tps, rng.randint(1, len(self.tps)))
        follower = rng.random() < 0.5
        infos = []
        for tp in tps:
            partition = self.leader(tp)
            epoch = partition.leader_epoch if partition is not None else 0
            current_epoch = rng.choice([-1, epoch, epoch, max(0, epoch - 1)])
            if follower:
                offset = partition.log.log_end_offset if partition is not None else 0
                last_epoch = partition.log.latest_epoch if partition is not None and rng.random() < 0.7 else -1
                infos.append((tp, PartitionData(offset, 0, rng.choice([60, 1 << 20]), current_epoch, last_epoch)))
            else:
                offset = partition.log.high_watermark if partition is not None else 0
                if partition is not None and rng.random() < 0.1:
                    offset = rng.randint(partition.log.log_start_offset, partition.log.log_end_offset)
                infos.append((tp, PartitionData(offset, 0, rng.choice([60, 250, 1 << 20]), current_epoch)))
        min_bytes = 1 if follower else rng.choice([1, 1, 150, 400, 1000])
        replica_id = rng.choice([1, 2]) if follower else -1
        isolation = FetchIsolation.LOG_END if follower else FetchIsolation.HIGH_WATERMARK
        reply = Reply()
        self.rm.fetch_messages(FetchParams(replica_id, 60_000, min_bytes, 10 << 20, isolation), infos, reply)
        self.say("fetch", replica_id, min_bytes, [(tp.partition, d.fetch_offset) for tp, d in infos],
                 "answered" if reply.done else "parked")
        if not reply.done:
            op = self.rm.fetch_purgatory.watchers(self.rm.operation_key(infos[0][0]))[-1]
            assert isinstance(op, DelayedFetch) and not op.is_completed
            self.parked.append((op, reply))

    def change(self) -> None:
        """A change of one partition, through the code path that makes it (which checks the purgatories only
        where the real one does)."""
        rng = self.rng
        tp = rng.choice(self.tps)
        partition = self.leader(tp)
        kind = rng.choice(
            ["append", "append", "append", "append_deferred", "hw", "hw", "follower_fetch", "roll", "truncate",
             "log_start", "epoch", "away", "back", "stop", "offline", "delete"]
        )
        if partition is None:
            kind = rng.choice(["back", "stop"])
        self.say("change", kind, tp.partition)
        if kind == "back" or kind == "epoch":
            self.epoch += 1
            self.rm.make_leader(tp, replicas=REPLICAS, leader_epoch=self.epoch, partition_epoch=self.epoch)
        elif kind == "stop":
            self.rm.stop_replica(tp)
        elif kind == "offline":
            self.rm.mark_partition_offline(tp)
        elif kind == "delete":
            self.rm.stop_replica(tp, delete=True)
            self.rm.make_leader(tp, replicas=REPLICAS, leader_epoch=self.epoch, partition_epoch=self.epoch)
            self.rm.stop_replica(tp)  # known again, not hosted: NOT_LEADER_OR_FOLLOWER from now on
        else:
            assert partition is not None
            log = partition.log
            if kind == "append":
                partition.append_records_to_leader([batch(size=rng.randint(30, 300))], 1)  # no check
            elif kind == "append_deferred":
                # ReplicaManager.appendRecords: the checks wait in the action queue until the end of the request.
                self.rm.append_records(30_000, 1, {tp: [batch(size=rng.randint(30, 300))]}, Reply())
            elif kind == "hw":
                log.maybe_increment_high_watermark(log.log_end_offset_metadata)  # no check
            elif kind == "follower_fetch":
                # A follower at the LEO: its fetch state moves the HW, which checks the purgatories at once.
                self.broker.fetch(rng.choice([1, 2]), log.log_end_offset, tp=tp, max_wait_ms=0, end_request=False)
            elif kind == "roll":
                if log.active_segment.size > 0:
                    log.roll()
            elif kind == "truncate":
                boundaries = [b.base_offset for segment in log.segments for b in segment.batches]
                log.truncate_to(rng.choice([*boundaries, log.high_watermark]))
            elif kind == "log_start":
                log.maybe_increment_log_start_offset(rng.randint(log.log_start_offset, log.high_watermark))
            else:  # away: leadership moves to broker 1, and nothing checks the purgatories
                self.epoch += 1
                partition.make_follower(1, self.epoch, (), REPLICAS, self.epoch)

    def check(self) -> None:
        rng = self.rng
        self.broker.time.sleep(rng.choice([0, 0, 1]))  # a completion's re-read happens at its own time
        how = rng.choice(["direct", "key", "key", "actions"])
        self.say("check", how)
        live = self.live()
        if how == "direct" and live:
            rng.choice(live)[0].try_complete()
        elif how == "key":
            self.rm.fetch_purgatory.check_and_complete(self.rm.operation_key(rng.choice(self.tps)))
        else:
            self.rm.try_complete_actions()

    def run(self, steps: int) -> None:
        for _ in range(steps):
            r = self.rng.random()
            if r < 0.3:
                self.park()
            elif r < 0.7:
                self.change()
            else:
                self.check()
        for op, _ in self.live():  # a last check of every parked fetch
            op.try_complete()


def random_history(seed: int, window: int | None = None, steps: int = 120, verbose: bool = False) -> History:
    history = History(seed, window, verbose)
    history.run(steps)
    return history


@pytest.mark.pure_only
@pytest.mark.parametrize("window", [None, 3])
def test_incremental_checks_answer_as_kafkas_full_walk(checked, window):
    for seed in range(150):
        random_history(seed, window)
    # The histories reach both answers, many times.
    assert checked.checks > 5000
    assert 500 < checked.completed < checked.checks / 2


def test_a_check_for_one_key_sees_a_change_of_another_not_yet_checked():
    # The action queue checks an append's key at the end of the request; a check for another key in between
    # must see it, as Kafka's walk does: 2 x 100 bytes on two partitions reach min_bytes 150 together.
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    broker = Broker(replicas=(0,), partitions=(tp0, tp1))
    params = FetchParams(-1, 500, 150, 1 << 20)
    reply = Reply()
    broker.rm.fetch_messages(params, [(tp0, PartitionData(0, 0, 1 << 20)), (tp1, PartitionData(0, 0, 1 << 20))], reply)
    assert not reply.done
    broker.rm.append_records(30_000, 1, {tp0: [batch(size=100)], tp1: [batch(size=100)]}, Reply())
    # ISR {0}: each append moved the HW; the checks wait in the action queue.
    broker.rm.fetch_purgatory.check_and_complete(broker.rm.operation_key(tp0))
    assert reply.done


def test_partition_changes_window_falls_back_to_the_full_walk():
    changes = PartitionChanges(window=2)
    tp = TopicPartition("t", 0)
    assert changes.since(0) == []
    for _ in range(4):
        changes.record(tp)
    assert changes.sequence == 4
    assert changes.since(0) is None  # dropped
    assert changes.since(2) == [tp, tp]


if __name__ == "__main__":
    random_history(int(sys.argv[1]), verbose=True)


def test_a_partition_left_empty_by_the_byte_limits_is_read_again_on_completion():
    # Only a partition that had nothing past its end may keep its earlier (empty) answer: one that was empty
    # because min one message no longer applied is read again, and the limits may differ by then.
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    broker = Broker(replicas=(0,), partitions=(tp0, tp1))
    broker.produce(batch(size=100), tp=tp0, acks=1)
    broker.produce(batch(size=100), tp=tp1, acks=1)
    reply = Reply()
    infos = [(tp0, PartitionData(0, 0, 1 << 20)), (tp1, PartitionData(0, 0, 50))]
    broker.rm.fetch_messages(FetchParams(-1, 500, 1000, 1 << 20), infos, reply)
    assert not reply.done  # 100 bytes from tp0; tp1's batch does not fit its 50 bytes after the first one
    broker.rm.partitions[tp0].log.truncate_to(0)
    broker.advance(500)  # expires: Kafka's onComplete reads both again
    results = dict(reply.value)
    assert results[tp0].size_in_bytes == 0
    assert [b.size_in_bytes for b in results[tp1].records] == [100]  # now the first non-empty partition
