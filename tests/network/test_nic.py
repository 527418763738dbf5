"""A host NIC shared by the host's connections (kafkasim.network.nic), composed with the links.

The tests of whole-message timings run under ``fifo`` (the discipline they were written for, kept as it
was); the properties every discipline keeps (zero-load latency, pipelining, order, drops) run under both;
``fair`` sharing has its own tests at the end."""

from __future__ import annotations

import random

import pytest
import simpy

from kafkasim.network.link import NetworkLink, NetworkPath
from kafkasim.network.nic import DISCIPLINES, Nic
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


def _fifo(env, name, bandwidth):
    return Nic(env, name, bandwidth, sharing="fifo")


@pytest.mark.parametrize("sharing", DISCIPLINES)
@pytest.mark.parametrize("nic_bandwidth", [100.0, 250.0, float("inf")])
def test_zero_load_latency_is_the_links_when_the_nics_are_no_slower(nic_bandwidth, sharing):
    sends = [(0, 500, "a"), (20, 100, "b"), (40, 1, "c")]

    def run(with_nics: bool):
        env = simpy.Environment()
        client = Nic(env, "client", nic_bandwidth, sharing=sharing)
        broker = Nic(env, "broker", nic_bandwidth, sharing=sharing)
        link = _link(env, "c/to_broker", bandwidth=100.0,
                     egress=client.outbound if with_nics else None, ingress=broker.inbound if with_nics else None)
        return _send_all(env, [(at, link, size, name) for at, size, name in sends])[0]

    assert run(True) == run(False) == {"a": 6.0, "b": 22.0, "c": 41.01}


@pytest.mark.parametrize("sharing", DISCIPLINES)
def test_a_nic_slower_than_the_link_is_the_bottleneck_paid_once(sharing):
    env = simpy.Environment()
    broker = Nic(env, "broker", 50.0, sharing=sharing)
    link = _link(env, "c/to_broker", bandwidth=100.0, latency=1.0, ingress=broker.inbound)
    arrivals, _ = _send_all(env, [(0, link, 500, "a")])
    # Pipelined: latency 1 + 500 B at the slower 50 B/ms = 11 (not 1 + 5 + 10).
    assert arrivals == {"a": 11.0}


def test_two_connections_sharing_an_inbound_nic_get_its_bandwidth_together():
    env = simpy.Environment()
    broker = _fifo(env, "broker", 1_000.0)  # 1 MB/s
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


@pytest.mark.parametrize("sharing", DISCIPLINES)
def test_independent_nics_do_not_interfere(sharing):
    env = simpy.Environment()
    nic_a, nic_b = Nic(env, "broker-0", 1_000.0, sharing=sharing), Nic(env, "broker-1", 1_000.0, sharing=sharing)
    a = _link(env, "a/to_broker", ingress=nic_a.inbound)
    b = _link(env, "b/to_broker", ingress=nic_b.inbound)
    sends = [(0, link, 10_000, f"{link.name[0]}{k}") for k in range(10) for link in (a, b)]
    arrivals, _ = _send_all(env, sends)
    assert max(t for n, t in arrivals.items() if n.startswith("a")) == 101.0
    assert max(t for n, t in arrivals.items() if n.startswith("b")) == 101.0


def test_the_outbound_direction_is_shared_by_every_response_the_host_sends_and_independent_of_inbound():
    env = simpy.Environment()
    broker = _fifo(env, "broker", 1_000.0)
    consumer = _link(env, "consumer/from_broker", egress=broker.outbound)
    follower = _link(env, "follower/from_broker", egress=broker.outbound)
    producer = _link(env, "producer/to_broker", ingress=broker.inbound)
    sends = [(0, consumer, 50_000, "consumer"), (0, follower, 50_000, "follower"), (0, producer, 50_000, "produce")]
    arrivals, _ = _send_all(env, sends)
    # Outbound: 50 ms each, back to back, then 1 ms of latency; inbound is a separate direction.
    assert arrivals == {"consumer": 51.0, "follower": 101.0, "produce": 51.0}


def test_a_connection_stays_in_order_through_a_shared_nic():
    env = simpy.Environment()
    broker = _fifo(env, "broker", 1_000.0)
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


@pytest.mark.parametrize("sharing", DISCIPLINES)
def test_transfer_waits_for_the_ingress_nic(sharing):
    env = simpy.Environment()
    broker = Nic(env, "broker", 100.0, sharing=sharing)
    link = _link(env, "c/to_broker", bandwidth=1_000.0, ingress=broker.inbound)
    seen = []

    def proc():
        yield link.transfer(1_000)
        seen.append(env.now)

    env.process(proc())
    env.run()
    assert seen == [11.0]  # 1 ms latency + 1,000 B at the NIC's 100 B/ms


@pytest.mark.parametrize("sharing", DISCIPLINES)
def test_a_dropped_message_never_reaches_the_receiving_nic(sharing):
    env = simpy.Environment()
    client, broker = Nic(env, "client", 1_000.0, sharing=sharing), Nic(env, "broker", 1_000.0, sharing=sharing)
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
    broker = _fifo(env, "broker", 100.0)
    x_link = _link(env, "x/to_broker", bandwidth=float("inf"), latency=1.0, ingress=broker.inbound)
    y_link = _link(env, "y/to_broker", bandwidth=float("inf"), latency=11.0, ingress=broker.inbound)
    arrivals, order = _send_all(env, [(0, y_link, 0, "y"), (0, x_link, 1_000, "x")])
    assert arrivals == {"x": 11.0, "y": 11.0}
    assert order == ["x", "y"]


# --- fair sharing ---------------------------------------------------------------------------------------------

INF = float("inf")


def _fair_outbound(env, bandwidth=1_000.0):
    return Nic(env, "broker", bandwidth, sharing="fair").outbound


def test_a_lone_message_costs_exactly_its_size_over_the_bandwidth():
    env = simpy.Environment()
    out = _fair_outbound(env, 300.0)
    link = _link(env, "c/from_broker", bandwidth=INF, latency=0.0, egress=out)
    arrivals, _ = _send_all(env, [(0.1, link, 1_000, "a"), (50.0, link, 7, "b")])
    assert arrivals == {"a": 0.1 + 1_000 / 300.0, "b": 50.0 + 7 / 300.0}


def test_a_small_message_is_not_held_behind_a_large_one():
    env = simpy.Environment()
    out = _fair_outbound(env)  # 1,000 B/ms
    consumer = _link(env, "consumer/from_broker", bandwidth=INF, egress=out)
    producer = _link(env, "producer/from_broker", bandwidth=INF, egress=out)
    arrivals, order = _send_all(env, [(0, consumer, 10_000, "fetch"), (2, producer, 120, "produce")])
    # The produce response shares the NIC with the fetch response: 2 x 120 B / bandwidth, then 1 ms latency.
    assert arrivals["produce"] == pytest.approx(2 + 2 * 120 / 1_000 + 1)
    # The fetch response lost what the produce response took: 10 ms + 0.12 ms.
    assert arrivals["fetch"] == pytest.approx(10.12 + 1)
    assert order == ["produce", "fetch"]
    # The same under fifo: the produce response waits for the whole fetch response.
    env = simpy.Environment()
    out = Nic(env, "broker", 1_000.0, sharing="fifo").outbound
    consumer = _link(env, "consumer/from_broker", bandwidth=INF, egress=out)
    producer = _link(env, "producer/from_broker", bandwidth=INF, egress=out)
    fifo, _ = _send_all(env, [(0, consumer, 10_000, "fetch"), (2, producer, 120, "produce")])
    assert fifo == {"fetch": 11.0, "produce": pytest.approx(10.12 + 1)}


def test_two_equal_concurrent_messages_both_finish_at_twice_their_transmit_time():
    env = simpy.Environment()
    out = _fair_outbound(env)
    a = _link(env, "a/from_broker", bandwidth=INF, latency=0.0, egress=out)
    b = _link(env, "b/from_broker", bandwidth=INF, latency=0.0, egress=out)
    arrivals, order = _send_all(env, [(0, a, 5_000, "a"), (0, b, 5_000, "b")])
    assert arrivals == {"a": 10.0, "b": 10.0}
    assert order == ["a", "b"]  # ties in the order they were sent


def test_messages_of_one_connection_are_sent_one_after_the_other_and_connections_share():
    """Per-connection fairness: a connection with three messages queued gets half the NIC, not three
    quarters, against a connection with one."""
    env = simpy.Environment()
    out = _fair_outbound(env)
    busy = _link(env, "busy/from_broker", bandwidth=INF, latency=0.0, egress=out)
    other = _link(env, "other/from_broker", bandwidth=INF, latency=0.0, egress=out)
    sends = [(0, busy, 1_000, "b1"), (0, busy, 1_000, "b2"), (0, busy, 1_000, "b3"), (0, other, 3_000, "o")]
    arrivals, order = _send_all(env, sends)
    # b1 and o share: b1 done at 2 (1,000 B at 500 B/ms); b2 at 4; b3 at 6 with o (3,000 B at half rate).
    assert arrivals == {"b1": 2.0, "b2": 4.0, "b3": 6.0, "o": 6.0}
    assert order.index("b1") < order.index("b2") < order.index("b3")


def test_a_small_request_is_not_held_behind_a_large_one_on_the_inbound_side():
    env = simpy.Environment()
    broker = Nic(env, "broker", 1_000.0, sharing="fair")
    producer = _link(env, "producer/to_broker", bandwidth=INF, latency=1.0, ingress=broker.inbound)
    fetcher = _link(env, "fetcher/to_broker", bandwidth=1_000.0, latency=1.0, ingress=broker.inbound)
    arrivals, _ = _send_all(env, [(0, producer, 10_000, "produce"), (3, fetcher, 100, "fetch")])
    # The produce request's bytes are all there at 1 ms; the NIC takes 10 ms for them alone. The fetch
    # request (first byte at 4, last at 4.1) shares it from 4 on: done at 4.2, and the produce request 0.1 later.
    assert arrivals["fetch"] == pytest.approx(4.2)
    assert arrivals["produce"] == pytest.approx(11.1)
    assert broker.inbound.messages == 2 and broker.inbound.bytes == 10_100


def _random_sends(env, links, count, seed, max_size=20_000, spacing=2.0):
    rng = random.Random(seed)
    sends = []
    t = 0.0
    for k in range(count):
        t += rng.expovariate(1.0 / spacing)
        link = links[rng.randrange(len(links))]
        sends.append((t, link, rng.choice([0, 100, 1_000, rng.randrange(1, max_size)]), f"{link.name}#{k}"))
    return sends


def _two_hosts(env, sharing="fair", bandwidth=1_000.0):
    """Three connections from host a to host b (both NICs), random latencies, and one from a client."""
    a, b = Nic(env, "a", bandwidth, sharing=sharing), Nic(env, "b", bandwidth, sharing=sharing)
    links = [NetworkLink(env, f"l{i}", _Jitter(), random.Random(i), 5_000.0, egress=a.outbound, ingress=b.inbound)
             for i in range(3)]
    links.append(NetworkLink(env, "client", _Jitter(), random.Random(9), 2_000.0, ingress=b.inbound))
    return a, b, links


class _Jitter:
    def sample(self, rng):
        return rng.uniform(0.0, 3.0)


def test_the_bandwidth_bound_holds_and_each_connection_stays_in_order():
    env = simpy.Environment()
    out = _fair_outbound(env)
    links = [_link(env, f"l{i}", bandwidth=INF, latency=0.0, egress=out) for i in range(4)]
    sends = _random_sends(env, links, 300, seed=7, spacing=5.0)
    arrivals, order = _send_all(env, sends)
    sizes = {name: size for _at, _link_, size, name in sends}
    # By any time t the NIC has sent no more than bandwidth x t (every message is sent from t >= 0).
    done = 0
    for name in sorted(arrivals, key=lambda n: (arrivals[n], order.index(n))):
        done += sizes[name]
        assert done <= 1_000.0 * arrivals[name] + 1e-6
    assert out.bytes == sum(sizes.values()) and out.messages == len(sends)
    for link in links:
        mine = [name for name in order if name.startswith(f"{link.name}#")]
        assert mine == sorted(mine, key=lambda n: int(n.split("#")[1]))


def test_in_order_per_connection_through_both_fair_nics_with_jittered_latency():
    env = simpy.Environment()
    _a, b, links = _two_hosts(env)
    sends = _random_sends(env, links, 300, seed=3, spacing=3.0)
    arrivals, order = _send_all(env, sends)
    assert len(arrivals) == len(sends)
    for link in links:
        mine = [name for name in order if name.startswith(f"{link.name}#")]
        assert mine == sorted(mine, key=lambda n: int(n.split("#")[1]))
    # The receiving NIC never took in more than its bandwidth: all of it by the last arrival.
    assert b.inbound.bytes <= 1_000.0 * max(arrivals.values())


@pytest.mark.parametrize("sharing", DISCIPLINES)
def test_deterministic(sharing):
    def run():
        env = simpy.Environment()
        _a, _b, links = _two_hosts(env, sharing)
        return _send_all(env, _random_sends(env, links, 200, seed=11, spacing=1.0))

    assert run() == run()


def test_fair_sharing_never_beats_an_idle_nic_and_saturation_costs_the_same_total():
    """Fair and fifo move the same bytes in the same busy time (both are work-conserving): under a backlog
    the last message leaves at the same time; fair only reorders who finishes when."""
    def run(sharing):
        env = simpy.Environment()
        out = Nic(env, "broker", 1_000.0, sharing=sharing).outbound
        links = [_link(env, f"l{i}", bandwidth=INF, latency=0.0, egress=out) for i in range(3)]
        arrivals, _ = _send_all(env, _random_sends(env, links, 100, seed=5, spacing=0.5))
        return arrivals, out

    fair, fair_out = run("fair")
    fifo, fifo_out = run("fifo")
    assert max(fair.values()) == pytest.approx(max(fifo.values()))
    assert fair_out.utilisation_busy_ms() == pytest.approx(fifo_out.utilisation_busy_ms())
    assert fair_out.utilisation_busy_ms() == pytest.approx(fair_out.bytes / 1_000.0)


def test_a_stale_wakeup_is_skipped():
    """A message joining a busy NIC moves its next completion: the event planned for the old one does nothing."""
    env = simpy.Environment()
    out = _fair_outbound(env)
    a = _link(env, "a/from_broker", bandwidth=INF, latency=0.0, egress=out)
    b = _link(env, "b/from_broker", bandwidth=INF, latency=0.0, egress=out)
    arrivals, _ = _send_all(env, [(0, a, 1_000, "a"), (0.5, b, 1_000, "b")])
    # a alone until 0.5 (500 B), then half rate: done at 1.5; b then alone: 1.5 + 0.5 = 2.0.
    assert arrivals == {"a": 1.5, "b": 2.0}


def test_sharing_must_be_known():
    with pytest.raises(ValueError, match="sharing must be one of"):
        Nic(simpy.Environment(), "broker", 1.0, sharing="wfq")
