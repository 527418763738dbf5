"""The run's observer with invariant checks (``CheckedRunObserver``): it records every row, as the plain
``RunRecorder`` does, and feeds ``InvariantChecker`` at the moments each rule can break, and nothing more.

* HW monotone and <= LEO: after every handled request (its partitions), after every AlterPartition answer
  and at every gauge sample (all partitions) -- the only places the leader's HW can move; and on every
  follower replica, whenever its fetcher changes its HW (a response, a truncation).
* Exactly one broker answer per request: every response callback of the ReplicaManager (a delayed
  operation completing twice would answer twice).
* Exactly one client outcome per request (response or client-side failure) and none overdue at the end.
* acks=all durability: the leader's and followers' log ends are reported whenever they change, ISR changes
  before the acknowledgements they enable, and each partition of an acks=all produce at the moment
  DelayedProduce.tryComplete settles it with NONE -- Kafka's decision point, which may come well before the
  response goes out (a multi-partition produce answers when its last partition is settled or it expires,
  and the ISR may have shrunk meanwhile).
* Leader changes: the controller's leader is in its ISR (``isr_from_metadata``); a broker that becomes
  leader in a clean election holds every committed offset and agrees, batch for batch, with the previous
  leader's log below the committed offset (``became_leader`` compares the two logs there: a leader change
  is rare, the comparison a slice of each log).

A follower that crashes is no longer held to keep acknowledged data for the rest of the run (or until an
ISR expansion takes it back after its restart): Kafka does not fsync appends, so a crashed replica may lose
data it had acknowledged -- which is why acks=all relies on replication -- and this one truncates to its
HW on restart. It still counts toward min ISR while the leader keeps it in the maximal ISR, as in Kafka's
``Partition.checkEnoughReplicasReachOffset``: the leader learns of the crash only by removing it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.network.messages import RequestEnvelope
from kafkasim.record.recorder import Recorder
from kafkasim.record.run_recorder import RunRecorder
from kafkasim.run.invariants import InvariantChecker

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.broker.alter_partition import LeaderAndIsr
    from kafkasim.broker.log import Log
    from kafkasim.broker.partition import Partition
    from kafkasim.broker.records import RecordBatch


class CheckedRunObserver(RunRecorder):
    """The run's observer when the scenario enables invariant checks: it records (a ``RunRecorder``) and
    checks, each check event handled here directly (no second call per event on the hot path).

    It learns the partitions it watches from ``became_leader`` (``ReplicaManager.make_leader``), so it
    needs no broker at construction and is handed to every component like the plain recorder.
    """

    checks = True

    def __init__(
        self,
        env: Environment,
        client_timeouts: dict[str, float],
        recorder: Recorder,
        consumers_by_topic: dict[str, int],
        on_request: Callable[[RequestEnvelope], None] | None = None,
        warmup_ms: float = 0.0,
    ) -> None:
        super().__init__(recorder, consumers_by_topic, on_request, now=lambda: env.now, warmup_ms=warmup_ms)
        self.env = env
        self.checker = InvariantChecker(enabled=True)
        self._client_timeouts = client_timeouts
        # The leader's partitions, by the leader broker's id (one leader here; a cluster has several).
        self._partitions: dict[TopicPartition, Partition] = {}
        self._leader_of: dict[TopicPartition, int] = {}
        # The leader epoch of the leader followed here: a broker that leads at an older one is stale.
        self._leader_epoch: dict[TopicPartition, int] = {}
        self._last_hw: dict[TopicPartition, int] = {}
        self._replica_hw: dict[tuple[TopicPartition, int], tuple[int, int]] = {}  # (leader epoch, HW)
        self._excluded: set[int] = set()
        # tp -> (broker, unclean) of the metadata a broker is applying to lead tp (isr_from_metadata).
        self._elected: dict[TopicPartition, tuple[int, bool]] = {}
        # Requests request_handled has seen whose rows are not written yet (their bodies may go then).
        self._handled: set[int] = set()

    def became_leader(self, broker_id: int, tp: TopicPartition, partition: Partition) -> None:
        if (self._leader_of.get(tp) == broker_id and self._partitions.get(tp) is partition
                and partition.leader_epoch <= self._leader_epoch[tp]):
            # Still the leader at the same epoch (a metadata change of its ISR): what the checker knows of the
            # replicas' logs stays; only the ISR is new. Elected again at a newer epoch (after a fence, say),
            # possibly uncleanly, it is a new leadership, checked below.
            self._report_isr(tp, partition.maximal_isr)
            return
        elected = self._elected.pop(tp, None)
        previous = self._partitions.get(tp)
        if previous is not None and partition.leader_epoch < self._leader_epoch[tp]:
            # A broker catching up with the metadata log (back from a pause, slow propagation) applies it in
            # order and may lead for a moment at an epoch the controller has since superseded: not a
            # successor of the leader followed here, which has a newer epoch (followers and clients with the
            # newer metadata send that epoch: FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER from the stale
            # one). What it acknowledges is checked as a deposed leader's (``InvariantChecker.on_acked``).
            return
        unclean = elected is not None and elected == (broker_id, True)
        self._leader_epoch[tp] = partition.leader_epoch
        self._partitions[tp] = partition
        previous_leader = self._leader_of.get(tp)
        self._leader_of[tp] = broker_id
        self._last_hw[tp] = partition.high_watermark
        if previous is None:
            self.checker.register_partition(tp, partition.maximal_isr, partition.effective_min_isr, broker_id,
                                            partition.leader_epoch)
            return
        previous_hw = previous.high_watermark
        difference = None
        if not unclean:
            committed = max(self.checker.acknowledged_end(tp), previous_hw)
            difference = log_difference(previous.log, partition.log, committed, previous_leader, broker_id)
        self.checker.on_new_leader(
            tp, broker_id, partition.leader_epoch, partition.maximal_isr, partition.effective_min_isr, self.env.now,
            log_end_offset=partition.log_end_offset, unclean=unclean, previous_leader=previous_leader,
            previous_high_watermark=previous_hw, difference=difference, may_lose_data=self._excluded,
        )

    def release(self) -> None:
        """Let go of the partitions (and so their logs) once the run is over and cut short: the engine
        frees the simulation's memory to tabulate what was recorded after running out of it."""
        self._partitions.clear()
        self._leader_of.clear()
        self._leader_epoch.clear()

    # --- high watermark ----------------------------------------------------------------------------

    def check_hw(self, tp: TopicPartition) -> None:
        partition = self._partitions.get(tp)
        if partition is None:
            return
        hw = partition.high_watermark
        old = self._last_hw.get(tp, hw)
        if hw != old:
            self.checker.on_high_watermark(tp, old, hw, partition.log_end_offset, self.env.now)
            self._last_hw[tp] = hw

    def check_all_hw(self) -> None:
        for tp in self._partitions:
            self.check_hw(tp)

    # --- requests ----------------------------------------------------------------------------------

    def request_sent(self, envelope: RequestEnvelope) -> None:
        if envelope.expects_response:
            timeout = self._client_timeouts.get(envelope.client, math.inf)
            self.checker.on_request(envelope.request_id, self.env.now, envelope.client_send_ms + timeout)

    def on_client_outcome(self, envelope: RequestEnvelope) -> None:
        if not envelope.expects_response:
            return
        if envelope.response_received:
            self.checker.on_response(envelope.request_id, self.env.now)
        else:
            # Timed out, or failed with its connection (disconnect, crash): the client's own outcome.
            self.checker.on_client_timeout(envelope.request_id, self.env.now)

    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.client_done = True
        self.on_client_outcome(envelope)
        super().request_finished(envelope)

    def response_built(self, envelope: RequestEnvelope) -> None:
        self.checker.on_complete(envelope.request_id, self.env.now)

    def acks_satisfied(self, tp: TopicPartition, required_offset: int, partition: Partition | None = None) -> None:
        """DelayedProduce.tryComplete settled an acks=all partition with NONE: HW >= ``required_offset``
        and min ISR <= |maximal ISR| now (Partition.checkEnoughReplicasReachOffset), on ``partition``'s
        broker (a deposed leader that has not applied its successor's metadata yet may still decide)."""
        now = self.env.now
        if partition is None:
            partition = self._partitions[tp]
        broker = partition.local_broker_id
        # The leader's own log first: an ISR of the leader alone acknowledges inside the append.
        self.checker.on_log_end(tp, broker, partition.log_end_offset, now)
        self.checker.on_acked(tp, required_offset, -1, now, leader=broker, leader_epoch=partition.leader_epoch)

    def request_handled(self, envelope: RequestEnvelope) -> None:
        body = envelope.body
        if envelope.acks is not None:
            partitions = self._partitions
            for tp in body.entries:  # type: ignore[union-attr]
                partition = partitions.get(tp)
                if partition is not None:
                    self.checker.on_log_end(tp, self._leader_of[tp], partition.log_end_offset, self.env.now)
                    self.check_hw(tp)
        else:
            for tp, _ in body.fetch_infos:  # type: ignore[union-attr]
                self.check_hw(tp)
        # The last reader of the body: a written row (or one waiting for the broker) drops it now.
        if envelope.client_done:
            envelope.body = None
        else:
            self._handled.add(envelope.request_id)

    def _body_unused(self, envelope: RequestEnvelope) -> bool:
        # request_handled reads the body when the handler is done, which can be after the client got its
        # response (a parked fetch completed during the handler's read time).
        if envelope.request_id in self._handled:
            self._handled.discard(envelope.request_id)
            return True
        return False

    # --- ISR and replicas --------------------------------------------------------------------------

    def _report_isr(self, tp: TopicPartition, isr: Iterable[int]) -> None:
        self.checker.on_isr_change(tp, isr, self.env.now, may_lose_data=self._excluded)

    def isr_from_metadata(self, broker_id: int, tp: TopicPartition, isr: tuple[int, ...],
                          unclean: bool = False) -> None:
        # A leader that stays leader takes the ISR the controller committed (e.g. a fenced follower removed)
        # before its HW moves on it; a new leader is checked and registered in became_leader.
        self.checker.on_metadata_leader(tp, broker_id, isr, self.env.now)
        self._elected[tp] = (broker_id, unclean)
        if self._leader_of.get(tp) == broker_id:
            self._report_isr(tp, isr)

    def alter_partition_submitted(self, tp: TopicPartition, request: LeaderAndIsr) -> None:
        partition = self._partitions.get(tp)
        if partition is None:
            return
        # A pending expansion counts in the maximal ISR at once (Kafka's PendingExpandIsr.maximalIsr); a
        # pending shrink does not.
        added = set(request.isr) - set(partition.isr)
        if added:
            self._excluded -= added
            self._report_isr(tp, partition.maximal_isr)

    def alter_partition_committed(self, tp: TopicPartition, result: LeaderAndIsr | Errors) -> None:
        if not isinstance(result, Errors):
            self._report_isr(tp, result.isr)

    def alter_partition_answered(self, tp: TopicPartition) -> None:
        partition = self._partitions.get(tp)
        if partition is not None:
            self._report_isr(tp, partition.maximal_isr)
            self.check_hw(tp)

    def replica_log_end(self, tp: TopicPartition, broker_id: int, log_end_offset: int) -> None:
        self.checker.on_log_end(tp, broker_id, log_end_offset, self.env.now)

    def replica_high_watermark(self, tp: TopicPartition, broker_id: int, high_watermark: int,
                               log_end_offset: int, leader_epoch: int) -> None:
        # A follower copies its leader's HW (UnifiedLog.maybeUpdateHighWatermark sets it to the leader's,
        # clamped to its own log, even when lower). A leader's HW never decreases while it leads
        # (maybeIncrementHighWatermark), but a new leader starts from the HW it last learned as a follower
        # (Partition.makeLeader), which may be behind the old leader's, and a truncation lowers the HW with
        # the log. So a follower's HW is monotone over the responses of one leader epoch (``leader_epoch``
        # -1: a truncation, which starts afresh), and never above its log end offset.
        key = (tp, broker_id)
        previous = self._replica_hw.get(key)
        if previous is not None and leader_epoch >= 0 and previous[0] == leader_epoch:
            old = previous[1]
        else:
            old = high_watermark  # no reference yet in this epoch
        if high_watermark != old or high_watermark > log_end_offset:
            self.checker.on_high_watermark(f"{tp} on broker {broker_id}", old, high_watermark, log_end_offset,
                                           self.env.now)
        self._replica_hw[key] = (leader_epoch, high_watermark)

    def broker_crashed(self, broker_id: int, partitions: Iterable[TopicPartition]) -> None:
        self._excluded.add(broker_id)
        for tp in partitions:
            partition = self._partitions.get(tp)
            if partition is not None:
                self._report_isr(tp, partition.maximal_isr)

    def at_end(self, stalled: Mapping[int, float] | None = None) -> None:
        """``stalled``: per request still waiting, how long its client stood in stalls since it was sent
        (kafkasim.run.stalls.stalled_since_sent); its deadline moves by that time."""
        self.check_all_hw()
        # The run stops *before* the events due exactly at its end (SimPy's run(until=...)), so a client
        # timeout due then has not fired: only deadlines strictly before the end are overdue.
        self.checker.at_end(math.nextafter(self.env.now, -math.inf), stalled)


def _batches_between(log: Log, start: int, end: int) -> list[RecordBatch]:
    """The batches of ``log`` holding offsets in [start, end)."""
    found: list[RecordBatch] = []
    for segment in log.segments:
        if segment.next_offset <= start:
            continue
        if segment.base_offset >= end:
            break
        for batch in segment.batches:
            if batch.base_offset >= end:
                break
            if batch.next_offset > start:
                found.append(batch)
    return found


def _describe(batch: RecordBatch | None) -> str:
    if batch is None:
        return "nothing"
    return f"batch {batch.batch_id} (offsets {batch.base_offset}-{batch.last_offset}, leader epoch " \
           f"{batch.partition_leader_epoch})"


def log_difference(old: Log, new: Log, end: int, old_broker: int | None, new_broker: int) -> str | None:
    """Where the logs of two replicas stop agreeing below offset ``end`` (over the offsets both still have:
    retention may have removed a prefix), or None if they agree there. Batches are compared whole (offsets,
    leader epoch, identity): a follower stores the leader's batches unchanged."""
    start = max(old.log_start_offset, new.log_start_offset)
    end = min(end, old.log_end_offset, new.log_end_offset)
    if end <= start:
        return None
    mine = _batches_between(old, start, end)
    theirs = _batches_between(new, start, end)
    if mine == theirs:
        return None
    for i in range(max(len(mine), len(theirs))):
        a = mine[i] if i < len(mine) else None
        b = theirs[i] if i < len(theirs) else None
        if a != b:
            offset = min(x.base_offset for x in (a, b) if x is not None)
            return (f"at offset {offset} broker {old_broker} has {_describe(a)}, broker {new_broker} has "
                    f"{_describe(b)}")
    return None  # pragma: no cover - unequal lists differ at some index
