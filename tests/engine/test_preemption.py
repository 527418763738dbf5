"""The machine's waits for a core within its threads' work (``machine_preemption``, kafkasim.sim.preemption): a
request handler's service time and a network thread's read or send are interrupted as a Poisson process of one
wait per ``every`` of work, so long work waits more often than short work. Absent: no wait, and the run's draws
are today's."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from kafkasim.run import run_scenario
from kafkasim.run.engine import Engine
from kafkasim.scenario import ScenarioError, with_overrides

from .support import after_warmup, consumer, producer, scenario
from .test_determinism import table_hash

# Constant costs: a produce's handling is 0.5 ms of work, a consumer fetch's 0.1, a send 0.2; a wait is 5 ms, so
# any request that waited stands out.
COSTS = {"costs": {"request": "0.1ms", "append": "0.4ms", "append_per_kib": "0ms", "read_per_kib": "0ms",
                   "per_partition": "0ms", "segment_read": "0ms", "follower_fetch": "0ms", "complete_fetch": "0ms",
                   "network_send": "0.2ms", "network_send_per_kib": "0ms"}}


def _run(preemption: str | None, seed: int = 1, append: str = "0.4ms") -> Any:
    costs = {"costs": COSTS["costs"] | {"append": append}}
    s = scenario(duration="20s", seed=seed, broker=costs, consumers=[consumer("c1")],
                 producers=[producer("p1", acks=1, rate="200/s")])
    if preemption is not None:
        s = with_overrides(s, [f"machine_preemption={preemption}"])
    return run_scenario(s)


def test_waits_that_never_come_leave_the_run_as_it_was() -> None:
    """The waits draw from streams of their own: a wait every hour of work changes no other draw."""
    base, rare = _run(None), _run("{every: 3600s, wait: 5ms}")
    assert table_hash(base.requests) == table_hash(rare.requests)
    assert table_hash(base.records) == table_hash(rare.records)


def _waited(result: Any, phase: str) -> float:
    """The share of produces whose `phase` held a wait (5 ms: any request that waited stands out)."""
    values = after_warmup(result, "Produce")[phase].dropna().to_numpy()
    return float(np.mean(values >= 5.0))


def test_a_thread_waits_the_more_often_the_longer_it_works() -> None:
    """One wait per ms of work on average: a step of d ms waits with probability 1 - exp(-d). (A produce's, since a
    fetch that parks can be answered by another thread while its own handler waits, as on a real broker once
    DelayedFetchPurgatory watches it: its LocalTimeMs then ends early.)"""
    long, short = _run("{every: 1ms, wait: 5ms}"), _run("{every: 1ms, wait: 5ms}", append="0ms")
    assert _waited(long, "LocalTimeMs") == pytest.approx(1 - math.exp(-0.5), abs=0.05)
    assert _waited(short, "LocalTimeMs") == pytest.approx(1 - math.exp(-0.1), abs=0.03)
    # A network thread's send (0.2 ms), whatever the handling took.
    for result in (long, short):
        assert _waited(result, "ResponseSendTimeMs") == pytest.approx(1 - math.exp(-0.2), abs=0.04)
    # A phase holds whole waits or none.
    local = after_warmup(long, "Produce")["LocalTimeMs"].dropna().to_numpy()
    assert np.all((local < 1.0) | ((local >= 5.0) & (local < 5.0 * 4 + 1.0)))


def _handler_busy_ms(preemption: str | None) -> float:
    s = scenario(duration="5s", broker=COSTS, producers=[producer("p1", acks=1, rate="200/s")])
    if preemption is not None:
        s = with_overrides(s, [f"machine_preemption={preemption}"])
    engine = Engine(s)
    engine.run()
    return sum(b.handlers.handler_busy_ms for b in engine.components.brokers)


def test_a_wait_is_busy_time_of_the_handler() -> None:
    """A preempted thread is runnable, not in receiveRequest: Kafka's idle meter counts it busy."""
    calm, preempted = _handler_busy_ms(None), _handler_busy_ms("{every: 1ms, wait: 5ms}")
    assert preempted > 3 * calm


def test_same_seed_same_waits() -> None:
    one, two = _run("{every: 1ms, wait: {type: lognormal, median: 1ms, p99: 4ms}}", seed=4), \
        _run("{every: 1ms, wait: {type: lognormal, median: 1ms, p99: 4ms}}", seed=4)
    assert table_hash(one.requests) == table_hash(two.requests)


@pytest.mark.parametrize(("value", "words"), [
    ("{every: 0ms, wait: 1ms}", "out of range (allowed: 1us to 1h)"),
    ("{wait: 1ms}", "every"),
    ("{every: 1ms}", "wait"),
    ("{every: 1ms, wait: 1ms, per_running_thread: -1}", "per_running_thread"),
])
def test_bad_preemption_is_refused_with_the_key(value: str, words: str) -> None:
    with pytest.raises(ScenarioError) as info:
        with_overrides(scenario(), [f"machine_preemption={value}"])
    assert "machine_preemption" in str(info.value) and words in str(info.value)



def test_waits_come_more_often_while_other_threads_of_the_machine_work() -> None:
    """`per_running_thread`: a produce's response is sent while its handler goes on to the followers' fetches it
    completed (ReplicaManager.tryCompleteActions), one other thread at work, so with 3 the send waits 4 times as
    often; 0 is the machine's one rate, the run as without the key."""
    calm = _run("{every: 1ms, wait: 5ms}")
    same = _run("{every: 1ms, wait: 5ms, per_running_thread: 0}")
    assert table_hash(calm.requests) == table_hash(same.requests)
    crowded = _run("{every: 1ms, wait: 5ms, per_running_thread: 3}")
    assert _waited(calm, "ResponseSendTimeMs") == pytest.approx(1 - math.exp(-0.2), abs=0.04)
    assert _waited(crowded, "ResponseSendTimeMs") > _waited(calm, "ResponseSendTimeMs") + 0.15
