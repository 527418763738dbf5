"""A run with a fault answers "before, during and after" (summary.json ``phases``): the leader_crash scenario
cut at the crash, the controller's fence and the restart, in the summary, the console and the report alike."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from kafkasim import load_scenario
from kafkasim.console.format import ms
from kafkasim.console.summary import summary_renderable
from kafkasim.controller.records import FENCE, BrokerRegistrationChangeRecord
from kafkasim.record.result import RunResult
from kafkasim.report.html import phases_table
from kafkasim.run.engine import Engine

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def crashed() -> tuple[Engine, RunResult]:
    engine = Engine(load_scenario(SCENARIOS / "leader_crash.yaml"))
    return engine, engine.run()


def test_the_phases_are_before_until_fenced_fenced_and_after(crashed: tuple[Engine, RunResult]) -> None:
    engine, result = crashed
    phases = result.summary["phases"]
    assert [p["name"] for p in phases] == ["before", "crash broker-0, until fenced", "crash broker-0, broker-0 fenced",
                                           "after"]
    fence = next(float(b.append_ms) for b in engine.components.controller_link.controller.core.log.batches
                 for r in b.records if isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == FENCE)
    scenario = engine.scenario
    crash = scenario.faults[0]
    assert [(p["from_ms"], p["to_ms"]) for p in phases] == [
        (float(scenario.warmup), crash.at), (crash.at, fence), (fence, crash.end), (crash.end, scenario.duration)]
    p99 = [p["produce_latency"]["acks=all"]["from_intended"]["p99"] for p in phases]
    # The failover holds every batch until the new leader is known; before and after it a few ms.
    assert p99[1] > 100 * max(p99[0], p99[2], p99[3])
    # The phases share out the run's batches, each to the phase its first record was meant for.
    records = result.records
    intended = records["first_intended_ms"].to_numpy(dtype=float)
    after_warmup = int(np.count_nonzero(intended >= float(scenario.warmup)))
    assert sum(p["batches"] for p in phases) == after_warmup
    # The produce in flight at the crash failed (NETWORK_EXCEPTION): it was sent before the crash.
    assert phases[0]["produce_errors"] == {"NETWORK_EXCEPTION": 1}
    assert all(not p["produce_errors"] for p in phases[1:])


def test_the_console_and_the_report_show_the_summarys_phases(crashed: tuple[Engine, RunResult]) -> None:
    _, result = crashed
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(summary_renderable(result.summary, "leader_crash"))
    text = out.getvalue()
    html = phases_table(result.summary)
    for phase in result.summary["phases"]:
        stats = phase["produce_latency"]["acks=all"]["from_intended"]
        line = next(line for line in text.splitlines() if line.strip().startswith(
            f"{phase['from_ms'] / 1000:g} s-" if phase["from_ms"] % 1000 == 0 else
            f"{phase['from_ms'] / 1000:.3f} s-"))
        assert f"{phase['batches']:,}" in line and ms(stats["p50"]) in line and ms(stats["p99"]) in line
        assert phase["name"] in html
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_run_without_faults_has_no_phases() -> None:
    result = Engine(load_scenario(SCENARIOS / "quickstart.yaml")).run()
    assert "phases" not in result.summary
    assert phases_table(result.summary) == ""
