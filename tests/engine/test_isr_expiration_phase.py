"""Each broker's isr-expiration task runs at a phase of its own, drawn from the seed.

Kafka's ``ReplicaManager.startup`` schedules ``isr-expiration`` when the broker's process starts (delay 0,
every replica.lag.time.max.ms / 2), and a real broker starts well before any workload: where its checks fall
relative to a fault is as random as when it started. kafkasim ran every broker's checks at multiples of the
period from the run's start whatever the seed, so a cut follower always left the ISR at the same instant
(11.0 s after the cut for seeds 1, 2 and 12 of follower_partitioned_from_leader with a 10 s lag), where the real
cluster spread it over 10.1-13.7 s (the differential suite's test_follower_partitioned_from_leader)."""

from __future__ import annotations

from pathlib import Path

from kafkasim.controller.records import PartitionChangeRecord
from kafkasim.run.engine import Engine
from kafkasim.scenario import load_scenario, with_overrides

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "follower_partitioned_from_leader.yaml"
LAG_MS, CUT_MS = 4_000.0, 5_000.0
PERIOD_MS = LAG_MS / 2


def _shrink_after_cut(seed: int) -> float:
    scenario = with_overrides(load_scenario(SCENARIO), [
        "duration=14s", "warmup=0s", f"seed={seed}", "broker.replica.lag.time.max.ms=4s",
        "faults[0].at=5s", "faults[0].duration=8s"])
    engine = Engine(scenario)
    engine.run()
    for batch in engine.components.controller.core.log.batches:
        for record in batch.records:
            if isinstance(record, PartitionChangeRecord) and record.isr is not None and 2 not in record.isr:
                return float(batch.append_ms) - CUT_MS
    raise AssertionError(f"seed {seed}: follower 2 never left the ISR")


def test_a_cut_followers_isr_shrink_falls_at_a_seed_drawn_phase_within_one_check_period() -> None:
    shrinks = [_shrink_after_cut(seed) for seed in range(1, 9)]
    # Removed at the first check after LAG_MS without a caught-up fetch (its last one, a long poll of up to
    # replica.fetch.wait.max.ms = 500 ms, may end before the cut): within one check period after that.
    assert all(LAG_MS - 500 <= s <= LAG_MS + PERIOD_MS + 50 for s in shrinks), shrinks
    assert max(shrinks) - min(shrinks) >= PERIOD_MS / 3, shrinks  # was one instant for every seed


def test_a_restarted_broker_runs_its_checks_from_its_restart() -> None:
    engine = Engine(load_scenario(SCENARIO))
    broker = engine.components.brokers[0]
    assert -PERIOD_MS * 15 / 2 <= broker._started_ms < 0  # before the run, within one period (15 s here)
    broker.crash()
    engine.env.run(until=1_000.0)
    broker.restart()
    assert broker._started_ms == 1_000.0
