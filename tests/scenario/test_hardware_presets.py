"""`hardware: {preset: ...}`: a named host fills the hardware fields a scenario leaves out, field by field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.real.config_map import not_applied
from kafkasim.scenario import ScenarioError, load_scenario
from kafkasim.scenario.disk import DiskConfig
from kafkasim.scenario.distributions import DurationConstant, DurationExponential, DurationLogNormal
from kafkasim.scenario.hardware import HOST_PRESETS, KREPS_FITTED
from kafkasim.scenario.overrides import with_overrides
from kafkasim.scenario.stalls import STALL_PRESETS

from .samples import MINIMAL

CLUSTER = MINIMAL + "cluster: {brokers: 3}\n"


def test_without_hardware_nothing_changes() -> None:
    s = load_scenario(CLUSTER)
    assert s.hardware is None
    assert s.broker.disk == DiskConfig()
    assert s.cluster is not None and s.cluster.nic.bandwidth == 1.25e9
    assert s.network.default_link.bandwidth == 1.25e9
    assert s.network.default_link.latency == DurationLogNormal(median=0.5, p99=2.0)
    assert s.broker.costs.per_partition == DurationConstant(value=0.0)


def test_the_preset_fills_every_hardware_field() -> None:
    s = load_scenario(CLUSTER + "hardware: {preset: kreps-2014}\nproducers: [{name: p, topic: t, rate: 10/s}]\n")
    assert s.cluster is not None and s.cluster.nic.bandwidth_in == s.cluster.nic.bandwidth_out == 1.25e8
    assert s.network.default_link.bandwidth == 1.25e8
    assert s.network.default_link.latency == DurationLogNormal(median=0.1, p99=0.4)
    assert s.producers[0].link == s.network.default_link  # endpoints inherit the preset's link
    assert s.followers.link == s.network.default_link
    assert s.broker.disk.fsync == DurationConstant(value=8.0)
    assert s.broker.disk.write_per_kib == DurationConstant(value=0.008)
    assert s.broker.disk.page_cache == 24 * 1024**3
    # Fitted to the source's own figures (docs/make_published.py --fit), as KREPS_FITTED holds them.
    assert s.broker.costs.per_partition == DurationConstant(value=KREPS_FITTED["per_partition_ms"])
    assert s.broker.costs.request == DurationConstant(value=KREPS_FITTED["broker_request_ms"])
    assert s.broker.costs.append_per_kib == DurationConstant(value=0.005)  # no source: kafkasim's default stays
    assert s.producers[0].costs is not None
    assert s.producers[0].costs.per_request == DurationConstant(value=KREPS_FITTED["producer_request_ms"])
    assert s.producers[0].costs.per_batch == DurationConstant(value=0.0)
    assert s.broker.stalls is not None and s.broker.stalls.interval == DurationExponential(
        mean=KREPS_FITTED["stall_interval_ms"])
    assert s.broker.stalls.pause == STALL_PRESETS["jvm-g1-young"][1]
    assert {b: s.broker_for(b).disk for b in s.broker_ids} == {b: s.broker.disk for b in s.broker_ids}
    assert {b: s.broker_for(b).stalls for b in s.broker_ids} == {b: s.broker.stalls for b in s.broker_ids}


def test_the_2014_preset_fills_the_consumers_costs_and_what_a_client_writes_wins() -> None:
    s = load_scenario(CLUSTER + "hardware: {preset: kreps-2014}\n"
                      "producers: [{name: p, topic: t, rate: 10/s}, {name: q, topic: t, rate: 10/s, costs: {per_batch: 1ms}}]\n"
                      "consumers: [{name: c, topic: t}, {name: d, topic: t, costs: {per_record: 1us}}]\n"
                      "broker: {stalls: {}}\n")
    assert s.consumers[0].costs is not None and s.consumers[0].costs.per_poll == DurationLogNormal(
        median=KREPS_FITTED["consumer_poll_median_ms"], p99=KREPS_FITTED["consumer_poll_p99_ms"])
    # A client that writes its own costs keeps them whole: the preset fills no key of them.
    assert s.producers[1].costs is not None and s.producers[1].costs.per_request == DurationConstant(value=0.0)
    assert s.consumers[1].costs is not None and s.consumers[1].costs.per_poll == DurationConstant(value=0.0)
    assert s.broker.stalls is not None and s.broker.stalls.interval is None  # `stalls: {}`: no stalls, as written
    dumped = s.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert "costs" not in dumped["producers"][0] and "costs" not in dumped["consumers"][0]


def test_the_cloud_preset() -> None:
    s = load_scenario(CLUSTER + "hardware: {preset: aws-i3en-6xlarge}\n")
    assert s.cluster is not None and s.cluster.nic.bandwidth == 3.125e9
    assert s.network.default_link.bandwidth == 6.25e8
    assert s.broker.disk.page_cache == 184 * 1024**3


def test_what_the_scenario_writes_wins_field_by_field() -> None:
    s = load_scenario(
        CLUSTER.replace("cluster: {brokers: 3}", "cluster: {brokers: 3, nic: {out: 2Gbit/s}, overrides: "
                                                 "[{broker: 1, disk: {read_latency: 1ms}}, {broker: 2, costs: "
                                                 "{request: 1ms}}]}")
        + "hardware: {preset: kreps-2014}\nbroker:\n  disk: {fsync: 2ms}\n  costs: {per_partition: 5us}\n"
        "network:\n  default_link: {latency: 1ms}\nproducers: [{name: p, topic: t, rate: 10/s, link: {bandwidth: 1Gbit/s}}]\n"
    )
    assert s.broker.disk.fsync == DurationConstant(value=2.0)
    assert s.broker.disk.write_per_kib == DurationConstant(value=0.008)
    assert s.broker.costs.per_partition == DurationConstant(value=0.005)
    assert s.cluster is not None and (s.cluster.nic.bandwidth_in, s.cluster.nic.bandwidth_out) == (1.25e8, 2.5e8)
    assert s.network.default_link.latency == DurationConstant(value=1.0)
    assert s.network.default_link.bandwidth == 1.25e8
    assert s.producers[0].link is not None and s.producers[0].link.bandwidth == 1.25e8
    one, two = s.broker_for(1), s.broker_for(2)
    # An override's own disk: its keys, then the preset's (not DiskConfig's defaults).
    assert one.disk.read_latency == DurationConstant(value=1.0) and one.disk.fsync == DurationConstant(value=8.0)
    assert two.disk == s.broker.disk and two.costs.per_partition == DurationConstant(value=0.005)
    assert two.costs.request == DurationConstant(value=1.0)


def test_preset_values_are_not_marked_as_written() -> None:
    s = load_scenario(CLUSTER + "hardware: {preset: kreps-2014}\nbroker:\n  disk: {fsync: 2ms}\n")
    dumped = s.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert dumped["broker"] == {"disk": {"fsync": "2ms"}}
    assert "network" not in dumped and dumped["cluster"] == {"brokers": 3}


def test_set_of_one_field_keeps_the_rest_of_the_preset() -> None:
    s = load_scenario(CLUSTER + "hardware: {preset: kreps-2014}\n")
    t = with_overrides(s, ["broker.disk.fsync=3ms"])
    assert t.broker.disk.fsync == DurationConstant(value=3.0)
    assert t.broker.disk.write_per_kib == DurationConstant(value=0.008)
    assert t.network.default_link == s.network.default_link and t.cluster == s.cluster


def test_set_of_the_preset_swaps_every_value_the_author_did_not_write() -> None:
    s = load_scenario(CLUSTER + "hardware: {preset: kreps-2014}\nbroker:\n  disk: {fsync: 2ms}\n")
    t = with_overrides(s, ["hardware.preset=aws-i3en-6xlarge"])
    assert t.broker.disk.fsync == DurationConstant(value=2.0)  # the author's
    assert t.broker.disk.write_per_kib == DurationConstant(value=0.0005)  # the new preset's
    assert t.cluster is not None and t.cluster.nic.bandwidth == 3.125e9
    assert t.broker.costs.per_partition == DurationConstant(value=0.0)  # the cloud preset has none
    u = with_overrides(load_scenario(CLUSTER), ["hardware.preset=kreps-2014"])
    assert u.broker.disk.fsync == DurationConstant(value=8.0)


def test_an_unknown_preset_is_refused_naming_the_allowed_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(CLUSTER + "hardware: {preset: laptop}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    [p] = info.value.problems
    assert str(p) == f"{path}:7: hardware.preset: got 'laptop' (allowed: kreps-2014, aws-i3en-6xlarge)"
    path.write_text(CLUSTER + "hardware: {preset: kreps-2015}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:7: hardware.preset: got 'kreps-2015', did you mean 'kreps-2014'?"]


def test_a_preset_without_a_name_is_refused() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(CLUSTER + "hardware: {}\n")
    assert [p.path for p in info.value.problems] == ["hardware.preset"]


def test_every_preset_supplies_only_fields_the_models_have() -> None:
    from kafkasim.scenario.broker import HandlerCosts

    for host in HOST_PRESETS.values():
        assert set(host.disk) <= set(DiskConfig.model_fields)
        assert set(host.costs) <= set(HandlerCosts.model_fields)
        # The preset's values are valid field values.
        DiskConfig.model_validate(DiskConfig.model_construct(**host.disk).model_dump(mode="json", by_alias=True))


def test_a_real_cluster_run_lists_the_preset_among_what_it_does_not_apply() -> None:
    assert not any(n.startswith("hardware") for n in not_applied(load_scenario(CLUSTER)))
    notes = not_applied(load_scenario(CLUSTER + "hardware: {preset: kreps-2014}\n"))
    assert any(n.startswith("hardware (preset kreps-2014") for n in notes)
    assert any(n.startswith("cluster.nic") for n in notes)


def test_a_bare_preset_name_is_refused_saying_how_to_write_it() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(CLUSTER + "hardware: kreps-2014\n")
    [p] = info.value.problems
    assert (p.line, p.path) == (7, "hardware")
    assert p.message == ("is text 'kreps-2014'; name a preset as a mapping, e.g. {preset: kreps-2014} (allowed "
                         "presets: kreps-2014, aws-i3en-6xlarge)")
