"""What a real run is planned from, without Java: the records it sends are the simulated run's, what it cannot
take is refused with one line, what it ignores is listed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kafkasim import load_scenario, run_scenario
from kafkasim.clients.accumulator import RECORD_BATCH_OVERHEAD_BYTES
from kafkasim.real.config_map import kafka_configs, not_applied, refusals
from kafkasim.real.schedule import planned_records
from kafkasim.run.cluster_layout import cluster_layout
from kafkasim.scenario import with_overrides

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, overrides", [
    ("quickstart", ["duration=3s"]),
    ("nic_bound_cluster", ["duration=2s"]),  # round-robin over 3 partitions, 3 000 records/s
])
def test_the_schedule_is_the_simulated_runs_records(name: str, overrides: list[str]) -> None:
    scenario = with_overrides(load_scenario(ROOT / f"scenarios/{name}.yaml"), overrides)
    planned = list(planned_records(scenario, scenario.producers[0], scenario.seed))
    records = run_scenario(scenario).records
    # Every batch of the simulated run starts with a record of the schedule, at the same intended time, on the
    # same partition, and the batches hold exactly the scheduled records.
    assert int(records["record_count"].sum()) == len(planned)
    intended = {round(r.intended_ms, 6): r for r in planned}
    for first, partition in zip(records["first_intended_ms"], records["partition"], strict=True):
        record = intended[round(float(first), 6)]
        assert record.partition in (-1, int(partition))
    sizes = np.array([r.size for r in planned])
    assert int(records["size_bytes"].sum()) == int(sizes.sum()) + RECORD_BATCH_OVERHEAD_BYTES * len(records)


def test_what_a_real_cluster_cannot_take_is_refused_one_line_each() -> None:
    scenario = load_scenario(ROOT / "scenarios/slow_follower_isr_shrink.yaml")
    assert [line.split(":")[0] for line in refusals(scenario)] == ["faults[0] (slow_disk follower-2)"]
    scenario = load_scenario(ROOT / "scenarios/idempotence_and_a_lost_response.yaml")
    assert [line.split(")")[0] for line in refusals(scenario)] == ["faults[0] (connection_reset idempotent",
                                                                   "faults[1] (connection_reset not-idempotent"]
    scenario = load_scenario(ROOT / "scenarios/segment_roll_wakes_fetches.yaml")
    assert [line.split(":")[0] for line in refusals(scenario)] == ["topics[0].segment.bytes"]
    assert refusals(load_scenario(ROOT / "scenarios/leader_crash.yaml")) == []
    assert all("\n" not in line for line in refusals(load_scenario(ROOT / "scenarios/unclean_election_loses_acks1.yaml")))


def test_simulator_only_knobs_are_listed_and_kafka_keys_pass_through() -> None:
    scenario = load_scenario(ROOT / "scenarios/acks_compared.yaml")
    notes = not_applied(scenario)
    assert notes[0].startswith("broker.costs") and any("own link" in n for n in notes)
    assert "controller.metadata_apply" not in notes
    applied = not_applied(with_overrides(scenario, ["controller.metadata_apply=5ms"]))
    assert "controller.metadata_apply" in applied
    configs = kafka_configs(scenario, cluster_layout(scenario, seed=scenario.seed))
    assert sorted(configs.brokers) == [0, 1, 2]
    assert configs.brokers[1]["replica.fetch.wait.max.ms"] == "500"
    assert configs.controller["broker.session.timeout.ms"] == "9000"
    assert configs.topics == [{"name": "events", "replicas": [[0, 1, 2]],
                               "config": configs.topics[0]["config"]}]
    assert configs.topics[0]["config"]["min.insync.replicas"] == "2"
    assert [p["acks"] for p in configs.producers] == ["0", "1", "all"]
    assert configs.producers[2]["client.id"] == "acks-all" and "partitioner" not in configs.producers[2]


def test_topics_get_the_placers_replicas_for_the_seed() -> None:
    scenario = load_scenario(ROOT / "scenarios/nic_bound_cluster.yaml")
    layout = cluster_layout(scenario, seed=scenario.seed)
    configs = kafka_configs(scenario, layout)
    assert configs.topics[0]["replicas"] == [list(layout.replicas[tp]) for tp in layout.partitions_by_topic["clicks"]]
