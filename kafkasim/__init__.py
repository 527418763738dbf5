"""kafkasim: a simulator of Kafka's request handling, from one leader broker to a cluster with a KRaft controller.

    import kafkasim
    scenario = kafkasim.load_scenario("scenarios/quickstart.yaml")
    shorter = kafkasim.with_overrides(scenario, ["duration=10s"])   # the CLI's --set
    result = kafkasim.run_scenario(scenario)     # -> kafkasim.RunResult
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkasim._lazy import lazy_getattr

__version__ = "0.1.0"

KAFKA_VERSION = "4.3.1"
"""The Apache Kafka release kafkasim models (its rules and defaults; docs/kafka-versions.md lists what changed
since 4.0), and the one ``kafkasim run --on-kafka`` and the differential suite run."""

if TYPE_CHECKING:
    from kafkasim.record.result import RunResult
    from kafkasim.run.engine import run_scenario
    from kafkasim.scenario import ScenarioError, load_scenario, with_overrides

__all__ = ["KAFKA_VERSION", "RunResult", "ScenarioError", "__version__", "load_scenario", "run_scenario", "with_overrides"]

# Lazy re-exports: `import kafkasim` stays cheap (no SimPy, pandas or pydantic until used).
_LAZY = {
    "load_scenario": "kafkasim.scenario",
    "ScenarioError": "kafkasim.scenario",
    "with_overrides": "kafkasim.scenario",
    "run_scenario": "kafkasim.run.engine",
    "RunResult": "kafkasim.record.result",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
