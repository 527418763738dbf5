"""Whole runs: every fetch request a replica fetcher thread or a consumer builds from its marks of what changed
is the one Kafka's walk over every partition builds.

The reference is the code the fetchers ran before (Kafka's ``ReplicaFetcherThread.buildFetch`` and
``AbstractFetch.prepareFetchRequests``), kept here: every partition ready to fetch, in the fetcher's order,
``add``ed to a ``FetchSessionHandler.Builder`` over a copy of the session, then ``build``. Each build in
the run is checked against it (request partitions and their order, partitions to forget, session
partitions and order, metadata), and so is the session after it; and each "no partition ready" wait
against the first delayed partition found by a walk. The runs: random scenarios with faults (crashes and
restarts, pauses, dropped and delayed messages -- request timeouts, session errors -- slow disks, tiny
segments and retention) from ``benchmarks/random_scenarios.py``, and the shipped cluster scenarios; the
counters at the end show the histories covered what they must (appends, truncations, log start moves,
backoffs, full requests after errors, partitions leaving and rejoining the session).
"""

from __future__ import annotations

import math
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import simpy

from kafkasim import load_scenario
from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import NO_EPOCH, EpochEndOffset, LogReadResult, PartitionData
from kafkasim.broker.fetch_session import FetchResponse
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.clients.consumer import Consumer, NodeFetch
from kafkasim.network.fetch_session_handler import FetchSessionHandler, FetchSessionRequestData
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope, Response, fetch_response_data_bytes
from kafkasim.network.observer import Observer
from kafkasim.run import run_scenario
from kafkasim.server.replica_fetcher_manager import InitialFetchState
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig, ReplicaFetcherThread
from kafkasim.sim.clock import SimTime
from tests.clients.support import ScriptedConnection

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import random_scenarios  # noqa: E402

# Replaces methods of ReplicaFetcherThread and Consumer to check every request they build; compiled callers never see a replaced method.
pytestmark = pytest.mark.pure_only

# Seeds 1-30 (1-3 simulated s each) and two that run past the first retention pass (30 s).
SEEDS = [*range(1, 31), 31, 43]
CLUSTER_SCENARIOS = ("cluster_slow_broker.yaml", "nic_bound_cluster.yaml", "more_partitions_same_bytes.yaml")


def shape(data: FetchSessionRequestData) -> tuple[object, ...]:
    return (list(data.to_send.items()), list(data.to_forget), list(data.session_partitions.items()), data.metadata)


def copy_of(handler: FetchSessionHandler) -> FetchSessionHandler:
    clone = FetchSessionHandler(handler.node)
    clone.next_metadata = handler.next_metadata
    clone.session_partitions = dict(handler.session_partitions)
    # The clone's session order ranks: only its own Builder.build uses them, rebuilt from its map.
    clone._reset_session_order()
    return clone


def kafka_follower_walk(thread: ReplicaFetcherThread, handler: FetchSessionHandler, now: float) -> FetchSessionRequestData:
    """ReplicaFetcherThread.buildFetch as the thread ran it before: every partition, delayed ones left out."""
    builder = handler.new_builder(copy_session_partitions=False)
    for tp, fp in thread.partitions.items():
        if fp.delayed_until > now:
            continue
        log = fp.log
        last_epoch = log.latest_epoch
        builder.add(tp, PartitionData(log.log_end_offset, log.log_start_offset, thread.config.max_bytes,
                                      fp.leader_epoch, last_epoch if last_epoch >= 0 else NO_EPOCH))
    return builder.build()


def kafka_consumer_walk(consumer: Consumer, node: NodeFetch, handler: FetchSessionHandler) -> FetchSessionRequestData:
    """AbstractFetch.prepareFetchRequests as Kafka runs it: every partition fetchable from the node (its
    leader per the consumer's metadata, position validated), walked in the consumer's order."""
    builder = handler.new_builder()
    for tp in consumer.partitions:
        if not consumer._wanted(node, tp):
            continue
        builder.add(tp, PartitionData(consumer.positions[tp], -1, consumer.config.max_partition_fetch_bytes))
    return builder.build()


def record(counts: Counter[str], prefix: str, got: FetchSessionRequestData, full: bool) -> None:
    counts[f"{prefix} full"] += full
    counts[f"{prefix} incremental"] += not full
    if not full:
        counts[f"{prefix} incremental with partitions"] += bool(got.to_send)
        counts[f"{prefix} incremental forgetting"] += bool(got.to_forget)
        counts[f"{prefix} incremental empty"] += not got.to_send and not got.to_forget


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every fetcher build in the runs that follow is compared with Kafka's walk; yields the counters."""
    counts: Counter[str] = Counter()
    follower_build = ReplicaFetcherThread.build_fetch
    consumer_build = Consumer.build_fetch
    next_ready = ReplicaFetcherThread._next_ready

    def check_follower(self: ReplicaFetcherThread, now: float) -> FetchSessionRequestData:
        clone = copy_of(self.fetch_session)
        full = clone.next_metadata.is_full
        expected = kafka_follower_walk(self, clone, now)
        got = follower_build(self, now)
        assert shape(got) == shape(expected), (self.name, now)
        assert list(self.fetch_session.session_partitions.items()) == list(clone.session_partitions.items())
        record(counts, "follower", got, full)
        counts["follower delayed partitions at a build"] += sum(fp.delayed_until > now for fp in self.partitions.values())
        return got

    def check_next_ready(self: ReplicaFetcherThread, now: float) -> float:
        expected = min((fp.delayed_until for fp in self.partitions.values() if fp.delayed_until > now), default=math.inf)
        got = next_ready(self, now)
        assert got == expected, (self.name, now)
        counts["follower waits for a delayed partition"] += got < math.inf
        return got

    def check_consumer(self: Consumer, node: NodeFetch) -> FetchSessionRequestData:
        clone = copy_of(node.session)
        full = clone.next_metadata.is_full
        expected = kafka_consumer_walk(self, node, clone)
        got = consumer_build(self, node)
        assert shape(got) == shape(expected), (self.name, node.node_id)
        assert list(node.session.session_partitions.items()) == list(clone.session_partitions.items())
        record(counts, "consumer", got, full)
        return got

    def counting(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return method(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(ReplicaFetcherThread, "build_fetch", check_follower)
    monkeypatch.setattr(ReplicaFetcherThread, "_next_ready", check_next_ready)
    monkeypatch.setattr(Consumer, "build_fetch", check_consumer)
    for name in ("_handle_out_of_range", "_on_node_disconnect", "restart", "_delay", "_truncate_on_fetch_response",
                 "remove_partitions"):
        monkeypatch.setattr(ReplicaFetcherThread, name, counting(f"follower {name}", getattr(ReplicaFetcherThread, name)))
    original_truncate = ReplicaFetcherThread._truncate_on_fetch_response

    def truncate_on_fetch_response(self: ReplicaFetcherThread, diverging: Any) -> None:
        before = self.truncations
        original_truncate(self, diverging)
        counts["follower truncated on a diverging epoch"] += self.truncations - before

    monkeypatch.setattr(ReplicaFetcherThread, "_truncate_on_fetch_response", truncate_on_fetch_response)
    original_add = ReplicaFetcherThread.add_partitions

    def add_partitions(self: ReplicaFetcherThread, partitions: Any) -> None:
        kept = {tp: self.partitions[tp] for tp in partitions if tp in self.partitions}
        original_add(self, partitions)
        for tp, fp in kept.items():
            counts["follower re-added keeping its state" if self.partitions[tp] is fp else "follower re-added afresh"] += 1

    monkeypatch.setattr(ReplicaFetcherThread, "add_partitions", add_partitions)
    original_delete = ReplicaFetcherThread.delete_old_segments

    def delete_old_segments(self: ReplicaFetcherThread) -> None:
        starts = [fp.log.log_start_offset for fp in self.partitions.values()]
        original_delete(self)
        counts["follower log start moved by retention"] += starts != [fp.log.log_start_offset for fp in self.partitions.values()]

    monkeypatch.setattr(ReplicaFetcherThread, "delete_old_segments", delete_old_segments)
    yield counts


def test_random_scenarios_build_kafkas_requests(checked: Counter[str]) -> None:
    for seed in SEEDS:
        run_scenario(random_scenarios.load(seed))
    # The histories covered what the marks must follow.
    # What whole runs reach (follower timeouts take 30 s and per-partition errors need leadership moves:
    # the scripted histories below take those paths).
    for what in (
        "follower full", "follower incremental with partitions", "follower incremental empty",
        "follower restart", "follower log start moved by retention",
        "consumer full", "consumer incremental with partitions", "consumer incremental empty",
    ):
        assert checked[what] > 0, (what, dict(checked))


@pytest.mark.parametrize("name", CLUSTER_SCENARIOS)
def test_cluster_scenarios_build_kafkas_requests(checked: Counter[str], name: str) -> None:
    scenario = load_scenario(ROOT / "scenarios" / name)
    run_scenario(scenario.model_copy(update={"duration": min(scenario.duration, 3_000.0)}))
    assert checked["follower incremental with partitions"] > 0
    assert checked["consumer incremental with partitions"] > 0


# --- scripted histories: a leader answering at random, so that every path of the fetcher is taken ---------


class Sink(Observer):
    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.response = None

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        pass


def _result(rng: random.Random, leo: int, log_start: int, epoch: int) -> LogReadResult:
    """A random answer for one partition of a follower (or consumer) at ``leo``."""
    op = rng.random()
    if op < 0.55:
        records = []
        next_offset = leo
        for _ in range(rng.randrange(3)):
            records.append(RecordBatch(rng.randrange(1, 4), 100, 0, 0, "p", next_offset, epoch))
            next_offset = records[-1].next_offset
        info = FetchDataInfo(LogOffsetMetadata(leo), records, 100 * len(records))
        hw = rng.randrange(0, next_offset + 1)
        start = log_start + (rng.random() < 0.2) * rng.randrange(0, max(1, hw - log_start + 1))
        return LogReadResult(info, Errors.NONE, None, hw, start, next_offset)
    empty = FetchDataInfo(LogOffsetMetadata(-1), [], 0)
    if op < 0.65 and leo > 0:
        # A diverging epoch (KIP-595): the follower truncates, and walks back an epoch if it must.
        diverging = EpochEndOffset(Errors.NONE, rng.randrange(-1, 3), rng.randrange(-1, leo + 1))
        return LogReadResult(empty, Errors.NONE, diverging, rng.randrange(0, leo + 1), log_start, leo)
    if op < 0.75:
        # The leader's log ends before ours (truncate to it), or starts after it (start over there).
        if leo > 0 and rng.random() < 0.5:
            return LogReadResult(empty, Errors.OFFSET_OUT_OF_RANGE, None, -1, 0, rng.randrange(leo))
        return LogReadResult(empty, Errors.OFFSET_OUT_OF_RANGE, None, -1, leo + rng.randrange(0, 5), leo + 10)
    return LogReadResult(empty, rng.choice((Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                            Errors.UNKNOWN_LEADER_EPOCH, Errors.FENCED_LEADER_EPOCH)))


class Leader:
    """Answers each request sent on the fetcher's connections, at random: a session error, no answer (the
    request times out), or an answer for some session partitions (sometimes one outside the session, or a
    full answer missing one: the session refuses those)."""

    def __init__(self, env: simpy.Environment, rng: random.Random, sent: list[RequestEnvelope],
                 session_of: Callable[[], FetchSessionHandler], state_of: Callable[[TopicPartition], tuple[int, int, int]],
                 universe: list[TopicPartition]) -> None:
        self.env, self.rng, self.sent, self.session_of, self.state_of = env, rng, sent, session_of, state_of
        self.universe = universe
        self.seen = 0
        self.session_ids = 0

    def poll(self) -> None:
        rng = self.rng
        while self.seen < len(self.sent):
            envelope = self.sent[self.seen]
            self.seen += 1
            if rng.random() < 0.1:
                continue  # never answered: the request times out
            delay = rng.choice((0.0, 0.5, 3.0, 20.0))
            self.env.timeout(delay).callbacks.append(lambda _e, envelope=envelope: self.deliver(envelope))

    def deliver(self, envelope: RequestEnvelope) -> None:
        rng = self.rng
        metadata = envelope.body.metadata
        op = rng.random()
        if op < 0.04:
            response = FetchResponse(Errors.FETCH_SESSION_ID_NOT_FOUND, 0, [])
        elif op < 0.07:
            response = FetchResponse(Errors.INVALID_FETCH_SESSION_EPOCH, 0, [])
        else:
            if metadata.is_full:
                tps = [tp for tp, _ in envelope.body.fetch_infos]
                if rng.random() < 0.85:
                    self.session_ids += 1
                    session_id = self.session_ids
                else:
                    session_id = 0
                if tps and rng.random() < 0.03:
                    tps.pop()
            else:
                session = list(self.session_of().session_partitions)
                tps = rng.sample(session, rng.randrange(len(session) + 1)) if session and rng.random() < 0.7 else []
                session_id = metadata.session_id if rng.random() < 0.97 else 0
            if rng.random() < 0.02:
                tps.append(rng.choice(self.universe))
            response = FetchResponse(Errors.NONE, session_id,
                                     [(tp, _result(rng, *self.state_of(tp))) for tp in dict.fromkeys(tps)])
        envelope.set_response(Response(response, fetch_response_data_bytes(response), len(response.responses)))
        envelope.client_receive_ms = self.env.now
        envelope.end_ms = self.env.now
        envelope.response_received = envelope.response_sent = True
        assert envelope.on_response is not None
        envelope.on_response(envelope)


def _universe(rng: random.Random) -> list[TopicPartition]:
    return list(dict.fromkeys(TopicPartition(rng.choice("ab"), rng.randrange(8)) for _ in range(rng.randrange(1, 10))))


def follower_history(seed: int) -> None:
    rng = random.Random(seed)
    env = simpy.Environment()
    universe = _universe(rng)
    rm = ReplicaManager(1, KafkaConfig(), SimTime(env), alter_partition_manager=ControllerAlterPartitionManager())
    for tp in universe:
        rm.create_partition(tp, log_config=LogConfig(segment_bytes=rng.choice((350, 1 << 20)), retention_bytes=rng.choice((-1, 300, 300))))
        rm.make_follower(tp, leader=0, replicas=[0, 1], leader_epoch=rng.randrange(3), partition_epoch=0)
    sent: list[RequestEnvelope] = []
    config = ReplicaFetcherConfig(backoff_ms=rng.choice((0, 7, 50, 1000)))
    thread = ReplicaFetcherThread(
        env, "follower", 1, 0, config, rm, lambda _broker: ScriptedConnection(sent),
        lambda: rng.choice((0.0, 0.0, 2.0)), lambda: 0.0, IdSource(), Sink(),
    )

    def state_of(tp: TopicPartition) -> tuple[int, int, int]:
        log = rm.get_partition_or_exception(tp).log
        return log.log_end_offset, log.log_start_offset, rng.randrange(3)

    leader = Leader(env, rng, sent, lambda: thread.fetch_session, state_of, universe)
    thread.add_partitions({tp: InitialFetchState(0, rng.randrange(3)) for tp in universe if rng.random() < 0.8})
    thread.start()

    def driver() -> Iterator[Any]:
        while True:
            yield env.timeout(rng.choice((0.5, 1.0, 5.0, 50.0)))
            leader.poll()
            op = rng.random()
            if op < 0.03:
                tps = rng.sample(universe, rng.randrange(1, len(universe) + 1))
                thread.add_partitions({tp: InitialFetchState(0, rng.randrange(3)) for tp in tps})
                thread.run_or_defer(thread._maybe_fetch)
            elif op < 0.05:
                thread.remove_partitions(rng.sample(universe, rng.randrange(1, len(universe) + 1)))
            elif op < 0.0503 and not thread.crashed:  # rare: a crash ends the 30 s wait for a timeout
                thread.crash()
                env.timeout(rng.choice((1.0, 100.0))).callbacks.append(lambda _e: thread.restart())
            elif op < 0.0506 and not thread.crashed and not thread.paused:
                thread.pause()
                env.timeout(rng.choice((1.0, 40_000.0))).callbacks.append(lambda _e: thread.resume())
            elif op < 0.15 and not thread.crashed:
                thread.run_or_defer(thread.delete_old_segments)

    env.process(driver())
    env.run(until=rng.choice((2_000.0, 80_000.0)))


def consumer_history(seed: int) -> None:
    rng = random.Random(seed)
    env = simpy.Environment()
    universe = _universe(rng)
    sent: list[RequestEnvelope] = []
    config = ConsumerClientConfig("c1", 1, 500, 1024 * 1024, 50 * 1024 * 1024,
                                  request_timeout_ms=rng.choice((100, 30_000)))
    consumer = Consumer(env, config, universe, lambda _broker: ScriptedConnection(sent), IdSource(), Sink())
    node = consumer._nodes[0]

    def state_of(tp: TopicPartition) -> tuple[int, int, int]:
        return consumer.positions.get(tp, 0), 0, 0

    leader = Leader(env, rng, sent, lambda: node.session, state_of, universe)
    consumer.start()

    def driver() -> Iterator[Any]:
        while True:
            yield env.timeout(rng.choice((0.5, 1.0, 5.0, 50.0)))
            leader.poll()

    env.process(driver())
    env.run(until=2_000.0)


@pytest.mark.parametrize("seed", range(40))
def test_scripted_follower_and_consumer_histories_build_kafkas_requests(checked: Counter[str], seed: int) -> None:
    follower_history(seed)
    consumer_history(seed)
    assert checked["follower full"] > 0 and checked["consumer full"] > 0


def test_scripted_histories_cover_every_path(checked: Counter[str]) -> None:
    for seed in range(40, 60):
        follower_history(seed)
        consumer_history(seed)
    for what in (
        "follower full", "follower incremental with partitions", "follower incremental forgetting",
        "follower incremental empty", "follower _handle_out_of_range", "follower _on_node_disconnect",
        "follower restart", "follower _delay", "follower log start moved by retention",
        "follower delayed partitions at a build", "follower waits for a delayed partition",
        "follower _truncate_on_fetch_response", "follower truncated on a diverging epoch",
        "follower remove_partitions", "follower re-added keeping its state", "follower re-added afresh",
        "consumer full", "consumer incremental with partitions", "consumer incremental empty",
    ):
        assert checked[what] > 0, (what, dict(checked))
