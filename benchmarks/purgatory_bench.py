"""Purgatory benchmark: kafkasim's timing-wheel purgatory vs. a Kafka 0.8-style heap purgatory.

Replays Kafka's `TestPurgatoryPerformance` workload (its `main`, ported from the Scala
`TestPurgatoryPerformance`) in virtual time through both purgatories and reports, in one run:

* operations per second of each over the whole replay, expiries and the final drain included, and their
  ratio: per wall-clock second and per CPU second of this process (on a shared machine the wall clock
  also counts time spent waiting for a core); median of `--repeat` passes, wheel and heap alternating;
* the peak memory of each (tracemalloc, in a separate pass: tracing slows Python down, so it never runs
  during a timed pass);
* the CPU cost of one add + complete with N operations already pending, N = 1 k ... 1 M, for the wheel
  (the heap is measured the same way for comparison; `--no-heap-cost` skips it).

The workload, as Kafka's tool builds it: 1 M pre-sampled exponential inter-arrival times (whole ms, the
fractional residue carried to the next sample) for a Poisson process at `--rate`, and 1 M pre-sampled
log-normal completion latencies with mu = ln(p50), sigma = (ln(p75) - mu) / 0.674490, truncated to whole
ms; each request picks one of each at random. Kafka's quirk, kept: one list of `--keys` random keys
(from a space of `--key-space-size`) is drawn once and **every request watches the same keys**, so all
operations share three watch lists. The Scala semantics are used: an operation completes at
`creation + latency` (the Java port's `creation + timeout` is a bug), through a completion queue that
calls `force_complete()` at that time, but only when latency < timeout; the others expire. Nothing calls
`check_and_complete`.

Virtual time: one loop merges the arrivals, the completion queue (a heap of `completes_at`, Kafka's
`CompletionQueue`) and the reaper, all on one `ManualTime`. The reaper runs when the timer's next
expiration is due (wheel: earliest bucket in its delay queue; heap: head of the heap) and at least every
200 ms (Kafka's `ExpiredOperationReaper` loops `advanceClock(200)`), and calls the purgatory's
`advance_clock()`: expiries, then the watch-list purge check. At one millisecond the order is: completions,
reaper, arrivals. The replay ends when every operation has completed or expired and the timer holds nothing
more.

    uv run python benchmarks/purgatory_bench.py --num 200000 --rate 50000 --pct50 20 --pct75 60 \
        --timeout 30000 [--markdown results.md]
    uv run python benchmarks/purgatory_bench.py --quick
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import random
import shlex
import statistics
import sys
import tracemalloc
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from heapq import heappop, heappush
from pathlib import Path
from time import perf_counter, process_time
from typing import Protocol

from heap_purgatory import HeapPurgatory
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafkasim.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkasim.timer import ManualTime, SystemTimer

REAPER_WORK_TIMEOUT_MS = 200  # DelayedOperationPurgatory.ExpiredOperationReaper loops advanceClock(200)
KAFKA_SAMPLE_SIZE = 1_000_000  # TestPurgatoryPerformance pre-samples 1 M latencies and 1 M intervals
NORMAL_P75 = 0.674490  # the 75th percentile of N(0, 1), Kafka's constant
NEVER_MS = 1 << 62  # a latency that never elapses: the operation can only expire
PREFILL_TIMEOUT_MS = 3_600_000  # pending operations for the cost test expire in [1 h, 2 h)
ARRIVALS_PER_MS = 50  # the cost test moves time 1 ms every 50 operations (50 k requests/s)


# ---------------------------------------------------------------- workload


@dataclass(frozen=True)
class WorkloadSpec:
    """TestPurgatoryPerformance's parameters, plus the seed and the pre-sample size."""

    num: int
    rate: float
    pct50: float
    pct75: float
    timeout_ms: int
    num_keys: int = 3
    key_space_size: int = 100
    purge_interval: int = 1000
    seed: int = 0
    sample_size: int = KAFKA_SAMPLE_SIZE


@dataclass(frozen=True)
class Workload:
    """One drawn workload: request i arrives at `arrival_ms[i]` and would complete `latency_ms[i]` later."""

    spec: WorkloadSpec
    arrival_ms: array[int]
    latency_ms: array[int]
    keys: tuple[str, ...]

    @property
    def target_rate(self) -> float:
        """Kafka's "target rate": requests per second of the scheduled arrivals."""
        span = self.arrival_ms[-1] if self.arrival_ms else 0
        return len(self.arrival_ms) * 1000.0 / span if span > 0 else math.inf

    @property
    def expiring(self) -> int:
        """Requests whose latency is not below the timeout: they are never completed, they expire."""
        timeout = self.spec.timeout_ms
        return sum(1 for latency in self.latency_ms if latency >= timeout)


def latency_samples(rng: random.Random, size: int, pct50: float, pct75: float) -> list[int]:
    """Kafka's `LatencySamples`: log-normal from two percentiles, truncated to whole ms (`toLong`)."""
    mu = math.log(pct50)
    sigma = (math.log(pct75) - mu) / NORMAL_P75
    gauss = rng.gauss
    return [int(math.exp(gauss(mu, sigma))) for _ in range(size)]


def interval_samples(rng: random.Random, size: int, rate: float) -> list[int]:
    """Kafka's `IntervalSamples`: exponential inter-arrival times in whole ms, carrying the residue."""
    lam = rate / 1000.0
    out = []
    residue = 0.0
    uniform = rng.random
    for _ in range(size):
        interval = math.log(1.0 - uniform()) / -lam + residue
        whole = int(interval)
        residue = interval - whole
        out.append(whole)
    return out


def make_workload(spec: WorkloadSpec) -> Workload:
    """Draw the arrivals, latencies and the one shared key list, from `random.Random(spec.seed)`."""
    rng = random.Random(spec.seed)
    latencies = latency_samples(rng, spec.sample_size, spec.pct50, spec.pct75)
    intervals = interval_samples(rng, spec.sample_size, spec.rate)
    # TestPurgatoryPerformance's quirk: one key list for every request (duplicates possible, as in Kafka).
    keys = tuple(f"fakeKey{rng.randrange(spec.key_space_size)}" for _ in range(spec.num_keys))
    arrival_ms: array[int] = array("q")
    latency_ms: array[int] = array("q")
    pick = rng.randrange
    size = spec.sample_size
    t = 0
    for _ in range(spec.num):
        t += intervals[pick(size)]
        arrival_ms.append(t)
        latency_ms.append(latencies[pick(size)])
    return Workload(spec, arrival_ms, latency_ms, keys)


# ---------------------------------------------------------------- the operation


class Latch:
    """Counts callbacks, like the tool's `CountDownLatch` (subclass to record them)."""

    __slots__ = ("completed", "expired")

    def __init__(self) -> None:
        self.completed = 0
        self.expired = 0

    def on_complete(self, op: FakeOperation) -> None:
        self.completed += 1

    def on_expiration(self, op: FakeOperation) -> None:
        self.expired += 1


class FakeOperation(DelayedOperation):
    """The tool's `FakeOperation`: completable once `completes_at` has passed (Scala semantics)."""

    __slots__ = ("request_id", "completes_at", "_time", "_latch")

    def __init__(self, delay_ms: int, latency_ms: int, time: ManualTime, latch: Latch, request_id: int) -> None:
        super().__init__(delay_ms)
        self.request_id = request_id
        self.completes_at = time.milliseconds() + latency_ms
        self._time = time
        self._latch = latch

    def try_complete(self) -> bool:
        if self._time.milliseconds() >= self.completes_at:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._latch.on_complete(self)

    def on_expiration(self) -> None:
        self._latch.on_expiration(self)


# ---------------------------------------------------------------- the two purgatories


class BenchPurgatory(Protocol):
    """What the replay needs: today's purgatory verbs plus where the timer's next expiration is."""

    def try_complete_else_watch(self, op: FakeOperation, keys: Sequence[Hashable]) -> bool: ...

    def advance_clock(self) -> bool: ...

    def purge_completed(self) -> int: ...

    @property
    def next_expiration_ms(self) -> int | None: ...


class WheelPurgatory:
    """kafkasim's `DelayedOperationPurgatory` on its own `SystemTimer`, so that the replay can ask the timer
    for its next bucket expiration."""

    __slots__ = ("purgatory", "timer", "try_complete_else_watch", "advance_clock", "purge_completed")

    def __init__(self, time: ManualTime, purge_interval: int) -> None:
        self.timer = SystemTimer("bench", time=time)
        self.purgatory = DelayedOperationPurgatory(
            "bench", self.timer, time=time, purge_interval=purge_interval
        )
        # Bound once: the replay calls these per request.
        self.try_complete_else_watch = self.purgatory.try_complete_else_watch
        self.advance_clock = self.purgatory.advance_clock
        self.purge_completed = self.purgatory.purge_completed

    @property
    def next_expiration_ms(self) -> int | None:
        return self.timer.next_expiration_ms


def heap_purgatory(time: ManualTime, purge_interval: int) -> HeapPurgatory:
    return HeapPurgatory("bench", time=time, purge_interval=purge_interval)


Builder = Callable[[ManualTime, int], BenchPurgatory]
VARIANTS: dict[str, Builder] = {"wheel": WheelPurgatory, "heap": heap_purgatory}


# ---------------------------------------------------------------- replay


@dataclass(frozen=True)
class ReplayResult:
    variant: str
    wall_s: float
    cpu_s: float  # this process's CPU time: what the replay cost, whatever else the machine was doing
    requests: int
    completed: int
    expired: int
    end_ms: int
    reaper_runs: int

    @property
    def ops_per_s(self) -> float:
        """Requests per wall-clock second."""
        return self.requests / self.wall_s if self.wall_s > 0 else math.inf

    @property
    def ops_per_cpu_s(self) -> float:
        """Requests per CPU second of this process."""
        return self.requests / self.cpu_s if self.cpu_s > 0 else math.inf


def replay(workload: Workload, variant: str, latch: Latch | None = None) -> ReplayResult:
    """Run the whole workload through one purgatory in virtual time; the wall time covers everything from
    building the purgatory to the last expiry."""
    spec = workload.spec
    latch = Latch() if latch is None else latch
    arrivals = workload.arrival_ms
    latencies = workload.latency_ms
    keys = workload.keys
    timeout = spec.timeout_ms
    n = len(arrivals)
    never = NEVER_MS
    start = perf_counter()
    start_cpu = process_time()
    time = ManualTime(0)
    purgatory = VARIANTS[variant](time, spec.purge_interval)
    try_complete_else_watch = purgatory.try_complete_else_watch
    # Kafka's CompletionQueue: (completes_at, request id, op); the id keeps ties deterministic.
    completion_queue: list[tuple[int, int, FakeOperation]] = []
    now = 0
    last_reap = 0
    reaper_runs = 0
    i = 0
    while True:
        next_arrival = arrivals[i] if i < n else never
        next_completion = completion_queue[0][0] if completion_queue else never
        expiration = purgatory.next_expiration_ms
        if i >= n and not completion_queue and expiration is None:
            break
        next_reap = last_reap + REAPER_WORK_TIMEOUT_MS
        if expiration is not None and expiration < next_reap:
            next_reap = expiration
        t = min(next_arrival, next_completion, next_reap)
        if t > now:
            now = t
            time.set(t)
        while completion_queue and completion_queue[0][0] <= now:
            heappop(completion_queue)[2].force_complete()
        if next_reap <= now:
            purgatory.advance_clock()
            last_reap = now
            reaper_runs += 1
            expiration = purgatory.next_expiration_ms
            if expiration is not None and expiration <= now:
                raise RuntimeError(f"{variant} purgatory: advance_clock() at {now} ms left an expiration due at {expiration} ms")
        while i < n and arrivals[i] <= now:
            latency = latencies[i]
            op = FakeOperation(timeout, latency, time, latch, i)
            if latency < timeout:
                heappush(completion_queue, (op.completes_at, i, op))
            try_complete_else_watch(op, keys)
            i += 1
    cpu_s = process_time() - start_cpu
    wall_s = perf_counter() - start
    completed = latch.completed - latch.expired
    return ReplayResult(variant, wall_s, cpu_s, n, completed, latch.expired, now, reaper_runs)


def timed_replays(workload: Workload, repeat: int) -> dict[str, list[ReplayResult]]:
    """`repeat` timed passes of each purgatory, alternating wheel and heap so that both see the same
    machine load; each variant's passes sorted by CPU time."""
    results: dict[str, list[ReplayResult]] = {variant: [] for variant in VARIANTS}
    for _ in range(repeat):
        for variant in VARIANTS:
            gc.collect()
            results[variant].append(replay(workload, variant))
    for passes in results.values():
        passes.sort(key=lambda r: r.cpu_s)
    return results


def median_pass(passes: list[ReplayResult]) -> ReplayResult:
    return passes[len(passes) // 2]


def peak_memory_bytes(workload: Workload, variant: str) -> int:
    """Peak Python memory allocated during one (untimed) replay, measured with tracemalloc."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        replay(workload, variant)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


# ---------------------------------------------------------------- cost per operation at N pending


@dataclass(frozen=True)
class CostResult:
    variant: str
    pending: int
    us_per_op: float  # best round (as timeit), garbage collector as is
    us_per_op_gc_frozen: float  # best round, prefill moved out of the collector's reach (gc.freeze)


def _fill(
    purgatory: BenchPurgatory, time: ManualTime, latch: Latch, keys: tuple[str, ...], pending: int,
    seed: int, advance: Callable[[int], None] | None = None,
) -> None:
    rng = random.Random(seed)
    for j in range(pending):
        op = FakeOperation(PREFILL_TIMEOUT_MS + rng.randrange(PREFILL_TIMEOUT_MS), NEVER_MS, time, latch, j)
        purgatory.try_complete_else_watch(op, keys)
        if advance is not None and j % 10_000 == 0:
            advance(j)


def _add_and_complete(
    purgatory: BenchPurgatory, time: ManualTime, latch: Latch, keys: tuple[str, ...], batch: int,
    timeout_ms: int, first_id: int,
) -> float:
    """CPU seconds for `batch` operations, each watched (and put on the timer) then completed at once."""
    try_complete_else_watch = purgatory.try_complete_else_watch
    request_id = first_id
    start = process_time()
    for _ in range(batch // ARRIVALS_PER_MS):
        for _ in range(ARRIVALS_PER_MS):
            op = FakeOperation(timeout_ms, NEVER_MS, time, latch, request_id)
            try_complete_else_watch(op, keys)
            op.force_complete()
            request_id += 1
        time.sleep(1)
    return process_time() - start


def cost_per_operation(
    variant: str, pending: int, *, batch: int, rounds: int, timeout_ms: int, keys: tuple[str, ...],
    purge_interval: int, seed: int, progress: Progress | None = None,
) -> CostResult:
    """Pre-fill `pending` operations that expire in 1-2 h and never complete, then time rounds of `batch`
    add + complete operations with the workload's timeout, in CPU time; report the best round, as `timeit`
    does (on a shared machine other processes only ever add time). Time moves 1 ms per 50 operations; the
    reaper does not run (no bucket is due in that span), but between rounds, untimed, the watch lists are
    purged so that each round starts with `pending` live operations watched (the heap keeps its completed
    entries: that is what it does). One untimed round warms up first."""
    gc.collect()  # the previous call's purgatory (its buckets are reference cycles)
    time = ManualTime(0)
    purgatory = VARIANTS[variant](time, purge_interval)
    latch = Latch()
    task = None
    if progress is not None:
        task = progress.add_task(f"{variant}: pre-fill {pending:,}", total=pending)

    def advance(done: int) -> None:
        if progress is not None and task is not None:
            progress.update(task, completed=done)

    _fill(purgatory, time, latch, keys, pending, seed, advance)
    if progress is not None and task is not None:
        progress.update(task, completed=pending)
    batch = max(ARRIVALS_PER_MS, batch - batch % ARRIVALS_PER_MS)
    next_id = pending

    def timed_round() -> float:
        nonlocal next_id
        seconds = _add_and_complete(purgatory, time, latch, keys, batch, timeout_ms, next_id)
        next_id += batch
        purgatory.purge_completed()
        return seconds / batch

    timed_round()  # warm-up
    gc.collect()
    as_is = [timed_round() for _ in range(rounds)]
    gc.collect()
    gc.freeze()
    try:
        frozen = [timed_round() for _ in range(rounds)]
    finally:
        gc.unfreeze()
    return CostResult(variant, pending, min(as_is) * 1e6, min(frozen) * 1e6)


# ---------------------------------------------------------------- the report


@dataclass(frozen=True)
class BenchReport:
    command: str
    workload: Workload
    passes: dict[str, list[ReplayResult]]  # per variant, sorted by CPU time
    peaks: dict[str, int]
    costs: dict[str, list[CostResult]]
    load_average: tuple[float, float]  # 1-minute load average when the run started and when it ended

    def replay(self, variant: str) -> ReplayResult:
        """The median pass by CPU time."""
        return median_pass(self.passes[variant])

    def median_wall_s(self, variant: str) -> float:
        return statistics.median(r.wall_s for r in self.passes[variant])

    @property
    def throughput_ratio(self) -> float:
        """Wheel ops per CPU second divided by the heap's (>= 1: the wheel is faster), median passes."""
        return self.replay("heap").cpu_s / self.replay("wheel").cpu_s

    @property
    def wall_throughput_ratio(self) -> float:
        """The same ratio from median wall-clock times (noisy when other processes compete for the cores)."""
        return self.median_wall_s("heap") / self.median_wall_s("wheel")

    @property
    def memory_ratio(self) -> float:
        """Wheel peak memory divided by heap peak memory."""
        return self.peaks["wheel"] / self.peaks["heap"]

    def cost_ratio(self, variant: str, pending: int, frozen: bool = False) -> float:
        rows = {c.pending: c for c in self.costs[variant]}
        base = rows[min(rows)]
        row = rows[pending]
        return (row.us_per_op_gc_frozen / base.us_per_op_gc_frozen) if frozen else row.us_per_op / base.us_per_op

    def targets(self) -> list[tuple[str, str, bool]]:
        out = [
            (
                "wheel throughput >= heap throughput (whole replay, expiries included)",
                f"{self.throughput_ratio:.2f}x by CPU time ({self.wall_throughput_ratio:.2f}x by wall clock)",
                self.throughput_ratio >= 1.0,
            ),
            ("wheel peak memory <= 10% of heap's", f"{self.memory_ratio:.1%}", self.memory_ratio <= 0.10),
        ]
        wheel = {c.pending: c for c in self.costs.get("wheel", [])}
        if wheel:
            top = max(wheel)
            ratio = self.cost_ratio("wheel", top)
            out.append(
                (
                    f"wheel cost/op at {top:,} pending <= 1.5x cost at {min(wheel):,}",
                    f"{ratio:.2f}x (gc frozen: {self.cost_ratio('wheel', top, frozen=True):.2f}x)",
                    ratio <= 1.5,
                )
            )
        return out


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _machine() -> str:
    return (
        f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


def _load(report: BenchReport) -> str:
    start, end = report.load_average
    return f"1-minute load average {start:.1f} at the start, {end:.1f} at the end"


def replay_rows(report: BenchReport) -> tuple[list[str], list[list[str]]]:
    header = ["purgatory", "CPU s", "ops/CPU s", "vs heap", "wall s", "ops/wall s", "vs heap", "peak memory",
              "vs heap", "completed", "expired", "reaper runs", "virtual end"]
    rows = []
    heap = report.replay("heap")
    heap_wall = report.median_wall_s("heap")
    for name in ("wheel", "heap"):
        r = report.replay(name)
        wall = report.median_wall_s(name)
        rows.append([
            name,
            f"{r.cpu_s:.3f}",
            f"{r.ops_per_cpu_s:,.0f}",
            f"{heap.cpu_s / r.cpu_s:.2f}x",
            f"{wall:.3f}",
            f"{r.requests / wall:,.0f}",
            f"{heap_wall / wall:.2f}x",
            _mb(report.peaks[name]),
            f"{report.peaks[name] / report.peaks['heap']:.1%}",
            f"{r.completed:,}",
            f"{r.expired:,}",
            f"{r.reaper_runs:,}",
            f"{r.end_ms / 1000:,.1f} s",
        ])
    return header, rows


def cost_rows(report: BenchReport) -> tuple[list[str], list[list[str]]]:
    variants = [v for v in ("wheel", "heap") if v in report.costs]
    header = ["pending"]
    for v in variants:
        header += [f"{v} µs/op", f"{v} vs 1st", f"{v} µs/op gc frozen", f"{v} vs 1st (frozen)"]
    pendings = sorted({c.pending for v in variants for c in report.costs[v]})
    rows = []
    for pending in pendings:
        row = [f"{pending:,}"]
        for v in variants:
            c = {x.pending: x for x in report.costs[v]}[pending]
            row += [
                f"{c.us_per_op:.2f}",
                f"{report.cost_ratio(v, pending):.2f}x",
                f"{c.us_per_op_gc_frozen:.2f}",
                f"{report.cost_ratio(v, pending, frozen=True):.2f}x",
            ]
        rows.append(row)
    return header, rows


def workload_line(report: BenchReport) -> str:
    w = report.workload
    s = w.spec
    return (
        f"{s.num:,} requests at {s.rate:,.0f}/s (target rate {w.target_rate:,.0f}/s), latency p50 {s.pct50:g} ms "
        f"/ p75 {s.pct75:g} ms, timeout {s.timeout_ms:,} ms, {s.num_keys} keys from {s.key_space_size} "
        f"(the same keys for every request: {', '.join(w.keys)}), purge_interval {s.purge_interval}, "
        f"seed {s.seed}, {s.sample_size:,} pre-samples; {w.expiring:,} requests have latency >= timeout"
    )


def steady_state_note(report: BenchReport) -> str | None:
    """Says so when arrivals stop before the first timeout: the heap then never reaches its steady size."""
    w = report.workload
    span_ms = w.arrival_ms[-1] if w.arrival_ms else 0
    if span_ms >= w.spec.timeout_ms:
        return None
    steady = w.spec.rate * w.spec.timeout_ms / 1000
    return (
        f"Arrivals span {span_ms / 1000:,.1f} s, less than the {w.spec.timeout_ms / 1000:,.1f} s timeout: the "
        f"heap peaks at {len(w.arrival_ms):,} entries, not the ~{steady:,.0f} (rate x timeout) of a steady state."
    )


def print_report(report: BenchReport, console: Console) -> None:
    console.print(f"[bold]Workload[/]: {workload_line(report)}")
    note = steady_state_note(report)
    if note is not None:
        console.print(f"[bold]Note[/]: {note}")
    console.print(f"[bold]Machine[/]: {_machine()}; {_load(report)}")
    for title, (header, rows) in (
        ("Replay (virtual time, whole run)", replay_rows(report)),
        ("Cost of one add + complete with N pending", cost_rows(report)),
    ):
        table = Table(title=title)
        for h in header:
            table.add_column(h, justify="right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    table = Table(title="Targets")
    for h in ("target", "measured", "met"):
        table.add_column(h)
    for name, measured, met in report.targets():
        table.add_row(name, measured, "[green]yes[/]" if met else "[red]no[/]")
    console.print(table)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(report: BenchReport) -> str:
    times = "; ".join(
        f"{name} " + ", ".join(f"{r.cpu_s:.3f} ({r.wall_s:.3f})" for r in report.passes[name])
        for name in ("wheel", "heap")
    )
    parts = [
        f"Command: `{report.command}`",
        "",
        f"Machine: {_machine()}; {_load(report)}",
        "",
        f"Workload: {workload_line(report)}",
        "",
        *([f"Note: {steady_state_note(report)}", ""] if steady_state_note(report) is not None else []),
        _md_table(*replay_rows(report)),
        "",
        f"Timed passes, CPU s (wall s): {times}",
        "",
        _md_table(*cost_rows(report)),
        "",
        _md_table(
            ["target", "measured", "met"],
            [[name, measured, "yes" if met else "**no**"] for name, measured, met in report.targets()],
        ),
    ]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- CLI


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _pending_list(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, e.g. 1000,10000; got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be positive integers, got {text!r}")
    return sorted(set(values))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="purgatory_bench.py",
        description="Kafka's TestPurgatoryPerformance workload, in virtual time, through kafkasim's "
        "timing-wheel purgatory and a Kafka 0.8-style heap purgatory.",
    )
    parser.add_argument("--num", type=_positive_int, default=200_000, help="requests (default 200000)")
    parser.add_argument("--rate", type=_positive_float, default=50_000, help="requests per second (default 50000)")
    parser.add_argument("--pct50", type=_positive_float, default=20, help="latency p50 in ms (default 20)")
    parser.add_argument("--pct75", type=_positive_float, default=60, help="latency p75 in ms (default 60)")
    parser.add_argument("--timeout", type=_positive_int, default=30_000, help="operation timeout in ms (default 30000)")
    parser.add_argument("--keys", type=_positive_int, default=3, help="watch keys per request (default 3)")
    parser.add_argument("--key-space-size", type=_positive_int, default=100, help="possible keys (default 100)")
    parser.add_argument("--purge-interval", type=_positive_int, default=1000, help="purge interval (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--samples", type=_positive_int, default=KAFKA_SAMPLE_SIZE,
                        help="pre-sampled latencies and intervals, as Kafka's 1 M (default 1000000)")
    parser.add_argument("--repeat", type=_positive_int, default=5, help="timed passes per purgatory (median; default 5)")
    parser.add_argument("--pending", type=_pending_list, default=[1_000, 10_000, 100_000, 1_000_000],
                        help="pending counts for the cost test (default 1000,10000,100000,1000000)")
    parser.add_argument("--batch", type=_positive_int, default=20_000, help="operations per timed round (default 20000)")
    parser.add_argument("--rounds", type=_positive_int, default=7,
                        help="timed rounds per pending count, best one reported (default 7)")
    parser.add_argument("--no-heap-cost", action="store_true", help="measure the cost per operation for the wheel only")
    parser.add_argument("--quick", action="store_true",
                        help="a small run (20000 requests, 100 k samples, pending up to 100 k) to try things out")
    parser.add_argument("--markdown", type=Path, help="also write the tables as markdown to this file")
    args = parser.parse_args(argv)
    if args.pct75 <= args.pct50:
        parser.error(f"--pct75 ({args.pct75:g}) must be above --pct50 ({args.pct50:g}) for a log-normal fit")
    if args.quick:
        args.num = min(args.num, 20_000)
        args.samples = min(args.samples, 100_000)
        args.pending = [p for p in args.pending if p <= 100_000] or [1_000]
        args.batch = min(args.batch, 5_000)
        args.rounds = min(args.rounds, 5)
        args.repeat = 1
    return args


def run(args: argparse.Namespace, command: str, console: Console) -> BenchReport:
    spec = WorkloadSpec(
        num=args.num, rate=args.rate, pct50=args.pct50, pct75=args.pct75, timeout_ms=args.timeout,
        num_keys=args.keys, key_space_size=args.key_space_size, purge_interval=args.purge_interval,
        seed=args.seed, sample_size=args.samples,
    )
    from kafkasim.compiled import describe

    console.log(f"kafkasim build: {describe()}")
    load_start = os.getloadavg()[0]
    with console.status("drawing the workload (Kafka's pre-samples)"):
        workload = make_workload(spec)
    with console.status(f"{args.repeat} timed replay(s) of {spec.num:,} requests per purgatory"):
        passes = timed_replays(workload, args.repeat)
    for variant, variant_passes in passes.items():
        r = median_pass(variant_passes)
        console.log(f"{variant}: {r.ops_per_cpu_s:,.0f} ops per CPU second, {r.ops_per_s:,.0f} per wall second")
    peaks: dict[str, int] = {}
    for variant in ("wheel", "heap"):
        with console.status(f"{variant}: memory pass (tracemalloc)"):
            peaks[variant] = peak_memory_bytes(workload, variant)
        console.log(f"{variant}: peak {_mb(peaks[variant])}")
    costs: dict[str, list[CostResult]] = {}
    cost_variants = ["wheel"] if args.no_heap_cost else ["wheel", "heap"]
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        for variant in cost_variants:
            costs[variant] = []
            for pending in args.pending:
                result = cost_per_operation(
                    variant, pending, batch=args.batch, rounds=args.rounds, timeout_ms=spec.timeout_ms,
                    keys=workload.keys, purge_interval=spec.purge_interval, seed=spec.seed, progress=progress,
                )
                costs[variant].append(result)
                progress.console.log(
                    f"{variant}: {result.us_per_op:.2f} µs/op at {pending:,} pending "
                    f"({result.us_per_op_gc_frozen:.2f} with gc frozen)"
                )
    return BenchReport(command, workload, passes, peaks, costs, (load_start, os.getloadavg()[0]))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # piped or redirected: do not squeeze the tables into 80 columns
    command = "uv run python benchmarks/purgatory_bench.py " + shlex.join(argv)
    report = run(args, command.strip(), console)
    print_report(report, console)
    if args.markdown is not None:
        args.markdown.write_text(markdown(report))
        console.print(f"markdown written to {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
