"""A host NIC shared by the host's connections (kafkasim.network.nic), composed with the links."""

from __future__ import annotations

import random

import pytest
import simpy

from kafkasim.network.link import NetworkLink, NetworkPath
from kafkasim.network.nic import Nic
from kafkasim.sim.distributions import Constant


def _link(env, name, *, bandwidth=10_000.0, latency=1.0, egress=None, ingress=None):
    return NetworkLink(env, name, Constant(latency), random.Random(0), bandwidth, egress=egress, ingress=ingress)


def _send_all(env, sends):
    """sends: [(at_ms, link, size, name)] -> {name: arrival_ms}, after running the environment."""
    arrivals: dict[str, float] = {}
    order: list[str] = []
    for at, link, size, name in sends:
        def go(_e, link=link, size=size, name=name):
            link.send(size, lambda name=name: (arrivals.__setitem__(name, env.now), order.append(name)))
        env.timeout(at).callbacks.append(go)
    env.run()
    return arrivals, order


@pytest.mark.parametrize("nic_bandwidth", [100.0, 250.0, float("inf")])
def test_zero_load_latency_is_the_links_when_the_nics_are_no_slower(nic_bandwidth):
    sends = [(0, 500, "a"), (20, 100, "b"), (40, 1, "c")]

    def run(with_nics: bool):
        env = simpy.Environment()
        client, broker = Nic(env, "client", nic_bandwidth), Nic(env, "broker", nic_bandwidth)
        link = _link(env, "c/to_broker", bandwidth=100.0,
                     egress=client.outbound if with_nics else None, ingress=broker.inbound if with_nics else None)
        return _send_all(env, [(at, link, size, name) for at, size, name in sends])[0]

    assert run(True) == run(False) == {"a": 6.0, "b": 22.0, "c": 41.01}


def test_a_nic_slower_than_the_link_is_the_bottleneck_paid_once():
    env = simpy.Environment()
    broker = Nic(env, "broker", 50.0)
    link = _link(env, "c/to_broker", bandwidth=100.0, latency=1.0, ingress=broker.inbound)
    arrivals, _ = _send_all(env, [(0, link, 500, "a")])
    # Pipelined: latency 1 + 500 B at the slower 50 B/ms = 11 (not 1 + 5 + 10).
    assert arrivals == {"a": 11.0}


def test_two_connections_sharing_an_inbound_nic_get_its_bandwidth_together():
    env = simpy.Environment()
    broker = Nic(env, "broker", 1_000.0)  # 1 MB/s
    a = _link(env, "a/to_broker", ingress=broker.inbound)  # 10 MB/s links each
    b = _link(env, "b/to_broker", ingress=broker.inbound)
    sends = [(0, link, 10_000, f"{link.name[0]}{k}") for k in range(10) for link in (a, b)]
    arrivals, _ = _send_all(env, sends)
    # 200 kB through a 1,000 B/ms NIC: one message every 10 ms from the first byte's arrival at 1 ms.
    assert sorted(arrivals.values()) == [1.0 + 10.0 * k for k in range(1, 21)]
    assert max(arrivals.values()) - 1.0 == pytest.approx(200_000 / 1_000.0)
    assert broker.inbound.bytes == 200_000 and broker.inbound.messages == 20
    # Each connection alone would have been done in 1 + 10 * 1 ms.
    assert a.bytes_sent / (max(arrivals.values()) - 1.0) == pytest.approx(500.0)  # half the NIC each


def test_independent_nics_do_not_interfere():
    env = simpy.Environment()
    nic_a, nic_b = Nic(env, "broker-0", 1_000.0), Nic(env, "broker-1", 1_000.0)
    a = _link(env, "a/to_broker", ingress=nic_a.inbound)
    b = _link(env, "b/to_broker", ingress=nic_b.inbound)
    sends = [(0, link, 10_000, f"{link.name[0]}{k}") for k in range(10) for link in (a, b)]
    arrivals, _ = _send_all(env, sends)
    assert max(t for n, t in arrivals.items() if n.startswith("a")) == 101.0
    assert max(t for n, t in arrivals.items() if n.startswith("b")) == 101.0


def test_the_outbound_direction_is_shared_by_every_response_the_host_sends_and_independent_of_inbound():
    env = simpy.Environment()
    broker = Nic(env, "broker", 1_000.0)
    consumer = _link(env, "consumer/from_broker", egress=broker.outbound)
    follower = _link(env, "follower/from_broker", egress=broker.outbound)
    producer = _link(env, "producer/to_broker", ingress=broker.inbound)
    sends = [(0, consumer, 50_000, "consumer"), (0, follower, 50_000, "follower"), (0, producer, 50_000, "produce")]
    arrivals, _ = _send_all(env, sends)
    # Outbound: 50 ms each, back to back, then 1 ms of latency; inbound is a separate direction.
    assert arrivals == {"consumer": 51.0, "follower": 101.0, "produce": 51.0}


def test_a_connection_stays_in_order_through_a_shared_nic():
    env = simpy.Environment()
    broker = Nic(env, "broker", 1_000.0)
    slow = NetworkLink(env, "slow/to_broker", Constant(30.0), random.Random(0), 10_000.0, ingress=broker.inbound)
    fast = _link(env, "fast/to_broker", ingress=broker.inbound)
    sends = [(0, slow, 5_000, "s1"), (0, slow, 10, "s2"), (1, fast, 5_000, "f1"), (2, fast, 10, "f2")]
    arrivals, order = _send_all(env, sends)
    assert order.index("s1") < order.index("s2") and order.index("f1") < order.index("f2")
    # The NIC is FIFO by arrival: the fast connection's messages got there first.
    assert order == ["f1", "f2", "s1", "s2"]
    assert arrivals["s2"] >= arrivals["s1"] >= arrivals["f2"]


def test_a_path_crosses_the_client_and_broker_nics_in_both_directions():
    env = simpy.Environment()
    leader, follower_host = Nic(env, "broker-0", 1_000.0), Nic(env, "broker-1", 1_000.0)
    path = NetworkPath.create(env, "broker-1/fetcher-0", Constant(1.0), lambda _n: random.Random(0), 10_000.0,
                              client_nic=follower_host, broker_nic=leader)
    assert path.to_broker.egress is follower_host.outbound and path.to_broker.ingress is leader.inbound
    assert path.from_broker.egress is leader.outbound and path.from_broker.ingress is follower_host.inbound
    bare = NetworkPath.create(env, "p", Constant(1.0), lambda _n: random.Random(0), 10_000.0)
    assert bare.to_broker.egress is bare.to_broker.ingress is None


def test_transfer_waits_for_the_ingress_nic():
    env = simpy.Environment()
    broker = Nic(env, "broker", 100.0)
    link = _link(env, "c/to_broker", bandwidth=1_000.0, ingress=broker.inbound)
    seen = []

    def proc():
        yield link.transfer(1_000)
        seen.append(env.now)

    env.process(proc())
    env.run()
    assert seen == [11.0]  # 1 ms latency + 1,000 B at the NIC's 100 B/ms


def test_a_dropped_message_never_reaches_the_receiving_nic():
    env = simpy.Environment()
    client, broker = Nic(env, "client", 1_000.0), Nic(env, "broker", 1_000.0)
    link = _link(env, "c/to_broker", egress=client.outbound, ingress=broker.inbound)
    link.drop_until(5.0)
    arrivals, _ = _send_all(env, [(0, link, 100, "lost"), (10, link, 100, "kept")])
    assert arrivals == {"kept": 11.1}
    assert client.outbound.messages == 2  # transmitted, then lost on the way
    assert broker.inbound.messages == 1


@pytest.mark.parametrize("bandwidth", [0.0, -1.0, float("nan")])
def test_nic_bandwidth_must_be_positive(bandwidth):
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        Nic(simpy.Environment(), "broker", bandwidth)


def test_a_message_never_overtakes_one_the_nic_is_still_delivering():
    """FIFO at equal times too: y's last byte arrives exactly when x's NIC slot ends; y's link event was
    scheduled first, yet x, queued at the NIC before it, is delivered first."""
    env = simpy.Environment()
    broker = Nic(env, "broker", 100.0)
    x_link = _link(env, "x/to_broker", bandwidth=float("inf"), latency=1.0, ingress=broker.inbound)
    y_link = _link(env, "y/to_broker", bandwidth=float("inf"), latency=11.0, ingress=broker.inbound)
    arrivals, order = _send_all(env, [(0, y_link, 0, "y"), (0, x_link, 1_000, "x")])
    assert arrivals == {"x": 11.0, "y": 11.0}
    assert order == ["x", "y"]
