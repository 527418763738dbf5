"""Cold start: work a broker thread starts after it has been idle costs more, on a machine whose cores other
processes share (simulator-only; Kafka has no such config):

    machine_cold_start:
      cost: 0.2ms    # the extra work of a thread idle long enough for the caches to have forgotten it
      grace: 0.5ms   # optional: none of it within this long without work
      ramp: 3.5ms    # then 1 - e^-1 (63%) of it after this much longer

Off unless a scenario asks (kafkasim.sim.cold_start says what it stands for and what was measured).
"""

from __future__ import annotations

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.units import Duration


class ColdStart(ScenarioModel):
    """A request handler pool's, a broker's network threads' or a replica fetcher's work started after ``idle`` ms
    without any costs ``cost * (1 - exp(-(idle - grace) / ramp))`` more once ``idle`` passes ``grace``, on a core
    like the rest of its work."""

    cost: Duration = Field(ge=0.0, le=1000.0)
    """The extra work after a long idle (e.g. 0.2ms)."""
    ramp: Duration = Field(gt=0.0, le=3_600_000.0)
    """How soon an idle thread goes cold after the grace: 63% of `cost` after `grace` + `ramp` without work, 95%
    after `grace` + three times `ramp`."""
    grace: Duration = Field(default=0.0, ge=0.0, le=3_600_000.0)
    """How long a thread stays warm without work: nothing more within it (0, the default: the ramp starts at
    once)."""
