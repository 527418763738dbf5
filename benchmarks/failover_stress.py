"""Seeded failover stress: random schedules of broker crashes, controlled shutdowns, restarts, pauses and
network partitions on a 3-6-broker cluster -- every run must finish clean.

Clean elections (the default): every topic has ``min.insync.replicas`` 2 and at least 3 replicas (Kafka's
placer or an explicit ``replica_assignment``), unclean leader election is off, every producer uses
``acks=all`` and, but for one producer in ten, idempotence (Kafka's default). Kafka promises that a record
acknowledged to such a producer survives any number of clean leader elections, and that an idempotent
producer writes each batch once, in order, across leader changes -- unless an epoch bump rewrote the batch's
sequence while it was in flight (``sequence_reset``: Kafka's own client may then write it twice,
tests/engine/test_idempotent_failover.py). A seed draws 1-2 topics (1-24 partitions), 1-3 producers
(request timeouts down to 1 s, most of those with a delivery timeout a run outlives, 1-5 requests in
flight), 1-2 consumers, link
latencies, ``replica.lag.time.max.ms``, the controller's link and 1-5 faults on the brokers: ``crash``
(most restart after a while), ``shutdown`` (Kafka's controlled shutdown, some restarting), ``pause`` (often
longer than the controller's session, so the broker is fenced and its partitions get new leaders) and
``network_partition`` (a broker cut from the others, from the controller, or from the clients; or the
controller cut from several brokers). Runs last 20-30 simulated seconds with the invariant checks on; at the
end the records table's audit finds every acknowledged batch missing from its partition's final leader
(``lost_after_ack``) and every batch written twice (``duplicated``). A run is clean when it finishes without
an exception, lost nothing and an idempotent producer wrote nothing twice.

With ``--unclean``, topics allow unclean leader election and producers use acks=1 or all: records may be
lost (that is Kafka's bargain), but a valid scenario must still run to its end with the invariants on.

Counted besides: OUT_OF_ORDER_SEQUENCE_NUMBER answers to idempotent producers (Kafka's broker answers it
only for a sequence gap it cannot explain: ``ProducerStateManager``'s checks in
``UnifiedLog.analyzeAndValidateProducerState``), by ``TransactionManager.canRetry``'s branch (not the next
batch: retried as it is; a gap: an epoch bump), and the batches still retried after one at the end: each
must sit behind a later batch of its partition that was written first (``behind``) or after an earlier one
still pending (``ahead``) -- Kafka's client retries both as not the next batch -- or the run fails. A batch still pending past its delivery.timeout.ms fails the run
(Kafka's ``Sender`` fails every batch by then).

    uv run python benchmarks/failover_stress.py --count 200 --seed 1
    uv run python benchmarks/failover_stress.py --count 200 --seed 1 --unclean
    uv run python benchmarks/failover_stress.py --show 17            # print scenario 17's YAML

Prints the runs, the faults, the leader changes (the controller's elections), the batches acknowledged
and lost, and the failures grouped by signature with their seeds; progress goes to stderr. The scenario
generator reuses benchmarks/random_scenarios.py's pieces (latencies, links, fault windows, the wall-time
limit and the failure signature). ``tests/benchmarks/test_failover_stress.py`` runs a few fixed seeds.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from random_scenarios import (  # noqa: E402
    ChildFailure,
    WallTimeout,
    _Dumper,
    _latency,
    _link,
    _ms,
    failure_signature,
    in_child,
)

MAX_TOTAL_RATE = 400.0  # records/s over all producers: a run of 30 simulated seconds stays cheap
SESSION_MS = 9_000.0  # broker.session.timeout.ms: a pause longer than this gets the broker fenced
# After the last fault heals, every partition has a leader and every producer is acknowledged again within:
# the controller's session (a broker back from a pause that was fenced registers again), an election and the
# metadata it publishes, the clients' metadata backoff (retry.backoff.max.ms 1 s) and a request timeout.
LIVENESS_BOUND_MS = SESSION_MS + 4_000.0
# A batch still pending this long after its delivery.timeout.ms is a defect (Kafka's Sender expires it then).
EXPIRY_MARGIN_MS = 100.0


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


def _fault(rng: random.Random, duration_ms: float, brokers: int, clients: list[str]) -> dict[str, Any]:
    kind = rng.choice(["crash", "crash", "pause", "pause", "network_partition", "network_partition", "shutdown"])
    target = rng.randrange(brokers)
    broker = f"broker-{target}"
    length = _length(rng)
    at = _fault_time(rng, duration_ms, length)
    if kind in ("crash", "shutdown"):
        fault: dict[str, Any] = {"type": kind, "target": broker, "at": _ms(at)}
        if rng.random() < (0.85 if kind == "crash" else 0.6):
            fault["restart_after"] = _ms(round(length, 3))
        return fault
    if kind == "pause":
        return {"type": "pause", "target": broker, "at": _ms(at), "duration": _ms(round(length, 3))}
    others = [f"broker-{b}" for b in range(brokers) if b != target]
    cut = rng.choice(["from_brokers", "from_controller", "from_everyone", "from_clients", "controller_alone"])
    if cut == "from_brokers":
        sides = [[broker], others]
    elif cut == "from_controller":
        sides = [[broker], ["controller"]]
    elif cut == "from_everyone":
        sides = [[broker], [*others, "controller", *clients]]
    elif cut == "from_clients":
        sides = [[broker], list(clients)]
    else:  # the controller cut from several brokers (they lose their sessions; the rest keep theirs)
        cut_off = sorted(rng.sample(range(brokers), rng.randint(1, brokers - 1)))
        sides = [["controller"], [f"broker-{b}" for b in cut_off]]
    fault = {"type": "network_partition", "at": _ms(at), "sides": sides}
    if rng.random() < 0.9:
        fault["duration"] = _ms(round(length, 3))
    return fault


def _faults(rng: random.Random, duration_ms: float, brokers: int, clients: list[str]) -> list[dict[str, Any]]:
    """1-5 faults; a crash or shutdown of a broker still down from an earlier one (a dead process cannot be
    killed again: the scenario refuses it) is left out."""
    faults: list[dict[str, Any]] = []
    down: dict[str, list[tuple[float, float]]] = {}
    for _ in range(rng.randint(1, 5)):
        fault = _fault(rng, duration_ms, brokers, clients)
        if fault["type"] in ("crash", "shutdown"):
            at = float(fault["at"].removesuffix("ms"))
            restart = fault.get("restart_after")
            # A shutdown's process lives on through its controlled-shutdown exchange: a margin for it.
            until = math.inf if restart is None else at + float(restart.removesuffix("ms")) + 1_000.0
            windows = down.setdefault(fault["target"], [])
            if any(start - 1_000.0 <= at < end or at <= start < until for start, end in windows):
                continue
            windows.append((at, until))
        faults.append(fault)
    return faults


def _topic(rng: random.Random, index: int, brokers: int, unclean: bool) -> dict[str, Any]:
    replicas = rng.randint(3, min(brokers, 4))
    partitions = rng.choice([1, 2, 3, 6, 12, 24])
    topic: dict[str, Any] = {"name": f"t{index}", "partitions": partitions, "min.insync.replicas": 2}
    if rng.random() < 0.4:
        topic["replica_assignment"] = [rng.sample(range(brokers), replicas) for _ in range(topic["partitions"])]
    else:
        topic["replication.factor"] = replicas
    if unclean:
        topic["unclean.leader.election.enable"] = True
    return topic


def scenario_data(seed: int, unclean: bool = False) -> dict[str, Any]:
    """The scenario of ``seed`` as the mapping its YAML file holds (keys as a user writes them); ``unclean``:
    topics allow unclean leader election and producers use acks=1 or all."""
    rng = random.Random(f"{seed}/unclean" if unclean else seed)
    duration_ms = float(rng.choice([20_000, 25_000, 30_000]))
    brokers = rng.choice([3, 3, 4, 5, 6])
    topics = [_topic(rng, i, brokers, unclean) for i in range(rng.choice([1, 1, 2]))]
    names = [t["name"] for t in topics]
    rates = [10 ** rng.uniform(1.0, 2.6) for _ in range(rng.choice([1, 1, 2, 3]))]
    scale = min(1.0, MAX_TOTAL_RATE / sum(rates))
    producers: list[dict[str, Any]] = []
    for i, rate in enumerate(rates):
        p: dict[str, Any] = {
            "name": f"p{i}", "topic": rng.choice(names), "acks": rng.choice(["all", 1]) if unclean else "all",
            "rate": f"{max(1.0, rate * scale):.0f}/s",
            "arrival": rng.choice(["poisson", "constant"]),
            "record_size": f"{rng.choice([100, 512, 1024])}B",
        }
        if rng.random() < 0.5:
            p["linger.ms"] = rng.choice([0, 1, 5, 20])
        if rng.random() < 0.7:
            # Short request timeouts: requests time out across pauses and leader changes, and are retried.
            p["request.timeout.ms"] = rng.choice([1_000, 3_000, 5_000, 10_000, 30_000])
        if rng.random() < 0.5:
            p["max.in.flight.requests.per.connection"] = rng.randint(1, 5)
        if p["acks"] == "all" and rng.random() < 0.1:
            p["enable.idempotence"] = False  # may write a retried batch twice: Kafka allows it
        producers.append(p)
    consumers = [{"name": f"c{i}", "topic": rng.choice(names)} for i in range(rng.choice([1, 1, 2]))]
    data: dict[str, Any] = {
        "name": f"failover-stress-{seed}" + ("-unclean" if unclean else ""),
        "description": f"failover stress scenario {seed} (benchmarks/failover_stress.py"
                       + (" --unclean)" if unclean else ")"),
        "seed": rng.randint(0, 2**31),
        "duration": _ms(duration_ms),
        "warmup": "0ms",
        "sample_interval": "500ms",
        "cluster": {"brokers": brokers},
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
    # Kafka 4.1+'s eligible leader replicas in half the runs, 4.0's rules in the others (a stream of its own:
    # the rest of the scenario stays what the seed drew).
    elr_rng = random.Random(f"{seed}/elr" + ("/unclean" if unclean else ""))
    data.setdefault("controller", {})["eligible.leader.replicas.version"] = elr_rng.choice([0, 1])
    clients = [p["name"] for p in producers] + [c["name"] for c in consumers]
    data["faults"] = _faults(rng, duration_ms, brokers, clients)
    _delivery_timeouts(random.Random(f"{seed}/delivery" + ("/unclean" if unclean else "")), producers)
    # Long enough after the last fault heals for the liveness check (up to 45 s): decided after every draw.
    ends = [_fault_end_ms(f) for f in data["faults"]]
    if ends and all(end is not None for end in ends):
        wanted = max(e for e in ends if e is not None) + LIVENESS_BOUND_MS + 2_000.0
        if wanted > duration_ms:
            data["duration"] = _ms(min(45_000.0, float(math.ceil(wanted / 1000.0) * 1000)))
    return data


def _delivery_timeouts(rng: random.Random, producers: list[dict[str, Any]]) -> None:
    """Most producers with a short request timeout get a delivery.timeout.ms a run outlives (Kafka's floor:
    linger.ms + request.timeout.ms, plus 1-8 s), so that a batch Kafka's client retries until then -- an
    OUT_OF_ORDER_SEQUENCE_NUMBER behind a later batch written first, a leader that does not come back -- is
    seen to expire and the producer to go on (``Sender``'s expiry, ``TransactionManager.maybeResolveSequences``
    or its epoch bump). Drawn from a stream of its own: the rest of the scenario stays what the seed drew."""
    for p in producers:
        request_timeout = p.get("request.timeout.ms")
        if request_timeout is None or request_timeout > 10_000 or rng.random() >= 0.7:
            continue
        p["delivery.timeout.ms"] = p.get("linger.ms", 5) + request_timeout + rng.choice([1_000, 3_000, 8_000])


def _fault_end_ms(fault: dict[str, Any]) -> float | None:
    at = float(fault["at"].removesuffix("ms"))
    length = fault.get("duration", fault.get("restart_after"))
    if length is None:
        return None
    return at + float(length.removesuffix("ms")) + (1_000.0 if fault["type"] == "shutdown" else 0.0)


def scenario_text(seed: int, unclean: bool = False) -> str:
    return yaml.dump(scenario_data(seed, unclean), Dumper=_Dumper, sort_keys=False, width=120)


@dataclass
class Outcome:
    """What one clean run did."""

    faults: int
    leader_changes: int
    unclean_elections: int
    acknowledged: int
    lost: int
    invariant_checks: int
    duplicates: int = 0
    """Batches of idempotent producers written twice with their sequence intact (Kafka promises none)."""
    elr_elections: int = 0
    """Leaders the controller took from the eligible leader replicas (KIP-966)."""
    last_known_leader_elections: int = 0
    """Last known leaders the controller elected, the ISR and ELR being empty (KIP-966's balanced recovery)."""
    duplicates_after_epoch_bump: int = 0
    """Batches written twice after an epoch bump rewrote their sequence in flight (Kafka's client does that)."""
    epoch_bumps: int = 0
    """Idempotent producers' epoch bumps (TransactionManager.bumpIdempotentProducerEpoch)."""
    out_of_order: int = 0
    """OUT_OF_ORDER_SEQUENCE_NUMBER answers to idempotent producers' produce requests."""
    out_of_order_not_next: int = 0
    """Partition answers ``TransactionManager.canRetry`` retried as they were: the batch is not the next after
    the last acknowledged one (an earlier batch not written yet, or a later one written first) or its
    sequence was rewritten by an epoch bump, or it waits behind an unresolved sequence."""
    out_of_order_gaps: int = 0
    """Partition answers for the next sequence (or the one right after an unresolved sequence): a real gap,
    retried after an epoch bump."""
    retried_to_the_end: int = 0
    """Batches of idempotent producers still pending at the end after an OUT_OF_ORDER_SEQUENCE_NUMBER answered
    to a request for their partition alone (the requests table keeps one error per request), each inside its
    delivery.timeout.ms: Kafka's client retries it until then (``past_delivery_timeout`` else)."""
    retried_behind_a_later_batch: int = 0
    """Of those, batches behind a later batch of their partition that was written first (see ``behind``)."""
    retried_ahead_of_a_pending_batch: int = 0
    """Of those, batches after an earlier batch of their partition that is itself still pending (see
    ``ahead``).
    A batch retried to the end that is neither fails the run."""
    retried_answered_at_the_end: int = 0
    """Of those, the others answered within their producer's retry.backoff.max.ms of the run's end: the
    next try had not come yet (often the batch an epoch bump had just rewritten to sequence 0)."""
    rows_per_batch_id: int = 1
    """The most rows one batch has in the records table (must be 1)."""
    past_delivery_timeout: int = 0
    """Batches pending at the end although their delivery.timeout.ms passed (Kafka's ``Sender`` fails every
    batch by then, queued or in flight: must be 0)."""
    liveness_checked: int = 0
    """1 if every fault ended early enough for the liveness check (``LIVENESS_BOUND_MS`` before the end)."""
    offline_after_heal: int = 0
    """Partitions without a leader ``LIVENESS_BOUND_MS`` after the last fault healed (must be 0)."""
    producers_stalled: int = 0
    """Producers with no acknowledgement after heal + bound, whose stall Kafka's rules do not explain."""
    producers_stalled_by_out_of_order: int = 0
    """Producers stalled because a batch is retried on OUT_OF_ORDER_SEQUENCE_NUMBER, as Kafka's client does
    until delivery.timeout.ms (``TransactionManager.canRetry``: a batch behind the last acknowledged one)."""
    producers_stalled_behind_a_lost_message: int = 0
    """Producers stalled while a request sent before the heal still waits for an answer a cut lost: kafkasim's
    links lose a message on a cut link and its sender waits its timeout (a follower's fetcher the broker's
    request.timeout.ms, 30 s: ``BrokerBlockingSender``'s NetworkClient), where TCP would
    retransmit it after the heal (the open issue "TCP under the links"). Reported, not a failure."""


def run(seed: int, unclean: bool = False) -> Outcome:
    """Load the scenario of ``seed`` like a user's file, run it with invariants on, and count."""
    from kafkasim import load_scenario
    from kafkasim.broker.metadata import NO_LEADER
    from kafkasim.controller.records import NO_LEADER_CHANGE, PartitionChangeRecord
    from kafkasim.run.engine import Engine

    scenario = load_scenario(scenario_text(seed, unclean))
    assert scenario.invariants
    engine = Engine(scenario)
    result = engine.run()
    elections = 0
    for batch in engine.components.controller.core.log.batches:
        for record in batch.records:
            # An election (a leader set; -1 is a partition left offline, -2 no change of leader).
            if isinstance(record, PartitionChangeRecord) and record.leader not in (NO_LEADER_CHANGE, NO_LEADER):
                elections += 1
    counters = engine.components.controller.core.replication_control.elections
    # Unclean: from outside the ISR because the topic allows it. Kafka also marks a last known leader's election
    # RECOVERING (KIP-966's balanced recovery), with unclean elections off too: counted apart.
    unclean_elections = counters["unclean"]
    records = result.records
    acknowledged = int(((records["error"] == 0) & records["ack_ms"].notna() & (records["offset"] >= 0)).sum())
    idempotent = {p.name for p in scenario.producers if p.enable_idempotence}
    mine = records[records["producer"].isin(idempotent)]
    requests = result.requests
    out_of_order = requests[(requests["api"] == "Produce") & requests["client"].isin(idempotent)
                            & (requests["error_name"] == "OUT_OF_ORDER_SEQUENCE_NUMBER")]
    # The requests table keeps one error per request: a request of several partitions answered
    # OUT_OF_ORDER_SEQUENCE_NUMBER may have answered this batch's partition otherwise (seed 901: its batch got
    # NOT_ENOUGH_REPLICAS, another partition's got OUT_OF_ORDER). Only single-partition answers are the batch's.
    own = out_of_order[out_of_order["partitions"] == 1]
    stuck = mine[(mine["outcome"].astype(str) == "pending") & mine["request_id"].isin(own["request_id"])]
    overdue = past_delivery_timeout(records, {p.name: p.delivery_timeout_ms for p in scenario.producers},
                                    float(scenario.duration))
    twice = mine["outcome"].astype(str) == "duplicated"
    reset = mine["sequence_reset"].astype(bool)
    txns = [p.txn for p in engine.components.producers if p.txn is not None]
    bumps = sum(t.epoch_bumps for t in txns)
    checked, offline, stalled, stalled_oosn, behind_lost = liveness(scenario, engine, result)
    return Outcome(len(scenario.faults), elections, unclean_elections, acknowledged,
                   int(records["lost_after_ack"].sum()), int(result.summary["counters"].get("invariant_checks", 0)),
                   elr_elections=counters["ELR"], last_known_leader_elections=counters["last known leader"],
                   duplicates=int((twice & ~reset).sum()), duplicates_after_epoch_bump=int((twice & reset).sum()),
                   epoch_bumps=bumps, out_of_order=len(out_of_order),
                   out_of_order_not_next=sum(t.out_of_order_not_next for t in txns),
                   out_of_order_gaps=sum(t.out_of_order_gaps for t in txns), retried_to_the_end=len(stuck),
                   retried_behind_a_later_batch=behind(stuck, mine), retried_ahead_of_a_pending_batch=ahead(stuck, mine),
                   retried_answered_at_the_end=answered_at_the_end(stuck, mine, requests, scenario),
                   past_delivery_timeout=overdue,
                   rows_per_batch_id=int(records["batch_id"].value_counts().max()) if len(records) else 1,
                   liveness_checked=checked, offline_after_heal=offline, producers_stalled=stalled,
                   producers_stalled_by_out_of_order=stalled_oosn,
                   producers_stalled_behind_a_lost_message=behind_lost)


def past_delivery_timeout(records: Any, delivery_timeout_ms: dict[str, float], end_ms: float) -> int:
    """Batches still pending at ``end_ms`` although their producer's delivery.timeout.ms ended before it --
    and before that of every other batch of theirs still pending for the same partition: Kafka's
    ``RecordAccumulator.expiredBatches`` expires from the front of a partition's deque only, so an older
    batch behind a younger retried one (re-enqueued at the front, without idempotence) expires with it."""
    timeouts = records["producer"].astype(str).map(delivery_timeout_ms)
    pending = (records["outcome"].astype(str) == "pending").to_numpy()
    deadline = (records["created_ms"] + timeouts).to_numpy(dtype=float)
    keys = records["producer"].astype(str) + "/" + records["topic"].astype(str) + "/" + records["partition"].astype(str)
    latest = pd.Series(np.where(pending, deadline, -np.inf)).groupby(keys.to_numpy()).transform("max").to_numpy()
    return int((pending & (latest < end_ms - EXPIRY_MARGIN_MS)).sum())


def _partition_keys(frame: Any) -> Any:
    return (frame["producer"].astype(str) + "/" + frame["topic"].astype(str) + "/"
            + frame["partition"].astype(str)).to_numpy()


def _behind_and_ahead(stuck: Any, records: Any) -> tuple[Any, Any]:
    """Per batch of ``stuck``: whether it is ``behind`` a later written batch of its producer and partition,
    and whether it is ``ahead`` of an earlier pending one (and not behind): one pass over ``records``."""
    keys = _partition_keys(stuck)
    ids = stuck["batch_id"].to_numpy()
    written = records[records["offset"] >= 0]
    last_written = pd.Series(written["batch_id"].to_numpy()).groupby(_partition_keys(written)).max()
    pending = records[records["outcome"].astype(str) == "pending"]
    first_pending = pd.Series(pending["batch_id"].to_numpy()).groupby(_partition_keys(pending)).min()
    is_behind = pd.Series(keys).map(last_written).to_numpy(dtype=float) > ids
    is_ahead = (pd.Series(keys).map(first_pending).to_numpy(dtype=float) < ids) & ~is_behind
    return is_behind, is_ahead


def behind(stuck: Any, records: Any) -> int:
    """How many of ``stuck`` (batches answered OUT_OF_ORDER_SEQUENCE_NUMBER) sit behind a later batch of the
    same producer and partition that was written: Kafka's broker accepts any sequence from a producer it knows
    nothing of (``ProducerAppendInfo.checkSequence``: no current epoch), so when a producer's first batches to
    a partition are refused before the append (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER) while a later one
    in flight is appended, the first ones can never follow it; ``TransactionManager.canRetry`` retries a
    batch that is not the next sequence without an epoch bump, until delivery.timeout.ms (the partition then
    flows again: ``maybeResolveSequences`` finds the last acknowledged sequence right before the next)."""
    return int(_behind_and_ahead(stuck, records)[0].sum())


def ahead(stuck: Any, records: Any) -> int:
    """How many of ``stuck`` (batches answered OUT_OF_ORDER_SEQUENCE_NUMBER, not behind a later batch) come
    after an earlier batch of the same producer and partition that is still pending: the broker has not got
    that one yet (in flight to a leader a cut isolated, or waiting for its own retry), so it refuses the
    later sequence, and ``TransactionManager.canRetry`` retries it as not the next batch until the earlier
    one is written or expires."""
    return int(_behind_and_ahead(stuck, records)[1].sum())


def answered_at_the_end(stuck: Any, records: Any, requests: Any, scenario: Any) -> int:
    """How many of ``stuck`` neither ``behind`` nor ``ahead`` got their answer within their producer's
    retry.backoff.max.ms of the run's end: their next try was still to come (Sender's reenqueueBatch waits
    the backoff), so they were not retried to the end but caught between two tries -- often right after
    the epoch bump the answer caused had rewritten them to sequence 0 of the new epoch."""
    is_behind, is_ahead = _behind_and_ahead(stuck, records)
    backoff = {p.name: float(p.retry_backoff_max_ms) for p in scenario.producers}
    answered = requests.set_index("request_id")["client_receive_ms"]
    end = float(scenario.duration)
    count = 0
    for batch, explained in zip(stuck.itertuples(), is_behind | is_ahead, strict=True):
        if explained:
            continue
        at = answered.get(batch.request_id)
        count += at is not None and at == at and at >= end - backoff[batch.producer]
    return count


def heal_ms(scenario: Any) -> float | None:
    """When the last fault ends, or None if one never does (a crash without restart, an endless cut)."""
    ends = [f.end for f in scenario.faults]
    if any(end is None for end in ends):
        return None
    # A controlled shutdown stops the process only when the controller lets it: allow a second for it.
    return max((end + (1_000.0 if f.type == "shutdown" else 0.0) for f, end in zip(scenario.faults, ends,
                                                                                  strict=True)), default=0.0)


def liveness(scenario: Any, engine: Any, result: Any) -> tuple[int, int, int, int, int]:
    """(checked, partitions offline after heal + bound, producers stalled unexplained, stalled by an
    OUT_OF_ORDER_SEQUENCE_NUMBER retry, stalled behind a message a cut lost) -- TigerBeetle's VOPR has such a
    liveness mode beside its safety checks: after the faults heal, the system must make progress again."""
    from kafkasim.broker.metadata import NO_LEADER
    from kafkasim.controller.records import NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord
    from kafkasim.server.replica_fetcher_thread import FOLLOWER_REQUEST_TIMEOUT_MS

    healed = heal_ms(scenario)
    duration = float(scenario.duration)
    if healed is None or healed + LIVENESS_BOUND_MS > duration - 1_000.0:
        return 0, 0, 0, 0, 0
    deadline = healed + LIVENESS_BOUND_MS
    leader_at_deadline: dict[Any, int] = {}
    offline_later: set[Any] = set()
    for batch in engine.components.controller.core.log.batches:
        for record in batch.records:
            if isinstance(record, PartitionRecord):
                leader_at_deadline[record.topic_partition] = record.leader
            elif isinstance(record, PartitionChangeRecord) and record.leader != NO_LEADER_CHANGE:
                if batch.append_ms <= deadline:
                    leader_at_deadline[record.topic_partition] = record.leader
                elif record.leader == NO_LEADER:
                    offline_later.add(record.topic_partition)
    offline = {tp for tp, leader in leader_at_deadline.items() if leader == NO_LEADER} | offline_later
    records, requests = result.records, result.requests
    # Requests sent before the heal, never answered, whose senders' timeouts end after the deadline (whether
    # they fired before the run's end or not): a cut lost them (or their responses), and every later message of
    # their connections waited behind them (TCP order). One whose timeout fired by the deadline explains nothing.
    timeouts = {c.name: float(c.request_timeout_ms) for c in (*scenario.producers, *scenario.consumers)}
    waiting = requests[(requests["client_send_ms"] < healed) & requests["client_receive_ms"].isna()]
    timeout_ms = waiting["client"].astype(str).map(lambda c: timeouts.get(c, FOLLOWER_REQUEST_TIMEOUT_MS))
    still_waiting = waiting[waiting["client_send_ms"] + timeout_ms > deadline]
    stalled = by_out_of_order = behind_lost = 0
    for producer in scenario.producers:
        mine = records[records["producer"] == producer.name]
        # Progress is an acknowledgement: a batch that failed (its delivery.timeout.ms passed) is none.
        acked = mine[(mine["error"] == 0) & (mine["offset"] >= 0)]
        if not len(mine) or (acked["ack_ms"] > deadline).any() or mine["first_intended_ms"].max() < deadline:
            continue
        oosn = requests[(requests["client"] == producer.name)
                        & (requests["error_name"] == "OUT_OF_ORDER_SEQUENCE_NUMBER")
                        & (requests["client_send_ms"] > healed)]
        if len(oosn):
            by_out_of_order += 1
        elif len(still_waiting) and result.summary["counters"].get("messages_dropped", 0):
            behind_lost += 1
        else:
            stalled += 1
    return 1, len(offline), stalled, by_out_of_order, behind_lost


class DataLost(Exception):
    """A run lost acknowledged batches, elected a leader uncleanly, or wrote an idempotent producer's batch
    twice, where Kafka promises none of it."""


def check(seed: int, unclean: bool = False) -> Outcome:
    """Run ``seed``; raise if it broke a promise Kafka makes for its kind of scenario (clean: no loss, no
    unclean election; both: no duplicate from an idempotent producer)."""
    outcome = run(seed, unclean)
    broken = []
    if not unclean and (outcome.lost or outcome.unclean_elections):
        broken.append(f"{outcome.lost} acknowledged batches lost, {outcome.unclean_elections} unclean elections")
    if outcome.rows_per_batch_id > 1:
        broken.append(f"a batch has {outcome.rows_per_batch_id} rows in the records table")
    if outcome.past_delivery_timeout:
        broken.append(f"{outcome.past_delivery_timeout} batches pending past their delivery.timeout.ms")
    unexplained = (outcome.retried_to_the_end - outcome.retried_behind_a_later_batch
                   - outcome.retried_ahead_of_a_pending_batch - outcome.retried_answered_at_the_end)
    if unexplained:
        broken.append(f"{unexplained} batches retried on OUT_OF_ORDER_SEQUENCE_NUMBER to the end, neither behind a "
                      "later batch written first, nor after an earlier one still pending, nor answered in the "
                      "run's last retry backoff")
    if outcome.duplicates:
        broken.append(f"{outcome.duplicates} batches of idempotent producers written twice with their sequence "
                      "intact")
    if outcome.offline_after_heal or outcome.producers_stalled:
        broken.append(f"liveness: {outcome.offline_after_heal} partitions without a leader and "
                      f"{outcome.producers_stalled} producers without an acknowledgement "
                      f"{LIVENESS_BOUND_MS / 1000:g} s after the last fault healed")
    if broken:
        raise DataLost("; ".join(broken))
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=50, help="runs (seeds seed..seed+count-1)")
    parser.add_argument("--seed", type=int, default=1, help="first seed")
    parser.add_argument("--unclean", action="store_true", help="topics allow unclean election; acks=1 or all")
    parser.add_argument("--wall-limit", type=float, default=300.0, help="wall seconds before a run counts as hung")
    parser.add_argument("--show", type=int, default=None, help="print the YAML of this seed and exit")
    args = parser.parse_args(argv)
    if args.show is not None:
        print(scenario_text(args.show, args.unclean), end="")
        return 0
    failures: dict[str, list[int]] = defaultdict(list)
    totals = Outcome(0, 0, 0, 0, 0, 0)
    out_of_order_runs = 0
    stuck_seeds: list[int] = []
    started = time.perf_counter()
    for seed in range(args.seed, args.seed + args.count):
        try:
            outcome = in_child(check, (seed, args.unclean), args.wall_limit)  # a hang is stopped, not waited on
        except ChildFailure as error:  # every failure is a finding, grouped below
            failures[error.signature].append(seed)
        except WallTimeout as error:
            failures[failure_signature(error)].append(seed)
        else:
            for name in vars(totals):
                setattr(totals, name, getattr(totals, name) + getattr(outcome, name))
            out_of_order_runs += bool(outcome.out_of_order)
            if outcome.retried_to_the_end:
                stuck_seeds.append(seed)
        done = seed - args.seed + 1
        bad = sum(map(len, failures.values()))
        print(f"  {done}/{args.count} run, {bad} failed, {time.perf_counter() - started:.0f} s", file=sys.stderr,
              flush=True)
    failed = sum(map(len, failures.values()))
    print(f"{args.count} runs (seeds {args.seed}..{args.seed + args.count - 1}"
          f"{', unclean election allowed' if args.unclean else ''}): {args.count - failed} clean, {failed} failed")
    print(f"clean runs: {totals.faults} faults, {totals.leader_changes} leader changes "
          f"({totals.unclean_elections} unclean, {totals.elr_elections} from the ELR, "
          f"{totals.last_known_leader_elections} last known leaders), {totals.acknowledged} batches acknowledged, "
          f"{totals.lost} lost, "
          f"{totals.invariant_checks} invariant checks")
    print(f"idempotent producers: {totals.duplicates} batches written twice with their sequence intact, "
          f"{totals.duplicates_after_epoch_bump} after an epoch bump rewrote it ({totals.epoch_bumps} bumps); "
          f"{totals.out_of_order} OUT_OF_ORDER_SEQUENCE_NUMBER answers in {out_of_order_runs} runs"
          + f" -- by TransactionManager.canRetry's rule, {totals.out_of_order_not_next} partition answers retried "
          f"as not the next batch, {totals.out_of_order_gaps} a gap that bumped the epoch"
          + f"; {totals.retried_to_the_end} batches still retrying at the end after one, all inside their "
          f"delivery.timeout.ms: {totals.retried_behind_a_later_batch} behind a later batch of their partition "
          f"written first, {totals.retried_ahead_of_a_pending_batch} after an earlier one still pending (Kafka's "
          f"client retries both as not the next batch), {totals.retried_answered_at_the_end} answered in the run's "
          "last retry backoff (their next try still to come)"
          + (f"; seeds with one: {', '.join(map(str, stuck_seeds[:40]))}" if stuck_seeds else ""))
    print(f"liveness ({totals.liveness_checked} runs healed {LIVENESS_BOUND_MS / 1000:g} s before their end): "
          f"{totals.offline_after_heal} partitions still without a leader, {totals.producers_stalled} producers "
          f"stalled unexplained, {totals.producers_stalled_by_out_of_order} stalled retrying an "
          "OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka retries it until delivery.timeout.ms), "
          f"{totals.producers_stalled_behind_a_lost_message} stalled behind a message a cut lost (its sender waits "
          "its timeout, 30 s for a follower's fetcher; TCP would retransmit it)")
    for signature, seeds in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(map(str, seeds[:12])) + (" ..." if len(seeds) > 12 else "")
        print(f"  {len(seeds):4d}  {signature}\n        seeds: {shown}")
    print(f"wall: {time.perf_counter() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
