"""Scenario files: YAML -> a validated, fully resolved `Scenario` model (+ its JSON Schema).

    scenario = load_scenario("scenarios/quickstart.yaml")      # or YAML text
    faster = with_overrides(scenario, ["producers[0].rate=5000/s"])
    text = dump_scenario(faster)                                # loads back equal

Every value is in canonical units: durations in ms, sizes in bytes, rates per second, bandwidth in bytes
per second. Every problem is a ScenarioError listing `file:line: key.path: message` lines.
"""

from kafkasim.scenario.broker import BrokerConfig, HandlerCosts
from kafkasim.scenario.clients import (
    ConstantArrival,
    ConsumerConfig,
    FollowerConfig,
    FollowerCosts,
    OnOffArrival,
    PoissonArrival,
    ProducerConfig,
)
from kafkasim.scenario.cluster import BrokerOverride, ClusterConfig, NicConfig
from kafkasim.scenario.distributions import (
    Constant,
    Distribution,
    Empirical,
    Exponential,
    LogNormal,
    Uniform,
)
from kafkasim.scenario.errors import Problem, ScenarioError
from kafkasim.scenario.faults import (
    ConnectionResetFault,
    CrashFault,
    FaultBase,
    HalfOpenFault,
    LinkDelayFault,
    LinkDropFault,
    NetworkPartitionFault,
    PauseFault,
    ShutdownFault,
    SlowDiskFault,
)
from kafkasim.scenario.load import (
    SCHEMA_FILE,
    dump_scenario,
    load_scenario,
    scenario_json_schema,
    scenario_json_schema_text,
    validate_data,
)
from kafkasim.scenario.network import Link, LinkDirection, NetworkConfig
from kafkasim.scenario.overrides import shortened, with_overrides
from kafkasim.scenario.scenario import Scenario, VirtualClock, WallclockClock
from kafkasim.scenario.topics import TopicConfig

__all__ = [
    "SCHEMA_FILE",
    "BrokerConfig",
    "BrokerOverride",
    "ClusterConfig",
    "Constant",
    "ConstantArrival",
    "ConsumerConfig",
    "CrashFault",
    "Distribution",
    "Empirical",
    "Exponential",
    "FaultBase",
    "FollowerConfig",
    "FollowerCosts",
    "HandlerCosts",
    "Link",
    "LinkDelayFault",
    "LinkDirection",
    "ConnectionResetFault",
    "HalfOpenFault",
    "LinkDropFault",
    "LogNormal",
    "NetworkConfig",
    "NetworkPartitionFault",
    "NicConfig",
    "OnOffArrival",
    "PauseFault",
    "PoissonArrival",
    "Problem",
    "ProducerConfig",
    "Scenario",
    "ScenarioError",
    "ShutdownFault",
    "SlowDiskFault",
    "TopicConfig",
    "Uniform",
    "VirtualClock",
    "WallclockClock",
    "dump_scenario",
    "load_scenario",
    "scenario_json_schema",
    "scenario_json_schema_text",
    "shortened",
    "validate_data",
    "with_overrides",
]
