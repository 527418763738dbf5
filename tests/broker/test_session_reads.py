"""An incremental session fetch that reads only the partitions that changed answers as Kafka's, which reads
every partition of the session (``IncrementalFetchContext.foreachPartition`` -> ``fetchMessages``).

Property: two identical brokers run the same random history -- one reads sessions the fast way
(``SessionReader.fetch_session_messages``, quiet followers' replicas on the session's ``FetchClock``, a
``SessionDelayedFetch`` watching the session's key group), the other the reference way (every session
partition read, a plain ``DelayedFetch`` watching every key). The history has two followers and a consumer,
each with a fetch session (``FetchSessionHandler``) over several partitions; produces with acks all and 1
(checks deferred to the end of the request or not), rolls, HW moves, leadership moving away and back and
epoch bumps, brokers fenced and unfenced, ISR shrinks (a short replica.lag.time.max.ms) and expansions with AlterPartition answered at
once or later, log start moves, request timeouts (full requests), duplicate requests of a session, session
evictions (one-slot caches), expirations. After every step the two must agree on every response (session
error, session id, the partitions sent and every field of each), on every replica's fetch state
(``lastCaughtUpTimeMs``, ``lastFetchTimeMs``, LEO, log start), the HW, LEO and ISR of every partition, and
the purgatories' PurgatorySize and NumDelayedOperations.

``uv run python -m tests.broker.test_session_reads SEED`` prints one history's steps.
"""

from __future__ import annotations

import random
import sys

import pytest

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, LogReadResult, PartitionData
from kafkasim.broker.fetch_session import (
    FetchManager,
    FetchResponse,
    FetchSessionCache,
    IncrementalFetchContext,
)
from kafkasim.broker.log import FetchIsolation
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.broker.session_reads import session_reader
from kafkasim.broker.session_reads.session_reader import SessionReader
from kafkasim.network.fetch_session_handler import FetchSessionHandler
from kafkasim.timer import ManualTime

from .support import batch

REPLICAS = [0, 1, 2]
FETCHERS = (1, 2, -1)  # two followers and a consumer
LAZY_OF: dict[int, bool] = {}  # id(ReplicaManager) -> whether its world reads sessions the fast way


class World:
    """One broker (id 0) leading ``n`` partitions, with its fetch session cache."""

    def __init__(self, n: int, lazy: bool, *, segment_bytes: int, lag_ms: int, slots: int, auto: bool) -> None:
        self.time = ManualTime(0)
        self.controller = ControllerAlterPartitionManager(auto_complete=auto)
        config = KafkaConfig(log=LogConfig(segment_bytes=segment_bytes), replica_lag_time_max_ms=lag_ms)
        self.rm = ReplicaManager(0, config, self.time, alter_partition_manager=self.controller)
        self.reader = SessionReader(self.rm) if lazy else None
        LAZY_OF[id(self.rm)] = lazy
        self.tps = [TopicPartition("t", p) for p in range(n)]
        for tp in self.tps:
            self.rm.make_leader(tp, replicas=REPLICAS)
        cache = FetchSessionCache.create(random.Random(5), max_entries=slots * 8, eviction_ms=10_000)
        self.manager = FetchManager(self.time, cache)
        self.handlers = {fetcher: FetchSessionHandler(0) for fetcher in FETCHERS}
        # Each fetcher's position per partition (a follower's LEO, a consumer's position).
        self.offsets = {fetcher: dict.fromkeys(self.tps, 0) for fetcher in FETCHERS}
        self.in_flight: dict[int, list] = {fetcher: [] for fetcher in FETCHERS}
        self.log: list = []  # everything observable, in order

    def fetch(self, fetcher: int, wanted: list[TopicPartition], min_bytes: int, max_wait: int, dup: bool) -> None:
        handler = self.handlers[fetcher]
        builder = handler.new_builder()
        for tp in wanted:
            partition = self.rm.partitions.get(tp)
            epoch = partition.leader_epoch if partition is not None else -1
            builder.add(tp, PartitionData(self.offsets[fetcher][tp], 0, 250 if tp.partition % 2 else 1 << 20, epoch))
        data = builder.build()
        isolation = FetchIsolation.LOG_END if fetcher >= 0 else FetchIsolation.HIGH_WATERMARK
        params = FetchParams(fetcher, max_wait, min_bytes, 10 << 20, isolation)
        for _ in range(2 if dup else 1):
            self._send(fetcher, handler, data, params)

    def _send(self, fetcher, handler, data, params) -> None:
        context = self.manager.new_context(data.metadata, fetcher >= 0, data.fetch_infos, data.to_forget)
        record = self.log.append

        def respond(results) -> None:
            response: FetchResponse = context.update_and_generate_response_data(results)
            record(("response", fetcher, response.error, response.session_id, [_fields(tp, r) for tp, r in response.responses]))
            if handler.handle_response(response):
                for tp, result in response.responses:
                    self._apply(fetcher, tp, result)

        if self.reader is not None and isinstance(context, IncrementalFetchContext):
            self.reader.fetch_session_messages(params, context, respond)
        else:
            infos = context.fetch_infos()
            if not infos:
                respond(())
            else:
                self.rm.fetch_messages(params, infos, respond)
        self.rm.try_complete_actions()

    def _apply(self, fetcher: int, tp: TopicPartition, result: LogReadResult) -> None:
        offsets = self.offsets[fetcher]
        if result.error is not Errors.NONE or result.diverging_epoch is not None:
            partition = self.rm.partitions.get(tp)
            if partition is not None and result.diverging_epoch is None:
                offsets[tp] = min(offsets[tp], partition.log.high_watermark)
            elif result.diverging_epoch is not None:
                offsets[tp] = min(offsets[tp], result.diverging_epoch.end_offset)
            return
        records = result.info.records
        if records:
            offsets[tp] = records[-1].next_offset

    def state(self) -> list:
        out = []
        for tp in self.tps:
            partition = self.rm.partitions.get(tp)
            if partition is None:
                out.append((tp, None))
                continue
            log = partition.log
            replicas = [
                (r.broker_id, r.log_end_offset, r.log_start_offset, r.last_caught_up_time_ms, r.last_fetch_time_ms,
                 r.last_fetch_leader_log_end_offset)
                for r in partition.remote_replicas
            ]
            out.append((tp, partition.leader_replica_id, partition.leader_epoch, log.high_watermark,
                        log.log_end_offset, log.log_start_offset, sorted(partition.isr),
                        sorted(partition.maximal_isr), replicas))
        fp = self.rm.fetch_purgatory
        pp = self.rm.produce_purgatory
        out.append(("purgatories", fp.watched, fp.num_delayed, pp.watched, pp.num_delayed))
        return out


def _fields(tp: TopicPartition, r: LogReadResult) -> tuple:
    return (tp, r.error, r.high_watermark, r.log_start_offset, r.log_end_offset, r.last_stable_offset,
            r.info.size_in_bytes, [b.base_offset for b in r.info.records], r.diverging_epoch, r.fetch_time_ms)


class History:
    def __init__(self, seed: int, verbose: bool = False) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        kwargs = dict(
            segment_bytes=rng.choice([400, 1000, 100_000]),
            lag_ms=rng.choice([30, 200, 30_000]),
            slots=rng.choice([1, 1, 8]),
            auto=rng.random() < 0.7,
        )
        n = rng.randint(1, 12)
        self.worlds = [World(n, False, **kwargs), World(n, True, **kwargs)]
        self.verbose = verbose
        self.epoch = 0

    def say(self, *what: object) -> None:
        if self.verbose:
            print(*what)

    def both(self, action) -> None:
        for world in self.worlds:
            action(world)

    def step(self) -> None:
        rng = self.rng
        ref = self.worlds[0]
        tps = ref.tps
        r = rng.random()
        if r < 0.35:
            fetcher = rng.choice(FETCHERS)
            wanted = [tp for tp in tps if rng.random() < 0.95]
            min_bytes = rng.choice([1, 1, 1, 300, 5000])
            max_wait = rng.choice([0, 500, 500])
            dup = rng.random() < 0.03
            self.say("fetch", fetcher, [tp.partition for tp in wanted], min_bytes, max_wait, "dup" if dup else "")
            self.both(lambda w: w.fetch(fetcher, wanted, min_bytes, max_wait, dup))
        elif r < 0.6:
            tp = rng.choice(tps)
            acks = rng.choice([-1, 1])
            size = rng.randint(30, 400)
            end = rng.random() < 0.8
            self.say("produce", tp.partition, acks, size, end)

            def produce(w: World) -> None:
                record = w.log.append

                def reply(statuses) -> None:
                    record(("produced", [(t, s.error, s.base_offset) for t, s in statuses.items()]))

                record(("produce", tp, acks))
                w.rm.append_records(5_000, acks, {tp: [batch(size=size)]}, reply)
                if end:
                    w.rm.try_complete_actions()

            self.both(produce)
        elif r < 0.72:
            ms = rng.choice([1, 5, 50, 300, 600])
            self.say("advance", ms)

            def advance(w: World) -> None:
                w.time.sleep(ms)
                w.rm.produce_purgatory.advance_clock()
                w.rm.fetch_purgatory.advance_clock()

            self.both(advance)
        elif r < 0.8:
            self.say("isr check")
            self.both(lambda w: w.rm.maybe_shrink_isr())
        elif r < 0.83:
            broker = rng.choice([1, 2])
            fence = rng.random() < 0.5
            self.say("fence" if fence else "unfence", broker)
            # The controller fences or unfences a broker (KRaft's isReplicaIsrEligible).
            self.both(lambda w: w.rm.fenced_brokers.add(broker) if fence else w.rm.fenced_brokers.discard(broker))
        elif r < 0.85:
            self.say("alter partition answers")
            self.both(lambda w: w.controller.complete_all())
        elif r < 0.88:
            self.say("actions")
            self.both(lambda w: w.rm.try_complete_actions())
        elif r < 0.92:
            tp = rng.choice(tps)
            kind = rng.choice(["roll", "log_start", "epoch", "away", "back"])
            self.say("change", kind, tp.partition)

            def change(w: World) -> None:
                partition = w.rm.partitions.get(tp)
                if kind in ("epoch", "back"):
                    w.rm.make_leader(tp, replicas=REPLICAS, leader_epoch=self.epoch + 1, partition_epoch=self.epoch + 1)
                elif partition is None or not partition.is_leader:
                    return
                elif kind == "roll":
                    if partition.log.active_segment.size > 0:
                        partition.log.roll()
                elif kind == "log_start":
                    log = partition.log
                    log.maybe_increment_log_start_offset(rng_offsets[tp])
                else:
                    w.rm.make_follower(tp, leader=1, replicas=REPLICAS, leader_epoch=self.epoch + 1,
                                       partition_epoch=self.epoch + 1)

            rng_offsets = {}
            partition = ref.rm.partitions.get(tp)
            if partition is not None:
                log = partition.log
                rng_offsets[tp] = rng.randint(log.log_start_offset, log.high_watermark)
            self.both(change)
            if kind in ("epoch", "back", "away"):
                self.epoch += 1
        else:
            fetcher = rng.choice(FETCHERS)
            self.say("timeout", fetcher)
            self.both(lambda w: w.handlers[fetcher].handle_error())
        a, b = (w.log for w in self.worlds)
        assert a == b, f"responses differ after step: {a[-3:]} vs {b[-3:]}"
        sa, sb = (w.state() for w in self.worlds)
        assert sa == sb, f"state differs:\n{sa}\n{sb}"

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()


@pytest.mark.parametrize("seed", range(300))
def test_session_reads_answer_as_kafkas_walk(seed: int, monkeypatch) -> None:
    # Odd seeds park on KeyGroups whatever the session's size, even ones on plain key lists below 32.
    monkeypatch.setattr(session_reader, "SESSION_GROUP_MIN_KEYS", 1 if seed % 2 else 32)
    History(seed).run(150)


def test_the_fast_path_is_taken(monkeypatch) -> None:
    """The lazy world reads fewer partitions than the reference (else the property above proves nothing)."""
    reads = {False: 0, True: 0}
    original = ReplicaManager._read

    def counting(self, *args, **kwargs):
        reads[LAZY_OF[id(self)]] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ReplicaManager, "_read", counting)
    for seed in range(20):
        History(seed).run(150)
    assert reads[True] < reads[False] * 0.9, reads


if __name__ == "__main__":
    History(int(sys.argv[1]), verbose=True).run(150)
