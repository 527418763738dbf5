"""`kafkasim run` in process: result replacement, the live view, the progress bar, stopping a run early, and
the read-only engine snapshots behind the live view."""

from __future__ import annotations

import io
import json
import os
import signal
from collections.abc import Generator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from kafkasim.console.live import LiveView, render_snapshot
from kafkasim.console.progress import RunProgress
from kafkasim.console.run_command import StopOnInterrupt
from kafkasim.record.result import RunResult
from kafkasim.run import engine as engine_module
from kafkasim.run.engine import Engine
from kafkasim.run.snapshot import EngineSnapshot, RecentLatencies, take_snapshot
from kafkasim.scenario import load_scenario, with_overrides

from .support import QUICKSTART, REPO, call

ONE_SECOND = ["--set", "duration=1s", "--set", "warmup=0s", "--no-figures"]


@pytest.fixture(autouse=True)
def _terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")


def test_an_earlier_result_is_replaced_atomically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result"
    assert call("run", QUICKSTART, *ONE_SECOND, "--seed", "1", "--out", out) == 0
    assert call("run", QUICKSTART, *ONE_SECOND, "--seed", "2", "--out", out) == 0
    assert RunResult.load(out).summary["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]  # no temporary or moved-aside directory
    assert f"results: {out}" in capsys.readouterr().out


def test_live_view_with_virtual_time_shows_partitions_purgatories_and_latencies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "live"
    assert call("run", QUICKSTART, *ONE_SECOND, "--live", "--virtual", "--out", out) == 0
    text = capsys.readouterr().out
    # Not a terminal: rich prints the last frame once, when the view stops (t = the end of the run).
    assert "quickstart t = 1 s of 1 s, virtual time (Ctrl-C: stop and save)" in text
    hw = json.loads((out / "summary.json").read_text())
    assert hw["simulated_duration_ms"] == 1_000.0
    row = next(line for line in text.splitlines() if line.strip().startswith("orders-0"))
    cells = row.split()
    assert cells[-1] == "0,1,2"  # the ISR
    assert cells[1] == "0" and cells[3] == "b0"  # the leader's id, and its replica first
    assert int(cells[2]) <= int(cells[4])  # HW <= the leader's LEO
    assert "brokers  0 up   1 up   2 up" in text
    assert "Produce purgatory (watched / delayed)" in text and "Fetch purgatory (watched / delayed)" in text
    assert "request queue" in text
    assert "TotalTimeMs over the last 5 s simulated" in text
    assert any(line.strip().startswith("Produce ") for line in text.splitlines())


def _engine(duration: str = "3s", **kwargs: Any) -> Engine:
    scenario = with_overrides(load_scenario(QUICKSTART), [f"duration={duration}", "warmup=0s"])
    return Engine(scenario, **kwargs)


def test_request_stop_ends_the_run_at_the_next_slice_with_a_consistent_partial_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Progress is reported at most every PROGRESS_INTERVAL_S of *wall* time: on a fast, idle machine the
    # whole 3 s run fits in one interval and the callback first sees t = 3 s, too late to stop at 1 s.
    # Report after every slice so the test does not depend on the machine's speed.
    monkeypatch.setattr(engine_module, "PROGRESS_INTERVAL_S", 0.0)
    holder: list[Engine] = []

    def progress(now: float, duration: float) -> None:
        if now >= 1_000.0:
            holder[0].request_stop()

    engine = _engine(progress=progress)
    holder.append(engine)
    result = engine.run()
    t = result.summary["interrupted_at_ms"]
    assert engine.stop_requested
    assert 1_000.0 <= t < 3_000.0
    assert result.summary["simulated_duration_ms"] == t
    assert result.timeseries["time_ms"].max() <= t
    assert result.requests["client_send_ms"].max() <= t
    assert len(result.requests) > 0


def test_a_run_that_is_not_stopped_says_nothing_about_interruption() -> None:
    result = _engine("500ms", progress=lambda now, duration: None).run()
    assert "interrupted_at_ms" not in result.summary
    assert result.summary["simulated_duration_ms"] == 500.0


def test_snapshots_read_the_running_engine_and_change_nothing() -> None:
    recent = RecentLatencies(window_ms=500.0)
    snapshots: list[EngineSnapshot] = []
    holder: list[Engine] = []
    engine = _engine("2s", progress=lambda now, d: snapshots.append(take_snapshot(holder[0], recent)),
                     on_request=recent)
    holder.append(engine)
    watched = engine.run()
    assert snapshots
    last = take_snapshot(engine, recent)
    (partition,) = last.partitions
    leader, *followers = partition.replicas
    assert partition.name == "orders-0" and partition.isr == (0, 1, 2)
    assert partition.high_watermark <= leader.log_end_offset
    assert [r.broker_id for r in followers] == [1, 2]
    # The leader's view of a follower lags its own log end by at most one fetch, never leads it.
    assert all(r.log_end_offset_at_leader is not None and r.log_end_offset_at_leader <= r.log_end_offset
               for r in followers)
    # Partition.maybeIncrementLeaderHW: HW = the minimum LEO over the (maximal) ISR, as the leader sees them.
    assert partition.high_watermark == min(
        leader.log_end_offset, *(r.log_end_offset_at_leader or 0 for r in followers)
    )
    assert {p.name for p in last.purgatories} == {"Produce", "Fetch"}
    assert last.now_ms == 2_000.0 and not last.wallclock
    # Only requests that finished in the last 500 ms count; the whole run had far more.
    produce = next(lat for lat in last.latencies if lat.api == "Produce")
    finished = watched.requests[(watched.requests["api"] == "Produce") & (watched.requests["end_ms"] >= 1_500.0)]
    assert produce.count == len(finished)
    assert produce.p50 is not None and produce.max is not None and produce.p50 <= produce.max
    # Snapshots are read-only: a run watched by them is identical to one that is not.
    plain = _engine("2s").run()
    assert plain.requests.equals(watched.requests)
    assert plain.timeseries.equals(watched.timeseries)
    rendered = io.StringIO()
    Console(file=rendered, width=100).print(render_snapshot(last, "quickstart"))
    assert "orders-0" in rendered.getvalue() and "0,1,2" in rendered.getvalue()


def test_the_live_view_follows_a_failover_one_row_per_partition_with_its_leader() -> None:
    """The live view listed a partition once per broker that called itself its leader: after a crash, the dead
    leader's frozen row stayed as if live and, once a new leader was elected, a second row for the same
    partition appeared, neither naming a broker; brokers were never marked down."""
    scenario = with_overrides(load_scenario(REPO / "scenarios" / "leader_crash.yaml"), ["duration=20s"])
    view = LiveView(Console(file=io.StringIO(), width=100))
    frames: list[str] = []
    engine = Engine(scenario)

    def every_half_second() -> Generator[Any, Any, None]:
        # A frame every 500 simulated ms (the progress callback's slices follow wall time: after the crash
        # the run is quick and one slice could span the whole failover).
        while True:
            yield engine.env.timeout(500.0)
            snapshot = take_snapshot(engine)
            view.update(snapshot, force=True)
            rendered = io.StringIO()
            Console(file=rendered, width=100).print(render_snapshot(snapshot, "", tuple(view._changes)))
            frames.append(rendered.getvalue())
            assert len({p.name for p in snapshot.partitions}) == len(snapshot.partitions)

    engine.env.process(every_half_second())
    engine.run()
    during = next(f for f in frames if "0 crashed" in f)  # after the crash at 10 s, before the fencing
    row = next(line for line in during.splitlines() if line.strip().startswith("orders-0"))
    assert row.split()[1:3] == ["0", "down"]  # the metadata still names broker 0: it is not fenced yet
    last = frames[-1]
    row = next(line for line in last.splitlines() if line.strip().startswith("orders-0"))
    assert row.split()[1] == "1" and "b0" in row and "down" in row
    assert "orders-0: leader broker-0 -> broker-1" in last


def test_recent_latencies_forget_requests_older_than_the_window() -> None:
    recent = RecentLatencies(window_ms=100.0)
    for end, total in [(10.0, 1.0), (150.0, 2.0), (190.0, 4.0)]:
        recent(SimpleNamespace(api="Produce", start_ms=end - total, end_ms=end))  # type: ignore[arg-type]
    recent(SimpleNamespace(api="Produce", start_ms=195.0, end_ms=float("nan")))  # type: ignore[arg-type]
    produce = next(lat for lat in recent.latencies(200.0) if lat.api == "Produce")
    assert (produce.count, produce.max) == (2, 4.0)
    fetch = next(lat for lat in recent.latencies(200.0) if lat.api == "FetchFollower")
    assert (fetch.count, fetch.p50) == (0, None)
    with pytest.raises(ValueError, match="window"):
        RecentLatencies(window_ms=0)


def test_progress_bar_appears_only_after_the_threshold() -> None:
    quiet = io.StringIO()
    bar = RunProgress(Console(file=quiet, force_terminal=True, width=100), "quickstart", show_after_s=60.0)
    bar(1_000.0, 30_000.0)
    bar.close()
    assert not bar.shown and quiet.getvalue() == ""
    shown = io.StringIO()
    bar = RunProgress(Console(file=shown, force_terminal=True, width=100), "quickstart", show_after_s=0.0)
    bar(12_000.0, 30_000.0)
    bar.close()
    assert bar.shown
    assert "quickstart" in shown.getvalue() and "12 s / 30 s simulated" in shown.getvalue()
    assert "sim-ms/s" in shown.getvalue()


def test_first_ctrl_c_asks_the_engine_to_stop_the_second_interrupts() -> None:
    engine = SimpleNamespace(stops=0)
    engine.request_stop = lambda: setattr(engine, "stops", engine.stops + 1)
    before = signal.getsignal(signal.SIGINT)
    with StopOnInterrupt(engine) as stopper:  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGINT)
        assert stopper.interrupted and engine.stops == 1
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_an_ignored_sigint_stays_ignored() -> None:
    engine = SimpleNamespace(request_stop=lambda: None)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopOnInterrupt(engine):  # type: ignore[arg-type]
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_cluster_snapshot_shows_every_leaders_partitions_and_purgatories() -> None:
    # The live view read broker 0 only: in a cluster it showed a third of the partitions, and followers'
    # own log ends as -1 (they are in their brokers' ReplicaManagers, not in fetcher-owned logs).
    from tests.engine.support import consumer
    from tests.engine.support import scenario as small_scenario

    scenario = small_scenario(duration="1s", cluster={"brokers": 3}, topic={"partitions": 6},
                              consumers=[consumer("c1")])
    engine = Engine(scenario)
    engine.run()
    snapshot = take_snapshot(engine)
    leaders = {p.replicas[0].broker_id for p in snapshot.partitions}
    assert len(snapshot.partitions) == sum(t.partitions for t in scenario.topics) and leaders == {0, 1, 2}
    for partition in snapshot.partitions:
        for replica in partition.replicas[1:]:
            assert replica.log_end_offset_at_leader is not None
            assert 0 <= replica.log_end_offset_at_leader <= replica.log_end_offset
    assert {p.name for p in snapshot.purgatories} == {f"broker-{b}/{kind}" for b in (0, 1, 2)
                                                      for kind in ("Produce", "Fetch")}
