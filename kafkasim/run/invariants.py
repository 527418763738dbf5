"""Kafka's invariants, checked while a run goes: a violation stops the run with a precise message.

The engine calls the `on_*` methods at the moments named below; each is a few dictionary operations.
When the scenario turns checks off (`enabled=False`) the engine skips the calls altogether, so a
disabled checker costs nothing; the methods still return at once if called.

Checked rules:
* the high watermark never decreases and never exceeds the leader's log end offset
  (``UnifiedLog.maybeIncrementHighWatermark``);
* no delayed operation completes twice (Kafka's `DelayedOperation.forceComplete`: exactly-once `onComplete`);
* every request gets exactly one outcome -- a response or a recorded client timeout -- and none is
  left without one after its client-side deadline, moved by the time its client stood paused or stalled since
  (`at_end`);
* an acks=all produce's partition is settled with NONE only while |maximal ISR| >= effective min ISR
  (Kafka's ``Partition.checkEnoughReplicasReachOffset``), every replica in the maximal ISR has the
  acknowledged offsets at that moment, and a replica keeps them for as long as it stays in the ISR
  (``Partition.maybeIncrementLeaderHW``: HW = min LEO over the maximal ISR). A replica that crashed is
  still counted in the maximal ISR -- the leader does not know until it removes it -- but is no longer
  held to the data: Kafka does not fsync, so its restart may lose what it had;
* across leader changes (Kafka's replication design; the TLA+ model's ``StrongIsr`` and ``LeaderInIsr``):
  the controller's leader is in the ISR it committed; a replica that becomes leader in a clean election
  (from the ISR) holds every committed offset -- every offset acknowledged to an acks=all producer since
  the partition's last unclean election, and every offset below the previous leader's high watermark --
  and its log agrees with the previous leader's below that (the observer compares the batches); a
  deposed leader that has not heard of its successor yet acknowledges nothing the successor lacks;
* at the end of the run, no batch acknowledged to an acks=all producer with min.insync.replicas >= 2 is
  missing from the final leader's log (by batch identity) unless an unclean election came after it
  (``on_lost_after_ack``; the records table counts every lost batch, with the reason Kafka allows it).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping


class InvariantViolation(Exception):
    """A broken Kafka invariant, with where and when it happened."""

    def __init__(
        self,
        message: str,
        *,
        time_ms: float,
        partition: Hashable | None = None,
        request_id: int | None = None,
    ) -> None:
        self.message = message
        self.time_ms = time_ms
        self.partition = partition
        self.request_id = request_id
        where = [f"t={time_ms:.3f} ms"]
        if partition is not None:
            where.append(f"partition {partition}")
        if request_id is not None:
            where.append(f"request {request_id}")
        super().__init__(f"invariant violated at {', '.join(where)}: {message}")


class _BitSet:
    """A set of small non-negative ints (request ids count up from 0) at one bit each: a run with ten
    million requests needs about a megabyte to remember which ones were answered."""

    __slots__ = ("_bits",)

    def __init__(self) -> None:
        self._bits = bytearray()

    def __contains__(self, i: int) -> bool:
        byte = i >> 3
        return byte < len(self._bits) and bool(self._bits[byte] & (1 << (i & 7)))

    def add(self, i: int) -> None:
        if i < 0:
            raise ValueError(f"ids must be >= 0, got {i}")
        byte = i >> 3
        if byte >= len(self._bits):
            self._bits.extend(bytes(max(byte + 1 - len(self._bits), len(self._bits))))
        self._bits[byte] |= 1 << (i & 7)


class _PartitionState:
    __slots__ = ("isr", "held", "min_isr", "log_end", "bound", "leader", "leader_epoch", "lineage_epoch",
                 "acked_end")

    def __init__(self, isr: set[int], min_isr: int, leader: int = -1, leader_epoch: int = 0,
                 lineage_epoch: int = 0) -> None:
        # The leader's maximal ISR (what min ISR is compared with), and its members held to keep
        # acknowledged data (all but those that crashed since they joined it).
        self.isr = isr
        self.held = set(isr)
        self.min_isr = min_isr
        # replica id -> its log end offset as last reported by the engine (the replica's own log)
        self.log_end: dict[int, int] = {}
        # replica id -> highest end offset of an acks=all produce acknowledged while it was in the ISR
        self.bound: dict[int, int] = {}
        # The leader the checker follows (-1: not told) and its leader epoch.
        self.leader = leader
        self.leader_epoch = leader_epoch
        # The leader epoch of the partition's last unclean election (0: none): data acknowledged by a
        # leader of an older epoch may be lost, Kafka promises nothing for it.
        self.lineage_epoch = lineage_epoch
        # The highest end offset acknowledged to an acks=all producer since then: every later leader
        # elected from the ISR must hold it.
        self.acked_end = 0


class InvariantChecker:
    """Cheap runtime checks the engine feeds; raises `InvariantViolation` on the first broken rule."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._completed_ops = _BitSet()
        # request id -> client-side deadline (ms) of requests waiting for an outcome
        self._outstanding: dict[int, float] = {}
        self._decided = _BitSet()
        self._partitions: dict[Hashable, _PartitionState] = {}
        self.checks = 0

    # --- high watermark -------------------------------------------------------------------------

    def on_high_watermark(self, tp: Hashable, old: int, new: int, leo: int, now: float) -> None:
        """The leader's HW of `tp` moved from `old` to `new` while its log end offset is `leo`."""
        if not self.enabled:
            return
        self.checks += 1
        if new < old:
            raise InvariantViolation(f"high watermark decreased from {old} to {new}", time_ms=now, partition=tp)
        if new > leo:
            raise InvariantViolation(
                f"high watermark {new} exceeds the log end offset {leo}", time_ms=now, partition=tp
            )

    # --- delayed operations ---------------------------------------------------------------------

    def on_complete(self, op_id: int, now: float = math.nan) -> None:
        """A delayed operation's `on_complete` ran (`op_id`: a small non-negative number unique per
        operation, e.g. the id of the request it answers)."""
        if not self.enabled:
            return
        self.checks += 1
        if op_id in self._completed_ops:
            raise InvariantViolation(f"delayed operation {op_id} completed twice", time_ms=now)
        self._completed_ops.add(op_id)

    # --- requests -------------------------------------------------------------------------------

    def on_request(self, request_id: int, now: float, deadline_ms: float = math.inf) -> None:
        """The client sent a request that expects a response; it must have an outcome by `deadline_ms`
        (the client's request timeout)."""
        if not self.enabled:
            return
        if request_id in self._outstanding or request_id in self._decided:
            raise InvariantViolation("request id used twice", time_ms=now, request_id=request_id)
        self._outstanding[request_id] = deadline_ms

    def on_response(self, request_id: int, now: float) -> None:
        self._outcome_for(request_id, "response", now)

    def on_client_timeout(self, request_id: int, now: float) -> None:
        self._outcome_for(request_id, "client timeout", now)

    def _outcome_for(self, request_id: int, outcome: str, now: float) -> None:
        if not self.enabled:
            return
        self.checks += 1
        if self._outstanding.pop(request_id, None) is None:
            if request_id in self._decided:
                raise InvariantViolation(
                    f"a second outcome ({outcome}): a request gets exactly one response or client timeout",
                    time_ms=now, request_id=request_id,
                )
            raise InvariantViolation(f"{outcome} for a request never sent", time_ms=now, request_id=request_id)
        self._decided.add(request_id)

    @property
    def outstanding(self) -> int:
        """Requests still waiting for an outcome."""
        return len(self._outstanding)

    def at_end(self, now: float, stalled: Mapping[int, float] | None = None) -> None:
        """End of run: a request still waiting past its client-side deadline never got an outcome. ``stalled``:
        per request, how long its client stood in stalls after sending it, which moves its deadline (a stalled
        client notices neither its response nor its timeout until the stall ends)."""
        if not self.enabled:
            return
        late = stalled if stalled is not None else {}
        overdue = sorted(rid for rid, deadline in self._outstanding.items() if deadline + late.get(rid, 0.0) <= now)
        if overdue:
            listed = ", ".join(map(str, overdue[:10])) + (" ..." if len(overdue) > 10 else "")
            raise InvariantViolation(
                f"{len(overdue)} request(s) got neither a response nor a client timeout by their deadline: "
                f"{listed}",
                time_ms=now, request_id=overdue[0],
            )

    # --- acknowledged data and the ISR ----------------------------------------------------------

    def register_partition(self, tp: Hashable, isr: Iterable[int], effective_min_isr: int, leader: int = -1,
                           leader_epoch: int = 0) -> None:
        """The leader's partition `tp` with its initial ISR (leader included) and effective min ISR
        (`min(min.insync.replicas, replication factor)`, Kafka's `Partition.effectiveMinIsr`)."""
        if not self.enabled:
            return
        state = _PartitionState(set(isr), effective_min_isr, leader, leader_epoch)
        previous = self._partitions.get(tp)
        if previous is not None:
            # A new leader: the replicas' logs are what they were (a log end is a fact of the log, not of
            # who leads); a follower that appends nothing more must not look empty to the new state.
            state.log_end = dict(previous.log_end)
        self._partitions[tp] = state

    def acknowledged_end(self, tp: Hashable) -> int:
        """The highest end offset acknowledged to an acks=all producer of `tp` since its last unclean
        election (0 if none, or `tp` unknown)."""
        state = self._partitions.get(tp)
        return 0 if state is None else state.acked_end

    def on_metadata_leader(self, tp: Hashable, leader: int, isr: Iterable[int], now: float) -> None:
        """A broker is about to lead `tp` with the ISR the controller committed: the TLA+ model's
        ``LeaderInIsr`` (an unclean election's leader gets an ISR of itself, Kafka's
        ``PartitionChangeBuilder``)."""
        if not self.enabled:
            return
        self.checks += 1
        if leader not in isr:
            raise InvariantViolation(
                f"broker {leader} is to lead with ISR {sorted(isr)} committed by the controller, which does not "
                "contain it (the leader must be in the ISR)",
                time_ms=now, partition=tp,
            )

    def on_new_leader(
        self,
        tp: Hashable,
        leader: int,
        leader_epoch: int,
        isr: Iterable[int],
        effective_min_isr: int,
        now: float,
        *,
        log_end_offset: int,
        unclean: bool = False,
        previous_leader: int | None = None,
        previous_high_watermark: int = 0,
        difference: str | None = None,
        may_lose_data: Iterable[int] = (),
    ) -> None:
        """Broker `leader` now leads `tp` at `leader_epoch` with `isr`; its log ends at `log_end_offset`.

        After a clean election (`unclean` False) the new leader must hold every committed offset: those
        acknowledged to acks=all producers since the last unclean election, and those below
        `previous_high_watermark` (the previous leader's HW: the TLA+ model's ``StrongIsr`` -- a committed
        record is on every member of the true ISR, so on any leader it elects). `difference`, when the
        caller found one, says where its log disagrees with `previous_leader`'s below that. After an unclean
        election (Kafka's ``unclean.leader.election.enable``) nothing is owed: acknowledged data may be
        lost, the run counts it (records table, ``lost_after_ack``)."""
        if not self.enabled:
            return
        self.checks += 1
        state = self._partitions.get(tp)
        if state is None or unclean:
            previous = state
            state = _PartitionState(set(isr), effective_min_isr, leader, leader_epoch,
                                    leader_epoch if unclean else 0)
            if previous is not None:
                # The replicas' logs are what they were (a log end is a fact of the log, not of who leads).
                state.log_end = dict(previous.log_end)
            self._partitions[tp] = state
        else:
            acked = state.acked_end
            committed = max(acked, previous_high_watermark)
            who = f"broker {leader} became leader (leader epoch {leader_epoch}, elected from the ISR)"
            if log_end_offset < committed:
                if acked >= previous_high_watermark:
                    why = f"offset {acked} that was acknowledged to an acks=all producer"
                else:
                    why = (f"offset {previous_high_watermark}, the high watermark of broker {previous_leader} "
                           "(the previous leader): committed records")
                raise InvariantViolation(f"{who} with its log ending at {log_end_offset}, before {why}",
                                         time_ms=now, partition=tp)
            if difference is not None:
                raise InvariantViolation(
                    f"{who}, but its log disagrees with broker {previous_leader}'s (the previous leader) below "
                    f"the committed offset {committed}: {difference}",
                    time_ms=now, partition=tp,
                )
            state.leader = leader
            state.leader_epoch = leader_epoch
            state.min_isr = effective_min_isr
        state.log_end[leader] = log_end_offset
        self.on_isr_change(tp, isr, now, may_lose_data)

    def on_lost_after_ack(self, tp: Hashable, description: str, now: float) -> None:
        """End of run: a batch acknowledged to an acks=all producer with min.insync.replicas >= 2 is not in
        the log of `tp`'s final leader, and no unclean election came after it: Kafka promises it survives."""
        if not self.enabled:
            return
        raise InvariantViolation(
            f"an acknowledged record was lost although every election since it was sent was clean "
            f"(acks=all, min.insync.replicas >= 2): {description}",
            time_ms=now, partition=tp,
        )

    def on_idempotent_duplicate(self, tp: Hashable, description: str, now: float) -> None:
        """End of run: a batch of an idempotent producer is in its partition's log twice, or was read at two
        offsets. Kafka's idempotent producer writes each batch once, in order, across retries and leader
        changes (``ProducerStateManager``'s per-producer state, replicated with the log)."""
        if not self.enabled:
            return
        raise InvariantViolation(f"an idempotent producer's batch was written twice: {description}",
                                 time_ms=now, partition=tp)

    def on_isr_change(
        self, tp: Hashable, isr: Iterable[int], now: float, may_lose_data: Iterable[int] = ()
    ) -> None:
        """The maximal ISR of `tp` is now `isr` (Kafka's `maximalIsr`: committed ISR plus a pending
        expansion); its members in `may_lose_data` (crashed replicas the leader still counts) need not keep
        acknowledged data. A replica that leaves the ISR, or may lose data, is no longer bound to keep it."""
        if not self.enabled:
            return
        state = self._partitions[tp]
        state.isr = set(isr)
        state.held = state.isr.difference(may_lose_data)
        for replica in [r for r in state.bound if r not in state.held]:
            del state.bound[replica]

    def on_log_end(self, tp: Hashable, replica_id: int, log_end_offset: int, now: float) -> None:
        """Replica `replica_id`'s own log of `tp` now ends at `log_end_offset` (after an append or a
        truncation; the leader reports its own log too)."""
        if not self.enabled:
            return
        self.checks += 1
        state = self._partitions[tp]
        state.log_end[replica_id] = log_end_offset
        bound = state.bound.get(replica_id)
        if bound is not None and log_end_offset < bound:
            raise InvariantViolation(
                f"replica {replica_id} is in the ISR but its log now ends at {log_end_offset}, before "
                f"offset {bound} that was acknowledged to an acks=all producer",
                time_ms=now, partition=tp,
            )

    def on_acked(self, tp: Hashable, end_offset: int, acks: int, now: float, request_id: int | None = None,
                 *, leader: int | None = None, leader_epoch: int = 0) -> None:
        """The leader settled a produce's partition `tp` with error NONE (for acks=all: the moment
        DelayedProduce.tryComplete decided it, which may be well before the response goes out); the
        batch ends before `end_offset` (its last offset + 1, Kafka's requiredOffset). `leader` (and its
        `leader_epoch`): the broker that decided, when known."""
        if not self.enabled:
            return
        self.checks += 1
        state = self._partitions[tp]
        if acks != -1:
            return  # acks=0/1 promise nothing about followers
        if leader is not None and state.leader >= 0 and leader != state.leader and leader_epoch < state.leader_epoch:
            self._acked_by_deposed_leader(state, tp, end_offset, leader, leader_epoch, now, request_id)
            return
        if len(state.isr) < state.min_isr:
            raise InvariantViolation(
                f"acks=all produce acknowledged with ISR {sorted(state.isr)} smaller than min ISR {state.min_isr}",
                time_ms=now, partition=tp, request_id=request_id,
            )
        for replica in sorted(state.held):
            leo = state.log_end.get(replica, -1)
            if leo < end_offset:
                raise InvariantViolation(
                    f"acks=all produce up to offset {end_offset} acknowledged, but ISR replica {replica}'s log "
                    f"ends at {leo}",
                    time_ms=now, partition=tp, request_id=request_id,
                )
            if state.bound.get(replica, -1) < end_offset:
                state.bound[replica] = end_offset
        if state.acked_end < end_offset:
            state.acked_end = end_offset

    def _acked_by_deposed_leader(self, state: _PartitionState, tp: Hashable, end_offset: int, leader: int,
                                 leader_epoch: int, now: float, request_id: int | None) -> None:
        # A leader the controller replaced that has not applied the change yet (paused, slow metadata) still
        # completes produces with its own ISR. Its successor, elected from that ISR, is in it, so the HW
        # could not pass the successor's log end: nothing it acknowledges can be missing there -- unless an
        # unclean election came in between.
        if leader_epoch < state.lineage_epoch:
            return
        leo = state.log_end.get(state.leader, -1)
        if leo < end_offset:
            raise InvariantViolation(
                f"broker {leader}, a deposed leader (leader epoch {leader_epoch}), acknowledged an acks=all "
                f"produce up to offset {end_offset}, but the log of broker {state.leader}, its successor "
                f"elected from the ISR (leader epoch {state.leader_epoch}), ends at {leo}",
                time_ms=now, partition=tp, request_id=request_id,
            )
        if state.acked_end < end_offset:
            state.acked_end = end_offset
