"""Random valid scenarios with faults, run with invariants on: every one must finish cleanly.

``scenario_text(seed)`` writes a scenario as a user would -- YAML text, Kafka's keys, human units -- and
``load(seed)`` reads it through ``kafkasim.load_scenario``, so what is tested is what users write. A seed
draws: 1-3 topics (1-4 partitions, replication factor 1-5, any legal min.insync.replicas, sometimes tiny
segment.bytes / segment.ms, retention.bytes / retention.ms), 0-3 producers (acks 0/1/all, rate, arrival,
record sizes, linger, batch size, in-flight limit, timeouts, partitioner), 0-3 consumers, broker threads and
lag time, follower fetch settings, link latencies and bandwidths, and 0-6 faults of every type (pause of a
follower/producer/consumer, slow_disk, crash with and without restart_after, link_delay, link_drop,
connection_reset, half_open) at random times, overlapping or not, some lasting past the end; about a third become ``cluster:`` scenarios (2-6
brokers, Kafka's placer or an explicit replica_assignment, racks, per-broker overrides, several fetcher
threads per source broker, faults on brokers: pause, slow_disk, link faults, crash of one that leads nothing;
and in half of them crashes of any broker, leaders included, some in runs stretched to 30 s). Half the
scenarios also get the hardware under Kafka's rules, each part on its own draw: broker, machine and client
stalls, the brokers' cores, flushing topics on a disk with a small page cache, a cluster's NIC (fair or fifo),
TCP's retransmission timer, the clients' costs, a hardware preset; idempotent producers, unclean elections,
controlled shutdowns and network partitions. Total load is bounded so a run of a few simulated
seconds takes well under a second of CPU; one scenario in ten runs 31-40 s at a tenth of the load.

    uv run python benchmarks/random_scenarios.py --count 500 --seed 1          # the big run
    uv run python benchmarks/random_scenarios.py --count 500 --seed 1 --duration 2s
    uv run python benchmarks/random_scenarios.py --show 17                      # print scenario 17's YAML

The report: how many ran, how many failed, failures grouped by exception type and message (numbers
masked), the seeds of each group, and wall time per scenario. ``tests/engine/test_random_scenarios.py``
runs a fixed handful of the same scenarios in the suite.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import re
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import yaml

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

MAX_TOTAL_RATE = 3000.0  # records/s over all producers: keeps a run of a few simulated seconds cheap


def _ms(value: float) -> str:
    return f"{value:.3f}ms".replace(".000ms", "ms")


def _latency(rng: random.Random, low_ms: float, high_ms: float) -> Any:
    """A one-way latency distribution in [low, high] ms, in one of the forms a file can use."""
    a = rng.uniform(low_ms, high_ms)
    b = rng.uniform(low_ms, high_ms)
    lo, hi = min(a, b), max(a, b) + 0.001
    kind = rng.choice(["constant", "uniform", "lognormal", "exponential", "empirical"])
    if kind == "constant":
        return _ms(lo)
    if kind == "uniform":
        return {"type": "uniform", "low": _ms(lo), "high": _ms(hi)}
    if kind == "lognormal":
        return {"type": "lognormal", "median": _ms(lo), "p99": _ms(hi)}
    if kind == "exponential":
        return {"type": "exponential", "mean": _ms(lo)}
    return {"type": "empirical", "values": [_ms(lo), _ms(hi)], "weights": [rng.randint(1, 99), rng.randint(1, 9)]}


def _link(rng: random.Random) -> dict[str, Any]:
    link: dict[str, Any] = {"latency": _latency(rng, 0.05, rng.choice([1.0, 5.0, 30.0]))}
    if rng.random() < 0.4:
        link["bandwidth"] = rng.choice(["10Mbit/s", "100Mbit/s", "1Gbit/s", "10Gbit/s"])
    if rng.random() < 0.2:
        link[rng.choice(["to_broker", "from_broker"])] = {"latency": _latency(rng, 0.05, 10.0)}
    return link


def _record_size(rng: random.Random) -> Any:
    kind = rng.choice(["constant", "constant", "uniform", "lognormal", "exponential"])
    if kind == "constant":
        return f"{rng.choice([1, 10, 100, 512, 1024, 4096, 20_000])}B"
    if kind == "uniform":
        low = rng.randint(1, 2000)
        return {"type": "uniform", "low": f"{low}B", "high": f"{low + rng.randint(0, 8000)}B"}
    if kind == "lognormal":
        median = rng.randint(10, 2000)
        return {"type": "lognormal", "median": f"{median}B", "p99": f"{median * rng.randint(2, 20)}B"}
    return {"type": "exponential", "mean": f"{rng.randint(10, 4000)}B"}


def _topic(rng: random.Random, index: int) -> dict[str, Any]:
    rf = rng.randint(1, 5)
    topic: dict[str, Any] = {
        "name": f"t{index}",
        "partitions": rng.choice([1, 1, 2, 3, 4]),
        "replication.factor": rf,
        "min.insync.replicas": rng.randint(1, rf),
    }
    if rng.random() < 0.4:
        topic["segment.bytes"] = rng.choice([14, 100, 1000, 4096, 16 * 1024, 1024 * 1024])
    if rng.random() < 0.2:
        topic["segment.ms"] = rng.choice([50, 200, 1000, 5000])
    if rng.random() < 0.1:
        topic["segment.index.bytes"] = rng.choice([8, 64, 1024])
        topic["index.interval.bytes"] = rng.choice([0, 100, 4096])
    if rng.random() < 0.3:
        topic["retention.bytes"] = rng.choice([0, 100, 10_000, 1024 * 1024])
    if rng.random() < 0.3:
        topic["retention.ms"] = rng.choice([0, 100, 1000, 10_000])
    if rng.random() < 0.1:
        topic["max.message.bytes"] = rng.choice([100, 2000, 20_000])
    return topic


def _producer(rng: random.Random, index: int, topics: list[str], rate: float) -> dict[str, Any]:
    p: dict[str, Any] = {
        "name": f"p{index}",
        "topic": rng.choice(topics),
        "acks": rng.choice(["all", "all", 1, 0]),
        "rate": f"{rate:.0f}/s",
        "record_size": _record_size(rng),
    }
    arrival = rng.choice(["poisson", "poisson", "constant", "on_off"])
    if arrival == "on_off":
        p["arrival"] = {
            "type": "on_off",
            "on": _ms(rng.uniform(50, 1000)),
            "off": _ms(rng.uniform(0, 1000)),
            "pattern": rng.choice(["poisson", "constant"]),
        }
    else:
        p["arrival"] = arrival
    if rng.random() < 0.7:
        p["linger.ms"] = rng.choice([0, 0, 1, 5, 20])
    if rng.random() < 0.5:
        p["batch.size"] = rng.choice([0, 100, 1024, 16_384, 65_536])
    if rng.random() < 0.5:
        p["max.in.flight.requests.per.connection"] = rng.randint(1, 5)
    if rng.random() < 0.6:
        p["request.timeout.ms"] = rng.choice([50, 200, 500, 1000, 5000, 30_000])
    if rng.random() < 0.6:
        p["partitioner"] = rng.choice(["sticky", "round_robin", "random"])
    if rng.random() < 0.3:
        p["link"] = _link(rng)
    return p


def _consumer(rng: random.Random, index: int, topics: list[str], long_run: bool) -> dict[str, Any]:
    c: dict[str, Any] = {"name": f"c{index}", "topic": rng.choice(topics)}
    # A long run keeps idle polling cheap: no busy polling (max wait 0, min bytes 0) for 30 s.
    if rng.random() < 0.5:
        c["fetch.min.bytes"] = rng.choice([1, 1024, 64 * 1024] if long_run else [0, 1, 1024, 64 * 1024])
    if rng.random() < 0.5:
        c["fetch.max.wait.ms"] = rng.choice([100, 500] if long_run else [0, 10, 100, 500])
    if rng.random() < 0.3:
        c["max.partition.fetch.bytes"] = rng.choice([0, 100, 4096, 1024 * 1024])
    if rng.random() < 0.3:
        # fetch.max.bytes 0 caps fetch.min.bytes to 0 (KafkaApis.handleFetchRequest): never parked.
        c["fetch.max.bytes"] = rng.choice([1000, 64 * 1024] if long_run else [0, 1000, 64 * 1024])
    if rng.random() < 0.5:
        c["request.timeout.ms"] = rng.choice([100, 300, 1000, 30_000])
    if rng.random() < 0.3:
        c["link"] = _link(rng)
    return c


FOLLOWER_REQUEST_TIMEOUT_MS = 30_000.0  # kafkasim.server.replica_fetcher_thread.FOLLOWER_REQUEST_TIMEOUT_MS


def _fault_window(rng: random.Random, duration_ms: float, timescales: list[float]) -> tuple[float, float]:
    """(start, length) of a fault. Lengths near the timescales that matter (the target's request timeout,
    replica.lag.time.max.ms, long-poll waits) are where state machines change course, so two in five
    lengths are one of those give or take 30%; a fault that fits is usually placed so it ends in the run."""
    pick = rng.random()
    if pick < 0.4:
        length = rng.choice(timescales) * rng.uniform(0.7, 1.3)
    elif pick < 0.55:
        length = rng.uniform(0.001, 20.0)
    elif pick < 0.85:
        length = rng.uniform(1.0, duration_ms / 2)
    else:
        length = rng.uniform(1.0, duration_ms * 1.5)  # may outlast the run
    if rng.random() < 0.05:
        at = 0.0
    elif length < duration_ms * 0.95 and rng.random() < 0.8:
        at = rng.uniform(0.0, duration_ms * 0.95 - length)
    else:
        at = rng.uniform(0.0, duration_ms * 0.95)
    return round(at, 3), round(max(length, 0.001), 3)


def _boundary_fault(rng: random.Random, duration_ms: float, timeouts: dict[str, float]) -> dict[str, Any] | None:
    """A pause or link fault lasting just past its target's request timeout and ending inside the run:
    what was in flight times out while the target is stopped, and the response that waited meets the
    timeout that passed when it resumes."""
    fitting = [t for t, timeout in timeouts.items() if timeout * 1.1 < duration_ms * 0.95]
    if not fitting:
        return None
    target = rng.choice(fitting)
    length = timeouts[target] * rng.uniform(1.01, 1.1)
    at = rng.uniform(0.0, duration_ms * 0.95 - length)
    kind = rng.choice(["pause", "pause", "link_drop", "link_delay"])
    fault: dict[str, Any] = {"type": kind, "target": target, "at": _ms(round(at, 3)), "duration": _ms(round(length, 3))}
    if kind == "link_delay":
        fault["extra"] = _ms(round(timeouts[target] * rng.uniform(0.5, 1.1), 3))
    return fault


def _faults(
    rng: random.Random, duration_ms: float, lag_ms: float, timeouts: dict[str, float]
) -> list[dict[str, Any]]:
    """0-6 faults, plus in one run out of three a fault just past a request timeout (``timeouts``: every
    possible target -> its request timeout)."""
    faults: list[dict[str, Any]] = []
    followers = [t for t in timeouts if t.startswith("follower-")]
    kinds = ["pause", "link_delay", "link_drop", "connection_reset"] + (
        ["slow_disk", "crash", "crash"] if followers else [])
    targets_any = list(timeouts)
    if not targets_any:
        return faults
    if rng.random() < 1 / 3:
        boundary = _boundary_fault(rng, duration_ms, timeouts)
        if boundary is not None:
            faults.append(boundary)
    for _ in range(rng.choice([0, 1, 2, 2, 3, 4, 6])):
        kind = rng.choice(kinds)
        candidates = followers if kind in ("slow_disk", "crash") else targets_any
        previous = faults[-1] if faults else None
        pile_on = previous is not None and previous["target"] in candidates and rng.random() < 0.4
        target = previous["target"] if pile_on and previous is not None else rng.choice(candidates)
        at, length = _fault_window(rng, duration_ms, [timeouts[target], lag_ms, 500.0])
        if pile_on and previous is not None:
            # A second fault on the previous one's target, starting inside its window.
            at = round(min(duration_ms * 0.95, float(previous["at"].removesuffix("ms")) + rng.uniform(0, 50)), 3)
        faults.append(_fault(rng, kind, target, at, length, [0.5, 2, 10, 100, 1000, 1e5],
                             [5.0, 100.0, 1000.0, timeouts[target] / 2]))
    return faults


def _fault(
    rng: random.Random, kind: str, target: str, at: float, length: float, factors: list[float],
    extra_highs: list[float],
) -> dict[str, Any]:
    """One fault of ``kind`` on ``target`` at ``at``: a crash restarts after ``length`` (7 times in 10),
    the others last ``length``; a slow disk's factor is one of ``factors``, a link delay's extra latency
    reaches up to one of ``extra_highs``; link faults sometimes act in one direction only."""
    if kind == "connection_reset" and rng.random() < 0.5:
        kind = "half_open"  # the connection lost silently rather than reset (drawn here: the other kinds' draws stay)
    fault: dict[str, Any] = {"type": kind, "target": target, "at": _ms(at)}
    if kind in ("connection_reset", "half_open"):
        return fault  # an instant
    if kind == "crash":
        if rng.random() < 0.7:
            fault["restart_after"] = _ms(length)
    else:
        fault["duration"] = _ms(length)
    if kind == "slow_disk":
        fault["factor"] = rng.choice(factors)
    if kind == "link_delay":
        fault["extra"] = _latency(rng, 0.1, rng.choice(extra_highs))
    if kind in ("link_delay", "link_drop") and rng.random() < 0.6:
        fault["direction"] = rng.choice(["both", "to_broker", "from_broker"])
    return fault


def scenario_data(seed: int, duration: str | None = None) -> dict[str, Any]:
    """The scenario of ``seed`` as the mapping its YAML file holds (keys as a user writes them)."""
    rng = random.Random(seed)
    # One in ten runs past 30 s, at a tenth of the load: the first retention pass (LogManager's 30 s
    # initial delay) and the 30 s follower request timeout happen only in runs that long.
    long_run = rng.random() < 0.1
    if duration is not None:
        duration_ms = _duration_ms(duration)
        long_run = duration_ms > 30_000
    else:
        duration_ms = rng.uniform(31_000, 40_000) if long_run else float(rng.choice([1000, 2000, 3000]))
    lag = rng.choice([300, 1000, 2000, 30_000])
    data: dict[str, Any] = {
        "name": f"random-{seed}",
        "description": f"random scenario {seed} (benchmarks/random_scenarios.py)",
        "seed": rng.randint(0, 2**31),
        "duration": _ms(round(duration_ms, 3)),
        "warmup": _ms(rng.choice([0.0, duration_ms / 4])),
        "sample_interval": _ms(rng.choice([20.0, 100.0, duration_ms / 3])),
        "broker": {
            "num.io.threads": rng.choice([1, 2, 8]),
            "num.network.threads": rng.choice([1, 3]),
            "replica.lag.time.max.ms": lag,
        },
    }
    broker = data["broker"]
    if rng.random() < 0.3:
        broker["queued.max.requests"] = rng.choice([1, 5, 50, 500])
    if rng.random() < 0.3:
        broker["log.retention.check.interval.ms"] = rng.choice([100, 1000])
    if rng.random() < 0.3:
        # The brokers' link to the KRaft controller (heartbeats, AlterPartition); drawn where the fixed
        # AlterPartition latency was, so every other draw of a seed stays as it was.
        data["controller"] = {"link_latency": _latency(rng, 0.05, 100.0)}
    if rng.random() < 0.15:
        # A slow broker: handler and network threads become the bottleneck.
        broker["costs"] = {"request": _latency(rng, 0.01, 5.0), "network_read": _latency(rng, 0.001, 1.0)}
    topics = [_topic(rng, i) for i in range(rng.choice([1, 1, 2, 3]))]
    data["topics"] = topics
    names = [t["name"] for t in topics]
    max_rf = max(t["replication.factor"] for t in topics)
    waits = [100, min(500, lag)] if long_run else [0, 10, 100, min(500, lag)]
    # replica.fetch.* are broker configs (Kafka's ReplicationConfigs); drawn here, in the same order as
    # always, so a seed still generates the scenario it always did.
    followers: dict[str, Any] = {}
    broker["replica.fetch.wait.max.ms"] = rng.choice(waits)
    if rng.random() < 0.5:
        broker["replica.fetch.min.bytes"] = rng.choice([1, 1024, 64 * 1024])
    if rng.random() < 0.5:
        broker["replica.fetch.max.bytes"] = rng.choice([100, 4096, 16 * 1024, 1024 * 1024])
    if rng.random() < 0.3:
        broker["replica.fetch.response.max.bytes"] = rng.choice([1000, 64 * 1024])
    if rng.random() < 0.5:
        broker["replica.fetch.backoff.ms"] = rng.choice([10, 100, 1000])
    if rng.random() < 0.6:
        followers["link"] = _link(rng)
    if rng.random() < 0.15:
        followers["costs"] = {"append": _latency(rng, 0.001, 5.0)}
    data["followers"] = followers
    n_producers = rng.choice([0, 1, 1, 2, 3])
    rates = [10 ** rng.uniform(0.5, 3.5) for _ in range(n_producers)]
    max_rate = MAX_TOTAL_RATE / 10 if long_run else MAX_TOTAL_RATE
    scale = min(1.0, max_rate / sum(rates)) if rates else 1.0
    data["producers"] = [_producer(rng, i, names, max(1.0, r * scale)) for i, r in enumerate(rates)]
    data["consumers"] = [_consumer(rng, i, names, long_run) for i in range(rng.choice([0, 1, 1, 2, 3]))]
    data["network"] = {"default_link": _link(rng)}
    timeouts = {f"follower-{k}": FOLLOWER_REQUEST_TIMEOUT_MS for k in range(1, max_rf)}
    for client in [*data["producers"], *data["consumers"]]:
        timeouts[client["name"]] = float(client.get("request.timeout.ms", 30_000))
    data["faults"] = _faults(rng, duration_ms, float(lag), timeouts)
    # Clusters come from a stream of their own, drawn after everything above: a seed that draws no
    # cluster generates exactly the scenario it always did.
    cluster_rng = random.Random(f"{seed}/cluster")
    if cluster_rng.random() < CLUSTER_SHARE:
        _make_cluster(cluster_rng, data, duration_ms, float(lag))
        # Crashes of any broker, leaders included (a stream of its own again: the draws above stay as they
        # were), in half the clusters; a third of those run 30 s, long enough for the controller to fence the
        # crashed broker (7-9 s) and for clients to follow the new leaders.
        crash_rng = random.Random(f"{seed}/leader-crash")
        if duration is None and crash_rng.random() < LEADER_CRASH_SHARE:
            _add_broker_crashes(crash_rng, data)
    # The hardware under Kafka's rules (stalls, cores, disks and flushes, the NIC, TCP, client costs, presets),
    # idempotence, unclean elections, controlled shutdowns and network partitions: a stream of its own again,
    # drawn last, so a seed that draws none of it generates the scenario it always did.
    hardware_rng = random.Random(f"{seed}/hardware")
    if hardware_rng.random() < HARDWARE_SHARE:
        _add_hardware(hardware_rng, data)
        _add_more_faults(hardware_rng, data)
    # A cluster on one machine (its woken threads, wakers yielding, waits for a core): its own stream, drawn after
    # the rest, so a seed that draws none of it generates the scenario it always did.
    machine_rng = random.Random(f"{seed}/machine")
    if machine_rng.random() < MACHINE_SHARE:
        _add_machine(machine_rng, data)
    # A broker's collector filled by its replica fetchers' responses too (every_fetches, a follower's
    # fetch_pause): its own stream, drawn last, so a seed that draws none of it generates the scenario it did.
    fetch_rng = random.Random(f"{seed}/fetch-stalls")
    stalls = data["broker"].get("stalls")
    if stalls is not None and fetch_rng.random() < 0.5:
        stalls.pop("interval", None)
        stalls["every_fetches"] = fetch_rng.choice([1, 10, 100, 1000])
        if fetch_rng.random() < 0.5:
            stalls["fetch_pause"] = {"type": "lognormal", "median": _ms(fetch_rng.choice([0.5, 4.0])), "p99": _ms(15.0)}
    # The clients' one process (clients_stalls) and each group of connections round robin from a drawn network
    # thread (connection_layout: groups), as the presets of 2026-12-05 have them: a stream of its own, drawn last,
    # so a seed that draws none of it generates the scenario it did.
    clients_rng = random.Random(f"{seed}/clients-process")
    if clients_rng.random() < 0.3:
        data["clients_stalls"] = _stalls(clients_rng)
    if clients_rng.random() < 0.3:
        data["broker"]["connection_layout"] = "groups"
    data["faults"] = _without_crashes_of_crashed_brokers(data["faults"])
    return data


# The share of generated scenarios that get the hardware mechanisms and the later fault types.
HARDWARE_SHARE = 0.5
# The share that run on one shared machine (kafkasim.sim.machine_load), as a fitted preset does.
MACHINE_SHARE = 0.3


def _add_machine(rng: random.Random, data: dict[str, Any]) -> None:
    """The brokers on one machine, as presets/this-machine.yaml has them: a woken thread waits for the threads at
    work (`machine_wakeup_per_thread`), a woken handler's own wait longer the more there are
    (`machine_wakeup_scale_per_thread`), a replica fetcher that appends counting for several
    (`machine_fetcher_weight`), a network thread's work after each response (`broker.costs.network_complete`), the
    handlers' own wake-up (`broker.costs.handler_wakeup`), a
    handler yields to the network thread its response woke (`machine_wakeup_preempts`, from so many threads running:
    `machine_wakeup_preempts_from`; or the woken thread waits for the handler: `machine_wakeup_waits`), a thread's work waits for a core, the more often the more threads are at work (`machine_preemption`),
    each connection's network thread drawn (`broker.connection_layout: random`);
    completions, follower updates and the followers' appends cost time. A parameter draw of a fitted preset once
    left a handler that had yielded never going on (tests/engine/test_machine_load.py)."""
    costs = data["broker"].setdefault("costs", {})
    costs["wakeup"] = _latency(rng, 0.01, 1.0)
    costs["complete_fetch"] = _latency(rng, 0.01, 0.5)
    costs["follower_fetch"] = _latency(rng, 0.005, 0.5)
    data.setdefault("followers", {}).setdefault("costs", {})["append"] = _latency(rng, 0.01, 0.5)
    data["machine_wakeup_per_thread"] = _ms(rng.choice([0.0, 0.01, 0.05, 0.2]))
    data["machine_wakeup_preempts"] = rng.random() < 0.8
    if rng.random() < 0.6:
        data["machine_preemption"] = {"every": _ms(rng.choice([0.5, 2.0, 10.0])), "wait": _latency(rng, 0.05, 2.0),
                                      "per_running_thread": rng.choice([0.0, 1.0, 10.0])}
    # Drawn last, so the draws above stay what they were for every seed.
    if rng.random() < 0.5:
        data["machine_wakeup_scale_per_thread"] = rng.choice([0.5, 1.0, 3.0])
    if rng.random() < 0.5:
        data["machine_fetcher_weight"] = rng.choice([0.5, 3.0, 10.0])
    if rng.random() < 0.5:
        # A network thread's work once a response is written (as the presets' brokers log every request): the
        # connection's next request waits for it; a client can have its response, and its row be written, first.
        costs["network_complete"] = _latency(rng, 0.01, 2.0)
    if rng.random() < 0.5:
        # The request handlers' own wake-up, as the presets have it (the network threads keep `wakeup`).
        costs["handler_wakeup"] = _latency(rng, 0.01, 2.0)
    if rng.random() < 0.5:
        # The handler yields only when that many of the machine's threads run (its cores all busy).
        data["machine_wakeup_preempts_from"] = rng.choice([1.0, 2.0, 3.5])
    if rng.random() < 0.5:
        # Each connection's network thread drawn, as the presets' brokers have it (`broker.connection_layout`).
        data["broker"]["connection_layout"] = "random"
    if rng.random() < 0.5:
        # A share of the network threads a produce's response woke wait for its handler (`machine_wakeup_waits`).
        data["machine_wakeup_waits"] = rng.choice([0.3, 1.0])


def _stalls(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.3:
        return {"preset": "jvm-g1-young"}
    median = rng.choice([0.5, 2.0, 10.0, 50.0])
    return {"interval": {"type": "exponential", "mean": _ms(rng.choice([20.0, 200.0, 1000.0, 5000.0]))},
            "pause": {"type": "lognormal", "median": _ms(median), "p99": _ms(median * rng.choice([1.5, 3, 10]))}}


def _add_hardware(rng: random.Random, data: dict[str, Any]) -> None:
    """Each mechanism of "The hardware under Kafka" on its own draw: broker, machine and client stalls, the
    brokers' cores, flushing topics on a disk with a small page cache, a cluster's NIC (fair or fifo), TCP's
    retransmission timer, the clients' costs, a hardware preset; idempotent producers, unclean elections."""
    broker = data["broker"]
    if rng.random() < 0.3:
        broker["stalls"] = _stalls(rng)
    if rng.random() < 0.15:
        data["machine_stalls"] = _stalls(rng)
    if rng.random() < 0.3:
        broker["cores"] = rng.choice([1, 1, 2, 4])
    if rng.random() < 0.3:
        for topic in data["topics"]:
            if rng.random() < 0.7:
                if rng.random() < 0.5:
                    topic["flush.messages"] = rng.choice([1, 2, 10, 100])
                else:
                    topic["flush.ms"] = rng.choice([0, 10, 100, 1000])
        broker["log.flush.scheduler.interval.ms"] = rng.choice([10, 100, 1000])
        disk: dict[str, Any] = {"fsync": _latency(rng, 0.05, rng.choice([1.0, 20.0]))}
        if rng.random() < 0.5:
            disk["write_per_kib"] = _latency(rng, 0.002, 0.05)
        if rng.random() < 0.5:
            disk["page_cache"] = rng.choice([0, 4096, 64 * 1024, 1024 * 1024])
            disk["read_latency"] = _latency(rng, 0.01, 10.0)
        broker["disk"] = disk
    if "cluster" in data and rng.random() < 0.4:
        nic: dict[str, Any] = {"bandwidth": rng.choice(["1Mbit/s", "10Mbit/s", "100Mbit/s", "1Gbit/s"]),
                               "sharing": rng.choice(["fair", "fifo"])}
        if rng.random() < 0.3:
            nic[rng.choice(["in", "out"])] = rng.choice(["1Mbit/s", "10Mbit/s"])
        data["cluster"]["nic"] = nic
    if rng.random() < 0.3:
        data["network"]["tcp"] = {"rto_min": _ms(rng.choice([1.0, 10.0, 200.0, 1000.0])),
                                  "tcp_retries2": rng.choice([0, 1, 3, 15])}
    for producer in data["producers"]:
        if rng.random() < 0.2:
            producer["costs"] = {"per_request": _latency(rng, 0.001, 2.0), "per_batch": _latency(rng, 0.001, 0.5),
                                 "wakeup": _latency(rng, 0.001, 1.0)}
        if rng.random() < 0.15:
            producer["stalls"] = _stalls(rng)
        if rng.random() < 0.3:
            # Kafka refuses enable.idempotence=true with acks other than all (ProducerConfig).
            producer["enable.idempotence"] = producer["acks"] == "all" and rng.random() < 0.7
    for consumer in data["consumers"]:
        if rng.random() < 0.2:
            consumer["costs"] = {"per_poll": _latency(rng, 0.001, 5.0), "per_record": _latency(rng, 0.002, 0.1)}
        if rng.random() < 0.15:
            consumer["stalls"] = _stalls(rng)
    for topic in data["topics"]:
        if rng.random() < 0.1:
            topic["unclean.leader.election.enable"] = True
    if rng.random() < 0.1:
        data["hardware"] = {"preset": rng.choice(["kreps-2014", "aws-i3en-6xlarge"])}
    # A broker's stalls by its load (every so many requests it reads) in place of the clock; last, so that the
    # draws above are the ones they were before it.
    stalls = broker.get("stalls")
    if stalls is not None and rng.random() < 0.5:
        stalls.pop("interval", None)
        stalls["every_requests"] = rng.choice([1, 10, 100, 600])


def _add_more_faults(rng: random.Random, data: dict[str, Any]) -> None:
    """Controlled shutdowns (some restarting) and network partitions between random sets of hosts."""
    duration_ms = _duration_ms(data["duration"])
    if "cluster" in data:
        brokers = [f"broker-{b}" for b in range(data["cluster"]["brokers"])]
        shutdown_targets = brokers
    else:
        followers = max(t["replication.factor"] for t in data["topics"]) - 1
        brokers = ["broker-0", *(f"broker-{k}" for k in range(1, followers + 1))]
        shutdown_targets = [f"follower-{k}" for k in range(1, followers + 1)]
    if shutdown_targets and rng.random() < 0.3:
        fault: dict[str, Any] = {"type": "shutdown", "target": rng.choice(shutdown_targets),
                                 "at": _ms(round(rng.uniform(0.05, 0.8) * duration_ms, 3))}
        if rng.random() < 0.6:
            fault["restart_after"] = _ms(rng.choice([100.0, 1_000.0, 5_000.0]))
        data["faults"].append(fault)
    if rng.random() < 0.3:
        hosts = [*brokers, *(c["name"] for c in [*data["producers"], *data["consumers"]]), "controller"]
        rng.shuffle(hosts)
        cut = rng.randint(1, len(hosts) - 1)
        rest = hosts[cut:]
        other = rest if rng.random() < 0.5 else rng.sample(rest, rng.randint(1, len(rest)))
        side = hosts[:cut]
        if not any(h.startswith("broker-") for h in [*side, *other]):
            side.append(rng.choice(brokers))  # clients and the controller talk only to brokers
        partition: dict[str, Any] = {"type": "network_partition", "sides": [sorted(side), sorted(other)],
                                     "at": _ms(round(rng.uniform(0.0, 0.8) * duration_ms, 3))}
        if rng.random() < 0.8:
            partition["duration"] = _ms(rng.choice([50.0, 500.0, 3_000.0, 12_000.0]))
        data["faults"].append(partition)


def _without_crashes_of_crashed_brokers(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The faults without a crash that starts while an earlier crash of the same broker has it down (or at
    the instant it restarts): the scenario's checks refuse those, as a crash of a crashed broker does nothing.
    Decided after every draw, so no other draw moves."""
    down_until: dict[str, float] = {}
    dropped: set[int] = set()
    crashes = sorted((_duration_ms(f["at"]), i) for i, f in enumerate(faults) if f["type"] in ("crash", "shutdown"))
    for at, i in crashes:
        target = faults[i]["target"]
        if at <= down_until.get(target, -math.inf):
            dropped.add(i)
            continue
        restart = faults[i].get("restart_after")
        down_until[target] = math.inf if restart is None else at + _duration_ms(restart)
    return [f for i, f in enumerate(faults) if i not in dropped]


# The share of cluster scenarios that get crashes of any broker, leaders included.
LEADER_CRASH_SHARE = 0.5


def _add_broker_crashes(rng: random.Random, data: dict[str, Any]) -> None:
    """1-3 crashes of random brokers (leaders included), 7 in 10 restarting 0.5-20 s later; a third of these
    scenarios are stretched to 30 s (their load as drawn)."""
    brokers = data["cluster"]["brokers"]
    if rng.random() < 1 / 3 and _duration_ms(data["duration"]) < 30_000:
        data["duration"] = "30000ms"
    duration_ms = _duration_ms(data["duration"])
    for _ in range(rng.choice([1, 1, 2, 3])):
        fault: dict[str, Any] = {"type": "crash", "target": f"broker-{rng.randrange(brokers)}",
                                 "at": _ms(round(rng.uniform(0.05, 0.8) * duration_ms, 3))}
        if rng.random() < 0.7:
            fault["restart_after"] = _ms(rng.choice([500.0, 3_000.0, 10_000.0, 20_000.0]))
        data["faults"].append(fault)


def _make_cluster(rng: random.Random, data: dict[str, Any], duration_ms: float, lag_ms: float) -> None:
    """Turn the scenario into a ``cluster:`` one: N brokers (at least the largest replication factor), each
    leading some partitions and following others, placed by Kafka's placer or an explicit
    ``replica_assignment``; sometimes racks, per-broker overrides and several fetcher threads per source.
    Faults on follower-<k> (a single-leader name) are dropped; client faults stay."""
    topics = data["topics"]
    max_rf = max(t["replication.factor"] for t in topics)
    brokers = max(max_rf, rng.choice([2, 3, 3, 4, 6]))
    cluster: dict[str, Any] = {"brokers": brokers}
    if rng.random() < 0.3:
        cluster["racks"] = [f"rack-{b % rng.choice([2, 3])}" for b in range(brokers)]
    if rng.random() < 0.3:
        override: dict[str, Any] = {"broker": rng.randrange(brokers)}
        override[rng.choice(["num.io.threads", "num.network.threads"])] = 1
        if rng.random() < 0.5:
            override["replica.fetch.wait.max.ms"] = rng.choice([10, 100])
        cluster["overrides"] = [override]
    data["cluster"] = cluster
    if rng.random() < 0.4:
        data["broker"]["num.replica.fetchers"] = rng.choice([2, 3])
    # Sometimes every topic gets an explicit assignment in which the last broker leads nothing, so that
    # it may crash (a crash of a broker that leads partitions needs the controller: refused).
    spare = brokers > max_rf and rng.random() < 0.4
    for topic in topics:
        rf = topic["replication.factor"]
        if spare:
            assignment = []
            for _ in range(topic["partitions"]):
                leader = rng.randrange(brokers - 1)
                others = [b for b in range(brokers) if b != leader]
                assignment.append([leader, *rng.sample(others, rf - 1)])
            topic["replica_assignment"] = assignment
        elif rng.random() < 0.3:
            topic["replica_assignment"] = [rng.sample(range(brokers), rf) for _ in range(topic["partitions"])]
    faults = [f for f in data["faults"] if not f["target"].startswith("follower-")]
    # Faults on brokers: a stop-the-world pause (leaders included), a slow disk, link faults on its
    # fetchers' paths, and a crash of the broker that leads nothing.
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        kind = rng.choice(["pause", "pause", "slow_disk", "link_delay", "link_drop"] + (["crash"] if spare else []))
        target = brokers - 1 if kind == "crash" else rng.randrange(brokers)
        at, length = _fault_window(rng, duration_ms, [FOLLOWER_REQUEST_TIMEOUT_MS, lag_ms, 500.0])
        faults.append(_fault(rng, kind, f"broker-{target}", at, length, [0.5, 2, 10, 100], [5.0, 100.0, 1000.0]))
    # A broker paused longer than the controller's session is fenced and its partitions get new leaders --
    # possibly the spare broker, whose crash would then be a leader's, not simulated yet: such a scenario
    # keeps the pause and drops the crash (decided after every draw, so no other draw moves).
    if any(f["type"] == "pause" and _pause_ms(f) >= FENCE_AFTER_PAUSE_MS for f in faults
           if f["target"].startswith("broker-")):
        faults = [f for f in faults if not (f["type"] == "crash" and f["target"].startswith("broker-"))]
    data["faults"] = faults


# A broker heartbeats every 2 s and is fenced 9 s after its last heartbeat: a longer pause may be fenced.
FENCE_AFTER_PAUSE_MS = 7_000.0


def _pause_ms(fault: dict[str, Any]) -> float:
    duration = fault.get("duration")
    return math.inf if duration is None else _duration_ms(duration)


# The share of generated scenarios that are clusters.
CLUSTER_SHARE = 0.35


def _duration_ms(text: str) -> float:
    from kafkasim.scenario.units import parse_duration

    return float(parse_duration(text))


def scenario_text(seed: int, duration: str | None = None) -> str:
    """The scenario of ``seed`` as a YAML file."""
    return yaml.dump(scenario_data(seed, duration), Dumper=_Dumper, sort_keys=False, width=120)


def load(seed: int, duration: str | None = None) -> Any:
    """The scenario of ``seed``, read by ``kafkasim.load_scenario`` like a user's file."""
    from kafkasim import load_scenario

    return load_scenario(scenario_text(seed, duration))


def run(seed: int, duration: str | None = None) -> Any:
    """Load and run the scenario of ``seed`` with invariants on; returns its RunResult."""
    from kafkasim.run import run_scenario

    scenario = load(seed, duration)
    assert scenario.invariants
    return run_scenario(scenario)


# --- the big run -------------------------------------------------------------------------------------


class WallTimeout(Exception):
    pass


class ChildFailure(Exception):
    """A run in a child process failed: ``signature`` is its failure_signature, taken in the child (a
    traceback does not cross the pipe); ``kind`` the exception's class name."""

    def __init__(self, signature: str, kind: str) -> None:
        super().__init__(signature)
        self.signature = signature
        self.kind = kind


def in_child(fn: Callable[..., Any], args: tuple[Any, ...], seconds: float) -> Any:
    """``fn(*args)`` in a forked child process, stopped by its pid after ``seconds`` of wall time: a hang
    inside kafkasim's compiled code never returns to Python's interpreter loop, so an alarm signal's handler
    would never run there (a whole sweep stood still on one such run). Returns ``fn``'s value;
    raises ChildFailure for an exception in the child, WallTimeout for a hang. The child is killed on any
    way out (Ctrl-C included)."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        try:
            message: tuple[Any, ...] = ("ok", fn(*args))
        except BaseException as error:  # noqa: BLE001 - every failure goes to the parent
            message = ("error", failure_signature(error), type(error).__name__)
        send.send(message)
        send.close()

    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()
    try:
        if not receive.poll(seconds):
            raise WallTimeout(f"still running after {seconds:g} s of wall time")
        try:
            message = receive.recv()
        except EOFError:
            process.join(5.0)
            raise ChildFailure(f"the run's process died (exit code {process.exitcode})", "died") from None
    finally:
        receive.close()
        if process.is_alive():
            process.kill()
        process.join()
    if message[0] == "error":
        raise ChildFailure(message[1], message[2])
    return message[1]


def failure_signature(error: BaseException) -> str:
    """Exception type and message with numbers masked, plus the innermost kafkasim frame: one per defect."""
    message = re.sub(r"\d+(\.\d+)?", "N", str(error).splitlines()[0] if str(error) else "")[:160]
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if "/kafkasim/" in frame.filename:
            where = f" @ {frame.filename.split('/kafkasim/')[-1]}:{frame.name}"
            break
    return f"{type(error).__name__}: {message}{where}"


def _run_quietly(seed: int, duration: str | None) -> None:
    run(seed, duration)  # the result stays in the child: only success or the failure crosses the pipe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100, help="scenarios to run (seeds seed..seed+count-1)")
    parser.add_argument("--seed", type=int, default=1, help="first seed")
    parser.add_argument("--duration", default=None, help="simulated duration of every scenario (default: 1-3 s)")
    parser.add_argument("--wall-limit", type=float, default=120.0, help="wall seconds before a run counts as hung")
    parser.add_argument("--show", type=int, default=None, help="print the YAML of this seed and exit")
    args = parser.parse_args(argv)
    if args.show is not None:
        print(scenario_text(args.show, args.duration), end="")
        return 0
    from kafkasim.scenario import ScenarioError

    failures: dict[str, list[int]] = defaultdict(list)
    invalid: dict[str, list[int]] = defaultdict(list)
    walls: list[tuple[float, int]] = []
    started = time.perf_counter()
    for seed in range(args.seed, args.seed + args.count):
        t0 = time.perf_counter()
        try:
            in_child(_run_quietly, (seed, args.duration), args.wall_limit)
        except ChildFailure as error:
            # ScenarioError: the generator wrote something the loader refuses (its own bug).
            (invalid if error.kind == ScenarioError.__name__ else failures)[error.signature].append(seed)
        except WallTimeout as error:
            failures[failure_signature(error)].append(seed)
        wall = time.perf_counter() - t0
        walls.append((wall, seed))
        done = seed - args.seed + 1
        if done % 25 == 0 or done == args.count:
            bad = sum(map(len, failures.values())) + sum(map(len, invalid.values()))
            print(f"  {done}/{args.count} run, {bad} failed, {time.perf_counter() - started:.0f} s", flush=True)
    total = time.perf_counter() - started
    n_failed = sum(map(len, failures.values()))
    n_invalid = sum(map(len, invalid.values()))
    print(f"\n{args.count} scenarios (seeds {args.seed}..{args.seed + args.count - 1}): "
          f"{args.count - n_failed - n_invalid} clean, {n_failed} failed, {n_invalid} refused by the loader")
    for title, groups in (("failures", failures), ("refused by the loader (generator bugs)", invalid)):
        if groups:
            print(f"\n{title}:")
            for signature, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                shown = ", ".join(map(str, seeds[:12])) + (" ..." if len(seeds) > 12 else "")
                print(f"  {len(seeds):4d}  {signature}\n        seeds: {shown}")
    walls.sort()
    p50 = walls[len(walls) // 2][0] if walls else 0.0
    slowest = walls[-1] if walls else (0.0, -1)
    print(f"\nwall: {total:.1f} s total, {p50:.2f} s median per scenario, slowest {slowest[0]:.2f} s (seed {slowest[1]})")
    return 1 if n_failed or n_invalid else 0


if __name__ == "__main__":
    sys.exit(main())
