"""The SimPy engine: build a scenario's components, run them, record requests, batches and gauges.

    from kafkasim.run import run_scenario
    result = run_scenario(scenario, seed=7)      # -> RunResult

Names are imported lazily so that ``import kafkasim.sim.clock`` (or the CLI's startup) does not pay for
pandas and the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkasim._lazy import lazy_getattr

if TYPE_CHECKING:
    from kafkasim.record.result import RunResult
    from kafkasim.run.engine import Engine, run_scenario

__all__ = ["Engine", "RunResult", "run_scenario"]

_LAZY = {
    "Engine": "kafkasim.run.engine",
    "run_scenario": "kafkasim.run.engine",
    "RunResult": "kafkasim.record.result",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
