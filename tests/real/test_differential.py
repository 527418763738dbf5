"""The differential suite: the same scenarios on kafkasim and on a real Apache Kafka 4.3.1 cluster, asserting
agreement on what Kafka's timers and protocol rules decide, each with the tolerance it needs and why.

What a real broker on this machine measures reliably is what timers and rules decide: long-poll waits, the
session timeout that fences a broker, purgatory holds, request counts of idle fetchers, losses and
duplicates. Absolute latencies (p50, p99) are dominated by JIT, garbage collection and five JVMs sharing two
cores with whatever else runs: they are reported side by side in the agreement table, never asserted.

Each scenario runs once per session on each engine (``pair``); its assertions share the runs. The real runs
are shortened with --set-style overrides (durations, rates lowered where this machine's real cluster cannot
keep up; the rule each assertion checks does not depend on them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kafkasim import load_scenario
from kafkasim.calibrate.completion import whole_millisecond_times
from kafkasim.controller.records import (
    FENCE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from kafkasim.real import netns
from kafkasim.real.kafka_libs import KafkaLibs
from kafkasim.real.processes import alive
from kafkasim.real.runner import run_on_kafka
from kafkasim.record.result import RunResult
from kafkasim.run.engine import Engine
from kafkasim.scenario import Scenario, with_overrides
from tests.real.agreement import Agreement
from tests.real.agreement import record as record_agreement
from tests.real.conftest import REQUIRED_ENV

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
RESULTS_ENV = "KAFKASIM_REAL_RESULTS_DIR"

# scenario key -> (file, --set overrides)
SCENARIOS: dict[str, tuple[Path, list[str]]] = {
    "fetch_min_bytes_vs_max_wait": (ROOT / "scenarios/fetch_min_bytes_vs_max_wait.yaml", ["duration=10s"]),
    "segment_roll_wakes_fetches": (ROOT / "scenarios/segment_roll_wakes_fetches.yaml",
                                   ["duration=12s", "topics[0].segment.bytes=1GiB"]),
    # Issue 28's shape: Kafka's smallest segment (1 MiB) at 400 KiB/s rolls every ~2.6 s.
    "segment_rolls_1mib": (ROOT / "scenarios/segment_roll_wakes_fetches.yaml",
                           ["duration=14s", "topics[0].segment.bytes=1MiB", "producers[0].rate=400/s"]),
    "acks_compared": (ROOT / "scenarios/acks_compared.yaml",
                      ["duration=10s", "producers[0].rate=100/s", "producers[1].rate=100/s",
                       "producers[2].rate=100/s"]),
    "quickstart": (ROOT / "scenarios/quickstart.yaml", ["duration=10s", "producers[0].rate=200/s"]),
    # Restarted after the fence (7-10 s after the crash), so the fence is the old incarnation's session expiry.
    "leader_crash": (ROOT / "scenarios/leader_crash.yaml", ["duration=24s", "faults[0].restart_after=11s"]),
    "leader_controlled_shutdown": (ROOT / "scenarios/leader_controlled_shutdown.yaml",
                                   ["duration=18s", "faults[0].restart_after=6s"]),
    # Restarted after the fence (7-10.5 s after the crash), and unfenced again 3-5 s later within the run.
    "follower_crash_fenced": (ROOT / "scenarios/follower_crash_fenced.yaml",
                              ["duration=22s", "faults[0].at=5s", "faults[0].restart_after=11s"]),
    "gc_paused_follower": (ROOT / "scenarios/gc_paused_follower.yaml",
                           ["duration=12s", "faults[0].at=5s", "faults[0].duration=3s"]),
    "unclean_acks1_crashes": (HERE / "scenarios/unclean_acks1_crashes.yaml", []),
    "elr_paused_followers": (HERE / "scenarios/elr_paused_followers.yaml", []),
    "idempotence_paused_leader": (HERE / "scenarios/idempotence_paused_leader.yaml", []),
    # The follower's network to the leader cut (each host in its own network namespace, kafkasim.real.netns).
    # replica.lag.time.max.ms 10 s (the scenario's own "Try"): the shrink comes 10-15 s after the cut. The cut
    # (32.8 s) outlasts the fetcher's request timeout (30 s), so the fetch in flight at the cut times out during
    # it on both engines, and the rejoin after the heal is a new connection's (a shorter cut would let the real
    # TCP retransmit that fetch's response after the heal, a message kafkasim's cut loses). That connection
    # starts replica.fetch.backoff.ms (1 s) after the timeout, 34.5-35.1 s in; its SYNs are sent again 1 s and
    # 3 s later (the kernel's back-off), so the heal at 36.8 s falls between the second and the third on both
    # engines (a heal at 38 s fell within 3 ms of the third SYN: kafkasim's was lost, Kafka's was not).
    "follower_partitioned_from_leader": (ROOT / "scenarios/follower_partitioned_from_leader.yaml",
                                         ["duration=44s", "broker.replica.lag.time.max.ms=10s", "faults[0].at=4s",
                                          "faults[0].duration=32800ms"]),
    # The follower's replication links through Toxiproxy (kafkasim.real.link_proxies): 2 brokers, 8 s.
    "delayed_follower_link": (HERE / "scenarios/delayed_follower_link.yaml", []),
    # The producer's links down for 100 ms (its host's packets dropped by the router of kafkasim.real.netns).
    "producer_link_blackhole": (HERE / "scenarios/producer_link_blackhole.yaml", []),
    # Each producer's connections closed once (its own Toxiproxy proxies), 5 s apart.
    "idempotence_and_a_lost_response": (ROOT / "scenarios/idempotence_and_a_lost_response.yaml",
                                        ["duration=14s", "faults[0].at=5s", "faults[1].at=10s"]),
}


@dataclass
class Pair:
    key: str
    scenario: Scenario
    sim: RunResult
    engine: Engine
    real: RunResult


_CACHE: dict[str, Pair] = {}


def scenario_of(key: str) -> Scenario:
    path, overrides = SCENARIOS[key]
    scenario = load_scenario(path)
    return with_overrides(scenario, overrides) if overrides else scenario


@pytest.fixture(scope="session")
def pair(kafka_libs: KafkaLibs, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Pair]:
    def get(key: str) -> Pair:
        if key not in _CACHE:
            scenario = scenario_of(key)
            engine = Engine(scenario)
            sim = engine.run()
            real = run_on_kafka(scenario, libs=kafka_libs, say=lambda m: print(f"[{key}] {m}", flush=True))
            # Every JVM the run started is gone once it returns.
            assert real.run_info["pids"] and alive(real.run_info["pids"]) == []
            # The machine's CPU over the load: the run's share is its JVMs' work (kafkasim.real.machine_cpu).
            assert real.run_info["machine_cpu"]["run"] > 0, real.run_info["machine_cpu"]
            # Every JVM's collector pauses, read from its own GC log, which is kept (kafkasim.real.gc_log).
            jvms = {"controller", "driver", *real.run_info["brokers"]}
            assert set(real.run_info["gc_pauses"]["jvms"]) == jvms, real.run_info["gc_pauses"]
            assert {f.split("/")[1] for f in real.extra_files if "/gc-" in f} == jvms
            # The cores each process used, by kind of thread (kafkasim.real.process_cpu); the controller and the
            # driver run throughout, a broker crashed or restarted meanwhile is left out, and a run with link
            # faults has its Toxiproxy's too.
            used = real.run_info["process_cpu"]
            assert {"controller", "driver"} <= set(used) <= jvms | {"toxiproxy"}, used
            # Every JVM works; an idle Toxiproxy may not use a clock tick.
            assert all(u["total"] > 0 for name, u in used.items() if name in jvms), used
            # And no network namespace of it (a run with a network partition makes one per host).
            assert netns.ours(os.getpid()) == []
            keep = os.environ.get(RESULTS_ENV)
            out = Path(keep) if keep else tmp_path_factory.mktemp("real")
            sim.save(out / f"{key}-sim")
            real.save(out / f"{key}-kafka")
            _CACHE[key] = Pair(key, scenario, sim, engine, real)
        return _CACHE[key]

    return get


def agree(p: Pair, what: str, sim: Any, real: Any, tolerance: str, ok: bool) -> None:
    record_agreement(Agreement(p.key, what, _show(sim), _show(real), tolerance, "agree" if ok else "DISAGREE"))


def report(p: Pair, what: str, sim: Any, real: Any) -> None:
    record_agreement(Agreement(p.key, what, _show(sim), _show(real), "reported, not asserted", "-"))


def _show(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{value:.4g}"
    if isinstance(value, tuple):
        return "-".join(_show(v) for v in value)
    return str(value)


# --- reading the tables the same way for both engines ----------------------------------------------------


def rows(result: RunResult, api: str, *, client: str | None = None, broker: int | None = None,
         after_ms: float | None = None, before_ms: float | None = None) -> pd.DataFrame:
    """Requests of ``api`` (optionally one client's, one broker's) that arrived at the broker in the window
    (default: after the warm-up)."""
    r = result.requests
    start = r["start_ms"].to_numpy(dtype=float)
    keep = (r["api"].astype(str) == api).to_numpy()
    low = float(result.summary.get("warmup_ms", 0.0)) if after_ms is None else after_ms
    keep &= start >= low
    if before_ms is not None:
        keep &= start < before_ms
    if client is not None:
        keep &= (r["client"].astype(str) == client).to_numpy()
    if broker is not None:
        keep &= (r["broker"].to_numpy() == broker)
    return r[keep]


def per_second(result: RunResult, api: str, end_ms: float, **kw: Any) -> float:
    start = float(result.summary.get("warmup_ms", 0.0))
    return len(rows(result, api, before_ms=end_ms, **kw)) / ((end_ms - start) / 1000.0)


def p50(frame: pd.DataFrame, column: str) -> float:
    values = frame[column].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float("nan")


def latency(result: RunResult, producer: str | None = None) -> tuple[float, float]:
    rec = result.records
    ok = rec[(rec["error"].to_numpy() == 0) & np.isfinite(rec["ack_ms"].to_numpy(dtype=float))
             & (rec["send_ms"].to_numpy(dtype=float) >= float(result.summary.get("warmup_ms", 0.0)))]
    if producer is not None:
        ok = ok[ok["producer"].astype(str) == producer]
    values = (ok["ack_ms"] - ok["first_intended_ms"]).to_numpy(dtype=float)
    if not values.size:
        return float("nan"), float("nan")
    return float(np.percentile(values, 50)), float(np.percentile(values, 99))


def lost(result: RunResult, producer: str | None = None) -> int:
    rec = result.records
    mask = rec["lost_after_ack"].to_numpy(dtype=bool)
    if producer is not None:
        mask &= (rec["producer"].astype(str) == producer).to_numpy()
    return int(mask.sum())


def duplicated(result: RunResult, producer: str) -> int:
    rec = result.records
    return int(((rec["outcome"].astype(str) == "duplicated") & (rec["producer"].astype(str) == producer)).sum())


def first_ack_after(result: RunResult, t_ms: float) -> float:
    ack = result.records["ack_ms"].to_numpy(dtype=float)
    ack = ack[np.isfinite(ack) & (ack > t_ms)]
    return float(ack.min()) if ack.size else float("nan")


def first_ack_of_a_batch_begun_after(result: RunResult, t_ms: float) -> float:
    """The first acknowledgement of a batch whose first record was meant to be sent after ``t_ms``: one the
    crashed leader cannot have answered (an ack of an earlier batch may reach a loaded client late)."""
    records = result.records
    ack = records["ack_ms"].to_numpy(dtype=float)
    ack = ack[np.isfinite(ack) & (records["first_intended_ms"].to_numpy(dtype=float) > t_ms)]
    return float(ack.min()) if ack.size else float("nan")


def real_fault_ms(p: Pair, index: int = 0) -> float:
    """When the real run's fault ``index`` was signalled (its schedule's thread may wake late on a loaded
    machine), else when it was scheduled."""
    faults = p.real.run_info.get("faults") or []
    done = faults[index].get("done_ms") if index < len(faults) else None
    return float(done) if done is not None else float(p.scenario.faults[index].at)


def sim_fences(engine: Engine, broker: int) -> list[float]:
    """When kafkasim's controller fenced ``broker`` (its metadata log's BrokerRegistrationChangeRecord)."""
    found = []
    for batch in engine.components.controller.core.log.batches:
        for record in batch.records:
            if isinstance(record, BrokerRegistrationChangeRecord) and record.broker_id == broker \
                    and record.fenced == FENCE:
                found.append(float(batch.append_ms))
    return found


def real_fences(result: RunResult, broker: int) -> list[dict[str, Any]]:
    return [f for f in result.run_info["controller_events"]["fenced"] if f["broker"] == broker]


# The machine saturated by work outside the run (kafkasim.real.machine_cpu's shares over the load): next to no
# idle CPU, and more than half of it taken by other work. A CI run of 2026-12-04 measured idle 0.7% and other work
# 67% (the suite's other worker) while a real quickstart ran, and its produce p99 was 142 ms against 28-42 ms in
# quiet runs of the same configuration, at a load average the rule below did not catch.
SATURATED_IDLE = 0.05
SATURATED_OTHER = 0.5


def contended_by(run_info: dict[str, Any]) -> str | None:
    """Why a real run's per-cycle times cannot be held to a rule, if they cannot: more than two runnable threads
    per core (the 1-minute load average half way through the run), or the machine saturated by other work over
    the load (its CPU shares). A request's timer part is the same then, but everything around it (queues, handler
    and network threads, the follower's append, the next request) waits for a CPU: a 500 ms long-poll cycle
    measured 620 ms at a load average of 10 on 2 cores."""
    load, cpus = run_info.get("load_average"), run_info.get("cpus") or 2
    if load is not None and load > 2 * cpus:
        return f"the real run shared {cpus} cores at a load average of {load:.1f}"
    shares = run_info.get("machine_cpu") or {}
    idle, other = shares.get("idle"), shares.get("other")
    if idle is not None and other is not None and idle < SATURATED_IDLE and other > SATURATED_OTHER:
        return (f"the real run shared {cpus} cores with other work taking {other:.0%} of them and "
                f"{idle:.1%} idle")
    return None


def contended(p: Pair) -> str | None:
    return contended_by(p.real.run_info)


def test_a_machine_saturated_by_other_work_is_contended_whatever_its_load_average() -> None:
    """The CI run of 2026-12-04 whose real quickstart's p99 was 142 ms: its shares, at a load average below the
    first rule's; a quiet run's shares, and a busy run that still had idle CPU, are not contended."""
    saturated = {"idle": 0.0069, "other": 0.6659, "run": 0.3273, "steal": 0.0015}
    why = contended_by({"load_average": 3.1, "cpus": 2, "machine_cpu": saturated})
    assert why is not None and "67%" in why and "0.7% idle" in why
    assert contended_by({"load_average": 1.2, "cpus": 2,
                         "machine_cpu": {"idle": 0.62, "other": 0.05, "run": 0.33, "steal": 0.0}}) is None
    assert contended_by({"load_average": 3.0, "cpus": 2,
                         "machine_cpu": {"idle": 0.12, "other": 0.55, "run": 0.33, "steal": 0.0}}) is None
    assert contended_by({"load_average": 3.0, "cpus": 2, "machine_cpu": None}) is None
    assert contended_by({"load_average": 4.5, "cpus": 2}) is not None


def assert_or_contended(p: Pair, ok: bool, detail: Any) -> None:
    """Assert ``ok``; a disagreement on a machine too busy to time a cycle is an expected failure saying so."""
    if not ok and (why := contended(p)) is not None:
        pytest.xfail(f"{why}: per-cycle counts are not comparable ({detail})")
    assert ok, detail


def end_of(p: Pair) -> float:
    return float(p.real.summary.get("interrupted_at_ms", p.scenario.duration))


# --- long polls: fetch.max.wait.ms, fetch.min.bytes, replica.fetch.wait.max.ms ----------------------------


def test_a_starved_consumer_fetch_waits_fetch_max_wait_ms(pair: Callable[[str], Pair]) -> None:
    """fetch.min.bytes above what 500 ms of traffic brings: every FetchConsumer waits fetch.max.wait.ms in the
    fetch purgatory (DelayedFetch expires). Tolerance +-100 ms: the timing wheel's 1 ms tick and the expiration
    reaper cost nothing near that, but a broker JVM sharing two cores can be descheduled for tens of ms."""
    p = pair("fetch_min_bytes_vs_max_wait")
    sim = p50(rows(p.sim, "FetchConsumer", client="starved"), "RemoteTimeMs")
    real = p50(rows(p.real, "FetchConsumer", client="starved"), "RemoteTimeMs")
    ok = all(abs(v - 500) <= 100 for v in (sim, real))
    agree(p, "starved consumer: FetchConsumer RemoteTimeMs p50 (fetch.max.wait.ms 500)", sim, real, "500 +-100 ms", ok)
    assert ok, (sim, real)


def test_fetch_min_bytes_met_early_completes_early(pair: Callable[[str], Pair]) -> None:
    """fetch.min.bytes 1: the next high-watermark move completes the parked fetch, long before 500 ms. Bound
    250 ms: half the max wait; the real cluster's fetches complete within a follower round trip plus CPU
    contention."""
    p = pair("fetch_min_bytes_vs_max_wait")
    sim = p50(rows(p.sim, "FetchConsumer", client="eager"), "RemoteTimeMs")
    real = p50(rows(p.real, "FetchConsumer", client="eager"), "RemoteTimeMs")
    ok = sim < 250 and real < 250
    agree(p, "eager consumer: FetchConsumer RemoteTimeMs p50 (fetch.min.bytes 1)", sim, real, "< 250 ms", ok)
    batched = (p50(rows(p.sim, "FetchConsumer", client="batched"), "RemoteTimeMs"),
               p50(rows(p.real, "FetchConsumer", client="batched"), "RemoteTimeMs"))
    report(p, "batched consumer: FetchConsumer RemoteTimeMs p50 (32 KiB)", *batched)
    assert ok, (sim, real)


def test_idle_followers_fetch_at_the_replica_fetch_wait_max_ms_cadence(pair: Callable[[str], Pair]) -> None:
    """replica.fetch.min.bytes 1 MiB, far above the traffic: each follower's fetch waits
    replica.fetch.wait.max.ms (500 ms), so each follower sends 2 FetchFollower per second. Tolerance +-15%:
    a fetch's own round trip (a few ms) and the JVM's scheduling delays lengthen each cycle a little."""
    p = pair("segment_roll_wakes_fetches")
    end = end_of(p)
    for follower in (1, 2):
        sim = per_second(p.sim, "FetchFollower", end, client=f"follower-{follower}")
        real = per_second(p.real, "FetchFollower", end, client=f"follower-{follower}")
        ok = all(abs(v - 2.0) <= 0.3 for v in (sim, real))
        agree(p, f"follower-{follower}: FetchFollower per second (replica.fetch.wait.max.ms 500)", sim, real,
              "2 +-15%", ok)
        assert_or_contended(p, ok, (follower, sim, real))
    sim_wait = p50(rows(p.sim, "FetchFollower"), "RemoteTimeMs")
    real_wait = p50(rows(p.real, "FetchFollower"), "RemoteTimeMs")
    ok = all(abs(v - 500) <= 100 for v in (sim_wait, real_wait))
    agree(p, "FetchFollower RemoteTimeMs p50", sim_wait, real_wait, "500 +-100 ms", ok)
    assert ok, (sim_wait, real_wait)


def test_request_counts_per_api_per_second_agree(pair: Callable[[str], Pair]) -> None:
    """A steady workload (acks=1, 100 records/s, linger.ms 5; followers and consumer long-polling 500 ms):
    requests per second of every API within +-15% of kafkasim's. Both engines send the same records at the same
    intended times, so the produce batches are the same linger windows; the fetchers' counts are timer-decided."""
    p = pair("segment_roll_wakes_fetches")
    end = end_of(p)
    for api in ("Produce", "FetchConsumer", "FetchFollower"):
        sim = per_second(p.sim, api, end)
        real = per_second(p.real, api, end)
        ok = abs(real - sim) <= 0.15 * sim
        agree(p, f"{api} requests per second", sim, real, "+-15%", ok)
        assert_or_contended(p, ok, (api, sim, real))


# A fetch woken by a roll completes at it: kafkasim's at once (a consumer's once the high watermark follows, a
# follower round trip later), a real broker's within its thread hand-offs on 2 shared cores. (A fetch that
# expires that soon after a roll counts too: indistinguishable, and rare.)
WAKE_MS_SIM = 20.0
WAKE_MS_REAL = 100.0
_ROLLED = re.compile(r"partition=(\S+?)-(\d+),.*Rolled new log segment at offset (\d+)")


def sim_rolls(result: RunResult, broker: int, topic: str) -> list[float]:
    """When the leader's log rolled a segment after the warm-up (the segments table)."""
    seg = result.segments
    keep = ((seg["event"].astype(str) == "rolled") & (seg["broker"].to_numpy() == broker)
            & (seg["topic"].astype(str) == topic)
            & (seg["time_ms"].to_numpy(dtype=float) >= float(result.summary.get("warmup_ms", 0.0))))
    return sorted(float(t) for t in seg.loc[keep, "time_ms"])


def real_rolls(result: RunResult, broker: int, topic: str, warmup_ms: float) -> list[float]:
    """When the leader's log rolled a segment after the warm-up, from its server.log (LocalLog.roll logs
    "Rolled new log segment at offset N" at INFO; lines stamped in epoch ms)."""
    origin = float(result.run_info["epoch_ms_at_0"])
    text = result.extra_files[f"kafka/broker-{broker}/server.log"].decode("utf-8", errors="replace")
    found = []
    for line in text.splitlines():
        if (m := _ROLLED.search(line)) is None or m.group(1) != topic:
            continue
        if (stamp := re.match(r"^\[(\d+)\]", line)) is not None and float(stamp.group(1)) - origin >= warmup_ms:
            found.append(float(stamp.group(1)) - origin)
    return sorted(found)


def woken_at_rolls(result: RunResult, api: str, client: str, rolls: list[float], wake_ms: float) -> tuple[int, int]:
    """(rolls over which the client had a fetch parked, those whose parked fetch completed at the roll: within
    ``wake_ms`` after it)."""
    f = rows(result, api, client=client, after_ms=0.0)
    parked = f["local_complete_ms"].to_numpy(dtype=float)
    done = f["response_complete_ms"].to_numpy(dtype=float)
    over = woken = 0
    for t in rolls:
        spanning = (parked <= t) & (done >= t)
        if not spanning.any():
            continue  # between two fetches: the next one reads the new segment's offsets
        over += 1
        woken += bool((spanning & (done - t <= wake_ms)).any())
    return over, woken


def test_every_segment_roll_wakes_each_parked_fetch(pair: Callable[[str], Pair]) -> None:
    """Issue 28's shape: replica.fetch.min.bytes and fetch.min.bytes 1 MiB (never met in 500 ms), Kafka's
    smallest segment.bytes (1 MiB) rolling every ~2.6 s under 400 KiB/s. A parked DelayedFetch completes early
    when its fetch offset lies on an older segment than the end it reads up to (DelayedFetch.tryComplete,
    LogOffsetMetadata.onOlderSegment): each follower's fetch parked over a roll completes at it, on both engines
    (the real cluster may miss one per fetcher: a roll within a few ms of a fetch's own expiry). The consumer's
    wakes when the high watermark reaches the new segment, after the woken followers fetch again: asserted on
    kafkasim, reported for Kafka (on 2 shared cores that second round trip took over 100 ms for 2 of 5 rolls in
    one CI run)."""
    p = pair("segment_rolls_1mib")
    warmup = float(p.sim.summary.get("warmup_ms", 0.0))
    rolls_sim, rolls_real = sim_rolls(p.sim, 0, "logs"), real_rolls(p.real, 0, "logs", warmup)
    agree(p, "leader's segment rolls after the warm-up", len(rolls_sim), len(rolls_real), ">= 3 on both, +-1",
          min(len(rolls_sim), len(rolls_real)) >= 3 and abs(len(rolls_sim) - len(rolls_real)) <= 1)
    sim_failures, real_failures = [], []
    for api, client in (("FetchFollower", "follower-1"), ("FetchFollower", "follower-2"),
                        ("FetchConsumer", "consumer-1")):
        over_sim, woken_sim = woken_at_rolls(p.sim, api, client, rolls_sim, WAKE_MS_SIM)
        over_real, woken_real = woken_at_rolls(p.real, api, client, rolls_real, WAKE_MS_REAL)
        sim_ok = over_sim >= 3 and woken_sim == over_sim
        if api == "FetchConsumer":
            real_ok = True
            report(p, f"{client}: fetches parked over a roll and woken within {WAKE_MS_REAL:g} ms",
                   f"{woken_sim}/{over_sim}", f"{woken_real}/{over_real}")
        else:
            real_ok = over_real >= 3 and woken_real >= over_real - 1
            agree(p, f"{client}: fetches parked over a roll and woken by it", f"{woken_sim}/{over_sim}",
                  f"{woken_real}/{over_real}", "all (Kafka: all but one at most)", sim_ok and real_ok)
        if not sim_ok:
            sim_failures.append((client, woken_sim, over_sim))
        if not real_ok:
            real_failures.append((client, woken_real, over_real))
    assert min(len(rolls_sim), len(rolls_real)) >= 3 and abs(len(rolls_sim) - len(rolls_real)) <= 1, \
        (rolls_sim, rolls_real)
    # kafkasim's wakes are held whatever the machine's load; Kafka's answer within WAKE_MS_REAL of the roll only
    # on a machine that can time a cycle (one CI run at a load average of 10 on 2 cores: follower-2 3/5).
    assert not sim_failures, sim_failures
    assert_or_contended(p, not real_failures, real_failures)


# --- acks=all waits for the followers --------------------------------------------------------------------


# A real request log's line time is taken after the broker measured the response's end and wrote the line's
# JSON, so its absolute times lie later than the broker's own by up to a few hundred microseconds
# (kafkasim.real.request_log): two requests' times compare to within 0.2 ms. kafkasim's are exact.
REAL_LOG_RESOLUTION_MS = 0.2


def test_the_real_request_log_times_requests_to_the_microsecond(pair: Callable[[str], Pair]) -> None:
    """kafkasim's log pattern stamps each request log line in epoch microseconds (kafkasim/real/log4j2.properties):
    the rows' ends do not fall on whole milliseconds, as they would with ``%d{UNIX_MILLIS}``, whose rounding
    doubled the completion gap that kafkasim.calibrate.completion reads off a log."""
    real = pair("acks_compared").real.requests
    end = real["end_ms"].to_numpy(dtype=float)
    on_whole_ms = float(np.mean(np.abs(end - np.round(end)) <= 0.005))
    assert not whole_millisecond_times(real) and on_whole_ms < 0.05, on_whole_ms


def _completed_after_a_follower_fetch(result: RunResult, resolution_ms: float = 0.001) -> float:
    """The fraction of acks=all produce requests answered after a follower fetch that reached their broker
    after the append (the fetch that copies the batch and moves the high watermark, Partition.maybeIncrementLeaderHW),
    as far as the tables' times can tell (``resolution_ms``)."""
    produce = rows(result, "Produce")
    produce = produce[produce["acks"].astype("Int64").fillna(99).to_numpy() == -1]
    fetches = rows(result, "FetchFollower", after_ms=0.0)
    if not len(produce):
        return float("nan")
    hits = 0
    for broker, group in produce.groupby("broker"):
        starts = np.sort(fetches.loc[fetches["broker"] == broker, "start_ms"].to_numpy(dtype=float))
        appended = group["local_complete_ms"].to_numpy(dtype=float)
        answered = group["response_complete_ms"].to_numpy(dtype=float)
        first_after = np.searchsorted(starts, appended - resolution_ms)
        ok = (first_after < len(starts)) & (starts[np.minimum(first_after, len(starts) - 1)] <= answered + resolution_ms)
        hits += int(ok.sum())
    return hits / len(produce)


def test_acks_all_completes_after_the_follower_fetch_that_copies_the_batch(pair: Callable[[str], Pair]) -> None:
    """Order of events (DelayedProduce.tryComplete, Partition.checkEnoughReplicasReachOffset): an acks=all
    produce is answered only after a follower fetch arrived after its append. At least 95% of them on both
    engines. A real request log's line times come a little after the broker's own (``REAL_LOG_RESOLUTION_MS``),
    so its fetches and appends are compared to within that: on a quiet machine the follower's next fetch
    reaches the leader within a millisecond of the append (when the log had whole milliseconds, a comparison to
    the microsecond counted only 91% of them, in one run at a load average of 2.5)."""
    p = pair("acks_compared")
    sim = _completed_after_a_follower_fetch(p.sim)
    real = _completed_after_a_follower_fetch(p.real, REAL_LOG_RESOLUTION_MS)
    ok = sim >= 0.95 and real >= 0.95
    agree(p, "acks=all produces answered after a follower fetch that arrived after the append", sim, real,
          ">= 95%", ok)
    assert ok, (sim, real)


def test_acks_1_never_waits_in_the_purgatory(pair: Callable[[str], Pair]) -> None:
    """acks=1: the leader answers after its own append; RemoteTimeMs is 0 by rule (only a DelayedProduce has
    a remote phase). Bound 1 ms at p99: the breakdown's rounding."""
    p = pair("acks_compared")
    results = []
    for result in (p.sim, p.real):
        produce = rows(result, "Produce", client="acks-1")
        results.append(float(np.percentile(produce["RemoteTimeMs"].to_numpy(dtype=float), 99)))
    ok = all(v <= 1.0 for v in results)
    agree(p, "acks=1 Produce RemoteTimeMs p99", results[0], results[1], "<= 1 ms", ok)
    for producer in ("acks-0", "acks-1", "acks-all"):
        report(p, f"{producer}: produce latency from intended p50-p99 (ms)", latency(p.sim, producer),
               latency(p.real, producer))
    assert ok, results


def test_follower_fetches_per_acks_all_produce(pair: Callable[[str], Pair]) -> None:
    """With acks=all and light load every append is copied by both followers' next fetches: FetchFollower
    requests per Produce request near 2 on both. Tolerance +-25%: a real follower fetch that arrives while
    two batches wait copies both (fewer fetches per produce), and an idle one returns at 500 ms (more)."""
    p = pair("quickstart")
    end = end_of(p)
    ratios = [per_second(r, "FetchFollower", end) / max(per_second(r, "Produce", end), 1e-9) for r in (p.sim, p.real)]
    ok = abs(ratios[1] - ratios[0]) <= 0.25 * ratios[0]
    agree(p, "FetchFollower requests per Produce request", ratios[0], ratios[1], "+-25%", ok)
    report(p, "load average during the real run", "-", p.real.run_info.get("load_average"))
    report(p, "the machine's CPU during the real run", "-",
           ", ".join(f"{name} {share:.0%}" for name, share in p.real.run_info["machine_cpu"].items()))
    report(p, "produce latency from intended p50-p99 (ms)", latency(p.sim), latency(p.real))
    sim_e2e = p.sim.summary["e2e_latency"]
    real_e2e = p.real.summary["e2e_latency"]
    report(p, "end-to-end latency p50-p99 (ms)", (sim_e2e["p50"], sim_e2e["p99"]), (real_e2e["p50"], real_e2e["p99"]))
    assert_or_contended(p, ok, ratios)


# --- failover: fencing, elections, controlled shutdown ---------------------------------------------------

SESSION_MS = 9000.0
HEARTBEAT_MS = 2000.0
# QuorumController's maybeFenceStaleBroker task runs every broker.session.timeout.ms / 8 (1125 ms for 9 s).
FENCE_CHECK_MS = SESSION_MS / 8
# A JVM on two shared cores runs a due task late by up to a few hundred ms (measured: 150-300 ms).
SCHEDULING_SLACK_MS = 400.0


def _fence_checks(p: Pair, broker: int, crash_ms: float) -> None:
    fences = real_fences(p.real, broker)
    assert fences, f"the controller never fenced broker {broker}"
    fence = fences[0]
    since_heartbeat = fence["at_ms"] - fence["last_heartbeat_ms"]
    ok = SESSION_MS <= since_heartbeat <= SESSION_MS + FENCE_CHECK_MS + SCHEDULING_SLACK_MS
    agree(p, f"Kafka: broker-{broker}'s last heartbeat -> fence (broker.session.timeout.ms 9000)", "-",
          since_heartbeat, "9000..9000+1125 (+400 slack)", ok)
    assert ok, since_heartbeat
    sim_fence = sim_fences(p.engine, broker)
    assert sim_fence, "kafkasim never fenced the broker"
    window = (SESSION_MS - HEARTBEAT_MS, SESSION_MS + FENCE_CHECK_MS + SCHEDULING_SLACK_MS)
    sim_after, real_after = sim_fence[0] - crash_ms, fence["at_ms"] - crash_ms
    ok = all(window[0] <= v <= window[1] for v in (sim_after, real_after))
    agree(p, f"broker-{broker} crash -> fence (ms)", sim_after, real_after, "7000..10525", ok)
    assert ok, (sim_after, real_after)


def changes(result: RunResult) -> list[str]:
    """The run's leadership changes as summary.json's failovers name them (the real run's from its logs)."""
    return [f"{f['partition']} {f['old_leader']}->{f['new_leader']} ({f['cause']})"
            for f in result.summary.get("failovers", [])]


def _same_changes(p: Pair) -> None:
    found = changes(p.sim), changes(p.real)
    ok = found[0] == found[1] and bool(found[0])
    agree(p, "leadership changes (summary failovers)", "; ".join(found[0]), "; ".join(found[1]), "the same", ok)
    assert ok, found


def test_leader_crash_is_fenced_after_the_session_timeout_and_nothing_acknowledged_is_lost(
        pair: Callable[[str], Pair]) -> None:
    p = pair("leader_crash")
    crash = float(p.scenario.faults[0].at)
    _same_changes(p)
    _fence_checks(p, 0, crash)
    sim_lost, real_lost = lost(p.sim), lost(p.real)
    ok = sim_lost == 0 and real_lost == 0
    agree(p, "acks=all batches lost after their acknowledgement", sim_lost, real_lost, "0", ok)
    assert ok


@dataclass
class CrashSeed:
    """One simulated seed of the leader crash: fence and first acknowledgements, from the crash (ms)."""
    fence: float
    fence_to_first_ack: float
    crash_to_first_ack: float


_CRASH_SEEDS: dict[str, list[CrashSeed]] = {}


def crash_seeds(p: Pair, seeds: int = 10) -> list[CrashSeed]:
    """kafkasim's leader crash over ``seeds`` seeds (run once per session): where the crash falls between two
    heartbeats, the fence check's phase and the producer's metadata backoff are draws, so a single real run is
    compared with the simulated range, never with one simulated draw."""
    if p.key not in _CRASH_SEEDS:
        crash = float(p.scenario.faults[0].at)
        found = []
        for seed in range(seeds):
            engine = Engine(p.scenario, seed=seed)
            result = engine.run()
            fence = sim_fences(engine, 0)[0]
            found.append(CrashSeed(fence - crash, first_ack_after(result, fence) - fence,
                                   first_ack_of_a_batch_begun_after(result, crash) - crash))
        _CRASH_SEEDS[p.key] = found
    return _CRASH_SEEDS[p.key]


def test_leader_crash_fence_to_first_acknowledgement_lies_in_the_simulated_range_over_seeds(
        pair: Callable[[str], Pair]) -> None:
    """From the fence to the producer's first acknowledgement on the new leader: the election is in the fence's
    own controller event, so this is the brokers' metadata propagation, the producer's next metadata refresh
    (Metadata's refresh backoff, exponential from retry.backoff.ms up to retry.backoff.max.ms, 1 s, with 20%
    jitter, while the dead leader was still in the metadata), the batch's own retry backoff and the
    followers' fetch of the retried batch: a draw of phases, compared with kafkasim's range over seeds (a
    comparison of one draw with one draw measured 297 ms against 851 ms, and 419 against 1,204)."""
    p = pair("leader_crash")
    sims = [s.fence_to_first_ack for s in crash_seeds(p)]
    real_fence = real_fences(p.real, 0)[0]["at_ms"]
    real = first_ack_after(p.real, real_fence) - real_fence
    ok = min(sims) - 500 <= real <= max(sims) + 500
    agree(p, "fence -> first acknowledgement on the new leader (ms), kafkasim over 10 seeds",
          (min(sims), max(sims)), real, "inside +-500 ms", ok)
    assert_or_contended(p, ok, (sims, real))


def test_leader_crash_first_acknowledgement_lies_in_the_simulated_range_over_seeds(
        pair: Callable[[str], Pair]) -> None:
    p = pair("leader_crash")
    real_crash = real_fault_ms(p)
    sims = [s.crash_to_first_ack for s in crash_seeds(p)]
    # Measured from the SIGKILL, for batches begun after it: one CI run at a load average of 9.8 counted an
    # acknowledgement 101 ms after the crash's scheduled time (a batch begun before the kill: broker 0 answered
    # it before it died, or the loaded client took it in late).
    real = first_ack_of_a_batch_begun_after(p.real, real_crash) - real_crash
    low, high = min(sims) - 500, max(sims) + 500
    ok = low <= real <= high
    agree(p, "crash -> first acknowledgement (ms), kafkasim over 10 seeds", (min(sims), max(sims)), real,
          "inside +-500 ms", ok)
    # A CI run at a load average above 2 per core measured the acknowledgement outside the range: the
    # fence and election are timers, but the client's retry and the new leader's answer wait for a CPU.
    assert_or_contended(p, ok, (sims, real))


def test_follower_crash_holds_acks_all_until_the_fence(pair: Callable[[str], Pair]) -> None:
    """The crashed follower stays in the ISR until its fence, so acks=all produces wait in the purgatory until
    then (RemoteTimeMs): the longest hold is crash -> fence, 7-10 s by the timers."""
    p = pair("follower_crash_fenced")
    crash = float(p.scenario.faults[0].at)
    _fence_checks(p, 2, crash)
    holds = [float(rows(r, "Produce")["RemoteTimeMs"].max()) for r in (p.sim, p.real)]
    ok = all(SESSION_MS - HEARTBEAT_MS - 500 <= v <= SESSION_MS + FENCE_CHECK_MS + SCHEDULING_SLACK_MS for v in holds)
    agree(p, "longest acks=all purgatory hold (crash -> fence, ms)", holds[0], holds[1], "6500..10525", ok)
    assert ok, holds


def sim_restart_steps(engine: Engine, broker: int, after_ms: float) -> tuple[float, float]:
    """When kafkasim's controller registered ``broker`` again after ``after_ms`` and when it unfenced it."""
    registered = unfenced = float("nan")
    for batch in engine.components.controller.core.log.batches:
        if batch.append_ms < after_ms:
            continue
        for record in batch.records:
            if isinstance(record, RegisterBrokerRecord) and record.broker_id == broker and registered != registered:
                registered = float(batch.append_ms)
            if isinstance(record, BrokerRegistrationChangeRecord) and record.broker_id == broker \
                    and record.fenced == UNFENCE and unfenced != unfenced:
                unfenced = float(batch.append_ms)
    return registered, unfenced


def real_restart_steps(result: RunResult, broker: int, after_ms: float) -> tuple[float, float]:
    events = result.run_info["controller_events"]
    registered = [e["at_ms"] for e in events["registered"] if e["broker"] == broker and e["at_ms"] >= after_ms]
    unfenced = [e["at_ms"] for e in events["unfenced"] if e["broker"] == broker and e["at_ms"] >= after_ms]
    return (min(registered) if registered else float("nan")), (min(unfenced) if unfenced else float("nan"))


def test_a_restarted_follower_registers_then_is_unfenced_once_its_logs_are_loaded(pair: Callable[[str], Pair]) -> None:
    """The killed follower's new process registers (BrokerLifecycleManager, STARTING) once the JVM and
    BrokerServer.startup got that far, and the controller unfences it once its first metadata publish (which
    loads its logs, LogManager.startup) let it report itself caught up (BrokerHeartbeatManager). How long each
    step takes is this machine's (kafkasim: broker.startup, measured here): reported side by side; asserted is
    the order, on both engines, and that neither is instant."""
    p = pair("follower_crash_fenced")
    restart_sim = float(p.scenario.faults[0].at + p.scenario.faults[0].restart_after)
    restart_real = real_fault_ms(p, 1)
    steps = [sim_restart_steps(p.engine, 2, restart_sim), real_restart_steps(p.real, 2, restart_real)]
    since = [(reg - at, unf - at) for (reg, unf), at in zip(steps, (restart_sim, restart_real), strict=True)]
    report(p, "broker-2 restart -> registration (ms)", since[0][0], since[1][0])
    report(p, "broker-2 restart -> unfenced (ms)", since[0][1], since[1][1])
    ok = all(1_000 <= reg < unf for reg, unf in since)
    agree(p, "broker-2 registers >= 1 s after its restart, then is unfenced", "yes" if ok else since[0],
          "yes" if ok else since[1], "the order, on both", ok)
    # Each real node samples its own gauges (kafkasim.real.runner's GaugeReporter): the killed process none,
    # the new one again, into the same file, once Kafka has configured its metrics reporters.
    sampled = _sampled_at(p.real, "broker-2")
    crash = real_fault_ms(p, 0)
    down = [t for t in sampled if crash + 1_000 <= t <= restart_real]
    after = [t for t in sampled if t > restart_real]
    report(p, "broker-2's gauge samples after its restart", "-", len(after))
    assert ok, since
    assert not down and after, (down, after)


def test_each_gauge_has_one_row_per_entity_and_sample_on_both(pair: Callable[[str], Pair]) -> None:
    """A partition's gauges are its leader's, one row a sample, on both engines. Found on the real run: every
    replica's node reported the partition's UnderMinIsr (Kafka's Partition gauge, 0 on a follower:
    `isUnderMinIsr` is the leader's), three rows with the same time where kafkasim writes the leader's one."""
    p = pair("gc_paused_follower")
    for result in (p.sim, p.real):
        ts = result.timeseries
        twice = ts[ts.duplicated(["time_ms", "metric", "entity"], keep=False)]
        assert twice.empty, twice.head(10)
    report(p, "UnderMinIsr rows of partition orders-0 (one a sample)",
           *(int(((r.timeseries["metric"].astype(str) == "UnderMinIsr")
                  & (r.timeseries["entity"].astype(str) == "orders-0")).sum()) for r in (p.sim, p.real)))


def _sampled_at(result: RunResult, entity: str) -> list[float]:
    """The times of the samples of ``entity``'s LeaderCount (one per sample of a broker)."""
    ts = result.timeseries
    chosen = (ts["metric"].astype(str) == "LeaderCount") & (ts["entity"].astype(str) == entity)
    return sorted(float(t) for t in ts.loc[chosen, "time_ms"])


def test_a_paused_follower_holds_acks_all_for_the_pause(pair: Callable[[str], Pair]) -> None:
    """A 3 s SIGSTOP of a follower, shorter than the session timeout: no fence, and acks=all produces wait in
    the purgatory for the pause (the follower's next fetch after SIGCONT moves the high watermark). Tolerance
    -500/+700 ms: the hold starts when the request arrives (up to a linger and a round trip after the pause
    began) and ends after the resumed JVM's first fetch."""
    p = pair("gc_paused_follower")
    pause = float(p.scenario.faults[0].duration)
    holds = [float(rows(r, "Produce", client="orders-acks-all")["RemoteTimeMs"].max()) for r in (p.sim, p.real)]
    ok = all(pause - 500 <= v <= pause + 700 for v in holds)
    agree(p, "longest acks=all purgatory hold during a 3 s pause (ms)", holds[0], holds[1], "2500..3700", ok)
    no_fence = not real_fences(p.real, 2) and not sim_fences(p.engine, 2)
    agree(p, "paused follower fenced", "no", "no" if not real_fences(p.real, 2) else "yes", "no fence", no_fence)
    assert ok and no_fence, holds
    # A stopped process samples nothing (its gauge sampler is one of its threads): no sample of broker-2 inside
    # the pause, none written late after it with its time, while broker-0 samples on.
    start = real_fault_ms(p, 0)
    inside = [(b, t) for b in ("broker-0", "broker-2") for t in _sampled_at(p.real, b)
              if start + 600 <= t <= start + pause - 600]
    assert [t for b, t in inside if b == "broker-2"] == [] and any(b == "broker-0" for b, _ in inside), inside


def _answers_not_leader_before_it_stops(result: RunResult, at_ms: float) -> tuple[int, float]:
    """(requests broker 0 answered NOT_LEADER_OR_FOLLOWER after ``at_ms``, ms from ``at_ms`` to the end of the
    last request it handled)."""
    r = result.requests
    old = r[(r["start_ms"].to_numpy(dtype=float) >= at_ms) & (r["broker"].to_numpy() == 0)]
    not_leader = int((old["error_name"].astype(str) == "NOT_LEADER_OR_FOLLOWER").sum())
    return not_leader, (float(old["end_ms"].max()) - at_ms) if len(old) else 0.0


def test_controlled_shutdown_moves_leadership_before_the_broker_stops_and_loses_nothing(
        pair: Callable[[str], Pair]) -> None:
    """Kafka's controlled shutdown (SIGTERM): the controller moves the leadership away first
    (ReplicationControlManager.handleBrokerInControlledShutdown), then grants the shutdown
    (BrokerHeartbeatManager: once the other brokers' metadata has caught up). So the old leader, still running,
    answers NOT_LEADER_OR_FOLLOWER before it stops; no acknowledged record is lost."""
    p = pair("leader_controlled_shutdown")
    at = float(p.scenario.faults[0].at)
    _same_changes(p)
    answers = [_answers_not_leader_before_it_stops(r, at) for r in (p.sim, p.real)]
    ok = all(n > 0 for n, _ in answers)
    agree(p, "old leader's NOT_LEADER_OR_FOLLOWER answers before it stopped", answers[0][0], answers[1][0], "> 0",
          ok)
    report(p, "SIGTERM -> the old leader's last request (ms)", answers[0][1], answers[1][1])
    assert ok, answers
    losses = lost(p.sim), lost(p.real)
    ok = losses == (0, 0)
    agree(p, "acks=all batches lost after their acknowledgement", *losses, "0", ok)
    assert ok, losses


def test_controlled_shutdown_worst_produce_lies_in_the_simulated_range(pair: Callable[[str], Pair]) -> None:
    """Brokers apply a leadership change at different times (each MetadataLoader publishes the batch, then
    ReplicaManager.applyDelta runs: the scenario's controller.metadata_propagation / metadata_apply, measured
    on this cluster). The old leader holds acks=all produce in its purgatory until it applied the change (a
    hundred ms or two); a follower that fetches from the new leader before it leads is answered
    UNKNOWN_LEADER_EPOCH and backs the partition off replica.fetch.backoff.ms (AbstractFetcherThread), and
    acks=all on the new leader waits for it (about a second). Which happens is a draw, so the real run is
    compared with kafkasim's range over ten seeds (before this was modelled: 3-5 ms against a real 121-1,041
    ms). The worst latency from the intended send adds the clients' own time: reported, not asserted."""
    p = pair("leader_controlled_shutdown")
    at = float(p.scenario.faults[0].at)
    real_at = real_fault_ms(p)

    def worst(result: RunResult, at_ms: float) -> tuple[float, float]:
        produce = rows(result, "Produce", after_ms=at_ms, before_ms=at_ms + 3000)
        hold = float(produce["RemoteTimeMs"].max()) if len(produce) else float("nan")
        records = result.records
        begun = records["first_intended_ms"].to_numpy(dtype=float)
        near = records[(begun >= at_ms - 500) & (begun < at_ms + 3000)]
        latency = (near["ack_ms"] - near["first_intended_ms"]).to_numpy(dtype=float)
        latency = latency[np.isfinite(latency)]
        return hold, float(latency.max()) if latency.size else float("nan")

    sims = [worst(Engine(p.scenario, seed=seed).run(), at) for seed in range(10)]
    real = worst(p.real, real_at)
    holds = [h for h, _ in sims]
    ok = min(holds) - 100 <= real[0] <= max(holds) + 100
    agree(p, "worst acks=all purgatory hold within 3 s of SIGTERM (ms), kafkasim over 10 seeds",
          (min(holds), max(holds)), real[0], "inside +-100 ms", ok)
    latencies = [w for _, w in sims]
    report(p, "worst acks=all produce latency from intended, 3 s after SIGTERM (ms), kafkasim over 10 seeds",
           (min(latencies), max(latencies)), real[1])
    assert_or_contended(p, ok, (sims, real))


def test_acks_1_and_an_unclean_election_lose_acknowledged_records_on_both(pair: Callable[[str], Pair]) -> None:
    """Both followers crash, broker 0 alone acknowledges acks=1 records, then crashes; a follower that lacks
    them is elected (unclean.leader.election.enable): the acknowledged records of that window are lost on both
    engines (log_audit's reading of every partition's final log). Kafka 4.3.1 may elect it from the eligible
    leader replicas (KIP-966, on by default since 4.1) rather than uncleanly: the loss is the same."""
    p = pair("unclean_acks1_crashes")
    losses = lost(p.sim), lost(p.real)
    ok = all(n > 0 for n in losses)
    agree(p, "acks=1 batches lost after their acknowledgement", *losses, "> 0 on both", ok)
    events = p.real.run_info["controller_events"]
    report(p, "Kafka's election of the new leader", "unclean",
           "unclean" if events["unclean_elections"] else ("ELR" if events["elr_elections"] else "none logged"))
    offline = [_offline_partitions(r) for r in (p.sim, p.real)]
    report(p, "most partitions offline at once (OfflinePartitionsCount, the controller's gauge)", *offline)
    assert ok, losses
    assert offline[1] is not None, "the real run has no OfflinePartitionsCount samples (the controller's gauge sampler)"


def _offline_partitions(result: RunResult) -> float | None:
    """The highest OfflinePartitionsCount sample of the run (the controller's gauge), None without samples."""
    ts = result.timeseries
    values = ts.loc[ts["metric"].astype(str) == "OfflinePartitionsCount", "value"].to_numpy(dtype=float)
    return float(values.max()) if values.size else None


def test_a_leader_from_the_eligible_replicas_loses_the_acks_1_records_it_lacks_on_both(
        pair: Callable[[str], Pair]) -> None:
    """KIP-966 (Kafka 4.3.1's default): the follower fenced last left the ISR while it was below
    min.insync.replicas, so it stays an eligible leader replica; once the killed leader is fenced the
    controller elects it "using ELR" (PartitionChangeBuilder.electAnyLeader) although it lacks the acks=1
    records acknowledged since the pause. Both engines: one election from the ELR, 7-10.5 s after the kill
    (the old leader's fence), acks=1 records lost, nothing acks=all lost."""
    p = pair("elr_paused_followers")
    events = p.real.run_info["controller_events"]
    kinds = (p.sim.summary["counters"]["controller_elr_elections"], len(events["elr_elections"]))
    agree(p, "elections from the ELR", *kinds, "1 on both", kinds == (1, 1))
    crash = float(p.scenario.faults[2].at)
    sim_elected = [f["elected_ms"] for f in p.sim.summary["failovers"] if f["cause"].endswith("from the ELR")]
    delays = (sim_elected[0] - crash if sim_elected else float("nan"),
              events["elr_elections"][0]["at_ms"] - real_fault_ms(p, 2) if events["elr_elections"] else float("nan"))
    in_fence_time = all(SESSION_MS - HEARTBEAT_MS - 500 <= d <= SESSION_MS + FENCE_CHECK_MS + SCHEDULING_SLACK_MS
                        for d in delays)
    agree(p, "kill -> election from the ELR (ms)", *delays, "6500..10525", in_fence_time)
    losses = lost(p.sim, "orders-acks-1"), lost(p.real, "orders-acks-1")
    agree(p, "acks=1 batches lost after their acknowledgement", *losses, "> 0 on both", all(n > 0 for n in losses))
    safe = lost(p.sim, "orders-acks-all"), lost(p.real, "orders-acks-all")
    agree(p, "acks=all batches lost", *safe, "0 on both", safe == (0, 0))
    assert kinds == (1, 1) and all(n > 0 for n in losses) and safe == (0, 0), (kinds, losses, safe)
    assert_or_contended(p, in_fence_time, delays)


def test_an_idempotent_producer_writes_nothing_twice_after_lost_responses(pair: Callable[[str], Pair]) -> None:
    """The paused leader outlasts request.timeout.ms: the producers give up on their requests, close the
    connection and send them again; the leader still appends what they had sent once it resumes. The
    idempotent producer's retries carry the same sequence numbers and are not written twice
    (ProducerStateManager), on both engines; the other producer's are."""
    p = pair("idempotence_paused_leader")
    dups = duplicated(p.sim, "idempotent"), duplicated(p.real, "idempotent")
    ok = dups == (0, 0)
    agree(p, "idempotent producer: batches written twice", *dups, "0", ok)
    # Without idempotence the retries are written twice on both: the paused broker, once resumed, still reads
    # what the client sent before it closed the timed-out connection (Selector keeps a channel its peer
    # closed while it has receives to process; SocketServer.close_channel). Kafka 4.3.1 wrote 2 and 4 in two
    # runs (each closed connection gave one or two, depending on when the peer's reset arrived); kafkasim
    # handles one per closed connection (before: none, the rule gap this found).
    twice = duplicated(p.sim, "not-idempotent"), duplicated(p.real, "not-idempotent")
    written_twice = all(n > 0 for n in twice)
    agree(p, "not-idempotent producer: batches written twice", *twice, "> 0 on both", written_twice)
    retried = [int((r.records["attempts"] > 1).sum()) for r in (p.sim, p.real)]
    report(p, "batches sent more than once", *retried)
    assert ok, dups
    assert written_twice, twice


# --- a follower cut from its leader (network_partition) ----------------------------------------------------

_ISR_APPLIED = re.compile(r"^\[(\d+)\].*Skipped the become-leader state change for (\S+)-(\d+) with topic id .*?"
                          r"partition registration PartitionRegistration\(.*?isr=\[([\d, ]*)\]")


def sim_isr_changes(engine: Engine, topic: str) -> list[tuple[float, tuple[int, ...]]]:
    """When kafkasim's controller committed a new ISR of ``topic``'s partition 0 (its metadata log)."""
    found = []
    for batch in engine.components.controller_link.controller.core.log.batches:
        for record in batch.records:
            if isinstance(record, PartitionChangeRecord) and record.isr is not None \
                    and record.topic_partition.topic == topic:
                found.append((float(batch.append_ms), tuple(record.isr)))
    return found


def real_isr_changes(result: RunResult, leader: int, topic: str) -> list[tuple[float, tuple[int, ...]]]:
    """When the real leader applied a committed ISR of ``topic``'s partition 0 from the metadata log (a
    partition change that keeps it leader: "Skipped the become-leader state change ... isr=[...]" at INFO,
    ReplicaManager.applyLocalLeadersDelta, a few ms after the controller's commit). Kafka's own "ISR updated
    to ..." line (Partition.handleAlterPartitionUpdate) is not logged when the metadata arrives before the
    AlterPartition response: a run at a load average of 8 had none for the rejoin."""
    origin = float(result.run_info["epoch_ms_at_0"])
    text = result.extra_files[f"kafka/broker-{leader}/server.log"].decode("utf-8", errors="replace")
    found = []
    for line in text.splitlines():
        if (m := _ISR_APPLIED.search(line)) is not None and m.group(2) == topic and m.group(3) == "0":
            found.append((float(m.group(1)) - origin, tuple(int(b) for b in m.group(4).split(","))))
    return found


def test_a_follower_cut_from_its_leader_leaves_the_isr_after_replica_lag_time_max_ms_and_rejoins(
        pair: Callable[[str], Pair]) -> None:
    """A silent cut between follower 2 and the leader (a pulled cable: each Kafka node in its own network
    namespace, the router drops their packets). The follower keeps heartbeating to the controller: never
    fenced. The leader's isr-expiration task (every replica.lag.time.max.ms / 2) removes it once it has not
    caught up for replica.lag.time.max.ms (Partition.maybeShrinkIsr): 10-15 s after the cut with 10 s, plus
    the last caught-up fetch's own long poll before the cut (up to replica.fetch.wait.max.ms, 0.5 s) and 0.5 s
    of scheduling on 2 shared cores: 9.5..16 s. Until then acks=all produces wait in the purgatory, the longest
    about as long (the same bound). After the heal the follower's reconnection gets through at its next SYN,
    it catches up and is added back (Partition.maybeExpandIsr), on both engines; nothing acknowledged is
    lost."""
    if (why := netns.unavailable_reason()) is not None:
        if os.environ.get(REQUIRED_ENV) == "1":
            pytest.fail(f"{REQUIRED_ENV}=1 and {why}", pytrace=False)
        pytest.skip(why)
    p = pair("follower_partitioned_from_leader")
    fault = p.scenario.faults[0]
    cut, heal = real_fault_ms(p), float(fault.at + fault.duration)
    lag = 10_000.0
    low, high = lag - 500, 1.5 * lag + 1000
    sim_changes = [(t, isr) for t, isr in sim_isr_changes(p.engine, "orders") if t >= float(fault.at)]
    real_changes = [(t, isr) for t, isr in real_isr_changes(p.real, 0, "orders") if t >= cut]
    shrinks = (next((t for t, isr in sim_changes if 2 not in isr), float("nan")) - float(fault.at),
               next((t for t, isr in real_changes if 2 not in isr), float("nan")) - cut)
    shrink_ok = all(low <= v <= high for v in shrinks)
    agree(p, "cut -> follower 2 leaves the ISR (ms; replica.lag.time.max.ms 10 s)", *shrinks,
          f"{low:g}..{high:g}", shrink_ok)
    holds = tuple(float(rows(r, "Produce", after_ms=float(fault.at) - 1000)["RemoteTimeMs"].max())
                  for r in (p.sim, p.real))
    hold_ok = all(low - 1000 <= v <= high for v in holds)
    agree(p, "longest acks=all purgatory hold during the cut (ms)", *holds, f"{low - 1000:g}..{high:g}", hold_ok)
    fenced = (bool(sim_fences(p.engine, 2)), bool(real_fences(p.real, 2)))
    agree(p, "cut follower fenced", *fenced, "no (it still heartbeats)", fenced == (False, False))
    rejoins = (next((t for t, isr in sim_changes if 2 in isr and t >= heal), float("nan")) - heal,
               next((t for t, isr in real_changes if 2 in isr and t >= heal), float("nan")) - heal)
    # The first of the reconnection's SYNs sent after the heal gets through (see SCENARIOS), then one fetch
    # catches up: within the gap between two SYNs around the heal plus 500 ms. kafkasim's kernel retransmits
    # the first SYNs a second apart (1, 1, 1, 1, 1, 2, 4 s: tcp_syn_linear_timeouts 4, Linux 6.5+), as this
    # machine's does (it doubled from the first, as Linux before 6.5, until this test showed the real follower
    # rejoining up to a second sooner).
    linear = _syn_linear_timeouts()
    bounds = (1500.0, 1500.0 if linear >= 3 else 2500.0)
    rejoin_ok = all(0 <= v <= bound for v, bound in zip(rejoins, bounds, strict=True))
    agree(p, "heal -> follower 2 back in the ISR (ms)", *rejoins,
          f"the next SYN + 500 ms: 0..{bounds[0]:g} / 0..{bounds[1]:g}", rejoin_ok)
    report(p, "SYN retransmissions of a connect across a cut (s after it)", "1, 2, 3, 4, 5, 7",
           "1, 2, 3, 4, 5, 7" if linear == 4 else f"tcp_syn_linear_timeouts {linear}")
    losses = lost(p.sim), lost(p.real)
    failed = tuple(int((r.records["error"].to_numpy() != 0).sum()) for r in (p.sim, p.real))
    agree(p, "acks=all batches lost after their acknowledgement, failed", (losses[0], failed[0]),
          (losses[1], failed[1]), "0-0 on both", losses == (0, 0) and failed == (0, 0))
    report(p, "ISR changes after the cut (ms, ISR)", sim_changes, real_changes)
    assert shrink_ok and hold_ok and fenced == (False, False) and rejoin_ok, (shrinks, holds, fenced, rejoins)
    assert losses == (0, 0) and failed == (0, 0), (losses, failed)


def _syn_linear_timeouts() -> int:
    """This kernel's tcp_syn_linear_timeouts (SYN retransmissions a second apart before the doubling; 0 on a
    kernel before 6.5, which doubles from the first)."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_syn_linear_timeouts").read_text())
    except (OSError, ValueError):
        return 0


# --- link_delay through Toxiproxy ------------------------------------------------------------------------------


def test_a_delay_on_the_followers_replication_link_adds_two_trips_to_acks_all(pair: Callable[[str], Pair]) -> None:
    """link_delay on follower 1 (its fetch requests to the leader and the data coming back, +100 ms each way; on
    the real cluster its replica fetcher reaches the leader through a Toxiproxy proxy with a latency toxic).
    RF 2, acks=all: a produce completes when the follower's fetch after the append reports the new log end
    offset (Partition.maybeIncrementLeaderHW -> DelayedProduce.tryComplete). A record every 250 ms finds the
    follower's fetch parked in the leader's purgatory (replica.fetch.wait.max.ms 500 ms), so the append
    answers it at once: the data goes back (+100 ms), the next fetch comes (+100 ms). The median purgatory
    time (RemoteTimeMs) during the delay minus the median before it is two trips, 200 ms.
    Tolerance -10/+50 ms: the toxic holds each chunk exactly its latency after reading it, never less, and
    the follower's append and the loopback trips are in both medians (subtracted); a broker, the proxy or the
    follower descheduled on two shared cores adds tens of ms, never takes any away. The window leaves out
    500 ms after the toxic comes (a fetch already in flight is delayed one way only) and before it goes (what
    the toxic holds then goes at once)."""
    p = pair("delayed_follower_link")
    fault = p.scenario.faults[0]
    assert fault.type == "link_delay"
    at, end, extra = float(fault.at), float(fault.at + fault.duration), 100.0
    medians = [(p50(rows(r, "Produce", before_ms=at), "RemoteTimeMs"),
                p50(rows(r, "Produce", after_ms=at + 500, before_ms=end - 500), "RemoteTimeMs")) for r in (p.sim, p.real)]
    report(p, "acks=all purgatory p50 before-during the delay (ms)", *medians)
    shifts = [during - before for before, during in medians]
    low, high = 2 * extra - 10, 2 * extra + 50
    ok = all(low <= v <= high for v in shifts)
    agree(p, "acks=all purgatory p50 during minus before a 100 ms follower link delay (ms)", shifts[0], shifts[1],
          f"{low:g}..{high:g} (two trips)", ok)
    delayed = (len(rows(p.sim, "FetchFollower", client="follower-1")), len(rows(p.real, "FetchFollower",
                                                                              client="follower-1")))
    report(p, "FetchFollower requests of follower 1", *delayed)
    losses = lost(p.sim), lost(p.real)
    agree(p, "acks=all records lost after their acknowledgement", *losses, "0 on both", losses == (0, 0))
    assert losses == (0, 0), losses
    assert low <= shifts[0] <= high, shifts  # kafkasim's own clock: no machine load excuses it
    assert_or_contended(p, ok, shifts)


# --- TCP under the links: a short outage delays, a reset loses ------------------------------------------------


def worst_produce_around(result: RunResult, t_ms: float, window_ms: float = 1000.0) -> float:
    """The longest produce latency (acknowledgement minus the batch's first intended send) of the batches
    begun within ``window_ms`` of ``t_ms``."""
    rec = result.records
    first = rec["first_intended_ms"].to_numpy(dtype=float)
    ack = rec["ack_ms"].to_numpy(dtype=float)
    keep = (first >= t_ms - window_ms) & (first < t_ms + window_ms) & np.isfinite(ack)
    return float((ack[keep] - first[keep]).max()) if keep.any() else float("nan")


def test_a_100_ms_outage_of_the_producers_link_costs_one_retransmission_and_no_retry(
        pair: Callable[[str], Pair]) -> None:
    """The producer's links down for 100 ms (a pulled cable: the router drops its packets, no RST). What the
    outage lost is retransmitted by TCP after the retransmission timeout (Linux: the smoothed RTT's estimate,
    at least tcp_rto_min 200 ms), once the link is back, and the stream resumes on the same connection: the
    worst produce latency is about one retransmission timeout, nothing is retried (request.timeout.ms, 30 s,
    never expires) and nothing is written twice although the producer is not idempotent. Measured on Kafka
    4.3.1 by hand (the issue that asked for TCP under the links): 207 ms, one connection throughout.
    Tolerance: 190 ms (the 200 ms floor less a loopback RTT's rounding) to 414 ms (twice the hand-measured
    207 ms: a descheduled broker or client adds, never takes away)."""
    if (why := netns.unavailable_reason()) is not None:
        if os.environ.get(REQUIRED_ENV) == "1":
            pytest.fail(f"{REQUIRED_ENV}=1 and {why}", pytrace=False)
        pytest.skip(why)
    p = pair("producer_link_blackhole")
    fault = p.scenario.faults[0]
    assert fault.type == "link_drop"
    # The outage as the real run applied it: its rules in place from the cut's return to the heal's start at
    # least (kafkasim.real.runner.FaultSchedule counts the length from the cut's return).
    cut, heal = (p.real.run_info["faults"][i] for i in (0, 1))
    applied = (round(cut["done_ms"], 1), round(heal["applied_ms"], 1))
    report(p, "the outage (ms from time 0; real: cut begun, heal applied)", (float(fault.at),
           float(fault.at + fault.duration)), applied)
    assert heal["done_ms"] - cut["applied_ms"] >= float(fault.duration) - 1, (cut, heal)
    worst = worst_produce_around(p.sim, float(fault.at)), worst_produce_around(p.real, real_fault_ms(p))
    low, high = 190.0, 414.0
    worst_ok = all(low <= v <= high for v in worst)
    agree(p, "worst produce latency around a 100 ms outage of the producer's link (ms)", *worst,
          f"{low:g}..{high:g} (one retransmission timeout)", worst_ok)
    retried = tuple(int((r.records["attempts"].to_numpy() > 1).sum()) for r in (p.sim, p.real))
    twice = duplicated(p.sim, "writer"), duplicated(p.real, "writer")
    failed = tuple(int((r.records["error"].to_numpy() != 0).sum()) for r in (p.sim, p.real))
    agree(p, "batches retried, written twice, failed", (retried[0], twice[0], failed[0]),
          (retried[1], twice[1], failed[1]), "0-0-0 on both", retried == twice == failed == (0, 0))
    report(p, "produce p50-p99 over the run (ms)", *(latency(r) for r in (p.sim, p.real)))
    assert retried == twice == failed == (0, 0), (retried, twice, failed)
    assert low <= worst[0] <= high, worst  # kafkasim's own clock: no machine load excuses it
    assert_or_contended(p, worst_ok, worst)


def test_a_reset_loses_the_responses_in_flight_and_only_idempotence_keeps_their_retries_single(
        pair: Callable[[str], Pair]) -> None:
    """Each producer's connections closed while produce requests are in flight (on the real cluster its own
    Toxiproxy proxies close every connection through them, both sides). The producer sees the disconnect at
    once (NetworkClient.handleDisconnections): every request in flight fails with a network error and its
    batch is retried on a new connection (Sender.completeBatch, RecordAccumulator.reenqueue); the broker had
    appended those it had read and drops their responses. The idempotent producer's retries carry the same
    sequence numbers and are answered with the original offsets (ProducerStateManager): none written twice,
    on both engines; the other producer's are appended again: written twice on both."""
    p = pair("idempotence_and_a_lost_response")
    dups = duplicated(p.sim, "idempotent"), duplicated(p.real, "idempotent")
    agree(p, "idempotent producer: batches written twice after its reset", *dups, "0 on both", dups == (0, 0))
    twice = duplicated(p.sim, "not-idempotent"), duplicated(p.real, "not-idempotent")
    written_twice = all(n > 0 for n in twice)
    agree(p, "not-idempotent producer: batches written twice after its reset", *twice, "> 0 on both",
          written_twice)
    retried = tuple(tuple(int(((r.records["attempts"].to_numpy() > 1)
                               & (r.records["producer"].astype(str) == name).to_numpy()).sum())
                          for name in ("idempotent", "not-idempotent")) for r in (p.sim, p.real))
    # kafkasim's count is its own; the real one is inferred (kafkasim.real.assemble attributes the retries the
    # load driver saw to batches) and depends on what was in flight at the reset's instant: one run found 0 for
    # the idempotent producer and 4 for the other, another 5 and 2. Reported, asserted on kafkasim only.
    retried_ok = all(n > 0 for n in retried[0])
    report(p, "batches retried after the reset (idempotent, not-idempotent)", retried[0], retried[1])
    failed = tuple(int((r.records["error"].to_numpy() != 0).sum()) for r in (p.sim, p.real))
    agree(p, "batches failed", *failed, "0 on both (a network error is retriable)", failed == (0, 0))
    worst = tuple(tuple(worst_produce_around(r, float(f.at)) for f in p.scenario.faults) for r in (p.sim, p.real))
    report(p, "worst produce latency around each reset (ms)", *worst)
    assert dups == (0, 0) and twice[0] > 0 and retried_ok and failed == (0, 0), (dups, twice, retried, failed)
    if twice[1] == 0:
        # Kafka writes a retry twice only when the broker had appended the lost request: which requests the real
        # reset caught is its instant's luck, as the retries' count is (one CI run retried one batch that had not
        # reached the log, and nothing was written twice). An expected failure that says so, not a pass.
        pytest.xfail(f"the real reset caught none of the not-idempotent producer's appended batches (retried "
                     f"{retried[1][1]}, written twice 0): the lesson shows on kafkasim only this run")
