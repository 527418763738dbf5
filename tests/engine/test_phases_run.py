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
from kafkasim.controller.records import FENCE, UNFENCE, BrokerRegistrationChangeRecord
from kafkasim.record.result import RunResult
from kafkasim.record.summary import OUTCOME_WORDS, outcome_counts
from kafkasim.report.html import outcomes_table, phases_table
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
                                           "restart broker-0", "after"]
    batches = engine.components.controller.core.log.batches
    fence = next(float(b.append_ms) for b in batches
                 for r in b.records if isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == FENCE)
    scenario = engine.scenario
    crash = scenario.faults[0]
    # The restarted broker's start-up (broker.startup) lasts until the controller unfences it.
    unfence = next(float(b.append_ms) for b in batches if b.append_ms > crash.end
                   for r in b.records if isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == UNFENCE)
    assert [(p["from_ms"], p["to_ms"]) for p in phases] == [
        (float(scenario.warmup), crash.at), (crash.at, fence), (fence, crash.end), (crash.end, unfence),
        (unfence, scenario.duration)]
    p99 = [p["produce_latency"]["acks=all"]["from_intended"]["p99"] for p in phases]
    # The failover holds every batch until the new leader is known; before and after it a few ms.
    assert p99[1] > 100 * max(p99[0], p99[2], p99[3], p99[4])
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
    assert "phases" not in result.summary and "failovers" not in result.summary
    assert phases_table(result.summary) == ""


def test_a_crashed_leaders_failover_phase_by_phase(crashed: tuple[Engine, RunResult]) -> None:
    engine, result = crashed
    [failover] = result.summary["failovers"]
    fence = result.summary["phases"][2]["from_ms"]
    records = result.records
    acked = records["ack_ms"].to_numpy(dtype=float)
    # Broker 1 applies the change once the batch is committed (controller.quorum.append.linger.ms, 25 ms) and
    # has reached it (controller.metadata_propagation, 2 ms): ReplicaManager.applyDelta -> makeLeader.
    applied = fence + 25.0 + 2.0
    first_ack = float(np.nanmin(acked[acked > applied]))
    # Each client learned the new leader at its next metadata refresh after the change reached broker 1; the
    # producer's first acknowledgement on it follows.
    learned = failover.pop("learned_ms")
    assert set(learned) == {"orders-acks-all", "consumer-1"}
    assert applied <= learned["orders-acks-all"] <= first_ack and learned["consumer-1"] >= applied
    assert failover == {
        "partition": "orders-0", "old_leader": 0, "new_leader": 1, "cause": "crash broker-0: fenced",
        "fault_ms": 10_001.0, "fenced_ms": fence, "elected_ms": fence, "first_ack_ms": first_ack,
        "unavailable_ms": first_ack - 10_001.0,
        "bounded_by": ["broker.session.timeout.ms", "broker.heartbeat.interval.ms", "retry.backoff.max.ms",
                       "metadata.max.age.ms", "request.timeout.ms"],
        "applied_ms": pytest.approx(applied),
        "last_heartbeat_ms": max(t for t in engine.components.controller_link.heartbeats_received[0] if t <= fence),
    }
    # The fence comes a session after the last heartbeat, at the next check (every session / 8 = 1,125 ms).
    assert 9_000 <= fence - failover["last_heartbeat_ms"] <= 9_000 + 1_125
    # Kafka's fence comes a session (9 s) after the last heartbeat: 7-10 s after the crash.
    assert 7_000 <= fence - 10_001.0 <= 10_525
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(summary_renderable(result.summary, "leader_crash"))
    lines = out.getvalue().splitlines()
    row = lines[lines.index(next(line for line in lines if "orders-0: 0 -> 1" in line)) + 1]
    assert "crash broker-0: fenced" in row and ms(fence - 10_001.0) in row and ms(first_ack - 10_001.0) in row


@pytest.mark.parametrize(("scenario", "cause"), [("leader_controlled_shutdown", "shutdown broker-0: shutdown"),
                                                 ("unclean_election_loses_acks1", "crash broker-0: from the ELR")])
def test_the_cause_of_a_leadership_change_is_named(scenario: str, cause: str) -> None:
    result = Engine(load_scenario(SCENARIOS / f"{scenario}.yaml")).run()
    [failover] = result.summary["failovers"]
    assert failover["cause"] == cause and failover["old_leader"] == 0 and failover["new_leader"] == 1
    assert failover["elected_ms"] <= failover["first_ack_ms"]
    # The outcomes open the console and the report, zeros included, the same counts in both.
    totals = outcome_counts(result.summary)
    assert {"acknowledged", "lost", "duplicated", "failed", "pending"} <= set(totals)
    assert (totals["lost"] > 0) == (scenario == "unclean_election_loses_acks1")
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(summary_renderable(result.summary, scenario))
    line = next(line for line in out.getvalue().splitlines() if line.startswith("Outcomes"))
    html = outcomes_table(result.summary)
    for outcome, n in totals.items():
        assert f"{n:,} {OUTCOME_WORDS.get(outcome, outcome)}" in line
        assert f"<td>{OUTCOME_WORDS.get(outcome, outcome)}</td><td>{n:,}</td>" in html
    if totals["lost"]:
        assert f"({totals['lost']:,} acks=1, leader from the ELR)" in line
