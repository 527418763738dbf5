"""Seeded failover stress: random schedules of broker crashes, restarts, pauses and network partitions on a
3-broker cluster where Kafka promises that no acknowledged record is lost -- every run must finish clean.

Every topic has replication factor 3 and ``min.insync.replicas`` 2, unclean leader election is off, every
producer uses ``acks=all`` (idempotent, Kafka's default): Kafka's replication design promises that a record
acknowledged to such a producer survives any number of clean leader elections. A seed draws 1-2 topics
(1-3 partitions), 1-2 producers, 1-2 consumers, link latencies, ``replica.lag.time.max.ms``, the
controller's link and 1-5 faults on the brokers: ``crash`` (most restart after a while), ``pause`` (often
longer than the controller's session, so the broker is fenced and its partitions get new leaders) and
``network_partition`` (a broker cut from the others, from the controller, or from the clients). Runs last
20-30 simulated seconds with the invariant checks on; at the end the records table's audit finds every
acknowledged batch missing from its partition's final leader (``lost_after_ack``). A run is clean when it
finishes without an exception and has lost nothing.

    uv run python benchmarks/failover_stress.py --count 200 --seed 1
    uv run python benchmarks/failover_stress.py --show 17            # print scenario 17's YAML

Prints the runs, the faults, the leader changes (the controller's elections), the batches acknowledged
and lost, and the failures grouped by signature with their seeds; progress goes to stderr. The scenario
generator reuses benchmarks/random_scenarios.py's pieces (latencies, links, fault windows, the wall-time
limit and the failure signature). ``tests/benchmarks/test_failover_stress.py`` runs a few fixed seeds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from random_scenarios import _Dumper, _latency, _link, _ms, _wall_limit, failure_signature  # noqa: E402

BROKERS = 3
MAX_TOTAL_RATE = 400.0  # records/s over all producers: a run of 30 simulated seconds stays cheap
SESSION_MS = 9_000.0  # broker.session.timeout.ms: a pause longer than this gets the broker fenced


def _fault_time(rng: random.Random, duration_ms: float, length_ms: float) -> float:
    """A start such that most faults end inside the run (the run then sees the recovery)."""
    latest = max(duration_ms * 0.9 - length_ms, duration_ms * 0.1)
    return round(rng.uniform(500.0, latest), 3)


def _length(rng: random.Random) -> float:
    """How long a fault lasts: around the controller's session (fenced or not), short, or long."""
    pick = rng.random()
    if pick < 0.45:
        return rng.uniform(0.6, 1.6) * SESSION_MS
    if pick < 0.7:
        return rng.uniform(10.0, 3_000.0)
    return rng.uniform(3_000.0, 15_000.0)


def _fault(rng: random.Random, duration_ms: float, clients: list[str]) -> dict[str, Any]:
    kind = rng.choice(["crash", "crash", "pause", "pause", "network_partition"])
    broker = f"broker-{rng.randrange(BROKERS)}"
    length = _length(rng)
    at = _fault_time(rng, duration_ms, length)
    if kind == "crash":
        fault: dict[str, Any] = {"type": "crash", "target": broker, "at": _ms(at)}
        if rng.random() < 0.85:
            fault["restart_after"] = _ms(round(length, 3))
        return fault
    if kind == "pause":
        return {"type": "pause", "target": broker, "at": _ms(at), "duration": _ms(round(length, 3))}
    others = [f"broker-{b}" for b in range(BROKERS) if f"broker-{b}" != broker]
    cut = rng.choice(["from_brokers", "from_controller", "from_everyone", "from_clients"])
    if cut == "from_brokers":
        sides = [[broker], others]
    elif cut == "from_controller":
        sides = [[broker], ["controller"]]
    elif cut == "from_everyone":
        sides = [[broker], [*others, "controller", *clients]]
    else:
        sides = [[broker], list(clients)]
    fault = {"type": "network_partition", "at": _ms(at), "sides": sides}
    if rng.random() < 0.9:
        fault["duration"] = _ms(round(length, 3))
    return fault


def scenario_data(seed: int) -> dict[str, Any]:
    """The scenario of ``seed`` as the mapping its YAML file holds (keys as a user writes them)."""
    rng = random.Random(seed)
    duration_ms = float(rng.choice([20_000, 25_000, 30_000]))
    topics = [
        {"name": f"t{i}", "partitions": rng.randint(1, 3), "replication.factor": 3, "min.insync.replicas": 2}
        for i in range(rng.choice([1, 1, 2]))
    ]
    names = [t["name"] for t in topics]
    rates = [10 ** rng.uniform(1.0, 2.6) for _ in range(rng.choice([1, 1, 2]))]
    scale = min(1.0, MAX_TOTAL_RATE / sum(rates))
    producers: list[dict[str, Any]] = []
    for i, rate in enumerate(rates):
        p: dict[str, Any] = {
            "name": f"p{i}", "topic": rng.choice(names), "acks": "all", "rate": f"{max(1.0, rate * scale):.0f}/s",
            "arrival": rng.choice(["poisson", "constant"]),
            "record_size": f"{rng.choice([100, 512, 1024])}B",
        }
        if rng.random() < 0.5:
            p["linger.ms"] = rng.choice([0, 1, 5, 20])
        if rng.random() < 0.5:
            p["request.timeout.ms"] = rng.choice([1_000, 5_000, 30_000])
        if rng.random() < 0.3:
            p["max.in.flight.requests.per.connection"] = rng.randint(1, 5)
        producers.append(p)
    consumers = [{"name": f"c{i}", "topic": rng.choice(names)} for i in range(rng.choice([1, 1, 2]))]
    data: dict[str, Any] = {
        "name": f"failover-stress-{seed}",
        "description": f"failover stress scenario {seed} (benchmarks/failover_stress.py)",
        "seed": rng.randint(0, 2**31),
        "duration": _ms(duration_ms),
        "warmup": "0ms",
        "sample_interval": "500ms",
        "cluster": {"brokers": BROKERS},
        "broker": {
            "replica.lag.time.max.ms": rng.choice([1_000, 5_000, 30_000]),
            "replica.fetch.wait.max.ms": rng.choice([10, 100, 500]),
        },
        "topics": topics,
        "producers": producers,
        "consumers": consumers,
        "network": {"default_link": {"latency": _latency(rng, 0.05, rng.choice([1.0, 5.0]))}},
    }
    if rng.random() < 0.3:
        data["followers"] = {"link": _link(rng)}
    if rng.random() < 0.3:
        data["controller"] = {"link_latency": _latency(rng, 0.05, 20.0)}
    clients = [p["name"] for p in producers] + [c["name"] for c in consumers]
    data["faults"] = [_fault(rng, duration_ms, clients) for _ in range(rng.randint(1, 5))]
    return data


def scenario_text(seed: int) -> str:
    return yaml.dump(scenario_data(seed), Dumper=_Dumper, sort_keys=False, width=120)


@dataclass
class Outcome:
    """What one clean run did."""

    faults: int
    leader_changes: int
    unclean_elections: int
    acknowledged: int
    lost: int
    invariant_checks: int


def run(seed: int) -> Outcome:
    """Load the scenario of ``seed`` like a user's file, run it with invariants on, and count."""
    from kafkasim import load_scenario
    from kafkasim.broker.metadata import LEADER_RECOVERY_RECOVERING, NO_LEADER
    from kafkasim.controller.records import NO_LEADER_CHANGE, PartitionChangeRecord
    from kafkasim.run.engine import Engine

    scenario = load_scenario(scenario_text(seed))
    assert scenario.invariants
    engine = Engine(scenario)
    result = engine.run()
    elections = unclean = 0
    for batch in engine.components.controller_link.controller.core.log.batches:
        for record in batch.records:
            # An election (a leader set; -1 is a partition left offline, -2 no change of leader).
            if isinstance(record, PartitionChangeRecord) and record.leader not in (NO_LEADER_CHANGE, NO_LEADER):
                elections += 1
                unclean += record.leader_recovery_state == LEADER_RECOVERY_RECOVERING
    records = result.records
    acknowledged = int(((records["error"] == 0) & records["ack_ms"].notna() & (records["offset"] >= 0)).sum())
    return Outcome(len(scenario.faults), elections, unclean, acknowledged, int(records["lost_after_ack"].sum()),
                   int(result.summary["counters"].get("invariant_checks", 0)))


class DataLost(Exception):
    """A run lost acknowledged batches, or elected a leader uncleanly, where Kafka promises neither."""


def check(seed: int) -> Outcome:
    """Run ``seed``; raise if it lost an acknowledged batch or saw an unclean election."""
    outcome = run(seed)
    if outcome.lost or outcome.unclean_elections:
        raise DataLost(f"{outcome.lost} acknowledged batches lost, {outcome.unclean_elections} unclean elections")
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=50, help="runs (seeds seed..seed+count-1)")
    parser.add_argument("--seed", type=int, default=1, help="first seed")
    parser.add_argument("--wall-limit", type=float, default=300.0, help="wall seconds before a run counts as hung")
    parser.add_argument("--show", type=int, default=None, help="print the YAML of this seed and exit")
    args = parser.parse_args(argv)
    if args.show is not None:
        print(scenario_text(args.show), end="")
        return 0
    failures: dict[str, list[int]] = defaultdict(list)
    totals = Outcome(0, 0, 0, 0, 0, 0)
    started = time.perf_counter()
    for seed in range(args.seed, args.seed + args.count):
        try:
            with _wall_limit(args.wall_limit):
                outcome = check(seed)
        except Exception as error:  # noqa: BLE001 - every failure is a finding, grouped below
            failures[failure_signature(error)].append(seed)
        else:
            for name in vars(totals):
                setattr(totals, name, getattr(totals, name) + getattr(outcome, name))
        done = seed - args.seed + 1
        bad = sum(map(len, failures.values()))
        print(f"  {done}/{args.count} run, {bad} failed, {time.perf_counter() - started:.0f} s", file=sys.stderr,
              flush=True)
    failed = sum(map(len, failures.values()))
    print(f"{args.count} runs (seeds {args.seed}..{args.seed + args.count - 1}): {args.count - failed} clean, "
          f"{failed} failed")
    print(f"clean runs: {totals.faults} faults, {totals.leader_changes} leader changes "
          f"({totals.unclean_elections} unclean), {totals.acknowledged} batches acknowledged, {totals.lost} lost, "
          f"{totals.invariant_checks} invariant checks")
    for signature, seeds in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(map(str, seeds[:12])) + (" ..." if len(seeds) > 12 else "")
        print(f"  {len(seeds):4d}  {signature}\n        seeds: {shown}")
    print(f"wall: {time.perf_counter() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
