"""A follower's fetcher against a real leader ``ReplicaManager``: truncation on a diverging epoch
(KIP-595), offset-out-of-range resets, fencing, and restarts -- ported from Kafka's
``AbstractFetcherThreadTest``.

The harness: broker 0 leads ``TP`` (its log written as the test says, epochs included); broker 1 follows
it with a ``ReplicaFetcherThread`` whose connection hands each Fetch to the leader's ``fetch_messages`` at
once (no wait, sessionless: every request is full). ``round()`` answers the request in flight.
"""

from __future__ import annotations

from collections.abc import Sequence

import simpy

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams
from kafkasim.broker.fetch_session import FetchResponse
from kafkasim.broker.log import Log
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope, Response, fetch_response_data_bytes
from kafkasim.network.observer import Observer
from kafkasim.server.replica_fetcher_manager import InitialFetchState
from kafkasim.server.replica_fetcher_thread import (
    ReplicaFetcherConfig,
    ReplicaFetcherThread,
    offset_truncation_offset,
)
from kafkasim.sim.clock import SimTime
from tests.clients.support import ScriptedConnection

TP = TopicPartition("topic", 0)


class Sink(Observer):
    pass


def batches(*spec: tuple[int, int]) -> list[RecordBatch]:
    """One-record batches ``(base offset, leader epoch)`` (Kafka's ``mkBatch``)."""
    return [RecordBatch(1, 100, 0, base + 1, "p", base, epoch) for base, epoch in spec]


def layout(log: Log) -> list[tuple[int, int]]:
    return [(b.base_offset, b.partition_leader_epoch) for segment in log.segments for b in segment.batches]


class Pair:
    def __init__(
        self,
        leader_log: Sequence[tuple[int, int]],
        leader_epoch: int,
        follower_log: Sequence[tuple[int, int]],
        follower_epoch: int,
        *,
        leader_log_start: int = 0,
        leader_hw: int | None = None,
        follower_hw: int = 0,
    ) -> None:
        self.env = simpy.Environment()
        time = SimTime(self.env)
        self.leader = ReplicaManager(0, KafkaConfig(), time, alter_partition_manager=ControllerAlterPartitionManager())
        self.leader.create_partition(TP, log_start_offset=leader_log_start)
        log = self.leader.partitions[TP].log
        # The leader's batches of older epochs as replicated, then its own epoch from its LEO
        # (Partition.makeLeader), then its batches of that epoch as appended by it.
        older = [(b, e) for b, e in leader_log if e < leader_epoch]
        own = [(b, e) for b, e in leader_log if e == leader_epoch]
        if older:
            log.append_as_follower(batches(*older))
        self.leader.make_leader(TP, replicas=[0, 1], leader_epoch=leader_epoch, partition_epoch=0)
        if own:
            log.append_as_follower(batches(*own))
        if leader_hw is not None:
            log.update_high_watermark(leader_hw)
        self.leader_log = log

        self.follower = ReplicaManager(1, KafkaConfig(), time, alter_partition_manager=ControllerAlterPartitionManager())
        self.follower.create_partition(TP)
        self.follower.make_follower(TP, leader=0, replicas=[0, 1], leader_epoch=follower_epoch, partition_epoch=0)
        self.log = self.follower.partitions[TP].log
        if follower_log:
            self.log.append_as_follower(batches(*follower_log))
        self.log.maybe_update_high_watermark(follower_hw)
        self.sent: list[RequestEnvelope] = []
        self.thread = ReplicaFetcherThread(
            self.env, "follower", 1, 0, ReplicaFetcherConfig(wait_max_ms=0), self.follower,
            lambda _broker: ScriptedConnection(self.sent), lambda: 0.0, lambda: 0.0, IdSource(), Sink(),
        )
        self.thread.add_partitions({TP: InitialFetchState(0, follower_epoch)})
        self.answered = 0
        self.thread.start()
        self.env.run(until=1)  # the first fetch goes out

    def last_fetched_epoch(self) -> int:
        envelope = self.sent[-1]
        return dict(envelope.body.fetch_infos)[TP].last_fetched_epoch

    def round(self) -> None:
        """The leader answers the fetch in flight (the fetcher processes it and sends the next)."""
        envelope = self.sent[self.answered]
        self.answered += 1
        replies: list = []
        self.leader.fetch_messages(FetchParams(1, 0, 1, 10 << 20), envelope.body.fetch_infos, replies.append)
        response = FetchResponse(Errors.NONE, 0, replies[0])
        envelope.set_response(Response(response, fetch_response_data_bytes(response), len(response.responses)))
        envelope.client_receive_ms = envelope.end_ms = self.env.now
        envelope.response_received = envelope.response_sent = True
        assert envelope.on_response is not None
        envelope.on_response(envelope)

    def until_equal(self, max_rounds: int = 10) -> int:
        for rounds in range(1, max_rounds + 1):
            self.round()
            if layout(self.log) == layout(self.leader_log):
                return rounds
        raise AssertionError(f"not reconciled: {layout(self.log)} vs {layout(self.leader_log)}")


def test_follower_sends_its_last_fetched_epoch() -> None:
    """KIP-595: every follower fetch carries ``lastFetchedEpoch``, the log's latest epoch."""
    pair = Pair([(0, 0), (1, 2)], 2, [(0, 0), (1, 2)], 2)
    assert pair.last_fetched_epoch() == 2


def test_diverging_epochs() -> None:
    """AbstractFetcherThreadTest.testDivergingEpochs: follower [0@0, 1@2, 2@4] (epoch 5), leader
    [0@0, 1@2, 2@5]: the first fetch diverges and truncates to 2 (last fetched epoch 2), then the follower
    copies the leader's batch of epoch 5."""
    pair = Pair([(0, 0), (1, 2), (2, 5)], 5, [(0, 0), (1, 2), (2, 4)], 5)
    assert pair.log.log_end_offset == 3 and pair.last_fetched_epoch() == 4
    pair.round()
    assert pair.log.log_end_offset == 2 and pair.last_fetched_epoch() == 2
    assert pair.thread.truncations == 1
    pair.until_equal()
    assert pair.last_fetched_epoch() == 5


def test_truncate_on_fetch_does_not_process_partition_data() -> None:
    """AbstractFetcherThreadTest.testTruncateOnFetchDoesNotProcessPartitionData: the diverging response
    truncates (follower LEO 6 -> 3) but its HW is not applied (the follower keeps 1); the next fetches bring
    the leader's data and HW (LEO 5, HW 4), with one truncation in all."""
    pair = Pair(
        [(0, 0), (1, 0), (2, 2), (3, 5), (4, 5)], 5,
        [(0, 0), (1, 0), (2, 2), (3, 4), (4, 4), (5, 4)], 5,
        leader_hw=4, follower_hw=1,
    )
    pair.round()
    assert pair.thread.truncations == 1
    assert pair.log.log_end_offset == 3 and pair.log.high_watermark == 1
    pair.until_equal()
    assert pair.thread.truncations == 1
    assert pair.log.log_end_offset == 5 and pair.log.high_watermark == 4
    assert pair.last_fetched_epoch() == 5


def test_walks_back_one_epoch_per_round_trip() -> None:
    """AbstractFetcherThread.getOffsetTruncationState's intermediate case: the leader answers with an epoch
    the follower never had (1): the follower first truncates to the end of its largest epoch below it (0)
    and asks again with that epoch; the leader agrees, and data flows."""
    # Leader: epochs 0 (offsets 0-1), 1 (2-3), 4 (4-). Follower: epochs 0 (0-1), 2 (2), 3 (3-4).
    pair = Pair([(0, 0), (1, 0), (2, 1), (3, 1), (4, 4)], 4, [(0, 0), (1, 0), (2, 2), (3, 3), (4, 3)], 4)
    pair.round()
    # Leader: epoch 3 -> its largest epoch <= 3 is 1, ending at 4. The follower has no epoch 1: its largest
    # epoch <= 1 is 0, ending at 2 -> truncate to 2, the next fetch carries epoch 0.
    assert pair.log.log_end_offset == 2 and pair.last_fetched_epoch() == 0
    pair.round()
    # Epoch 0 at offset 2 agrees with the leader (its epoch 0 ends at 2): no divergence, data flows.
    assert pair.thread.truncations == 1
    pair.until_equal()
    assert layout(pair.log) == [(0, 0), (1, 0), (2, 1), (3, 1), (4, 4)]


def test_offset_truncation_offset_cases() -> None:
    """AbstractFetcherThread.getOffsetTruncationState, case by case, on a follower log with epochs
    0@0, 2@50 and LEO 80."""
    log = Pair([(0, 0)], 0, [], 0).log
    log.append_as_follower([RecordBatch(50, 5000, 0, 1, "p", 0, 0), RecordBatch(30, 3000, 0, 2, "p", 50, 2)])
    assert log.log_end_offset == 80
    assert offset_truncation_offset(log, 2, 60) == 60  # same epoch: min(our end 80, 60, LEO)
    assert offset_truncation_offset(log, 1, 60) == 50  # we lack epoch 1: end of our epoch 0
    assert offset_truncation_offset(log, 1, 40) == 50  # ... whatever the leader's end (next round decides)
    assert offset_truncation_offset(log, 0, 40) == 40  # same epoch 0: min(50, 40)
    assert offset_truncation_offset(log, -1, 30) == 30  # the leader knows no epochs: its end offset
    assert offset_truncation_offset(log, 3, -1) == 80  # undefined end: keep the fetch offset


def test_truncation_on_fetch_skipped_if_partition_removed() -> None:
    """AbstractFetcherThreadTest.testTruncationOnFetchSkippedIfPartitionRemoved: a diverging answer for a
    partition removed from the thread while the fetch was out truncates nothing."""
    pair = Pair([(0, 0), (1, 2), (2, 5)], 5, [(0, 0), (1, 2), (2, 4)], 5)
    pair.thread.remove_partitions([TP])
    pair.round()
    assert pair.thread.truncations == 0 and pair.log.log_end_offset == 3


def test_answer_for_a_partition_truncated_and_re_added_meanwhile_is_ignored() -> None:
    """AbstractFetcherThread.processFetchRequest: a partition removed and re-added (new leader epoch) and
    truncated while its fetch was out is processed only if it is still at the offset it asked for; here it
    is not, so the answer's records are not appended at the wrong place."""
    pair = Pair([(0, 0), (1, 0), (2, 0)], 0, [(0, 0), (1, 0)], 0)
    pair.thread.remove_partitions([TP])
    pair.log.truncate_to(1)
    pair.thread.add_partitions({TP: InitialFetchState(0, 0)})
    pair.round()  # answers the fetch at offset 2 with batch 2
    assert layout(pair.log) == [(0, 0)]
    pair.until_equal()


def test_follower_fetch_out_of_range_high() -> None:
    """AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh: the leader's log shrinks below the
    follower's LEO without an epoch change: OFFSET_OUT_OF_RANGE, and the follower truncates to the leader's
    end (0), its log start and HW with it."""
    pair = Pair([(0, 0), (1, 2), (2, 4)], 4, [(0, 0), (1, 2), (2, 4)], 4, leader_hw=2)
    pair.round()
    assert pair.log.log_end_offset == 3
    pair.leader_log.truncate_fully_and_start_at(0)
    pair.round()
    assert pair.log.log_end_offset == 0 and pair.log.log_start_offset == 0 and pair.log.high_watermark == 0


def test_follower_fetch_out_of_range_low() -> None:
    """AbstractFetcherThreadTest.testFollowerFetchOutOfRangeLow: the follower's LEO (1) is below the
    leader's log start (2): it empties its log, starts at 2 and then copies the leader."""
    pair = Pair([(2, 4)], 4, [(0, 0)], 4, leader_log_start=2, leader_hw=3)
    pair.round()
    assert pair.log.log_start_offset == 2 and layout(pair.log) == []
    pair.until_equal()
    assert pair.log.log_start_offset == 2 and pair.log.log_end_offset == 3 and pair.log.high_watermark == 3


def test_fenced_fetch_removes_the_partition() -> None:
    """AbstractFetcherThreadTest.testFencedFetch: the leader's epoch moved past the follower's (which has
    not learned it): FENCED_LEADER_EPOCH removes the partition from the thread (onPartitionFenced) until
    new metadata adds it again."""
    pair = Pair([(0, 0), (1, 0)], 0, [], 0)
    pair.until_equal()
    pair.leader.make_leader(TP, replicas=[0, 1], leader_epoch=1, partition_epoch=1)
    pair.round()
    assert TP not in pair.thread.partitions


def test_unknown_leader_epoch_while_fetching_backs_off() -> None:
    """AbstractFetcherThreadTest.testUnknownLeaderEpochWhileFetching: the follower knows a newer epoch than
    the leader (the leader has not applied the metadata yet): UNKNOWN_LEADER_EPOCH, the partition is
    delayed and kept."""
    pair = Pair([(0, 0)], 0, [], 1)
    pair.round()
    fp = pair.thread.partitions[TP]
    assert fp.delayed_until > pair.env.now


def test_restart_keeps_the_log_and_truncates_on_divergence() -> None:
    """Kafka 4.x restart (ReplicaManager.initialFetchOffset = LEO for a log with epochs): a follower holding
    an unreplicated tail of the old leader (offset 2, epoch 0) restarts at its LEO with last fetched epoch
    0; the new leader (epoch 1 from offset 2) answers a diverging epoch, the tail goes, the leader's
    batch comes. The old restart truncated to the HW (1) and fetched [1, 2) again."""
    pair = Pair([(0, 0), (1, 0), (2, 1)], 1, [(0, 0), (1, 0), (2, 0)], 1, follower_hw=1)
    pair.thread.crash()
    pair.thread.restart()
    assert pair.log.log_end_offset == 3  # not truncated to the HW
    pair.answered = len(pair.sent) - 1  # the fetch lost with the crash is never answered
    assert pair.last_fetched_epoch() == 0
    pair.round()
    assert pair.thread.truncations == 1 and pair.log.log_end_offset == 2
    pair.until_equal()


def test_restart_of_a_log_without_epochs_truncates_to_its_hw() -> None:
    """AbstractFetcherThread.truncateToHighWatermark: a log without any leader epoch (only reachable for a
    log written without epochs) still truncates to its HW on restart."""
    pair = Pair([(0, 0)], 0, [], 0)
    pair.log.append_as_follower([RecordBatch(1, 100, 0, 9, "p", 0, -1), RecordBatch(1, 100, 0, 10, "p", 1, -1)])
    pair.log.maybe_update_high_watermark(1)
    assert pair.log.latest_epoch < 0
    pair.thread.crash()
    pair.thread.restart()
    assert pair.log.log_end_offset == 1
