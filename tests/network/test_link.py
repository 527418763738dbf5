import random

import pytest
import simpy

from kafkasim.network.link import NetworkLink, NetworkPath
from kafkasim.sim.distributions import Constant, LogNormal
from kafkasim.sim.random_streams import RandomStreams


class Sequence_:
    """Latencies from a list, in order."""

    def __init__(self, values):
        self.values = list(values)

    def sample(self, rng):
        return self.values.pop(0)


def _link(env, latency, bandwidth=100.0, rng=None):
    return NetworkLink(env, "p/to_broker", latency, rng or random.Random(0), bandwidth)


def _send_all(env, link, sends):
    """sends: [(at_ms, size, name)] -> [(arrival_ms, name)]"""
    arrivals = []
    for at, size, name in sends:
        def go(_e, size=size, name=name):
            link.send(size, lambda name=name: arrivals.append((env.now, name)))
        env.timeout(at).callbacks.append(go)
    env.run()
    return arrivals


def test_serialisation_is_one_message_at_a_time_then_latency():
    env = simpy.Environment()
    link = _link(env, Constant(1.0), bandwidth=100.0)  # 100 bytes per ms
    arrivals = _send_all(env, link, [(0, 500, "a"), (0, 500, "b"), (0, 500, "c"), (20, 100, "d")])
    # a: tx 0-5, b: 5-10, c: 10-15 (FIFO behind a), d: idle link at 20, tx 20-21
    assert arrivals == [(6.0, "a"), (11.0, "b"), (16.0, "c"), (22.0, "d")]
    assert link.bytes_sent == 1600 and link.sent == 4


def test_a_message_never_overtakes_an_earlier_one():
    env = simpy.Environment()
    link = _link(env, Sequence_([10.0, 1.0, 30.0, 1.0]), bandwidth=float("inf"))
    arrivals = _send_all(env, link, [(0, 10, "a"), (1, 10, "b"), (2, 10, "c"), (3, 10, "d")])
    assert arrivals == [(10.0, "a"), (10.0, "b"), (32.0, "c"), (32.0, "d")]


def test_delay_spike_applies_to_messages_sent_before_it_ends():
    env = simpy.Environment()
    link = _link(env, Constant(1.0), bandwidth=float("inf"))
    env.timeout(5).callbacks.append(lambda _e: link.add_delay(50.0, until_ms=10.0))
    arrivals = _send_all(env, link, [(0, 1, "before"), (6, 1, "during"), (10, 1, "after"), (100, 1, "late")])
    # "after" is not delayed itself but TCP keeps it behind "during"
    assert arrivals == [(1.0, "before"), (57.0, "during"), (57.0, "after"), (101.0, "late")]


def test_dropped_messages_are_lost_and_counted_and_do_not_shift_later_draws():
    def run(with_drop):
        env = simpy.Environment()
        link = _link(env, LogNormal(1.0, 5.0), bandwidth=float("inf"), rng=random.Random(7))
        if with_drop:
            env.timeout(10).callbacks.append(lambda _e: link.drop_until(20.0))
        sends = [(t, 100, f"m{t}") for t in range(0, 60, 5)]
        return link, _send_all(env, link, sends)

    clean_link, clean = run(False)
    link, faulty = run(True)
    lost = {"m10", "m15"}
    assert link.dropped == 2 and link.sent == 12 and clean_link.dropped == 0
    assert {name for _, name in faulty} == {name for _, name in clean} - lost
    # messages sent after the window arrive exactly as without the fault (same latency draws)
    assert [a for a in faulty if int(a[1][1:]) >= 20] == [a for a in clean if int(a[1][1:]) >= 20]


def test_send_reports_a_drop():
    env = simpy.Environment()
    link = _link(env, Constant(1.0))
    link.drop_until(5.0)
    assert link.is_dropping
    assert link.send(10, lambda: None) is False
    link.clear_faults()
    assert link.send(10, lambda: None) is True


def test_transfer_event_form_for_processes():
    env = simpy.Environment()
    link = _link(env, Constant(2.0), bandwidth=10.0)
    seen = []

    def client():
        yield link.transfer(30)  # 3 ms on the wire + 2 ms latency
        seen.append(env.now)
        link.drop_until(env.now + 1)
        lost = link.transfer(30)
        yield lost | env.timeout(100)  # dropped: only the timeout fires
        seen.append((env.now, lost.triggered))

    env.process(client())
    env.run()
    assert seen == [5.0, (105.0, False)]


def test_connection_links_have_their_own_streams_and_share_faults():
    env = simpy.Environment()
    streams = RandomStreams(11)
    conn = NetworkPath.create(env, "producer-1", LogNormal(0.5, 2.0), streams.stream, 1250.0,
                             from_broker_latency=Constant(3.0))
    assert conn.to_broker.name == "producer-1/to_broker" and conn.from_broker.name == "producer-1/from_broker"
    assert streams.names == ["producer-1/to_broker", "producer-1/from_broker"]
    assert conn.from_broker.latency_sampler.sample(None) == 3.0
    conn.drop_until(10.0)
    assert conn.to_broker.send(1, lambda: None) is False and conn.from_broker.send(1, lambda: None) is False
    assert conn.dropped == 2
    conn.add_delay(5.0, 10.0)
    conn.clear_faults()
    assert not conn.to_broker.is_dropping


@pytest.mark.parametrize("bandwidth", [0, -1, float("nan")])
def test_bandwidth_must_be_positive(bandwidth):
    with pytest.raises(ValueError, match="bandwidth must be > 0 bytes/ms"):
        _link(simpy.Environment(), Constant(1.0), bandwidth=bandwidth)
