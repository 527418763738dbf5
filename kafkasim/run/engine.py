"""The simulation engine: build a scenario's components, run them on the SimPy clock, return a RunResult.

    result = run_scenario(load_scenario("scenarios/quickstart.yaml"))

Besides the clients and the request pipeline, the engine runs the broker's background work:

* one expiration reaper per purgatory (Kafka's ``ExpiredOperationReaper``): it waits until the earliest
  timer bucket expires or 200 ms pass, whichever is first, then ``advance_clock`` (expire, then the purge
  check). A bucket added with an earlier expiration wakes it, as Kafka's DelayQueue does (spec §1.5);
* the ``isr-expiration`` task every ``replica.lag.time.max.ms / 2``, first run at start (spec §6.5);
* the ``kafka-log-retention`` task every ``log.retention.check.interval.ms``, first run 30 s after start
  (Kafka's LogManager.cleanupLogs): ``delete_old_segments`` on the leader's log of every partition and on
  every running follower's local logs. It bounds a long run's memory, which is mostly logged batches;
* the AlterPartition controller (answers after ``alter_partition_latency``, see build.py);
* the gauge sampler, the fault schedule and the invariant checks.

The run stops at ``duration``. Requests still in flight then are recorded with the timestamps they
reached (NaN for the rest); batches never acknowledged keep a NaN ack time.
"""

from __future__ import annotations

import gc
import math
import mmap
import time as wall_time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from hdrh.histogram import HdrHistogram

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import RecordBatch
from kafkasim.clients.accumulator import ProducerBatch
from kafkasim.network.messages import RequestEnvelope
from kafkasim.record.gauges import GaugeSampler
from kafkasim.record.recorder import BatchTrace, Recorder
from kafkasim.record.result import RunResult
from kafkasim.record.summary import PERCENTILES, acks_label, summarize
from kafkasim.run.build import Components, build
from kafkasim.run.faults import schedule_faults
from kafkasim.run.invariant_hooks import EngineInvariants
from kafkasim.server.expiration_reaper import ExpirationReaper
from kafkasim.server.replica_fetcher_thread import Follower
from kafkasim.sim.calls import Call
from kafkasim.sim.clock import SimClock

if TYPE_CHECKING:
    from kafkasim.scenario import Scenario

# Kafka's LogManager.InitialTaskDelayMs (log.initial.task.delay.ms): the retention task's first run.
RETENTION_INITIAL_DELAY_MS = 30_000.0
PROGRESS_INTERVAL_S = 0.1  # progress callbacks at most ~10 per wall second
# Requests table rows kept as Python objects before the recorder converts them to a columnar chunk.
MAX_ROWS_IN_MEMORY = 50_000
# Cyclic-GC thresholds while the simulation loop runs (restored afterwards). A run allocates a few hundred
# short-lived objects per request and keeps every logged batch, so with CPython's default (700, 10, 10) the
# collector ran ~70 times per simulated second and its full passes walked the ever-growing logs: 5-7% of a
# 60 s benchmark run, more in longer ones. Collection timing never changes simulated results.
RUN_GC_THRESHOLDS = (50_000, 20, 100)
# Address space set aside while the loop runs and given back if the run runs out of memory, so that the
# rows recorded up to then can still be tabulated and saved (a partial result instead of a MemoryError
# cascade). An anonymous mapping that is never touched: it counts against an address-space limit
# (RLIMIT_AS, where Python's MemoryError comes from) but costs no resident memory, where a bytearray's
# zero fill made every run's peak RSS 64 MB larger.
MEMORY_RESERVE_BYTES = 64 * 1024 * 1024
NAN = math.nan


class SimulationOutOfMemory(MemoryError):
    """The run ran out of memory at simulated time `at_ms` (of `duration_ms`). `result` holds what was
    recorded up to then (summary `interrupted_at_ms`, `interrupted_by: "out of memory"`), or is None when
    even that could not be tabulated. Its causes are the scenario's load and length: a producer rate the
    broker cannot keep up with piles records up in the producers and the logs."""

    def __init__(self, at_ms: float, duration_ms: float, result: RunResult | None) -> None:
        super().__init__(f"out of memory at simulated time {at_ms:g} ms of {duration_ms:g} ms")
        self.at_ms = at_ms
        self.duration_ms = duration_ms
        self.result = result

ProgressCallback = Callable[[float, float], None]


class RecordLatency:
    """Produce latency of every record (not only a batch's oldest), from its intended send time and from
    the send of the request that carried it, per acks setting. Records intended before the warm-up ends
    are left out.

    Values are counted in HdrHistogram buckets (µs, 3 significant digits, like the summary's) kept in a
    plain dict while the run goes -- a dict increment per record instead of a ``record_value`` call -- and
    poured into an ``HdrHistogram`` at the end. Memory is bounded by the number of distinct buckets.
    """

    HIGHEST_US = 3_600_000_000
    SUB_BUCKET_BITS = 11  # 3 significant digits: values below 2048 µs are exact

    def __init__(self, warmup_ms: float = 0.0) -> None:
        self.warmup_ms = warmup_ms
        # acks -> (from-intended buckets, from-send buckets, [sum from intended, sum from send])
        self._by_acks: dict[int, tuple[dict[int, int], dict[int, int], list[float]]] = {}

    @classmethod
    def _bucket(cls, latency_ms: float) -> int:
        us = int(latency_ms * 1000.0 + 0.5)
        if us <= 0:
            return 0
        if us > cls.HIGHEST_US:
            us = cls.HIGHEST_US
        shift = us.bit_length() - cls.SUB_BUCKET_BITS
        return (us >> shift) << shift if shift > 0 else us

    def add(self, acks: int, batch: ProducerBatch, ack_ms: float) -> None:
        entry = self._by_acks.get(acks)
        if entry is None:
            entry = self._by_acks[acks] = ({}, {}, [0.0, 0.0])
        from_intended, from_send, sums = entry
        warmup = self.warmup_ms
        bucket = self._bucket
        kept = 0
        for intended in batch.intended_ms:
            if intended >= warmup:
                latency = ack_ms - intended
                sums[0] += latency
                key = bucket(latency)
                from_intended[key] = from_intended.get(key, 0) + 1
                kept += 1
        if kept:
            latency = ack_ms - batch.send_ms
            sums[1] += latency * kept
            key = bucket(latency)
            from_send[key] = from_send.get(key, 0) + kept

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for acks in sorted(self._by_acks):
            from_intended, from_send, sums = self._by_acks[acks]
            out[acks_label(acks)] = {
                "records": sum(from_intended.values()),
                "from_intended": _histogram_summary(from_intended, sums[0]),
                "from_send": _histogram_summary(from_send, sums[1]),
            }
        return out


def _histogram_summary(buckets: dict[int, int], total_ms: float) -> dict[str, Any]:
    count = sum(buckets.values())
    if count == 0:
        return {"count": 0}
    histogram = HdrHistogram(1, RecordLatency.HIGHEST_US, 3)
    for value in sorted(buckets):
        histogram.record_value(value, buckets[value])
    out: dict[str, Any] = {"count": count, "mean": total_ms / count}
    for name, q in PERCENTILES:
        out[name] = histogram.get_value_at_percentile(q) / 1000.0
    out["max"] = histogram.get_max_value() / 1000.0
    return out


class RunRecorder:
    """The clients' ``ClientRecorder``: turns envelopes and producer batches into recorder rows.

    A request's row is written once both sides are done with it: the client (response, timeout, acks=0
    sent) and the broker (response sent or dropped) -- so a response that arrives after the client gave
    up still has its broker-side timing. Batches whose offset the producer never learned although they
    may be in the log (acks=0, timeouts) wait until a consumer reads them, which tells their offset.
    """

    def __init__(
        self,
        recorder: Recorder,
        consumers_by_topic: dict[str, int],
        acks_by_producer: Mapping[str, int],
        on_request: Callable[[RequestEnvelope], None] | None = None,
    ) -> None:
        self.recorder = recorder
        self._consumers_by_topic = consumers_by_topic
        self.acks_by_producer = acks_by_producer
        self._awaiting_broker: dict[int, RequestEnvelope] = {}
        self._unknown_offset: dict[int, BatchTrace] = {}
        self._on_request = on_request
        self.requests_recorded = 0
        self.invariants: EngineInvariants | None = None
        self.record_latency = RecordLatency()

    # --- requests ----------------------------------------------------------------------------------

    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.client_done = True
        if self.invariants is not None:
            self.invariants.on_client_outcome(envelope)
        if envelope.end_ms == envelope.end_ms or (envelope.connection is None and envelope.expects_response):
            # Done on both sides, or never picked up by the broker (its connection is closed, so it never
            # will be). A processor sets `connection` when it *starts* reading a request: one whose read is
            # under way when the client gives up is still handled, and written when the broker is done.
            self._write(envelope)
        else:
            self._awaiting_broker[envelope.request_id] = envelope

    def broker_done(self, envelope: RequestEnvelope) -> None:
        if envelope.client_done and self._awaiting_broker.pop(envelope.request_id, None) is not None:
            self._write(envelope)

    def _write(self, envelope: RequestEnvelope) -> None:
        if self._on_request is not None:
            self._on_request(envelope)
        # Drop the references a row does not need before it waits in the recorder's buffer (the body
        # stays: an acks=0 request can be done on both sides while its handler is still finishing).
        envelope.response = None
        envelope.on_response = None
        envelope.connection = None
        self.recorder.finish_request(envelope)
        self.requests_recorded += 1

    # --- batches -----------------------------------------------------------------------------------

    def batch_finished(self, producer: str, batch: ProducerBatch, ack_ms: float, error: Errors, base_offset: int) -> None:
        if error == Errors.NONE:
            self.record_latency.add(self.acks_by_producer[producer], batch, ack_ms)
        self._finish_batch(self.batch_trace(producer, batch, ack_ms, base_offset, error), error)

    def batch_trace(
        self, producer: str, batch: ProducerBatch, ack_ms: float, base_offset: int, error: Errors
    ) -> BatchTrace:
        return BatchTrace(
            batch.batch_id,
            producer,
            batch.tp.topic,
            batch.tp.partition,
            batch.record_count,
            batch.size_in_bytes,
            self.acks_by_producer[producer],
            batch.intended_ms[0],
            batch.created_ms,
            batch.send_ms,
            ack_ms,
            base_offset,
            int(error),
            batch.request_id,
        )

    def _finish_batch(self, trace: BatchTrace, error: Errors) -> None:
        may_be_in_log = trace.offset < 0 and error in (
            Errors.NONE,  # acks=0: appended, offset unknown to the producer
            Errors.REQUEST_TIMED_OUT,
            Errors.NETWORK_EXCEPTION,
        )
        if may_be_in_log and self._consumers_by_topic.get(trace.topic, 0) > 0:
            self._unknown_offset[trace.batch_id] = trace
        else:
            self.recorder.finish_batch(trace)

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        pending = self._unknown_offset.pop(batch.batch_id, None) if self._unknown_offset else None
        if pending is not None:
            pending.offset = batch.base_offset
            self.recorder.finish_batch(pending)
        self.recorder.batch_consumed(batch.batch_id, consumer, receive_ms)

    # --- end of run --------------------------------------------------------------------------------

    def flush(self, unfinished: list[RequestEnvelope]) -> None:
        """Record what is still open at the end: requests in flight, batches of unknown offset."""
        for envelope in self._awaiting_broker.values():
            self._write(envelope)
        self._awaiting_broker.clear()
        for envelope in unfinished:
            if not envelope.client_done:
                self._write(envelope)
        for trace in self._unknown_offset.values():
            self.recorder.finish_batch(trace)
        self._unknown_offset.clear()


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
    ) -> None:
        self.scenario = scenario
        self._stop_requested = False
        self.seed = scenario.seed if seed is None else seed
        if clock is None:
            wallclock = scenario.clock.mode == "wallclock"
            clock = SimClock(wallclock=wallclock, speed=getattr(scenario.clock, "speed", 1.0))
        self.clock = clock
        self.env = clock.env
        self.progress = progress
        consumers = {c.name: [c.topic] for c in scenario.consumers}
        self.recorder = Recorder(consumers, max_rows_in_memory=MAX_ROWS_IN_MEMORY)
        consumers_by_topic: dict[str, int] = {}
        for c in scenario.consumers:
            consumers_by_topic[c.topic] = consumers_by_topic.get(c.topic, 0) + 1
        acks = {p.name: p.acks for p in scenario.producers}
        # on_request sees each finished request before its row is written (the CLI's live view).
        self.run_recorder = RunRecorder(self.recorder, consumers_by_topic, acks, on_request)
        self.reapers: list[ExpirationReaper] = []
        self.components: Components = build(
            scenario,
            clock,
            self.seed,
            self.run_recorder,
            self._after_request,
            self.run_recorder.broker_done,
            check_invariants=scenario.invariants if check_invariants is None else check_invariants,
        )
        self.invariants = self.components.invariants
        self.run_recorder.invariants = self.invariants
        rm = self.components.replica_manager
        self.reapers = [ExpirationReaper(self.env, rm.produce_purgatory), ExpirationReaper(self.env, rm.fetch_purgatory)]
        self.gauges = GaugeSampler(
            rm, self.components.pipeline, self.components.followers, self.components.producers, self.recorder.sample
        )

    def request_stop(self) -> None:
        """Ask a running run to end early (Ctrl-C, a notebook's stop button); safe from a signal handler.

        Checked between progress slices, so it needs a ``progress`` callback (without one the run goes in one
        piece). The result then covers simulated time up to the stop; its summary has ``interrupted_at_ms``.
        """
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def _after_request(self) -> None:
        for reaper in self.reapers:
            reaper.poke()

    # --- background tasks --------------------------------------------------------------------------

    def _isr_expiration(self, _event: Any) -> None:
        self.components.replica_manager.maybe_shrink_isr()
        period = self.components.config.isr_expiration_interval_ms
        if period > 0:  # KafkaScheduler.schedule runs a task whose period is not > 0 once only
            Call(self.env, float(period), self._isr_expiration)

    def _log_retention(self, _event: Any) -> None:
        c = self.components
        # Every broker runs its own LogManager: the leader's logs here, each follower's on that broker. A
        # paused follower (a stalled JVM) runs it when it resumes; a crashed one not at all.
        for partition in c.replica_manager.partitions.values():
            partition.log.delete_old_segments()
        for follower in c.followers:
            if not follower.crashed:
                follower.run_or_defer(partial(_delete_old_segments, follower))
        Call(self.env, float(self.scenario.broker.log_retention_check_interval_ms), self._log_retention)

    def _sample(self, _event: Any) -> None:
        if self.invariants is not None:
            self.invariants.check_all_hw()
        self.gauges.sample(self.env.now)
        Call(self.env, self.scenario.sample_interval, self._sample)

    # --- run ---------------------------------------------------------------------------------------

    def run(self) -> RunResult:
        duration = float(self.scenario.duration)
        self._start()
        started = wall_time.perf_counter()
        thresholds = gc.get_threshold()
        gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(RUN_GC_THRESHOLDS, thresholds, strict=True)))
        reserve = mmap.mmap(-1, MEMORY_RESERVE_BYTES)
        out_of_memory = False
        try:
            self._run_until(duration)
        except MemoryError:
            # Handled below, once this exception and the simulation frames its traceback holds are gone.
            out_of_memory = True
        finally:
            gc.set_threshold(*thresholds)
        reserve.close()
        wall_seconds = wall_time.perf_counter() - started
        if out_of_memory:
            raise self._out_of_memory(duration, wall_seconds)
        end = min(self.env.now, duration)
        if self.invariants is not None:
            self.invariants.at_end()
        result = self._result(end, wall_seconds)
        if end < duration:
            result.summary["interrupted_at_ms"] = end
        return result

    def _start(self) -> None:
        c = self.components
        env = self.env
        for follower in c.followers:
            follower.start()
        for consumer in c.consumers:
            consumer.start()
        for producer in c.producers:
            producer.start()
        for reaper in self.reapers:
            reaper.start()
        Call(env, 0.0, self._isr_expiration)
        Call(env, RETENTION_INITIAL_DELAY_MS, self._log_retention)
        Call(env, 0.0, self._sample)
        schedule_faults(self.scenario, c)

    def _run_until(self, duration: float) -> None:
        env = self.env
        if self.progress is None:
            env.run(until=duration)
            return
        # Run in slices so that progress can be reported; slices adapt to ~PROGRESS_INTERVAL_S of wall time.
        step = max(duration / 1000.0, 1.0)
        last_report = wall_time.perf_counter()
        while env.now < duration and not self._stop_requested:
            t0 = wall_time.perf_counter()
            env.run(until=min(duration, env.now + step))
            spent = wall_time.perf_counter() - t0
            if spent > 0:
                step = min(max(step * PROGRESS_INTERVAL_S / spent, 1.0), duration)
            now_wall = wall_time.perf_counter()
            if now_wall - last_report >= PROGRESS_INTERVAL_S or env.now >= duration:
                self.progress(env.now, duration)
                last_report = now_wall

    def _out_of_memory(self, duration: float, wall_seconds: float) -> SimulationOutOfMemory:
        """The exception for a run that ran out of memory, with the rows recorded so far if they fit in the
        memory given back. The simulation state is not trusted (an event was cut short), so neither the
        end-of-run invariants nor the walk over open requests and unacknowledged batches are done."""
        end = min(self.env.now, duration)
        result: RunResult | None
        try:
            counters = self._counters()
            # The simulation state (logs, the producers' backlog) is what filled the memory, and this run
            # is over: let it go so that the recorded rows can be tabulated and written.
            del self.components, self.gauges, self.reapers, self.invariants, self.env, self.clock
            self.run_recorder.invariants = None
            gc.collect()
            result = self._result(end, wall_seconds, open_work=False, counters=counters)
            result.summary["interrupted_at_ms"] = end
            result.summary["interrupted_by"] = "out of memory"
        except Exception:  # MemoryError again, or a state the cut-short event left inconsistent
            result = None
        return SimulationOutOfMemory(end, duration, result)

    def _result(self, duration: float, wall_seconds: float, *, open_work: bool = True,
                counters: dict[str, Any] | None = None) -> RunResult:
        """The run's tables and summary; `open_work` adds rows for requests in flight and batches never
        acknowledged (left out after running out of memory: there may be millions of them)."""
        self.run_recorder.flush(self._record_open_work() if open_work else [])
        tables = self.recorder.tables()
        summary = summarize(
            tables.requests,
            tables.records,
            seed=self.seed,
            simulated_duration_ms=duration,
            warmup_ms=float(self.scenario.warmup),
            counters=self._counters() if counters is None else counters,
        )
        # Per record (the tables hold one row per batch, whose latency is its oldest record's).
        summary["produce_record_latency"] = self.run_recorder.record_latency.summary()
        scenario_yaml = self._scenario_yaml()
        # Wall-clock time is not a function of the scenario and seed: run-info.json, not summary.json.
        return RunResult(tables.requests, tables.records, tables.timeseries, summary, scenario_yaml,
                         run_info={"wall_seconds": wall_seconds})

    def _record_open_work(self) -> list[RequestEnvelope]:
        """Rows for batches still in flight or in the accumulator (without an ack); the requests still in
        flight, for the recorder to write with the timestamps they reached."""
        c = self.components
        unfinished: list[RequestEnvelope] = []
        for producer in c.producers:
            unfinished.extend(envelope for envelope, _ in producer.unfinished())
        for consumer in c.consumers:
            unfinished.extend(consumer.unfinished())
        for follower in c.followers:
            unfinished.extend(follower.unfinished())
        unfinished.sort(key=lambda e: e.request_id)
        for producer in c.producers:
            producer.catch_up()
            for _, batches in producer.unfinished():
                for b in batches:
                    self._unacked_batch(producer.name, b)
            for b in producer.accumulator.all_batches():
                self._unacked_batch(producer.name, b)
        return unfinished

    def _unacked_batch(self, producer: str, b: ProducerBatch) -> None:
        self.recorder.finish_batch(self.run_recorder.batch_trace(producer, b, NAN, -1, Errors.NONE))

    def _counters(self) -> dict[str, Any]:
        c = self.components
        m = c.replica_manager.metrics
        return {
            "isr_shrinks": m.isr_shrinks,
            "isr_expands": m.isr_expands,
            "failed_isr_updates": m.failed_isr_updates,
            "produce_expires": m.produce_expires,
            "fetch_expires_follower": m.fetch_expires_follower,
            "fetch_expires_consumer": m.fetch_expires_consumer,
            "alter_partition_requests": c.alter_partition.submitted,
            "requests_handled": c.pipeline.requests_handled,
            "messages_dropped": sum(path.dropped for path in c.links.values()),
            "reaper_passes": sum(r.passes for r in self.reapers),
            "invariant_checks": self.invariants.checker.checks if self.invariants is not None else 0,
        }

    def _scenario_yaml(self) -> str | None:
        try:
            from kafkasim.scenario import dump_scenario
        except ImportError:  # pragma: no cover - the scenario package always has it
            return None
        scenario = self.scenario
        if self.seed != scenario.seed:
            scenario = scenario.model_copy(update={"seed": self.seed})
        return dump_scenario(scenario)


def _delete_old_segments(follower: Follower) -> None:
    if not follower.crashed:
        for fp in follower.partitions.values():
            fp.log.delete_old_segments()


def run_scenario(
    scenario: Scenario,
    *,
    seed: int | None = None,
    clock: SimClock | None = None,
    progress: ProgressCallback | None = None,
) -> RunResult:
    """Build and run ``scenario`` (the validated model); ``seed`` overrides the scenario's seed,
    ``clock`` lets the caller switch wall-clock pacing during the run, ``progress(sim_ms, duration_ms)``
    is called at most ~10 times per wall second."""
    return Engine(scenario, seed=seed, clock=clock, progress=progress).run()
