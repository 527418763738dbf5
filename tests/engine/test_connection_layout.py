"""`broker.connection_layout`: which network thread each connection to a broker gets (Kafka's
`Acceptor.assignNewConnection`, round robin over every connection the broker accepts)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from kafkasim.run.engine import Engine
from kafkasim.scenario import with_overrides

from .support import consumer, producer, scenario


def _layout(layout: str, seed: int) -> tuple[tuple[str, int], ...]:
    """The leader's connections (the followers' fetchers as `fetcher`) and each one's network thread once the
    clients are connected."""
    s = with_overrides(scenario(duration="300ms", warmup="100ms", cluster={"brokers": 3},
                                producers=[producer("p1", acks=1, rate="200/s")], consumers=[consumer("c1")]),
                       [f"broker.connection_layout={layout}"])
    engine = Engine(s, seed=seed)
    brokers = list(engine.components.brokers)
    seen: list[tuple[tuple[str, int], ...]] = []

    def look() -> Generator[Any, Any, None]:
        yield engine.env.timeout(200.0)
        leader = max(brokers, key=lambda b: len(b.socket_server.channels))  # the partition's leader
        seen.append(tuple(sorted(("fetcher" if "ReplicaFetcher" in c.name else c.name, c.processor)
                                 for c in leader.socket_server.channels)))

    engine.env.process(look())
    engine.run()
    return seen[0]


def test_round_robin_gives_every_seed_the_same_layout() -> None:
    layouts = {_layout("round_robin", seed) for seed in range(5)}
    assert len(layouts) == 1
    (only,) = layouts
    assert len(only) == 4  # two followers' fetchers, the consumer, the producer
    # Round robin over three threads in kafkasim's order (the consumer, the fetchers, the producer): the first
    # and the fourth share one.
    assert only == (("c1", 0), ("fetcher", 1), ("fetcher", 2), ("p1", 0))


def test_random_gives_seeds_layouts_of_their_own_and_a_seed_always_the_same_one() -> None:
    layouts = [_layout("random", seed) for seed in range(8)]
    assert len(set(layouts)) >= 3
    assert _layout("random", 3) == layouts[3]
    assert all(len(layout) == 4 for layout in layouts)



def test_groups_put_the_two_followers_apart_and_the_producer_apart_from_the_consumer() -> None:
    """`groups`: the followers' fetchers go round robin from a drawn thread, the clients from another. In fourteen
    real runs of 2026-12-04 (Kafka 4.3.1's request log names each connection's network thread) the leader's two
    followers never shared a thread, nor its producer and consumer; drawn one by one (`random`), they do in a third
    of the runs."""
    layouts = [_threads(_layout("groups", seed)) for seed in range(12)]
    for fetchers, producer_thread, consumer_thread in layouts:
        assert fetchers[0] != fetchers[1] and producer_thread != consumer_thread, layouts
    # Each group's start is drawn: several layouts over the seeds, one per seed.
    assert len(set(layouts)) >= 3
    assert _threads(_layout("groups", 5)) == layouts[5]
    drawn = [_threads(_layout("random", seed)) for seed in range(12)]
    assert any(fetchers[0] == fetchers[1] or p == c for fetchers, p, c in drawn)


def _threads(layout: tuple[tuple[str, int], ...]) -> tuple[tuple[int, ...], int, int]:
    """The fetchers' threads, the producer's and the consumer's."""
    threads = dict((name, thread) for name, thread in layout if name != "fetcher")
    return tuple(thread for name, thread in layout if name == "fetcher"), threads["p1"], threads["c1"]
