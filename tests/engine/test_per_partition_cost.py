"""broker.costs.per_partition: a handler thread's time per partition of a produce request, and per partition
a fetch reads -- every partition of its session for an incremental fetch (Kafka's
IncrementalFetchContext.foreachPartition), even when the request names fewer."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kafkasim.run import run_scenario

from .support import producer, scenario

PER_PARTITION_MS = 1.0
BASE_MS = 0.5  # what the other handler costs add at most here (request 0.05 ms, per KiB costs)


def _requests(api: str, **producer_config: Any) -> pd.DataFrame:
    s = scenario(
        duration="2s",
        topic={"partitions": 4},
        broker={"costs": {"per_partition": f"{PER_PARTITION_MS}ms"}},
        producers=[producer("p1", partitioner="round_robin", **producer_config)],
    )
    requests = run_scenario(s).requests
    handled = requests["dequeue_ms"].notna() & requests["local_complete_ms"].notna()
    return requests[handled & (requests["api"] == api)]


def test_a_produce_pays_per_partition_it_carries() -> None:
    # linger.ms 20: a drain takes a batch of every partition, so requests carry several. acks=1: its local phase
    # ends at its response, before it answers the followers' fetches its append woke (an acks=all produce's
    # LocalTimeMs includes them: each reads the 4 partitions of its session, test_api_costs).
    produce = _requests("Produce", rate="200/s", acks=1, **{"linger.ms": 20})
    assert len(produce) > 20 and (produce["partitions"] > 1).any()
    spent = produce["LocalTimeMs"] - PER_PARTITION_MS * produce["partitions"]
    assert spent.between(0.0, BASE_MS).all()


def test_an_incremental_fetch_pays_for_every_partition_of_its_session() -> None:
    # One batch per request, round robin: each follower fetch names the one partition that changed.
    fetches = _requests("FetchFollower", rate="100/s")
    incremental = fetches[fetches["partitions"] < 4]
    assert len(incremental) > 100
    assert incremental["LocalTimeMs"].between(4 * PER_PARTITION_MS, 4 * PER_PARTITION_MS + BASE_MS).all()


def test_no_per_partition_cost_by_default() -> None:
    requests = run_scenario(scenario(duration="1s", topic={"partitions": 4})).requests
    produce = requests[requests["api"] == "Produce"]
    assert produce["LocalTimeMs"].max() < BASE_MS
