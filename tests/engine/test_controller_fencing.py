"""The KRaft controller in whole runs: a follower that crashes leaves the ISR when the controller fences it,
comes back as a new incarnation, is unfenced and rejoins (the timeline of a follower crash, Kafka 4.x:
``BrokerLifecycleManager``, ``BrokerHeartbeatManager``, ``ReplicationControlManager.handleBrokerFenced`` /
``handleBrokerUnfenced``, the leader's ``Partition.maybeExpandIsr``); ISR changes go through the controller."""

from __future__ import annotations

import pytest

from kafkasim.run import run_scenario

from .support import gauge, scenario

FIXED = {"latency": {"type": "constant", "value": "0.5ms"}}


def _isr_changes(result) -> list[tuple[float, float]]:
    isr = gauge(result, "IsrSize", "t-0")
    values = isr["value"].to_numpy(dtype=float)
    times = isr["time_ms"].to_numpy(dtype=float)
    return [(float(times[i]), float(values[i])) for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]


def test_a_crashed_follower_is_fenced_7_to_9_s_later_and_rejoins_after_its_restart() -> None:
    s = scenario(
        duration="30s",
        controller={"link_latency": FIXED["latency"]},
        faults=[{"type": "crash", "target": "follower-2", "at": "5s", "restart_after": "15s"}],
    )
    result = run_scenario(s)
    changes = _isr_changes(result)
    (start, three), (out, two), (back, three_again) = changes
    assert (three, two, three_again) == (3.0, 2.0, 3.0)
    # Last heartbeat at most 2 s before the crash; fenced 9 s after it; the commit linger (25 ms) and the
    # propagation (2 ms) before the leader applies it; gauges every 50 ms.
    assert 5_000 + 7_000 <= out <= 5_000 + 9_000 + 100
    # Restarted at 20 s: registers (the old session already expired), catches up with the metadata,
    # is unfenced, fetches; the leader adds it back once it has caught up (AlterPartition via the controller).
    assert 20_000 < back < 21_000
    counters = result.summary["counters"]
    assert counters["isr_shrinks"] == 0 and counters["isr_expands"] == 1 and counters["alter_partition_requests"] == 1


def test_a_follower_back_before_its_session_expired_is_still_fenced_then_registers() -> None:
    # Kafka's ClusterControlManager.registerBroker: a new incarnation gets DUPLICATE_BROKER_REGISTRATION while
    # the old one's session is valid, so the broker keeps retrying; the old session expires, the controller
    # fences it (leaving the ISR although the new incarnation already fetches), then the registration goes
    # through and the leader adds it back.
    s = scenario(
        duration="30s",
        controller={"link_latency": FIXED["latency"]},
        faults=[{"type": "crash", "target": "follower-2", "at": "5s", "restart_after": "3s"}],
    )
    result = run_scenario(s)
    changes = _isr_changes(result)
    values = [v for _, v in changes]
    assert values == [3.0, 2.0, 3.0]
    out, back = changes[1][0], changes[2][0]
    assert 5_000 + 7_000 <= out <= 5_000 + 9_000 + 100
    assert out < back < out + 2_000  # registered and unfenced within the registration backoff


UNSUPPORTED = """\
name: unsupported
description: a leader paused past its session, then a crash of the broker that took over
seed: 640
duration: 40s
cluster:
  brokers: 3
topics:
  - name: t
    partitions: 1
    replica_assignment: [[0, 1]]
producers:
  - {name: p1, topic: t, rate: 50/s}
faults:
  - {type: pause, target: broker-0, at: 5s, duration: 20s}
  - {type: crash, target: broker-1, at: 30s, restart_after: 1s}
"""


def test_a_crash_of_a_broker_that_became_leader_stops_the_run_with_a_clear_message(tmp_path) -> None:
    """Found by the random-scenario generator (seed 640): broker-1 led nothing when the scenario was checked,
    but the controller fenced the paused leader and elected it; its crash raised a ValueError traceback from
    BrokerServer.crash. Now the run stops with one line (exit 1, no results)."""
    from kafkasim import load_scenario
    from kafkasim.run.faults import UnsupportedFault

    with pytest.raises(UnsupportedFault, match=r"broker-1 leads partitions at 30\.000 s .* not simulated yet"):
        run_scenario(load_scenario(UNSUPPORTED))
    path = tmp_path / "unsupported.yaml"
    path.write_text(UNSUPPORTED, encoding="utf-8")
    from tests.cli.support import assert_no_traceback, kafkasim

    result = kafkasim("run", path, "--no-figures", "--out", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 1 and "run stopped: broker-1 leads partitions" in result.stderr
    assert_no_traceback(result)
    assert not (tmp_path / "out").exists()
