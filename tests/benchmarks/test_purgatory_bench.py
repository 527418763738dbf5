"""Correctness cross-check of the purgatory benchmark (not a timing test).

The benchmark only means something if both purgatories do the same work: every request completes at
`arrival + latency` when latency < timeout and expires at `arrival + timeout` otherwise
(TestPurgatoryPerformance, Scala semantics). These tests replay a small workload through the wheel and the
heap purgatory and compare what each completed and expired, and when, against that rule and against each
other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import purgatory_bench as bench  # noqa: E402
from heap_purgatory import HeapPurgatory  # noqa: E402

from kafkasim.timer import ManualTime  # noqa: E402


class RecordingLatch(bench.Latch):
    """Records (virtual ms, request id, expired?) for every completion."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[int, int, bool]] = []

    def on_complete(self, op: bench.FakeOperation) -> None:
        super().on_complete(op)
        self.events.append((op._time.milliseconds(), op.request_id, False))

    def on_expiration(self, op: bench.FakeOperation) -> None:
        super().on_expiration(op)
        # on_expiration follows on_complete for the same operation (DelayedOperation.run), so mark its record.
        at, request_id, _ = self.events[-1]
        assert request_id == op.request_id
        self.events[-1] = (at, request_id, True)

    def sorted_events(self) -> list[tuple[int, int, bool]]:
        return sorted(self.events)


def small_workload(**overrides: object) -> bench.Workload:
    # A 50 ms timeout with p50 20 / p75 60 makes about a third of the requests expire, so both paths are
    # exercised; 3 000 requests at 20 k/s spread over ~150 ms, beyond several 200 ms reaper periods
    # once the expiries are counted.
    params: dict = dict(num=3_000, rate=20_000, pct50=20, pct75=60, timeout_ms=50, purge_interval=100,
                        seed=7, sample_size=5_000)
    params.update(overrides)
    return bench.make_workload(bench.WorkloadSpec(**params))


def expected_events(workload: bench.Workload) -> list[tuple[int, int, bool]]:
    timeout = workload.spec.timeout_ms
    events = []
    for i, (arrival, latency) in enumerate(zip(workload.arrival_ms, workload.latency_ms, strict=True)):
        if latency < timeout:
            events.append((arrival + latency, i, False))
        else:
            events.append((arrival + timeout, i, True))
    return sorted(events)


@pytest.mark.parametrize("overrides", [{}, {"timeout_ms": 1_000, "pct75": 400, "seed": 3}])
def test_wheel_and_heap_complete_and_expire_the_same_operations_at_the_same_times(overrides: dict) -> None:
    workload = small_workload(**overrides)
    expected = expected_events(workload)
    assert 0 < sum(expired for _, _, expired in expected) < len(expected), "need both completions and expiries"
    seen = {}
    for variant in ("wheel", "heap"):
        latch = RecordingLatch()
        result = bench.replay(workload, variant, latch)
        seen[variant] = latch.sorted_events()
        assert result.requests == workload.spec.num
        assert result.completed + result.expired == workload.spec.num
        assert result.expired == workload.expiring
    assert seen["wheel"] == expected
    assert seen["heap"] == expected


def test_workload_follows_kafkas_sampling() -> None:
    workload = small_workload(num=20_000, rate=50_000, timeout_ms=30_000, sample_size=50_000)
    # Every request watches the one shared key list (TestPurgatoryPerformance's quirk).
    assert len(workload.keys) == 3 and all(k.startswith("fakeKey") for k in workload.keys)
    # Poisson arrivals at ~50 k/s and a log-normal median near p50.
    assert 45_000 < workload.target_rate < 55_000
    latencies = sorted(workload.latency_ms)
    assert 17 <= latencies[len(latencies) // 2] <= 21  # truncated to whole ms, so a bit under 20
    assert 52 <= latencies[3 * len(latencies) // 4] <= 62
    # Same seed, same workload; another seed, another one.
    again = small_workload(num=20_000, rate=50_000, timeout_ms=30_000, sample_size=50_000)
    assert again.arrival_ms == workload.arrival_ms and again.latency_ms == workload.latency_ms
    other = small_workload(num=20_000, rate=50_000, timeout_ms=30_000, sample_size=50_000, seed=8)
    assert other.latency_ms != workload.latency_ms


class _Op(bench.FakeOperation):
    pass


def test_heap_keeps_completed_operations_until_their_timeout_and_the_wheel_does_not() -> None:
    time = ManualTime(0)
    latch = bench.Latch()
    heap = HeapPurgatory("h", time=time)
    wheel = bench.WheelPurgatory(time, 1000)
    heap_op = _Op(30_000, 20, time, latch, 0)
    wheel_op = _Op(30_000, 20, time, latch, 1)
    assert not heap.try_complete_else_watch(heap_op, ("k",))
    assert not wheel.try_complete_else_watch(wheel_op, ("k",))
    assert heap.num_delayed == 1 and wheel.purgatory.num_delayed == 1
    time.set(20)
    assert heap_op.force_complete() and wheel_op.force_complete()
    assert wheel.purgatory.num_delayed == 0  # cancel took it out of its bucket at once
    assert heap.num_delayed == 1  # still in the heap
    assert heap.next_expiration_ms == 30_000
    time.set(30_000)
    assert heap.advance_clock() is True  # popped and dropped: it had completed, nothing expired
    assert heap.num_delayed == 0 and heap.next_expiration_ms is None
    assert latch.completed == 2 and latch.expired == 0


def test_heap_purges_watch_lists_every_purge_interval_watched_operations() -> None:
    time = ManualTime(0)
    latch = bench.Latch()
    heap = HeapPurgatory("h", time=time, purge_interval=3)
    ops = [_Op(1_000, latency, time, latch, i) for i, latency in enumerate((5, 5, 100))]
    for op in ops[:2]:
        heap.try_complete_else_watch(op, ("a", "b"))
    time.set(5)
    for op in ops[:2]:
        op.force_complete()
    heap.advance_clock()
    assert heap.watched == 4  # 2 watched so far < purge_interval: the completed ones linger
    heap.try_complete_else_watch(ops[2], ("a", "b"))
    heap.advance_clock()
    assert heap.watched == 2  # third watched operation -> purge: only the live one is left, on both keys
    assert heap.check_and_complete("a") == 0  # not yet: it completes at 100
    time.set(100)
    assert heap.check_and_complete("a") == 1
    assert heap.watched == 1 and heap.num_delayed == 3  # "b" is checked or purged later; the heap keeps all


def test_cost_per_operation_runs_for_both_purgatories() -> None:
    keys = ("fakeKey1", "fakeKey2", "fakeKey3")
    for variant in ("wheel", "heap"):
        result = bench.cost_per_operation(
            variant, 500, batch=100, rounds=2, timeout_ms=30_000, keys=keys, purge_interval=1000, seed=1
        )
        assert result.pending == 500 and result.us_per_op > 0 and result.us_per_op_gc_frozen > 0


def test_cli_rejects_bad_arguments_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--pct50", "60", "--pct75", "20"])
    assert "--pct75 (20) must be above --pct50 (60)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.parse_args(["--pending", "1000,x"])
    assert "comma-separated integers" in capsys.readouterr().err


def test_one_small_run_reports_both_purgatories_and_every_target() -> None:
    import io

    from rich.console import Console

    args = bench.parse_args(["--num", "500", "--samples", "2000", "--pending", "100,300", "--batch", "100",
                             "--rounds", "1", "--repeat", "1", "--timeout", "1000"])
    report = bench.run(args, "cmd", Console(file=io.StringIO()))
    assert [r.completed + r.expired for r in (report.replay("wheel"), report.replay("heap"))] == [500, 500]
    assert report.peaks["heap"] > 0 and report.peaks["wheel"] > 0
    assert [c.pending for c in report.costs["wheel"]] == [100, 300]
    text = bench.markdown(report)
    assert text.startswith("Command: `cmd`")
    assert "| wheel |" in text and "| heap |" in text and "| 300 |" in text
    # 500 requests at 50 k/s last ~10 ms, far less than the 1 s timeout: the report must say so.
    assert "Note: Arrivals span" in text
    assert len(report.targets()) == 3
