"""Small builders shared by the broker tests: batches, a leader broker driven by hand, reply collectors."""

from __future__ import annotations

from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.fetch import FetchParams, PartitionData
from kafkasim.broker.log import FetchIsolation
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.timer import ManualTime

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
LEADER = 0

_next_id = [0]


def batch(size: int = 100, records: int = 10, ts: int = 0, producer: str = "p") -> RecordBatch:
    """A producer batch (no offsets yet) with a fresh batch id."""
    _next_id[0] += 1
    return RecordBatch(records, size, ts, _next_id[0], producer)


class Reply:
    """Collects a response callback's calls; ``value`` insists on exactly one."""

    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, response) -> None:
        self.calls.append(response)

    @property
    def done(self) -> bool:
        return bool(self.calls)

    @property
    def value(self):
        assert len(self.calls) == 1, f"expected exactly one response, got {len(self.calls)}"
        return self.calls[0]

    def partition(self, tp: TopicPartition = TP):
        """The single response's entry for ``tp`` (produce: dict, fetch: list of pairs)."""
        value = self.value
        if isinstance(value, dict):
            return value[tp]
        return dict(value)[tp]


class Broker:
    """A leader broker (id 0) for hand-driven tests: ManualTime, in-process controller, one partition."""

    def __init__(
        self,
        replicas=(0, 1, 2),
        isr=None,
        *,
        min_isr: int = 1,
        lag_ms: int = 30_000,
        auto_complete: bool = True,
        partitions=(TP,),
        start_ms: int = 0,
        **log_config,
    ) -> None:
        self.time = ManualTime(start_ms)
        self.controller = ControllerAlterPartitionManager(auto_complete=auto_complete)
        self.config = KafkaConfig(
            log=LogConfig(min_insync_replicas=min_isr, **log_config), replica_lag_time_max_ms=lag_ms
        )
        self.rm = ReplicaManager(LEADER, self.config, self.time, alter_partition_manager=self.controller)
        for tp in partitions:
            self.rm.make_leader(tp, replicas=list(replicas), isr=isr)
        self.partition = self.rm.partitions[partitions[0]]
        self.log = self.partition.log

    def produce(self, *batches, acks: int = -1, timeout_ms: int = 30_000, tp=TP, end_request=True) -> Reply:
        reply = Reply()
        self.rm.append_records(timeout_ms, acks, {tp: list(batches or [batch()])}, reply)
        if end_request:
            self.rm.try_complete_actions()
        return reply

    def fetch(
        self,
        replica_id: int,
        offset: int,
        *,
        tp=TP,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 10 * 1024 * 1024,
        partition_max_bytes: int = 1024 * 1024,
        current_leader_epoch: int = -1,
        last_fetched_epoch: int = -1,
        log_start_offset: int = 0,
        isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK,
        end_request: bool = True,
    ) -> Reply:
        reply = Reply()
        params = FetchParams(replica_id, max_wait_ms, min_bytes, max_bytes, isolation)
        data = PartitionData(offset, log_start_offset, partition_max_bytes, current_leader_epoch, last_fetched_epoch)
        self.rm.fetch_messages(params, [(tp, data)], reply)
        if end_request:
            self.rm.try_complete_actions()
        return reply

    def advance(self, ms: int) -> None:
        """Move time and let both purgatories' timers fire what is due (the engine's reaper)."""
        self.time.sleep(ms)
        self.rm.produce_purgatory.advance_clock()
        self.rm.fetch_purgatory.advance_clock()

    def catch_up(self, *replica_ids: int) -> None:
        """Each follower fetches at the current LEO (reporting it has everything)."""
        for replica_id in replica_ids:
            self.fetch(replica_id, self.log.log_end_offset, max_wait_ms=0)
