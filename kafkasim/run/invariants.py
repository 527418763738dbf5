"""Kafka's invariants, checked while a run goes: a violation stops the run with a precise message.

The engine calls the `on_*` methods at the moments named below; each is a few dictionary operations.
When the scenario turns checks off (`enabled=False`) the engine skips the calls altogether, so a
disabled checker costs nothing; the methods still return at once if called.

Checked rules:
* the high watermark never decreases and never exceeds the leader's log end offset
  (``UnifiedLog.maybeIncrementHighWatermark``);
* no delayed operation completes twice (Kafka's `DelayedOperation.forceComplete`: exactly-once `onComplete`);
* every request gets exactly one outcome -- a response or a recorded client timeout -- and none is
  left without one after its client-side deadline (`at_end`);
* an acks=all produce's partition is settled with NONE only while |maximal ISR| >= effective min ISR
  (Kafka's ``Partition.checkEnoughReplicasReachOffset``), every replica in the maximal ISR has the
  acknowledged offsets at that moment, and a replica keeps them for as long as it stays in the ISR
  (``Partition.maybeIncrementLeaderHW``: HW = min LEO over the maximal ISR). A replica that crashed is
  still counted in the maximal ISR -- the leader does not know until it removes it -- but is no longer
  held to the data: Kafka does not fsync, so its restart may lose what it had.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable


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
    __slots__ = ("isr", "held", "min_isr", "log_end", "bound")

    def __init__(self, isr: set[int], min_isr: int) -> None:
        # The leader's maximal ISR (what min ISR is compared with), and its members held to keep
        # acknowledged data (all but those that crashed since they joined it).
        self.isr = isr
        self.held = set(isr)
        self.min_isr = min_isr
        # replica id -> its log end offset as last reported by the engine (the replica's own log)
        self.log_end: dict[int, int] = {}
        # replica id -> highest end offset of an acks=all produce acknowledged while it was in the ISR
        self.bound: dict[int, int] = {}


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

    def at_end(self, now: float) -> None:
        """End of run: a request still waiting past its client-side deadline never got an outcome."""
        if not self.enabled:
            return
        overdue = sorted(rid for rid, deadline in self._outstanding.items() if deadline <= now)
        if overdue:
            listed = ", ".join(map(str, overdue[:10])) + (" ..." if len(overdue) > 10 else "")
            raise InvariantViolation(
                f"{len(overdue)} request(s) got neither a response nor a client timeout by their deadline: "
                f"{listed}",
                time_ms=now, request_id=overdue[0],
            )

    # --- acknowledged data and the ISR ----------------------------------------------------------

    def register_partition(self, tp: Hashable, isr: Iterable[int], effective_min_isr: int) -> None:
        """The leader's partition `tp` with its initial ISR (leader included) and effective min ISR
        (`min(min.insync.replicas, replication factor)`, Kafka's `Partition.effectiveMinIsr`)."""
        if not self.enabled:
            return
        state = _PartitionState(set(isr), effective_min_isr)
        previous = self._partitions.get(tp)
        if previous is not None:
            # A new leader: the replicas' logs are what they were (a log end is a fact of the log, not of
            # who leads); a follower that appends nothing more must not look empty to the new state.
            state.log_end = dict(previous.log_end)
        self._partitions[tp] = state

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

    def on_acked(self, tp: Hashable, end_offset: int, acks: int, now: float, request_id: int | None = None) -> None:
        """The leader settled a produce's partition `tp` with error NONE (for acks=all: the moment
        DelayedProduce.tryComplete decided it, which may be well before the response goes out); the
        batch ends before `end_offset` (its last offset + 1, Kafka's requiredOffset)."""
        if not self.enabled:
            return
        self.checks += 1
        state = self._partitions[tp]
        if acks != -1:
            return  # acks=0/1 promise nothing about followers
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
