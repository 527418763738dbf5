"""The simulation engine: build a scenario's components, run them on the SimPy clock, return a RunResult.

    result = run_scenario(load_scenario("scenarios/quickstart.yaml"))

Besides the clients and the request pipeline, the engine runs the broker's background work:

* one expiration reaper per purgatory (Kafka's ``ExpiredOperationReaper``): it waits until the earliest
  timer bucket expires or 200 ms pass, whichever is first, then ``advance_clock`` (expire, then the purge
  check). A bucket added with an earlier expiration wakes it, as Kafka's DelayQueue does
  (``SystemTimer.advanceClock``'s poll);
* the ``isr-expiration`` task every ``replica.lag.time.max.ms / 2``, first run at start
  (``ReplicaManager.startup``);
* the ``kafka-log-retention`` task every ``log.retention.check.interval.ms``, first run 30 s after start
  (Kafka's LogManager.cleanupLogs): ``delete_old_segments`` on the leader's log of every partition and on
  every running follower's local logs. It bounds a long run's memory, which is mostly logged batches;
* the KRaft controller (``kafkasim.controller.QuorumController``) and each broker's link to it
  (``server/node_to_controller_channel_manager.py``: heartbeats, AlterPartition, metadata), all owned by the run's ``Cluster``
  (``run/cluster.py``), which starts them and reports their counters and open work;
* the gauge sampler, the fault schedule and the invariant checks.

The run stops at ``duration``. Requests still in flight then are recorded with the timestamps they
reached (NaN for the rest); batches never acknowledged keep a NaN ack time.
"""

from __future__ import annotations

import gc
import math
import mmap
import time as wall_time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.clients.accumulator import ProducerBatch
from kafkasim.clients.producer import Producer
from kafkasim.controller.metadata_log import MetadataBatch
from kafkasim.network.messages import RequestEnvelope
from kafkasim.record.gauges import GaugeSampler
from kafkasim.record.log_audit import UNEXPLAINED, audit_records
from kafkasim.record.phases import cut_phases, fault_spans
from kafkasim.record.recorder import RecordedTables, Recorder
from kafkasim.record.result import RunResult
from kafkasim.record.retransmissions import retransmissions_frame
from kafkasim.record.run_recorder import RunRecorder
from kafkasim.record.spool_dir import clear_abandoned_spools_once
from kafkasim.record.stalls import stalls_frame, stalls_summary
from kafkasim.record.summary import summarize
from kafkasim.run.build import build, client_deadlines
from kafkasim.run.cluster import Cluster
from kafkasim.run.cluster_layout import ClusterLayout, cluster_layout
from kafkasim.run.cores import WarmupCores
from kafkasim.run.failovers import failovers, fences, unfences
from kafkasim.run.faults import PauseCount, schedule_faults
from kafkasim.run.final_logs import final_leader, final_logs
from kafkasim.run.gc_policy import run_gc_thresholds
from kafkasim.run.memory_guard import AddressSpaceGuard
from kafkasim.run.memory_use import MemoryUse, memory_use
from kafkasim.run.observer import CheckedRunObserver
from kafkasim.run.stalls import StallRow, schedule_stalls, stalled_since_sent
from kafkasim.sim.calls import Call
from kafkasim.sim.clock import SimClock

if TYPE_CHECKING:
    import pandas as pd

    from kafkasim.scenario import Scenario

# (leaderships applied per (partition, broker), heartbeats received per broker, leaders learned per client)
FailoverFacts = tuple[
    dict[tuple[TopicPartition, int], list[float]],
    dict[int, list[float]],
    dict[str, list[tuple[float, TopicPartition, int]]],
]
PROGRESS_INTERVAL_S = 0.1  # progress callbacks at most ~10 per wall second
# Requests table rows kept as Python objects before the recorder converts them to a columnar chunk.
MAX_ROWS_IN_MEMORY = 50_000
# Address space set aside while the loop runs and given back if the run runs out of memory, so that the
# rows recorded up to then can still be tabulated and saved (a partial result instead of a MemoryError
# cascade). An anonymous mapping that is never touched: it counts against an address-space limit
# (RLIMIT_AS, where Python's MemoryError comes from) but costs no resident memory, where a bytearray's
# zero fill made every run's peak RSS 64 MB larger.
MEMORY_RESERVE_BYTES = 64 * 1024 * 1024
NAN = math.nan


class SimulationOutOfMemory(MemoryError):
    """The run ran out of memory at simulated time `at_ms` (of `duration_ms`), or, when `tabulating`, while
    its tables were built at the end (at `at_ms`, where the run stopped). `result` holds what was recorded up
    to then (summary `interrupted_at_ms`, `interrupted_by: "out of memory"`), or is None when even that could
    not be tabulated (`why_no_result` says why). `held` counts what the run held then -- its request rows,
    batch rows and gauge samples, the records waiting in its producers and the batches in its logs -- and
    names what most likely filled the memory (``MemoryUse.describe``)."""

    def __init__(self, at_ms: float, duration_ms: float, result: RunResult | None, held: MemoryUse | None = None,
                 *, tabulating: bool = False, why_no_result: str | None = None) -> None:
        where = "building the tables of the run stopped" if tabulating else "out of memory"
        super().__init__(f"{where} at simulated time {at_ms:g} ms of {duration_ms:g} ms"
                         + (f", {held.describe()}" if held is not None else ""))
        self.at_ms = at_ms
        self.duration_ms = duration_ms
        self.result = result
        self.held = held
        self.tabulating = tabulating
        self.why_no_result = why_no_result

ProgressCallback = Callable[[float, float], None]


class Engine:
    """One run of one scenario."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int | None = None,
        clock: SimClock | None = None,
        progress: ProgressCallback | None = None,
        check_invariants: bool | None = None,
        on_request: Callable[[RequestEnvelope], None] | None = None,
        layout: ClusterLayout | None = None,
    ) -> None:
        self.scenario = scenario
        self._stop_requested = False
        self.seed = scenario.seed if seed is None else seed
        # Which brokers lead and follow which partitions (default: the scenario's, placed with the run's seed).
        with run_gc_thresholds():
            self.layout = layout if layout is not None else cluster_layout(scenario, seed=self.seed)
        if clock is None:
            wallclock = scenario.clock.mode == "wallclock"
            clock = SimClock(wallclock=wallclock, speed=getattr(scenario.clock, "speed", 1.0))
        self.clock = clock
        self.env = env = clock.env
        self.progress = progress
        consumers = {c.name: [c.topic] for c in scenario.consumers}
        # Under an address-space limit, the guard ends the run before the limit is reached (_run_until), and
        # before a spool write that would not fit (see AddressSpaceGuard.before_spool).
        self._guard = AddressSpaceGuard.from_process_limit()
        # Runs that were killed left their spool directories behind; their owners are gone (spool_dir.py).
        clear_abandoned_spools_once()
        self.recorder = Recorder(consumers, max_rows_in_memory=MAX_ROWS_IN_MEMORY,
                                 before_spool=self._guard.before_spool if self._guard is not None else None)
        self._tables: RecordedTables | None = None
        # The hosts' stalls (kafkasim.run.stalls), or None when no host stalls.
        self._stall_rows: list[StallRow] | None = None
        self._cores = WarmupCores()
        consumers_by_topic: dict[str, int] = {}
        for c in scenario.consumers:
            consumers_by_topic[c.topic] = consumers_by_topic.get(c.topic, 0) + 1
        # on_request sees each finished request before its row is written (the CLI's live view).
        checking = scenario.invariants if check_invariants is None else check_invariants
        # The run's one observer: it records every row and, when checking, checks Kafka's invariants.
        self.invariants: CheckedRunObserver | None = (
            CheckedRunObserver(self.env, client_deadlines(scenario, self.layout), self.recorder, consumers_by_topic,
                               on_request, warmup_ms=float(self.scenario.warmup))
            if checking
            else None
        )
        self.run_recorder: RunRecorder = (
            self.invariants
            if self.invariants is not None
            else RunRecorder(self.recorder, consumers_by_topic, on_request, now=lambda: env.now,
                             warmup_ms=float(self.scenario.warmup))
        )
        self.observer = self.run_recorder
        with run_gc_thresholds():  # a large cluster's build is mostly the collector's otherwise
            self.components: Cluster = build(scenario, clock, self.seed, self.observer, self.layout)
        replication = self.components.controller.core.replication_control
        self.gauges = GaugeSampler(self.components.brokers, self.components.producers, self.recorder,
                                   nics=self.components.nics, leaderless=lambda: (
                                       replication.partitions_with_no_leader()
                                       if replication.are_some_partitions_leaderless() else ()),
                                   elr=replication.elr_sizes)

    def request_stop(self) -> None:
        """Ask a running run to end early (Ctrl-C, a notebook's stop button); safe from a signal handler.

        Checked between progress slices, so it needs a ``progress`` callback (without one the run goes in one
        piece). The result then covers simulated time up to the stop; its summary has ``interrupted_at_ms``.
        """
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    # --- background tasks --------------------------------------------------------------------------

    def _sample(self, _event: object) -> None:
        if self.invariants is not None:
            self.invariants.check_all_hw()
        self.gauges.sample(self.env.now)
        Call(self.env, self.scenario.sample_interval, self._sample)

    # --- run ---------------------------------------------------------------------------------------

    def run(self) -> RunResult:
        """The loop, then the tables, the summary and the end-of-run checks (the collector's thresholds raised
        throughout: kafkasim.run.gc_policy)."""
        with run_gc_thresholds():
            return self._run()

    def _run(self) -> RunResult:
        duration = float(self.scenario.duration)
        self._start()
        started = wall_time.perf_counter()
        reserve = mmap.mmap(-1, MEMORY_RESERVE_BYTES)
        out_of_memory = False
        try:
            self._run_until(duration)
        except MemoryError:
            # Handled below, once this exception and the simulation frames its traceback holds are gone.
            out_of_memory = True
        reserve.close()
        wall_seconds = wall_time.perf_counter() - started
        if out_of_memory:
            raise self._out_of_memory(duration, wall_seconds)
        end = min(self.env.now, duration)
        if self.invariants is not None:
            rows = self._stall_rows
            self.invariants.at_end(None if not rows else stalled_since_sent(
                rows, self.components, self.components.unfinished_requests(), self.env.now))
        try:
            result = self._result(end, wall_seconds)
        except MemoryError:
            # Building the tables with the simulation still in memory did not fit: handled below (as in the
            # loop: once this exception and the frames it holds are gone) by letting the simulation go and
            # building them again -- what a run that ran out of memory in its loop does.
            out_of_memory = True
        if out_of_memory:
            raise self._out_of_memory(duration, wall_seconds, tabulating=True)
        if self.invariants is not None:
            self._check_no_unexplained_loss(result.records, end)
            self._check_no_idempotent_duplicate(result.records, end)
        if end < duration:
            result.summary["interrupted_at_ms"] = end
        return result

    def _check_no_unexplained_loss(self, records: pd.DataFrame, end: float) -> None:
        """Kafka's promise at the end of the run: no acks=all batch acknowledged with min.insync.replicas
        >= 2 is missing from its partition's final leader unless an unclean election came after it."""
        assert self.invariants is not None
        lost = records[records["lost_reason"].astype(object) == UNEXPLAINED]
        if len(lost):
            row = lost.iloc[0]
            tp = TopicPartition(str(row["topic"]), int(row["partition"]))
            leader = final_leader(self.components, tp)
            self.invariants.checker.on_lost_after_ack(
                tp,
                f"batch {int(row['batch_id'])} of {row['producer']} acknowledged at offset {int(row['offset'])} "
                f"(t={float(row['ack_ms']):.3f} ms) is not in the log of broker {leader}, the final leader"
                + (f"; {len(lost) - 1} more batch(es) too" if len(lost) > 1 else ""),
                end,
            )

    def _check_no_idempotent_duplicate(self, records: pd.DataFrame, end: float) -> None:
        """Kafka's promise to an idempotent producer: each batch written once (the audit marks a batch found
        twice in its final log, or read by a consumer at two offsets, ``duplicated``) -- as far as Kafka's own
        client keeps it: a batch whose sequence an epoch bump rewrote while it was in flight
        (``sequence_reset``, ``TransactionManager.bumpIdempotentProducerEpoch`` ->
        ``startSequencesAtBeginning``) may already have been written under the old epoch, and the broker
        cannot tell the copy under the new epoch from a new batch (``ProducerAppendInfo.checkSequence`` takes a
        new epoch's sequence 0 as a fresh start). Kafka's OutOfOrderSequenceException says so: an idempotent
        producer that goes on after one "risks reordering of sent records"."""
        assert self.invariants is not None
        idempotent = [p.name for p in self.scenario.producers if p.enable_idempotence]
        if not idempotent:
            return
        twice = records[(records["outcome"].astype(object) == "duplicated") & records["producer"].isin(idempotent)
                        & ~records["sequence_reset"].astype(bool)]
        if len(twice):
            row = twice.iloc[0]
            tp = TopicPartition(str(row["topic"]), int(row["partition"]))
            self.invariants.checker.on_idempotent_duplicate(
                tp,
                f"batch {int(row['batch_id'])} of {row['producer']} (acknowledged at offset {int(row['offset'])}, "
                f"{int(row['attempts'])} attempts)"
                + (f"; {len(twice) - 1} more batch(es) too" if len(twice) > 1 else ""),
                end,
            )

    def _start(self) -> None:
        # The order of first events is the order of ties at a simulated instant; the golden runs pin it.
        self.components.start()
        Call(self.env, 0.0, self._sample)
        # The brokers' CPU meters at the warm-up's end: an event that changes nothing (the summary's cores).
        Call(self.env, float(self.scenario.warmup), self._meters_at_warmup)
        # Pause faults and stalls nest on one count per component.
        pauses = PauseCount()
        schedule_faults(self.scenario, self.components, pauses)
        self._stall_rows = schedule_stalls(self.scenario, self.components, pauses)

    def _meters_at_warmup(self, _event: object = None) -> None:
        self._cores.at_warmup(self.components.brokers, self.env.now)

    def _run_until(self, duration: float) -> None:
        env = self.env
        guard = self._guard
        if self.progress is None and guard is None:
            env.run(until=duration)
            return
        # Run in slices so that progress can be reported and the address space watched; slices adapt to
        # ~PROGRESS_INTERVAL_S of wall time.
        step = max(duration / 1000.0, 1.0)
        last_report = wall_time.perf_counter()
        while env.now < duration and not self._stop_requested:
            t0 = wall_time.perf_counter()
            env.run(until=min(duration, env.now + step))
            if guard is not None and guard.exhausted():
                raise MemoryError("address space nearly exhausted")
            spent = wall_time.perf_counter() - t0
            if spent > 0:
                step = min(max(step * PROGRESS_INTERVAL_S / spent, 1.0), duration)
            now_wall = wall_time.perf_counter()
            if self.progress is not None and (now_wall - last_report >= PROGRESS_INTERVAL_S or env.now >= duration):
                self.progress(env.now, duration)
                last_report = now_wall

    def _out_of_memory(self, duration: float, wall_seconds: float, *, tabulating: bool = False) -> SimulationOutOfMemory:
        """The exception for a run that ran out of memory, with the rows recorded so far if they fit in the
        memory given back. The simulation state is not trusted (an event was cut short), so neither the
        end-of-run invariants nor the walk over open requests and unacknowledged batches are done; when it is
        the building of the tables that ran out (`tabulating`), the state is let go all the same, so the
        end-of-run audit of the logs (``lost_after_ack``) is not done either."""
        end = min(self.env.now, duration)
        result: RunResult | None = None
        why: str | None = None
        held: MemoryUse | None = None
        try:
            held = memory_use(self.recorder, self.components, self._tables)
            counters = self._counters()
            # The controller's metadata log is small and settled (the phases and failovers read it): kept, with
            # the failovers' other instants.
            metadata = self._metadata_batches()
            facts = self._failover_facts()
            cores = (self._cores.cores(self.components.brokers, end),)
            # The simulation state (logs, the producers' backlog) is what filled the memory, and this run
            # is over: let it go so that the recorded rows can be tabulated and written.
            if self.invariants is not None:
                self.invariants.release()  # the run's observer (which records) holds them
            del self.components, self.gauges, self.observer, self.invariants, self.env, self.clock
            gc.collect()
            result = self._result(end, wall_seconds, open_work=False, counters=counters, metadata=metadata,
                                  facts=facts, cores=cores)
            result.summary["interrupted_at_ms"] = end
            result.summary["interrupted_by"] = "out of memory"
        except MemoryError:
            self._tables = None
            rows = held.counts["request rows"] + held.counts["batch rows"] if held is not None else 0
            why = f"its {rows:,} request and batch rows did not fit in memory as tables"
        except Exception as exc:  # a state the cut-short event left inconsistent
            why = f"the state the run stopped in could not be tabulated ({type(exc).__name__}: {exc})"
        return SimulationOutOfMemory(end, duration, result, held, tabulating=tabulating, why_no_result=why)

    def _result(self, duration: float, wall_seconds: float, *, open_work: bool = True,
                counters: dict[str, Any] | None = None, metadata: list[MetadataBatch] | None = None,
                facts: FailoverFacts | None = None,
                cores: tuple[dict[str, dict[str, float]] | None] | None = None) -> RunResult:
        """The run's tables and summary; `open_work` adds rows for requests in flight and batches never
        acknowledged (left out after running out of memory: there may be millions of them)."""
        self.run_recorder.flush(self._record_open_work() if open_work else [])
        if self._tables is None:
            # Kept until the result holds them: if what follows runs out of memory, _out_of_memory builds
            # the result again from them (the recorder yields its tables once).
            self._tables = self.recorder.tables()
        tables = self._tables
        records = tables.records
        metadata = self._metadata_batches() if metadata is None else metadata
        if open_work:
            # Acknowledged batches the final leaders no longer have, batches written twice.
            records = audit_records(records, final_logs(self.components))
        summary = summarize(
            tables.requests,
            records,
            seed=self.seed,
            simulated_duration_ms=duration,
            warmup_ms=float(self.scenario.warmup),
            counters=self._counters() if counters is None else counters,
            producers=[p.name for p in self.scenario.producers],
            consumers=[c.name for c in self.scenario.consumers],
            timeseries=tables.timeseries,
            phases=cut_phases(fault_spans(self.scenario.faults, unfences(metadata)), fences(metadata),
                              float(self.scenario.warmup), duration),
            cores=self._cores.cores(self.components.brokers, duration) if cores is None else cores[0],
        )
        # Every leadership change, phase by phase (only in a run that had one: other summaries stay as they were).
        applied, heartbeats, learned = self._failover_facts() if facts is None else facts
        moved = failovers(metadata, self.scenario.faults, records, applied, heartbeats, learned)
        if moved:
            summary["failovers"] = moved
        # Per record (the tables hold one row per batch, whose latency is its oldest record's).
        summary["produce_record_latency"] = self.run_recorder.record_latency.summary()
        e2e = self.run_recorder.record_latency.e2e_summary()
        if e2e:
            summary["e2e_record_latency"] = e2e
        stalls = None if self._stall_rows is None else stalls_frame(self._stall_rows)
        if stalls is not None:
            summary["stalls"] = stalls_summary(stalls, duration)
        rows = self.run_recorder.retransmissions
        retransmissions = retransmissions_frame(rows) if rows else None
        scenario_yaml = self._scenario_yaml()
        self._tables = None
        # Wall-clock time is not a function of the scenario and seed: run-info.json, not summary.json.
        return RunResult(tables.requests, records, tables.timeseries, summary, scenario_yaml,
                         run_info={"wall_seconds": wall_seconds}, segments=tables.segments, stalls=stalls,
                         retransmissions=retransmissions)

    def _failover_facts(self) -> FailoverFacts:
        """What the failovers read besides the metadata log: when each broker took each leadership, when the
        controller received each broker's heartbeats, when each client learned each new leader."""
        link = self.components.controller_link
        loader = link.metadata_loader
        learned = {p.name: p.metadata.leaders_learned for p in self.components.producers}
        learned.update({c.name: c.metadata.leaders_learned for c in self.components.consumers})
        return loader.leaderships_applied, link.heartbeats_received, learned

    def _record_open_work(self) -> list[RequestEnvelope]:
        """Rows for batches still in flight or in the accumulator (without an ack); the requests still in
        flight, for the recorder to write with the timestamps they reached."""
        unfinished = self.components.unfinished_requests()
        for producer, batch in self.components.unacknowledged_batches():
            self._unacked_batch(producer, batch)
        return unfinished

    def _unacked_batch(self, producer: Producer, b: ProducerBatch) -> None:
        self.recorder.finish_batch(self.run_recorder.batch_trace(producer.name, producer.acks, b, NAN, -1, Errors.NONE))

    def _metadata_batches(self) -> list[MetadataBatch]:
        return list(self.components.controller.core.log.batches)

    def _counters(self) -> dict[str, Any]:
        invariants = self.invariants
        counters: dict[str, Any] = dict(self.components.counters())
        counters["invariant_checks"] = invariants.checker.checks if invariants is not None else 0
        return counters

    def _scenario_yaml(self) -> str | None:
        try:
            from kafkasim.scenario import dump_scenario
        except ImportError:  # pragma: no cover - the scenario package always has it
            return None
        scenario = self.scenario
        if self.seed != scenario.seed:
            scenario = scenario.model_copy(update={"seed": self.seed})
        return dump_scenario(scenario)


def run_scenario(
    scenario: Scenario,
    *,
    seed: int | None = None,
    clock: SimClock | None = None,
    progress: ProgressCallback | None = None,
    layout: ClusterLayout | None = None,
) -> RunResult:
    """Build and run ``scenario`` (the validated model); ``seed`` overrides the scenario's seed,
    ``clock`` lets the caller switch wall-clock pacing during the run, ``progress(sim_ms, duration_ms)``
    is called at most ~10 times per wall second; ``layout`` replaces the scenario's brokers and replicas
    (``cluster_layout(scenario)``)."""
    return Engine(scenario, seed=seed, clock=clock, progress=progress, layout=layout).run()
