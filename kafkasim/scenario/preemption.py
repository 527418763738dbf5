"""Preemption: a broker thread's waits for a core in the middle of its work, on a machine whose cores other
threads share (simulator-only; Kafka has no such config):

    machine_preemption:
      every: 1ms                                        # of a thread's work, on average, between two waits
      wait: {type: lognormal, median: 0.2ms, p99: 1ms}  # how long each wait lasts
      per_running_thread: 1.5                           # optional: waits 2.5 times as often with one other thread at work

Off unless a scenario asks (kafkasim.sim.preemption).
"""

from __future__ import annotations

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import DurationDistribution
from kafkasim.scenario.units import Duration

MIN_EVERY_MS = 0.001
"""The least mean work between two waits: a smaller one would draw a busy loop of waits for every step."""


class Preemption(ScenarioModel):
    """Waits for a core within the work of the brokers' request handlers (their service times) and network
    threads (a read, a send): a Poisson process of one wait per `every` of a thread's work, on average, each
    lasting a draw of `wait`. A thread's long work waits more often than its short work, as a thread that runs
    longer is more likely to be preempted by another that wants a core (Linux's CFS). Random streams
    `broker-<id>/preemption` and `broker-<id>/preemption/wait` of each broker."""

    every: Duration = Field(ge=MIN_EVERY_MS, le=3_600_000.0)
    """Mean work between two waits (e.g. 1ms: a 0.1 ms step waits one time in ten or so)."""
    wait: DurationDistribution
    """How long each wait for a core lasts (e.g. {type: lognormal, median: 0.2ms, p99: 1ms}); a negative draw
    is 0."""
    per_running_thread: float = Field(default=0.0, ge=0.0, le=1000.0)
    """How much more often the waits come for each other thread of the machine at work when a piece of work
    starts: the rate is `1 + per_running_thread * others` times `every`'s (the others counted as
    `machine_wakeup_per_thread` counts them: the brokers' request handlers, network threads and replica fetchers
    at work). 0 (the default): one rate whatever runs. On a real broker of 2 shared cores (Kafka 4.3.1) a
    consumer fetch's handling was above 0.4 ms 0.6-1.1% of the time when no other broker thread ran as it
    started, 3.3-4.4% when one did (`kafkasim calibrate` fits it)."""
