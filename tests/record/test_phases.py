"""A run with faults cut into phases (kafkasim.record.phases): at each fault's start and end and at the
controller's fences while a fault is on; named by what is on."""

from __future__ import annotations

import math
from types import SimpleNamespace

from kafkasim.record.phases import FaultSpan, Phase, cut_phases, fault_spans

CRASH = FaultSpan("crash broker-2", 20_000.0, None)


def test_no_faults_no_phases() -> None:
    assert cut_phases([], [(5_000.0, 1)], 0.0, 60_000.0) == []


def test_a_crash_without_restart_is_before_until_fenced_and_fenced() -> None:
    assert cut_phases([CRASH], [(27_100.0, 2)], 1_000.0, 60_000.0) == [
        Phase("before", 1_000.0, 20_000.0),
        Phase("crash broker-2, until fenced", 20_000.0, 27_100.0),
        Phase("crash broker-2, broker-2 fenced", 27_100.0, 60_000.0),
    ]


def test_a_restart_ends_the_fault_and_a_fence_outside_every_fault_cuts_nothing() -> None:
    crash = FaultSpan("crash broker-0", 10_000.0, 25_000.0)
    assert cut_phases([crash], [(17_700.0, 0), (40_000.0, 1)], 0.0, 50_000.0) == [
        Phase("before", 0.0, 10_000.0),
        Phase("crash broker-0, until fenced", 10_000.0, 17_700.0),
        Phase("crash broker-0, broker-0 fenced", 17_700.0, 25_000.0),
        Phase("after", 25_000.0, 50_000.0),
    ]


def test_a_restarted_broker_is_restarting_until_the_controller_unfences_it() -> None:
    """The new process registers, loads its logs and catches up before it serves again (broker.startup): the
    time from its restart to its unfence is a phase of its own, for both engines (the unfences from the
    metadata log or the real controller's server.log)."""
    crash = SimpleNamespace(type="crash", target="follower-2", at=10_000.0, end=40_000.0, restart_after=30_000.0)
    spans = fault_spans([crash], unfenced=[(5_000.0, 2), (43_100.0, 1), (43_150.0, 2), (50_000.0, 2)])
    assert spans == [FaultSpan("crash follower-2", 10_000.0, 40_000.0),
                     FaultSpan("restart follower-2", 40_000.0, 43_150.0)]
    assert [p.name for p in cut_phases(spans, [(17_500.0, 2)], 0.0, 60_000.0)] == [
        "before", "crash follower-2, until fenced", "crash follower-2, broker-2 fenced", "restart follower-2", "after"]
    # Not unfenced before the run ended: restarting to its end.
    assert fault_spans([crash])[1] == FaultSpan("restart follower-2", 40_000.0, None)
    # A pause has no restart.
    pause = SimpleNamespace(type="pause", target="broker-1", at=1_000.0, end=2_000.0)
    assert fault_spans([pause]) == [FaultSpan("pause broker-1", 1_000.0, 2_000.0)]


def test_a_pause_shorter_than_the_session_is_one_phase() -> None:
    pause = FaultSpan("pause broker-1", 5_000.0, 8_000.0)
    assert [p.name for p in cut_phases([pause], [], 0.0, 20_000.0)] == ["before", "pause broker-1", "after"]


def test_overlapping_faults_are_named_together_and_a_gap_is_between_faults() -> None:
    cut = FaultSpan("network_partition broker-0 | broker-1, broker-2", 2_000.0, 6_000.0)
    pause = FaultSpan("pause producer-1", 4_000.0, 7_000.0)
    late = FaultSpan("crash broker-1", 9_000.0, 12_000.0)
    phases = cut_phases([cut, pause, late], [], 0.0, 15_000.0)
    assert [(p.name, p.from_ms, p.to_ms) for p in phases] == [
        ("before", 0.0, 2_000.0),
        ("network_partition broker-0 | broker-1, broker-2", 2_000.0, 4_000.0),
        ("network_partition broker-0 | broker-1, broker-2 + pause producer-1", 4_000.0, 6_000.0),
        ("pause producer-1", 6_000.0, 7_000.0),
        ("between faults", 7_000.0, 9_000.0),
        ("crash broker-1", 9_000.0, 12_000.0),
        ("after", 12_000.0, 15_000.0),
    ]


def test_phases_start_after_the_warm_up_and_cover_the_run_without_gaps() -> None:
    spans = [FaultSpan("crash broker-0", 500.0, 3_000.0), FaultSpan("pause broker-1", 8_000.0, None)]
    phases = cut_phases(spans, [(2_000.0, 0), (9_500.0, 1)], 1_000.0, 10_000.0)
    assert phases[0].from_ms == 1_000.0 and phases[-1].to_ms == 10_000.0
    assert all(a.to_ms == b.from_ms for a, b in zip(phases, phases[1:], strict=False))
    assert phases[0].name == "crash broker-0, until fenced"
    assert not any(math.isclose(p.from_ms, p.to_ms) for p in phases)
