"""A host's scheduling latency (``broker.costs.wakeup``): a request handler waiting in
RequestChannel.receiveRequest, and a network thread waiting in Selector.poll, run only that long after there is
work for them. 0 (the default) changes nothing; a constant shows up whole in RequestQueueTimeMs and
ResponseQueueTimeMs of requests that find their thread idle; drawn values come from their own streams."""

from __future__ import annotations

from typing import Any

import numpy as np

from kafkasim.run import run_scenario

from .support import consumer, producer, scenario
from .test_determinism import table_hash


def _run(wakeup: str | dict[str, Any] | None, handler: str | None = None) -> Any:
    broker: dict[str, Any] = {}
    if wakeup is not None:
        broker["costs"] = {"wakeup": wakeup}
    if handler is not None:
        broker.setdefault("costs", {})["handler_wakeup"] = handler
    return run_scenario(scenario(duration="2s", consumers=[consumer("c1")], broker=broker,
                                 producers=[producer("p1", acks=1, rate="200/s")]))


def test_no_wakeup_latency_is_todays_timing_exactly() -> None:
    base, zero = _run(None), _run("0ms")
    assert table_hash(base.requests) == table_hash(zero.requests)
    assert table_hash(base.records) == table_hash(zero.records)


def test_an_idle_handler_and_an_idle_network_thread_each_wait_the_wakeup_latency() -> None:
    base, woken = _run(None), _run("0.3ms")
    rows = woken.requests[woken.requests["api"] == "Produce"]
    # At 200 records/s one broker's 8 handlers are idle: a produce waits one handler's wake-up, or less when a
    # handler done with a fetch meanwhile takes it first (Kafka's one request queue; one produce in 399)...
    queued = rows["RequestQueueTimeMs"].to_numpy()
    assert (queued <= 0.3 + 1e-9).all() and np.isclose(queued, 0.3).mean() > 0.98
    assert np.allclose(base.requests[base.requests["api"] == "Produce"]["RequestQueueTimeMs"], 0.0)
    # ... and its response one network thread's, unless the thread was already awake (busy, or being woken).
    assert (rows["ResponseQueueTimeMs"] <= 0.3 + 1e-9).all()
    assert np.isclose(rows["ResponseQueueTimeMs"].median(), 0.3)
    assert (woken.summary["produce_latency"]["acks=1"]["from_intended"]["p50"]
            > base.summary["produce_latency"]["acks=1"]["from_intended"]["p50"] + 0.5)


def test_a_handler_wakeup_is_the_handlers_own_and_the_network_threads_keep_wakeup() -> None:
    """``broker.costs.handler_wakeup`` replaces ``wakeup`` for the request handlers only: a produce's
    RequestQueueTimeMs is the handler's (0.8 ms), its ResponseQueueTimeMs the network thread's (0.1 ms); unset,
    both are ``wakeup``'s, drawn as before."""
    woken = _run("0.1ms", handler="0.8ms")
    rows = woken.requests[woken.requests["api"] == "Produce"]
    queued = rows["RequestQueueTimeMs"].to_numpy()
    assert (queued <= 0.8 + 1e-9).all() and np.isclose(queued, 0.8).mean() > 0.95
    assert (rows["ResponseQueueTimeMs"] <= 0.1 + 1e-9).all()
    assert np.isclose(rows["ResponseQueueTimeMs"].median(), 0.1)
    same, unset = _run("0.1ms", handler="0.1ms"), _run("0.1ms")
    assert table_hash(same.requests) == table_hash(unset.requests)


def test_drawn_wakeups_are_deterministic_and_vary() -> None:
    spec = {"type": "lognormal", "median": "0.2ms", "p99": "2ms"}
    a, b = _run(spec), _run(spec)
    assert table_hash(a.requests) == table_hash(b.requests)
    queue = a.requests[a.requests["api"] == "Produce"]["RequestQueueTimeMs"]
    assert queue.nunique() > 100
    assert 0.15 < queue.median() < 0.27
