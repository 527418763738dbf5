"""Results per broker: the requests table's `broker` column, the gauges of every broker and partition, the
summary's `per_broker` view."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kafkasim.run.engine import run_scenario

from .support import consumer, leader_crash, producer, scenario


def test_every_request_row_names_its_broker_including_those_that_never_arrived() -> None:
    result = run_scenario(
        scenario(
            duration="3s",
            producers=[producer("p1", acks="all"), producer("p0", acks=0)],
            consumers=[consumer("c1", **{"request.timeout.ms": 1000})],
            # Down longer than the consumer's request timeout: its fetch never arrives.
            faults=[{"type": "link_drop", "target": "c1", "at": "1s", "duration": "1500ms", "direction": "to_broker"}],
        )
    )
    rows = result.requests
    assert rows["broker"].dtype == np.int32
    assert set(rows["api"]) == {"Produce", "FetchConsumer", "FetchFollower"}
    # Without a cluster section broker 0 leads every partition and handles every request.
    assert (rows["broker"] == 0).all()
    lost = rows[rows["client_timeout"]]
    assert len(lost) == 1 and np.isnan(lost["start_ms"].iloc[0]) and lost["broker"].iloc[0] == 0


def _pairs(result) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    ts = result.timeseries
    return set(zip(ts["metric"], ts["entity"], strict=True))


def test_every_broker_has_its_request_plane_and_purgatory_gauges_and_every_replica_its_leo() -> None:
    result = run_scenario(scenario(duration="1s", topic={"partitions": 2}))
    pairs = _pairs(result)
    for broker in ("broker-0", "broker-1", "broker-2"):  # the leader and its two followers
        for metric in ("RequestQueueSize", "RequestHandlerAvgIdlePercent", "NetworkProcessorAvgIdlePercent",
                       "LeaderCount", "UnderReplicatedPartitions", "UnderMinIsrPartitionCount"):
            assert (metric, broker) in pairs, (metric, broker)
        for purgatory in ("Produce", "Fetch"):
            assert ("PurgatorySize", f"{broker}/{purgatory}") in pairs
            assert ("NumDelayedOperations", f"{broker}/{purgatory}") in pairs
        assert ("ResponseQueueSize", f"{broker}/processor-0") in pairs
    for partition in ("t-0", "t-1"):
        for metric in ("HighWatermark", "IsrSize", "UnderMinIsr", "LeaderId"):
            assert (metric, partition) in pairs
        for replica in (0, 1, 2):
            assert ("LogEndOffset", f"{partition}/replica-{replica}") in pairs
    ts = result.timeseries
    last = ts[ts["time_ms"] == ts["time_ms"].max()].set_index(["metric", "entity"])["value"]
    assert last[("LeaderCount", "broker-0")] == 2 and last[("LeaderCount", "broker-1")] == 0
    assert last[("LeaderId", "t-1")] == 0
    # Only the leader handles requests and parks fetches today; the followers' purgatories stay empty.
    assert ts[ts["entity"] == "broker-0/Fetch"]["value"].max() > 0
    assert ts[ts["entity"].isin(["broker-1/Fetch", "broker-2/Produce"])]["value"].max() == 0
    assert ts[(ts["metric"] == "RequestHandlerAvgIdlePercent") & (ts["entity"] == "broker-1")]["value"].min() == 1.0


def test_many_partitions_are_sampled_every_few_samples_all_at_the_same_instants() -> None:
    from kafkasim.scenario.limits import PARTITIONS_PER_SAMPLE, partition_sample_stride

    assert [partition_sample_stride(n) for n in (1, PARTITIONS_PER_SAMPLE, PARTITIONS_PER_SAMPLE + 1, 1000)] == [
        1, 1, 2, 10]
    result = run_scenario(scenario(duration="600ms", warmup="0ms", topic={"partitions": 250},
                                   sample_interval="50ms", producers=[producer("p1", rate="50/s")]))
    ts = result.timeseries
    queue_times = sorted(set(ts[ts["metric"] == "RequestQueueSize"]["time_ms"]))
    hw = ts[ts["metric"] == "HighWatermark"]
    assert queue_times == [50.0 * k for k in range(12)]
    assert sorted(set(hw["time_ms"])) == [150.0 * k for k in range(4)]  # every third sample: ceil(250/100)
    assert (hw.groupby("time_ms").size() == 250).all()


@pytest.mark.parametrize(("brokers", "partitions", "hardware"), [
    (None, 4, {}), (3, 6, {}), (3, 150, {}),
    # A disk (three gauges per broker) and cores (two): the estimate left the disk's out.
    (3, 6, {"topic": {"flush.messages": 1}, "broker": {"cores": 2}})])
def test_the_scenario_check_estimates_the_gauge_rows_a_run_writes(brokers: int | None, partitions: int,
                                                                  hardware: dict[str, Any]) -> None:
    # The check that refuses runs with more than MAX_GAUGE_ROWS gauge rows estimates them per sample; it
    # must not undercount (it counted 2 + 2 * RF rows per partition every sample and ten per run before the
    # per-broker and per-partition gauges, and ignored the partition stride).
    from kafkasim.scenario.scenario import gauge_rows_per_sample

    sections: dict[str, Any] = {"duration": "1s", "sample_interval": "100ms",
                                "topic": {"partitions": partitions, **hardware.get("topic", {})}}
    if "broker" in hardware:
        sections["broker"] = hardware["broker"]
    if brokers is not None:
        sections["cluster"] = {"brokers": brokers}
    s = scenario(**sections)
    rows = run_scenario(s).timeseries
    samples = rows["time_ms"].nunique()
    estimate = gauge_rows_per_sample(s) * samples
    assert len(rows) <= estimate <= 1.3 * len(rows)


def test_each_broker_says_the_cores_its_threads_spent_on_modelled_work_after_the_warm_up() -> None:
    """kafkasim.run.cores: a handler's service times, not its waits. One broker, acks=1 at 200/s, every
    request 0.1 ms of handler work and nothing else: 0.1 ms x the produces taken after the warm-up."""
    result = run_scenario(scenario(
        duration="3s", warmup="1s",
        topics=[{"name": "t", "partitions": 1, "replication.factor": 1, "min.insync.replicas": 1}],
        producers=[producer("p1", acks=1, rate="200/s")],
        broker={"costs": {"request": "0.1ms", "append_per_kib": "0ms", "read_per_kib": "0ms"}},
    ))
    rows = result.requests
    taken = int(((rows["api"] == "Produce") & (rows["dequeue_ms"] >= 1000.0)).sum())
    cores = result.summary["per_broker"]["broker-0"]["cores"]
    assert taken > 350
    assert cores["request handlers"] == pytest.approx(0.1 * taken / 2000.0, abs=1e-4)
    assert cores["data plane"] == pytest.approx(cores["request handlers"] + cores["network threads"], abs=2e-4)
    assert cores["replica fetchers"] == 0.0


def test_followers_fetchers_and_a_restarted_brokers_threads_count_too() -> None:
    """The meter is the broker process's, across its restarts; followers' appends are their fetchers' work."""
    steady = run_scenario(scenario(duration="4s", producers=[producer("p1", rate="300/s")])).summary["per_broker"]
    assert steady["broker-0"]["cores"]["data plane"] > 0
    assert all(steady[f]["cores"]["replica fetchers"] > 0 for f in ("broker-1", "broker-2"))
    assert all(steady[f]["cores"]["data plane"] == 0 for f in ("broker-1", "broker-2"))
    # broker-1 leads t-0 until it crashes at 5 s, and fetches it as a follower once back at 20 s: its request
    # plane's work before the crash and its new fetchers' after the restart both count.
    crashed = run_scenario(leader_crash("25s")).summary["per_broker"]["broker-1"]["cores"]
    assert crashed["data plane"] > 0 and crashed["replica fetchers"] > 0
