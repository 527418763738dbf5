"""Bare SimPy speed on this machine: the ceiling any kafkasim run can reach.

Two processes pass a token back and forth through plain events, with 1 ms of simulated time between
hand-overs (a `Timeout`), so every round processes the event mix a kafkasim request handler sees: one
timeout and one process-to-process event per hand-over.

    uv run python benchmarks/simpy_baseline.py [n]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Generator
from typing import Any

import simpy


def _ping_pong(env: simpy.Environment, rounds: int) -> None:
    inbox: list[simpy.Event] = [env.event(), env.event()]

    def player(me: int, first: bool) -> Generator[simpy.Event, Any, None]:
        other = 1 - me
        if first:
            inbox[other].succeed()
        for _ in range(rounds):
            yield inbox[me]
            inbox[me] = env.event()
            yield env.timeout(1)
            inbox[other].succeed()

    env.process(player(0, first=True))
    env.process(player(1, first=False))


def simpy_events_per_second(n: int = 200_000) -> float:
    """Processed SimPy events per wall second for about `n` events (a two-process ping loop)."""
    rounds = max(1, n // 4)  # per round and player: one hand-over event, one timeout
    env = simpy.Environment()
    _ping_pong(env, rounds)
    start = time.perf_counter()
    env.run()
    elapsed = time.perf_counter() - start
    events = 4 * rounds
    return events / elapsed


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    best = max(simpy_events_per_second(count) for _ in range(3))
    print(f"bare SimPy: {best:,.0f} events/s (best of 3, n={count:,})")
