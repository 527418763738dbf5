"""Preemption: a broker thread's waits for a core in the middle of its work, on a machine whose cores other
threads share (simulator-only; Kafka has no such config):

    machine_preemption:
      every: 1ms                                        # of a thread's work, on average, between two waits
      wait: {type: lognormal, median: 0.2ms, p99: 1ms}  # how long each wait lasts

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
