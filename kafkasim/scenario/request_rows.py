"""About how many request rows a run of a scenario writes, at most: the scenario's checks refuse a run whose
requests table would not fit (``MAX_REQUEST_ROWS`` in scenario.py), as they refuse one with too many
records, and name the keys that drive the count.

A row is written per Produce request and per Fetch request (a consumer's or a follower's fetcher thread's);
metadata, OffsetsForLeaderEpoch, broker heartbeats and AlterPartition are round trips without a row. The
estimate follows the clients' own mechanics, and rounds every guess up:

* **A round trip** is the link's latency both ways plus the broker's costs of a request (``request``,
  ``network_read``, ``network_send``): typical values (``typical_value``: the mean, but the median of a
  lognormal, which is below its mean), without serialisation or queueing. So a request stream limited by
  round trips is over-counted, never under-counted (an idle cluster's followers with wait 0, 3 brokers:
  estimated 1.18x what a run records).
* **A fetcher** -- a consumer's connection to one leader (``AbstractFetch``: one fetch per node in flight,
  the next one as soon as the response is in), or a follower's fetcher thread (``AbstractFetcherThread``:
  the next fetch at once) -- has one fetch in flight, so at most ``duration / round trip`` fetches. When the
  leader can park its fetch (``fetch.max.wait.ms`` / ``replica.fetch.wait.max.ms`` > 0 and min bytes > 0:
  DelayedFetch), an idle log answers it after the wait, and data answers it early: at most
  ``duration / (wait + round trip)``, plus one fetch per batch appended to the partitions it reads (fewer
  when min bytes > 1; not counted). A fetch the leader cannot park returns at once: against an idle log it
  loops at the round trip.
* **A producer** sends at most one request per batch, and a batch holds at least one record; with linger
  the sticky partitioner closes a batch per leader about every ``linger.ms`` or when ``batch.size`` is
  full (counted twice: ``RecordAccumulator.drain`` also takes a batch that is not ready yet, of another
  partition of the same leader). With acks 1 or all it keeps at most
  ``max.in.flight.requests.per.connection`` requests per leader in flight, so at most that many per round
  trip. Retries under faults are paced by ``retry.backoff.ms`` and bounded by the in-flight limit too.
* **How many fetchers**: a consumer fetches from every broker that leads a partition of its topic (at most
  min(brokers, partitions)); a broker runs up to ``num.replica.fetchers`` fetcher threads per leader it
  follows, and no more than the partitions it follows (``ReplicaFetcherManager``). Without ``cluster:``
  the followers are brokers 1..RF-1 of one leader.

The estimate is per client or per broker's fetchers, so the refusal can name the biggest contributor and
the key that drives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkasim.scenario.clients import OnOffArrival, ProducerConfig
from kafkasim.scenario.distributions import typical_value
from kafkasim.scenario.errors import Loc
from kafkasim.scenario.network import Link

if TYPE_CHECKING:
    from kafkasim.scenario.scenario import Scenario

# Below this a round trip counts as this long: a scenario whose fetches loop faster is refused by its own
# check (scenario.py, MIN_BUSY_FETCH_ROUND_TRIP_MS); the estimate must not divide by zero meanwhile.
_SHORTEST_ROUND_TRIP_MS = 0.01
# A sticky producer's batches per linger.ms per leader: the ready one and one drained with it.
_BATCHES_PER_LINGER = 2


@dataclass(frozen=True)
class RequestRows:
    """One contributor's rows: `kind` (producers, consumers or followers) and `who` send them, `why` so
    many; `loc` is the key that drives them and `advice` says how to send fewer (for the scenario's
    refusal)."""

    kind: str
    who: str
    rows: float
    why: str
    loc: Loc
    advice: str


def round_trip_ms(s: Scenario, link: Link | None) -> float:
    """A request's typical round trip over `link` to the fastest broker: latency both ways plus the
    broker's per-request costs (request, network_read, network_send)."""
    assert link is not None  # resolved by the scenario's validation
    latency = typical_value(link.latency_for("to_broker")) + typical_value(link.latency_for("from_broker"))
    costs = min(
        sum(typical_value(d) for d in (c.request, c.network_read, c.network_send))
        for c in (s.broker_for(b).costs for b in s.broker_ids)
    )
    return max(latency + costs, _SHORTEST_ROUND_TRIP_MS)


def records(s: Scenario, p: ProducerConfig) -> float:
    """The records `p` sends in the run."""
    arrival = p.arrival
    active = arrival.on / (arrival.on + arrival.off) if isinstance(arrival, OnOffArrival) else 1.0
    return p.rate * s.duration / 1000.0 * active


def _leaders(s: Scenario, topic: str) -> int:
    """How many brokers lead a partition of `topic`, at most."""
    partitions = next((t.partitions for t in s.topics if t.name == topic), 0)
    return min(len(s.cluster.broker_ids) if s.cluster is not None else 1, partitions)


def batches(s: Scenario, p: ProducerConfig) -> float:
    """The batches `p` sends in the run, at most (see the module docstring)."""
    sent = records(s, p)
    if p.partitioner == "sticky" and p.linger_ms > 0:
        size = typical_value(p.record_size)
        by_linger = _leaders(s, p.topic) * _BATCHES_PER_LINGER * s.duration / p.linger_ms
        by_size = sent * size / p.batch_size if p.batch_size > 0 else sent
        sent = min(sent, by_linger + by_size)
    return sent


_BUSY_ADVICE = "lower the producers' rates or raise their linger.ms: each batch wakes the fetches waiting for it"


def _fetches(duration: float, fetchers: float, keys: tuple[str, str], wait: int, min_bytes: int,
             round_trip: float, wakeups: float) -> tuple[float, str, str, str]:
    """(rows, why, key, advice) of `fetchers` fetchers that each keep one fetch in flight; `keys` names their
    wait and min bytes configs, `key` the one to change."""
    wait_key, min_key = keys
    shown = math.ceil(fetchers - 1e-9)
    unit = f"{shown} fetcher{'s' if shown != 1 else ''}"
    # + fetchers: the fetch in flight when the run ends is a row too.
    looping = fetchers * (duration / round_trip + 1)
    if wait <= 0 or min_bytes <= 0:
        key = wait_key if wait <= 0 else min_key
        why = f"{key} 0 answers at once: a fetch per {round_trip:.3g} ms round trip on {unit}"
        return looping, why, key, f"raise {key}"
    idle = fetchers * (duration / (wait + round_trip) + 1)
    if looping <= idle + wakeups:
        return looping, f"busy: a fetch per {round_trip:.3g} ms round trip on {unit}", wait_key, _BUSY_ADVICE
    if wakeups > idle:
        return idle + wakeups, f"a fetch per batch appended, about {wakeups:,.0f}, on {unit}", wait_key, _BUSY_ADVICE
    why = f"{wait_key} {wait}: a fetch per {wait + round_trip:.4g} ms when idle on {unit}"
    return idle + wakeups, why, wait_key, f"raise {wait_key}"


def estimate(s: Scenario) -> list[RequestRows]:
    """Each contributor's request rows over the run (see the module docstring); an upper estimate."""
    duration = float(s.duration)
    out: list[RequestRows] = []
    topic_batches: dict[str, float] = {}
    for i, p in enumerate(s.producers):
        sent = batches(s, p)
        topic_batches[p.topic] = topic_batches.get(p.topic, 0.0) + sent
        if p.acks != 0:
            window = _leaders(s, p.topic) * p.max_in_flight_requests_per_connection
            sent = min(sent, window * duration / round_trip_ms(s, p.link))
        out.append(RequestRows("producers", f"producer {p.name}", sent,
                               f"a request per batch, {p.rate:g} records/s", ("producers", i, "rate"),
                               "lower the producers' rates or raise their linger.ms"))
    for i, c in enumerate(s.consumers):
        rows, why, key, advice = _fetches(duration, _leaders(s, c.topic), ("fetch.max.wait.ms", "fetch.min.bytes"),
                                          c.fetch_max_wait_ms, c.fetch_min_bytes, round_trip_ms(s, c.link),
                                          topic_batches.get(c.topic, 0.0))
        out.append(RequestRows("consumers", f"consumer {c.name}", rows, why, ("consumers", i, key),
                               f"{advice}, or fewer consumers"))
    out.extend(_followers(s, duration, topic_batches))
    return out


def _followers(s: Scenario, duration: float, topic_batches: dict[str, float]) -> list[RequestRows]:
    """The followers' fetcher threads, per broker configuration (`broker:`, each `cluster.overrides` entry)."""
    appended = sum(topic_batches.get(t.name, 0.0) * (t.replication_factor - 1) for t in s.topics)
    replicas = sum(t.partitions * (t.replication_factor - 1) for t in s.topics)
    threads: dict[int, int] = {}
    if s.cluster is None:
        for b in s.follower_ids:
            followed = sum(t.partitions for t in s.topics if t.replication_factor > b)
            threads[b] = min(s.broker_for(b).num_replica_fetchers, followed)
    else:
        followed = sum(t.partitions for t in s.topics if t.replication_factor > 1)
        sources = len(s.cluster.broker_ids) - 1
        for b in s.cluster.broker_ids:
            threads[b] = min(sources * s.broker_for(b).num_replica_fetchers, followed)
    # No more threads than partitions followed, over all brokers.
    scale = min(1.0, replicas / sum(threads.values())) if replicas else 0.0
    fetchers_of: dict[Loc, float] = {}
    for b, n in threads.items():
        k = next((k for k, o in enumerate(s.cluster.overrides) if o.broker == b), None) if s.cluster else None
        loc: Loc = ("broker",) if k is None else ("cluster", "overrides", k)
        fetchers_of[loc] = fetchers_of.get(loc, 0.0) + n * scale
    everyone = sum(fetchers_of.values())
    round_trip = round_trip_ms(s, s.followers.link)
    out: list[RequestRows] = []
    for loc, fetchers in fetchers_of.items():
        if fetchers <= 0:
            continue
        config = s.broker if loc == ("broker",) else s.cluster.overrides[int(loc[2])]  # type: ignore[union-attr]
        # Each append wakes each follower of its partition once; shared among the fetchers by their number.
        rows, why, key, advice = _fetches(duration, fetchers, ("replica.fetch.wait.max.ms", "replica.fetch.min.bytes"),
                                          config.replica_fetch_wait_max_ms, config.replica_fetch_min_bytes,
                                          round_trip, appended * fetchers / everyone)
        who = "the followers" if loc == ("broker",) else f"the followers on broker {config.broker}"  # type: ignore[union-attr]
        out.append(RequestRows("followers", who, rows, why, (*loc, key), advice))
    return out


def total(s: Scenario) -> float:
    """The request rows of a run of `s`, about and at most."""
    return math.fsum(r.rows for r in estimate(s))
