"""A broker host's cores (``broker.cores``) at run time: the network threads', request handlers' and fetcher
threads' service times wait for a free core; unset (or as many cores as threads) changes nothing; the gauges;
a crash drops the work queued for a core; deterministic; the key's validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kafkasim.run import run_scenario
from kafkasim.run.engine import Engine
from kafkasim.scenario import ScenarioError

from .support import consumer, producer, scenario
from .test_determinism import table_hash

HANDLER_MS = 1.0
# Every service time but the handler's is free: the handler's 1 ms is all the CPU a produce costs.
ONLY_HANDLER_COSTS = {"request": f"{HANDLER_MS}ms", "append_per_kib": "0ms", "read_per_kib": "0ms",
                      "network_read": "0ms", "network_read_per_kib": "0ms", "network_send": "0ms",
                      "network_send_per_kib": "0ms"}


def _two_producers(cores: int | None, **extra: Any) -> Any:
    broker: dict[str, Any] = {"costs": ONLY_HANDLER_COSTS}
    if cores is not None:
        broker["cores"] = cores
    # One broker, two producers sending at the same instants (constant arrivals, the same rate): their
    # produces reach the broker together and two handler threads take them at once.
    return scenario(
        duration="2s",
        topic={"replication.factor": 1, "min.insync.replicas": 1},
        broker=broker,
        producers=[producer("p1", acks=1, rate="100/s"), producer("p2", acks=1, rate="100/s")],
        **extra,
    )


def _produces(result: Any) -> Any:
    rows = result.requests
    return rows[(rows["api"] == "Produce") & (rows["error_name"] == "NONE")]


def test_cores_unset_or_as_many_as_threads_gives_today_s_timings_exactly() -> None:
    base = run_scenario(scenario(duration="1500ms", consumers=[consumer("c1")]))
    # 3 network threads + 8 handlers + the fetcher threads: 64 cores are never all busy.
    many = run_scenario(scenario(duration="1500ms", consumers=[consumer("c1")], broker={"cores": 64}))
    assert table_hash(base.requests) == table_hash(many.requests)
    assert table_hash(base.records) == table_hash(many.records)
    assert not base.timeseries["metric"].isin(["CpuUtilisation", "CpuRunQueue"]).any()
    assert many.timeseries["metric"].isin(["CpuUtilisation", "CpuRunQueue"]).any()


def test_one_core_makes_the_second_of_two_concurrent_handlers_wait_for_the_first() -> None:
    unlimited, one = _produces(run_scenario(_two_producers(None))), _produces(run_scenario(_two_producers(1)))
    assert len(unlimited) == len(one) > 300
    # Unlimited: the two handlers run side by side, each 1 ms.
    assert np.allclose(unlimited["LocalTimeMs"], HANDLER_MS)
    ends = np.sort(unlimited["local_complete_ms"].to_numpy())
    assert (np.diff(ends) < 1e-9).sum() > 100  # pairs that ended together
    # One core: the second waits for the first's 1 ms, so it ends 1 ms later (LocalTimeMs 2 ms), and no two
    # handlers' CPU ever overlaps (a produce's 1 ms on the core is the end of its LocalTimeMs).
    local = one["LocalTimeMs"].to_numpy()
    assert np.isclose(local, HANDLER_MS).sum() == pytest.approx(len(one) / 2, abs=2)
    assert np.isclose(local, 2 * HANDLER_MS).sum() == pytest.approx(len(one) / 2, abs=2)
    ends = np.sort(one["local_complete_ms"].to_numpy())
    assert (np.diff(ends) >= HANDLER_MS - 1e-9).all()


def test_the_cpu_gauges_are_the_busy_share_of_the_cores_and_the_mean_run_queue() -> None:
    result = run_scenario(_two_producers(2))
    ts = result.timeseries
    util = ts[(ts["metric"] == "CpuUtilisation") & (ts["entity"] == "broker-0")]
    queue = ts[(ts["metric"] == "CpuRunQueue") & (ts["entity"] == "broker-0")]
    assert len(util) == len(queue) > 30
    # Each produce is 1 ms on a core: the busy core-ms the gauge reports (utilisation x 2 cores x the 50 ms
    # interval) are the produces handled between the first sample (which has no interval) and the last one,
    # give or take the two whose millisecond straddles those samples.
    interval = 50.0
    busy = float((util["value"] * 2 * interval).sum())
    first, last = float(ts["time_ms"].min()), float(ts["time_ms"].max())
    ends = _produces(result)["local_complete_ms"]
    produces = int(((ends > first) & (ends <= last)).sum())
    assert produces > 300
    assert busy == pytest.approx(produces * HANDLER_MS, abs=2 * HANDLER_MS)
    assert util["value"].max() <= 1.0
    assert float(queue["value"].max()) == 0.0  # two cores, two busy threads: nobody waits
    one = run_scenario(_two_producers(1)).timeseries
    waits = one[(one["metric"] == "CpuRunQueue") & (one["entity"] == "broker-0")]["value"]
    # One core, every 10 ms two produces at once: the second's handler waits 1 ms for the first's, and the
    # network thread writing the first's response (0 ms of work) waits 1 ms for the second's: 2 ms of waiting
    # every 10 ms = 0.2 threads waiting on average.
    assert float(waits.iloc[10:].mean()) == pytest.approx(0.2, rel=0.05)


@pytest.mark.pure_only  # wraps BrokerServer.crash on the instance, which a compiled BrokerServer refuses
def test_a_crash_drops_the_work_queued_for_a_core_and_the_restarted_process_serves() -> None:
    s = scenario(
        seed=3, duration="4s",
        cluster={"brokers": 3, "overrides": [{"broker": 0, "cores": 1}]},
        topic={"partitions": 3},
        broker={"cores": 2, "costs": {"request": "2ms"}, "startup": {"process_start": "50ms", "log_load": "50ms"}},
        producers=[producer("p1", rate="1500/s", arrival="poisson", partitioner="round_robin")],
        consumers=[consumer("c1")],
        faults=[{"type": "crash", "target": "broker-0", "at": "1s", "restart_after": "500ms"},
                {"type": "pause", "target": "broker-1", "at": "2s", "duration": "200ms"}],
    )
    engine = Engine(s, check_invariants=True)
    broker_0 = engine.components.broker(0)
    cpu = broker_0.cpu
    assert cpu is not None and cpu.cores == 1
    at_crash: list[tuple[int, int]] = []
    crash = broker_0.crash

    def crash_and_look() -> None:
        queued = cpu.run_queue
        crash()
        at_crash.append((queued, cpu.run_queue))

    broker_0.crash = crash_and_look  # type: ignore[method-assign]
    result = engine.run()  # raises on a broken invariant
    # Threads were waiting for the core when the process died; none is left waiting after.
    assert len(at_crash) == 1 and at_crash[0][0] > 0 and at_crash[0][1] == 0
    assert engine.components.broker(1).cpu is not None and engine.components.broker(1).cpu.cores == 2
    rows = result.requests
    on_0 = rows[rows["broker"] == 0]
    # Nothing broker 0 took before its crash completes while it is down (its queued and running work is gone).
    down = (on_0["local_complete_ms"] > 1000.0) & (on_0["local_complete_ms"] < 1500.0)
    assert not down.any()
    assert (on_0["local_complete_ms"] > 1600.0).any()  # the new process serves on the same cores


def test_cores_are_deterministic() -> None:
    s = scenario(duration="1s", broker={"cores": 1}, consumers=[consumer("c1")],
                 producers=[producer("p1", rate="2000/s", arrival="poisson")])
    a, b = run_scenario(s), run_scenario(s)
    for table in ("requests", "records", "timeseries"):
        assert table_hash(getattr(a, table)) == table_hash(getattr(b, table))


@pytest.mark.parametrize("value", [0, -1, 2.5, "2", True, 1025])
def test_cores_must_be_a_whole_number_of_at_least_one(value: object) -> None:
    with pytest.raises(ScenarioError) as info:
        scenario(broker={"cores": value})
    [problem] = info.value.problems
    assert problem.path == "broker.cores", problem


def test_a_thread_waiting_for_a_core_is_busy_in_kafka_s_idle_meters() -> None:
    def idle(cores: int | None, metric: str) -> float:
        ts = run_scenario(_two_producers(cores)).timeseries
        rows = ts[(ts["metric"] == metric) & (ts["entity"] == "broker-0") & (ts["time_ms"] > 500.0)]
        return float(rows["value"].median())

    # Every 10 ms two produces of 1 ms each. Unlimited: 2 handler-ms of 8 x 10; processors never busy (0 ms).
    assert idle(None, "RequestHandlerAvgIdlePercent") == pytest.approx(1 - 2 / 80)
    assert idle(None, "NetworkProcessorAvgIdlePercent") == pytest.approx(1.0)
    # One core: the second handler also waits 1 ms (3 handler-ms), and the network thread writing the first
    # response waits 1 ms for the second handler's work (1 of 3 x 10 processor-ms).
    assert idle(1, "RequestHandlerAvgIdlePercent") == pytest.approx(1 - 3 / 80)
    assert idle(1, "NetworkProcessorAvgIdlePercent") == pytest.approx(1 - 1 / 30)


def test_a_run_on_a_real_cluster_lists_the_cores_among_what_it_does_not_apply_nor_passes_to_kafka() -> None:
    from kafkasim.real.config_map import kafka_configs, not_applied
    from kafkasim.run.cluster_layout import placed_layout

    assert not any("cores" in note for note in not_applied(scenario(cluster={"brokers": 3})))
    s = scenario(cluster={"brokers": 3, "overrides": [{"broker": 1, "cores": 4}]}, broker={"cores": 2})
    notes = [note for note in not_applied(s) if "cores" in note]
    assert notes == ["broker.cores, cluster.overrides[1].cores (the real brokers share this machine's cores)"]
    configs = kafka_configs(s, placed_layout(s))
    assert not any("cores" in key for props in configs.brokers.values() for key in props)
