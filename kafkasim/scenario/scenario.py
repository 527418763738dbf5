"""The whole scenario: what runs, for how long, under which configs and faults."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from kafkasim.scenario import request_rows
from kafkasim.scenario.base import OrShorthand, ScenarioModel
from kafkasim.scenario.broker import LONG_MAX, MAX_PARTITIONS, BrokerConfig
from kafkasim.scenario.clients import (
    ConsumerConfig,
    ConsumerCosts,
    FollowerConfig,
    ProducerConfig,
    ProducerCosts,
)
from kafkasim.scenario.cluster import ClusterConfig
from kafkasim.scenario.cold_start import ColdStart
from kafkasim.scenario.controller import ControllerConfig
from kafkasim.scenario.distributions import typical_value
from kafkasim.scenario.errors import Loc, allowed_list, fail_at, unknown_message
from kafkasim.scenario.faults import Fault, NetworkPartitionFault, TargetKind
from kafkasim.scenario.hardware import HOST_PRESETS, Hardware, filled
from kafkasim.scenario.limits import partition_sample_stride
from kafkasim.scenario.network import NetworkConfig
from kafkasim.scenario.preemption import Preemption
from kafkasim.scenario.stalls import Stalls
from kafkasim.scenario.topics import TopicConfig
from kafkasim.scenario.units import Duration, show_duration

# The shapes of the brokers' names, to be matched whole (`fullmatch`: a `$` would also match before a final
# newline, and `\d` digits of any script). A fault target is a name the scenario has (`target_kind`):
# `follower-02` has the shape, not the name. Client names of these shapes are reserved.
FOLLOWER_NAME = re.compile(r"follower-([0-9]+)")
BROKER_NAME = re.compile(r"broker-([0-9]+)")
MACHINE_HOST = "machine"
"""The host of `machine_stalls`: its stalls' rows and random streams (kafkasim.run.stalls)."""
CLIENTS_HOST = "clients"
"""The host of `clients_stalls`: its stalls' rows and random streams (kafkasim.run.stalls)."""
# Wall-clock pacing: 1000 times slower than real time shows a millisecond in a second; slower never ends.
MIN_SPEED = 0.001
MAX_SPEED = 1e6
# What a run keeps grows with its records, its requests and its gauge rows (about 100-300 bytes each, all
# held at once when the tables are built at the end).
MAX_RECORDS = 10_000_000
MAX_REQUEST_ROWS = 20_000_000
MAX_GAUGE_ROWS = 20_000_000
# A fetch that is answered at once is sent again one round trip later; below this the run would spend
# millions of fetches per simulated second (with no latency and no costs: forever at one instant).
MIN_BUSY_FETCH_ROUND_TRIP_MS = 0.01
SCENARIO_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


class VirtualClock(ScenarioModel):
    """Simulated time runs as fast as the computer can go (the default)."""

    mode: Literal["virtual"] = "virtual"


class WallclockClock(ScenarioModel):
    """Simulated time is paced against the wall clock, e.g. to watch a run live."""

    mode: Literal["wallclock"] = "wallclock"
    speed: float = Field(default=1.0, ge=MIN_SPEED, le=MAX_SPEED)
    """Simulated seconds per real second: 1.0 = real time, 0.1 = ten times slower than real time."""


def _clock_shorthand(value: Any) -> Any:
    return {"mode": value} if isinstance(value, str) else value


Clock = Annotated[
    VirtualClock | WallclockClock,
    Field(discriminator="mode"),
    BeforeValidator(_clock_shorthand),
    OrShorthand({"enum": ["virtual", "wallclock"]}),
]


class Scenario(ScenarioModel):
    """A validated scenario; every value is in canonical units (ms, bytes, per second, bytes per second).

    After validation inherited values are filled in: every topic holds its effective configs (broker
    defaults applied), every producer, consumer and the followers hold their effective `link`
    (network.default_link with their own keys on top), so the engine never looks anything up twice.
    """

    name: str = Field(pattern=SCENARIO_NAME_PATTERN)
    """Short identifier (letters, digits, '.', '_', '-'); used in result file names."""
    description: str = Field(min_length=1, max_length=20_000)
    """What the scenario teaches and what to look for in its results."""
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    """Seed of every random stream of the run."""
    duration: Duration = Field(gt=0)
    """Simulated run time, warm-up included."""
    warmup: Duration = 0.0
    """Initial period excluded from summaries (must be shorter than duration)."""
    sample_interval: Duration = Field(default=100.0, ge=1.0)
    """Period of gauge sampling (HW, LEO, ISR size, purgatory and queue sizes)."""
    clock: Clock = Field(default_factory=VirtualClock)
    """virtual (default) or {mode: wallclock, speed: 1.0}."""
    invariants: bool = True
    """Check Kafka's invariants (HW <= LEO, ...) during the run; a violation stops it."""
    hardware: Hardware | None = None
    """Simulator-only: a named host (`{preset: kreps-2014}`) whose NIC, link, disk and per-partition cost
    replace kafkasim's defaults wherever the scenario does not write its own; absent: kafkasim's defaults."""
    machine_stalls: Stalls | None = None
    """Simulator-only: stalls of the one machine every broker runs on (a cluster on one host, as a local test
    cluster is): each stops every broker at once, as a machine whose cores all go to something else (a
    collection in one JVM, another process) stops every JVM on it, where `broker.stalls` stops each broker on
    draws of its own. The clients keep their own `stalls`. Rows and random streams of host `machine`; absent:
    none."""
    clients_stalls: Stalls | None = None
    """Simulator-only: stalls of the one process every producer and consumer of the scenario runs in, as
    kafkasim's load driver runs them on a real cluster (LoadDriver: every client in one JVM): each stops every
    client at once, as a collection in that JVM, or its threads waiting for the machine's cores, stops all of
    them, where a client's own `stalls` stop it alone, on draws of its own (both may be set: they nest). On the
    project's machine, at acks=all, a record's end-to-end latency was more than 5 ms beyond its produce latency
    for 0-0.12% of the records (a consumer stalls when its producer does), where stalls of a process per client
    put 1.4-2.1% of them so far apart. Rows and random streams of host `clients`; absent: none."""
    machine_wakeup_per_thread: Duration = Field(default=0.0, ge=0.0, le=1000.0)
    """Simulator-only: for a cluster on one machine, how much longer a woken broker thread waits before it runs
    for each broker thread running then on any broker -- a request handler between taking a request and going back
    for the next, a network thread reading or sending -- beyond its own `broker.costs.wakeup` (a handler's
    `handler_wakeup` when set). A woken thread on a machine of few cores waits longer the more threads hold them:
    on the project's machine (2 cores, a controller, three brokers and the clients; Kafka 4.3.1) a produce's
    RequestQueueTimeMs p50 was 0.03-0.05 ms with none running when it arrived, 0.05-0.07 with one, 0.08-0.09 with
    two or more. 0 (the default): no such wait (kafkasim.sim.machine_load; `kafkasim calibrate` fits it)."""
    machine_wakeup_scale_per_thread: float = Field(default=0.0, ge=0.0, le=1000.0)
    """Simulator-only: for a cluster on one machine, how much longer a woken request handler's own wait (its draw
    of `broker.costs.handler_wakeup`, or of `wakeup`) is for each broker thread running then, as a fraction of it:
    the draw is 1 + this times the running threads longer, so a long wait comes more often on a busy machine. On
    the project's machine (Kafka 4.3.1) a consumer fetch's RequestQueueTimeMs was above 0.4 ms 1.4-4.9% of the
    time with no broker thread running when it arrived, 3.6-11% with one, 7.7-18% with two or more. A network
    thread woken for a response waits its draw alone (kafkasim.sim.machine_load says why). 0 (the default): the
    draw alone (`kafkasim calibrate` fits it)."""
    machine_fetcher_weight: float = Field(default=1.0, ge=0.0, le=1000.0)
    """Simulator-only: for a cluster on one machine, how many of the machine's running threads a follower's replica
    fetcher counts for while it appends (`followers.costs.append`), where `machine_wakeup_per_thread`,
    `machine_wakeup_scale_per_thread` and `machine_preemption.per_running_thread` count them. On the project's
    machine (Kafka 4.3.1) a produce that arrived while a follower was between the leader's answer and its next fetch
    waited to be taken 0.079-0.116 ms at its p50, one that arrived while none was 0.041-0.064, where a logged broker
    thread running added 0.015-0.03: the followers' JVMs take the few cores while they work. 1 (the default): one
    thread like any other (kafkasim.sim.machine_load; `kafkasim calibrate` fits it)."""
    machine_wakeup_preempts: bool = False
    """Simulator-only: for a cluster on one machine of busy cores, a request handler whose response wakes an
    idle network thread gives that thread its core (Linux's wake-up preemption) and goes on to the parked
    fetches its request completed (ReplicaManager.tryCompleteActions) only once the response is sent. On the
    project's machine (Kafka 4.3.1) the first follower fetch an acks=1 produce completed was answered 0.19-0.24
    ms after the produce's response, about a woken thread's wait and send; the second 0.04-0.06 ms after the
    first, while an acks=all produce (no response of its own there) answered the second 0.16-0.47 ms after the
    first: it yields once in a request's handling, to the first idle network thread its responses wake.
    false (the default): the handler goes on at once (kafkasim.sim.machine_load)."""
    machine_wakeup_preempts_from: float = Field(default=0.0, ge=0.0, le=1000.0)
    """Simulator-only: with `machine_wakeup_preempts`, how many of the machine's threads (those
    `machine_wakeup_per_thread` counts, the handler itself among them) must run when the handler wakes the network
    thread for it to yield: with fewer, a core is free for the woken thread and the handler goes on at once. On the
    project's machine (Kafka 4.3.1) the first follower fetch an acks=1 produce completed was answered a median
    0.29-0.32 ms after the produce's response, a quarter of the time within 0.12 ms and a quarter after 0.48 ms
    (five runs): the handler sometimes went on at once, sometimes not. 0 (the default): it always yields, as the
    fitted presets have it (fitted, it went to never and lost the completion gap: docs/calibration.md)."""
    machine_wakeup_waits: float = Field(default=0.0, ge=0.0, le=1.0)
    """Simulator-only: for a cluster on one machine of busy cores, the share of the wake-ups of an idle network
    thread by a request handler's produce response in which the woken thread, put on the handler's core, waits for
    the handler: the handler goes on at once to the parked fetches its request completed, and the network thread
    runs only once the handler goes back to the request queue, its wake-up counted from then (Linux's wake-affine
    placement). The other wake-ups go as `machine_wakeup_preempts` says. On the project's machine (Kafka 4.3.1), of
    the acks=1 produces that completed both followers' parked fetches, 27-31% had their response dequeued after
    the handler had answered both (0.16-0.21 ms after it was queued, 0.03 ms after the second), 56-59% before the
    first (five runs). 0 (the default): none waits (kafkasim.sim.machine_load; the fitted presets leave it at 0)."""
    machine_preemption: Preemption | None = None
    """Simulator-only: for a cluster on one machine of few cores, the brokers' threads wait for a core now and then
    in the middle of their work -- a request handler's service time, a network thread's read or send -- the longer
    the work, the likelier (kafkasim.sim.preemption). On the project's machine (2 cores, a controller, three brokers
    and the clients; Kafka 4.3.1) a produce's LocalTimeMs was above 0.4 ms one time in twenty, a consumer fetch's, a
    third as much work, one time in seventy (the medians of three runs). Absent (the default): none
    (`kafkasim calibrate` fits it)."""
    machine_cold_start: ColdStart | None = None
    """Simulator-only: for a cluster on one machine whose cores other processes share, the work a broker's request
    handlers, its network threads or a replica fetcher starts after being idle costs more, `cost * (1 - exp(-(idle -
    grace) / ramp))` once the idle time passes `grace` (kafkasim.sim.cold_start): its caches went cold meanwhile. On
    the project's machine (Kafka 4.3.1) a produce's LocalTimeMs p50 was 0.14-0.19 ms when a handler had finished
    work less than 0.6 ms before and 0.2 ms more after more than 6 ms without; at a third of the request rate each
    request took 1.5 times the CPU. Absent (the default): none (`kafkasim calibrate` fits it)."""
    broker: BrokerConfig = Field(default_factory=lambda: BrokerConfig())
    """Kafka broker configs of every broker (`cluster.overrides` sets those that differ per broker)."""
    controller: ControllerConfig = Field(default_factory=lambda: ControllerConfig())
    """The KRaft controller: fencing of brokers whose heartbeats stop, leader elections, ISR changes."""
    cluster: ClusterConfig | None = None
    """N brokers, each leading some partitions and following others (Kafka's replica placement). Absent:
    broker 0 leads every partition and brokers 1..RF-1 follow it."""
    topics: list[TopicConfig] = Field(min_length=1, max_length=100)
    """1 to 100 topics, with at most 10,000 partitions in all."""
    followers: FollowerConfig = Field(default_factory=lambda: FollowerConfig())
    producers: list[ProducerConfig] = Field(default_factory=list, max_length=100)
    """At most 100."""
    consumers: list[ConsumerConfig] = Field(default_factory=list, max_length=100)
    """At most 100."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    faults: list[Fault] = Field(default_factory=list, max_length=1000)
    """At most 1000."""

    # --- derived, for the engine ---

    @property
    def max_replication_factor(self) -> int:
        return max(t.replication_factor for t in self.topics)

    @property
    def follower_ids(self) -> list[int]:
        """Without `cluster:`, broker ids of the simulated followers: 1..RF-1 of the largest replication factor.
        Empty with `cluster:`, where every broker leads and follows (`broker_ids`)."""
        return [] if self.cluster is not None else list(range(1, self.max_replication_factor))

    @property
    def broker_ids(self) -> list[int]:
        """Every broker: 0..cluster.brokers-1, or without `cluster:` the leader 0 and its followers."""
        return self.cluster.broker_ids if self.cluster is not None else [0, *self.follower_ids]

    def broker_for(self, broker_id: int) -> BrokerConfig:
        """The effective broker configs of `broker_id`: `broker:` with its `cluster.overrides` entry applied."""
        if broker_id not in self.broker_ids:
            raise KeyError(broker_id)
        for override in self.cluster.overrides if self.cluster is not None else []:
            if override.broker == broker_id:
                return override.applied_to(self.broker)
        return self.broker

    def topic(self, name: str) -> TopicConfig:
        for t in self.topics:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def flushes(self) -> bool:
        """Whether any topic flushes (`flush.messages` or `flush.ms` below Long.MAX_VALUE): only then, or with a
        broker's `disk.page_cache` set, does a run model the brokers' disks. With Kafka's defaults flushing is
        left to the OS, at no cost here."""
        return any(t.flush_messages < LONG_MAX or t.flush_ms < LONG_MAX for t in self.topics)

    def target_kind(self, target: str) -> TargetKind | None:
        """What a fault target names, or None if nothing (the run looks its target up by this very name)."""
        if target in (f"follower-{i}" for i in self.follower_ids):
            return "follower"
        if self.cluster is not None and target in (f"broker-{i}" for i in self.cluster.broker_ids):
            return "broker"
        if any(p.name == target for p in self.producers):
            return "producer"
        if any(c.name == target for c in self.consumers):
            return "consumer"
        return None

    # --- validation across sections ---

    @model_validator(mode="after")
    def _resolve_and_check(self) -> Scenario:
        if self.hardware is not None:
            self._apply_hardware(self.hardware)
        for topic in self.topics:
            topic.inherit(self.broker)
        for override in self.cluster.overrides if self.cluster is not None else []:
            override.inherit(self.broker)
        default = self.network.default_link
        endpoints: list[ProducerConfig | ConsumerConfig | FollowerConfig] = [
            *self.producers,
            *self.consumers,
            self.followers,
        ]
        for endpoint in endpoints:
            own = endpoint.link if "link" in endpoint.model_fields_set else None
            object.__setattr__(endpoint, "link", default if own is None else own.merged_over(default))
        problems = _cross_checks(self)
        if problems:
            fail_at(problems)
        return self

    def _apply_hardware(self, hardware: Hardware) -> None:
        """The preset's values in every hardware field the author left out (kafkasim.scenario.hardware), before
        topics, `cluster.overrides` and endpoint links inherit from `broker:` and `network.default_link`."""
        host = HOST_PRESETS[hardware.preset]
        broker = self.broker
        object.__setattr__(broker, "disk", filled(broker.disk, host.disk))
        object.__setattr__(broker, "costs", filled(broker.costs, host.costs))
        for override in self.cluster.overrides if self.cluster is not None else []:
            if "disk" in override.model_fields_set:  # one left out inherits broker.disk, the preset's already
                object.__setattr__(override, "disk", filled(override.disk, host.disk))
        if self.cluster is not None:
            object.__setattr__(self.cluster, "nic", filled(self.cluster.nic, {"bandwidth": host.nic_bandwidth}))
        network = self.network
        link = filled(network.default_link, {"latency": host.link_latency, "bandwidth": host.link_bandwidth})
        object.__setattr__(network, "default_link", link)
        if host.broker_stalls is not None and "stalls" not in broker.model_fields_set:
            interval, pause = host.broker_stalls
            object.__setattr__(broker, "stalls", Stalls.model_construct(set(), preset=None, interval=interval,
                                                                        pause=pause))
        if host.producer_costs:
            for producer in self.producers:
                if "costs" not in producer.model_fields_set:
                    object.__setattr__(producer, "costs", filled(ProducerCosts(), host.producer_costs))
        if host.consumer_costs:
            for consumer in self.consumers:
                if "costs" not in consumer.model_fields_set:
                    object.__setattr__(consumer, "costs", filled(ConsumerCosts(), host.consumer_costs))


def _cross_checks(s: Scenario) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []

    def add(loc: Loc, message: str) -> None:
        problems.append((loc, message))

    if s.warmup >= s.duration:
        add(("warmup",), "must be shorter than duration")
    if s.sample_interval > s.duration:
        # A scenario that samples once a run (calibration_base.yaml: sample_interval equal to its duration) run
        # shorter with --set duration=... says what else to set.
        add(("sample_interval",), f"{show_duration(s.sample_interval)} is longer than duration "
            f"{show_duration(s.duration)}: at most the duration (set sample_interval too)")

    seen_topics: set[str] = set()
    for i, t in enumerate(s.topics):
        if t.name in seen_topics:
            add(("topics", i, "name"), f"topic {t.name!r} is defined twice")
        seen_topics.add(t.name)
        if t.min_insync_replicas > t.replication_factor:
            explicit = "min_insync_replicas" in t.model_fields_set
            loc: Loc = ("topics", i, "min.insync.replicas") if explicit else ("broker", "min.insync.replicas")
            add(
                loc,
                f"{t.min_insync_replicas} > replication.factor {t.replication_factor} of topic {t.name!r}; "
                f"Kafka would silently cap it to {t.replication_factor}, hiding the misconfiguration "
                f"(allowed: 1..{t.replication_factor})",
            )

    per_broker: list[tuple[Loc, Any]] = [(("broker",), s.broker)]
    per_broker += [(("cluster", "overrides", i), o) for i, o in enumerate(s.cluster.overrides if s.cluster else [])]
    for loc, b in per_broker:
        if b.replica_fetch_wait_max_ms > b.replica_lag_time_max_ms:
            # KafkaConfig refuses it: a follower parked longer than the lag limit would keep leaving the ISR.
            add(
                (*loc, "replica.fetch.wait.max.ms"),
                f"must be <= replica.lag.time.max.ms ({b.replica_lag_time_max_ms}), as Kafka requires",
            )

    for where, shared, why in (
            ("machine_stalls", s.machine_stalls, "the machine handles no requests and fetches nothing of its own"),
            ("clients_stalls", s.clients_stalls, "the clients' process handles no requests and has no replica fetchers")):
        for key in shared.counts if shared is not None else {}:
            add((where, key), f"is a broker's only: {why} (allowed: interval here, or broker.stalls.{key})")
    _cluster_checks(s, add)

    _busy_fetch_checks(s, add)
    _work_checks(s, add)

    topic_names = [t.name for t in s.topics]
    client_names: set[str] = set()
    clients: list[tuple[str, int, ProducerConfig | ConsumerConfig]] = [
        *(("producers", i, p) for i, p in enumerate(s.producers)),
        *(("consumers", i, c) for i, c in enumerate(s.consumers)),
    ]
    for section, i, c in clients:
        if c.name in client_names:
            add((section, i, "name"), f"name {c.name!r} is already used by another producer or consumer")
        elif FOLLOWER_NAME.fullmatch(c.name):
            add((section, i, "name"), "names 'follower-<id>' are reserved for the followers")
        elif BROKER_NAME.fullmatch(c.name):
            add((section, i, "name"), "names 'broker-<id>' are reserved for the brokers")
        elif c.name == MACHINE_HOST and s.machine_stalls is not None and s.machine_stalls.enabled:
            add((section, i, "name"), f"name {MACHINE_HOST!r} is the machine's beside machine_stalls (its stalls' "
                                      "host and random streams); name the client otherwise")
        elif c.name == CLIENTS_HOST and s.clients_stalls is not None and s.clients_stalls.enabled:
            add((section, i, "name"), f"name {CLIENTS_HOST!r} is the clients' process's beside clients_stalls (its "
                                      "stalls' host and random streams); name the client otherwise")
        for key in c.stalls.counts if c.stalls is not None else {}:
            add((section, i, "stalls", key), "is a broker's only: a client handles no requests and has no replica "
                                             "fetchers (allowed: interval, a stall every interval of time)")
        client_names.add(c.name)
        if c.topic not in topic_names:
            add((section, i, "topic"), unknown_message("topic", c.topic, topic_names))

    brokers = [f"broker-{i}" for i in s.cluster.broker_ids] if s.cluster is not None else []
    valid_targets = brokers + [f"follower-{i}" for i in s.follower_ids] + [c.name for _, _, c in clients]
    for i, f in enumerate(s.faults):
        if isinstance(f, NetworkPartitionFault):
            _partition_checks(s, i, f, [c.name for _, _, c in clients], add)
            continue
        kind = s.target_kind(f.target)
        if kind is None and s.cluster is not None and FOLLOWER_NAME.fullmatch(f.target):
            add(("faults", i, "target"), f"a cluster's brokers are named broker-<id>, not follower-<id> (allowed: "
                                         f"{allowed_list(valid_targets)})")
        elif kind is None and s.cluster is None and BROKER_NAME.fullmatch(f.target):
            add(("faults", i, "target"), "broker-<id> targets need a cluster: section; without one the brokers are "
                                         f"the leader and its followers (allowed: {allowed_list(valid_targets)})")
        elif kind is None:
            if not valid_targets:
                add(("faults", i, "target"), f"unknown target {f.target!r}: the scenario has no followers or clients")
            else:
                add(("faults", i, "target"), unknown_message("target", f.target, valid_targets))
        elif kind not in f.targets:
            # A cluster's brokers are broker-<id>; a scenario without one has follower-<id>.
            kinds = [k for k in f.targets if k != ("follower" if s.cluster is not None else "broker")]
            add(("faults", i, "target"), f"a {f.type} fault applies to {'s or '.join(kinds)}s only, not a {kind}")
        if f.at >= s.duration:
            add(("faults", i, "at"), "must be before the end of the run (duration)")
    _down_window_checks(s, add)
    return problems


def _down_window_checks(s: Scenario, add: Any) -> None:
    """A broker is crashed or shut down while it is up: a `crash` or `shutdown` may not start while an earlier
    one of the same broker has it down, nor at the very instant of its restart (which of the two came first
    would depend on the order of the faults in the file). A crash of a crashed broker did nothing, and its
    restart_after restarted a broker that was up or never came."""
    windows: dict[int, list[tuple[int, Fault]]] = {}
    for i, f in enumerate(s.faults):
        if f.type not in ("crash", "shutdown"):
            continue
        if s.target_kind(f.target) in ("broker", "follower"):  # follower-<k> is broker k's process too
            windows.setdefault(int(f.target.rpartition("-")[2]), []).append((i, f))
    for faults in windows.values():
        faults.sort(key=lambda item: (float(item[1].at), item[0]))
        down = faults[0][1]  # of the windows accepted so far, the one that ends last
        for j, later in faults[1:]:
            end = down.end
            if end is not None and later.at > end:
                down = later
                continue
            until = "the end of the run" if end is None else show_duration(end)
            allowed = (f"an `at` after {until}, its restart" if end is not None else
                       f"a restart_after for the {down.type} at {show_duration(down.at)}, and an `at` after its restart")
            add(("faults", j, "at"), f"{show_duration(later.at)}: {later.target} is down then ({down.type} at "
                                     f"{show_duration(down.at)} until {until}); a broker is crashed or shut down "
                                     f"while it is up (allowed: {allowed})")


def _partition_checks(s: Scenario, i: int, f: NetworkPartitionFault, client_names: list[str], add: Any) -> None:
    """A network partition's sides name hosts of this scenario, each once, with a broker among them."""
    brokers = [f"broker-{b}" for b in s.broker_ids]
    hosts = [*brokers, *client_names, "controller"]
    allowed = allowed_list(hosts)
    seen: dict[str, int] = {}
    unknown = False
    for k, side in enumerate(f.sides):
        if not side:
            add(("faults", i, "sides", k), f"is empty: a side names at least one host (allowed: {allowed})")
        for j, host in enumerate(side):
            where = ("faults", i, "sides", k, j)
            follower = FOLLOWER_NAME.fullmatch(host)
            if host in seen:
                add(where, f"{host} is listed twice on this side" if seen[host] == k else
                    f"{host} is on both sides: a partition cuts the hosts of one side off from those of the other, "
                    "so a host is on one side at most")
                continue
            if host in hosts:
                seen[host] = k
                continue
            unknown = True
            if follower and s.cluster is None:
                add(where, f"name the host, not the fetcher: {host} runs on broker-{follower.group(1)} (allowed: "
                           f"{allowed})")
            elif follower:
                add(where, f"a cluster's brokers are named broker-<id>, not follower-<id> (allowed: {allowed})")
            else:
                add(where, unknown_message("host", host, hosts))
    if all(f.sides) and not unknown and not any(host in brokers for host in seen):
        add(("faults", i, "sides"), "cuts nothing: clients and the controller talk only to brokers, so one side "
                                    f"must name a broker (allowed: {allowed_list(brokers)})")
    if f.at >= s.duration:
        add(("faults", i, "at"), "must be before the end of the run (duration)")


def _cluster_checks(s: Scenario, add: Any) -> None:
    """Replication factors the cluster can hold, and explicit replica assignments Kafka would accept."""
    for i, t in enumerate(s.topics):
        assignment = t.replica_assignment
        if s.cluster is None:
            if assignment is not None:
                add(("topics", i, "replica_assignment"), "needs a cluster: section (without one broker 0 leads "
                    "every partition and brokers 1..RF-1 follow it; allowed: add cluster: {brokers: N})")
            continue
        n = s.cluster.brokers
        if assignment is None:
            if t.replication_factor > n:
                explicit = "replication_factor" in t.model_fields_set
                loc: Loc = ("topics", i, "replication.factor") if explicit else ("broker", "default.replication.factor")
                add(loc, f"{t.replication_factor} > cluster.brokers {n} for topic {t.name!r}: Kafka's placer refuses "
                         f"it (INVALID_REPLICATION_FACTOR; allowed: 1 to {n})")
            continue
        _assignment_checks(("topics", i), t, n, add)


def _assignment_checks(loc: Loc, t: Any, brokers: int, add: Any) -> None:
    # ReplicationControlManager.createTopic's checks of a manual assignment (InvalidReplicaAssignmentException).
    assignment: list[list[int]] = t.replica_assignment
    rf = len(assignment[0])
    if "partitions" in t.model_fields_set and t.partitions != len(assignment):
        add((*loc, "partitions"), f"{t.partitions}, but replica_assignment lists {len(assignment)} partition(s) "
                                  "(allowed: leave partitions out, or make them agree)")
    if "replication_factor" in t.model_fields_set and t.replication_factor != rf:
        add((*loc, "replication.factor"), f"{t.replication_factor}, but replica_assignment gives partition 0 {rf} "
                                          "replica(s) (allowed: leave replication.factor out, or make them agree)")
    for p, replicas in enumerate(assignment):
        where = (*loc, "replica_assignment", p)
        if len(replicas) != rf:
            add(where, f"{len(replicas)} replica(s), but partition 0 has {rf}: every partition of a topic has the "
                       "same replication factor, as Kafka requires")
        for k, broker in enumerate(replicas):
            if not 0 <= broker < brokers:
                add((*where, k), f"broker {broker} does not exist (allowed: 0 to {brokers - 1}, the cluster's brokers)")
            elif broker in replicas[:k]:
                add((*where, k), f"broker {broker} appears twice; a partition's replicas are distinct brokers, as "
                                 "Kafka requires")


def _busy_fetch_checks(s: Scenario, add: Any) -> None:
    """A consumer or follower whose fetches return at once (no wait, or nothing to wait for) must not be able
    to send them faster than one per MIN_BUSY_FETCH_ROUND_TRIP_MS of simulated time."""
    costs = s.broker.costs
    broker_ms = sum(typical_value(d) for d in (costs.request, costs.network_read, costs.network_send))
    fetchers: list[tuple[Loc, ConsumerConfig | FollowerConfig, str, int, str, int]] = [
        (("consumers", i), c, "fetch.max.wait.ms", c.fetch_max_wait_ms, "fetch.min.bytes", c.fetch_min_bytes)
        for i, c in enumerate(s.consumers)
    ]
    if s.max_replication_factor > 1:
        for loc, b in [(("broker",), s.broker),
                       *((("cluster", "overrides", i), o) for i, o in enumerate(s.cluster.overrides if s.cluster else []))]:
            fetchers.append((loc, s.followers, "replica.fetch.wait.max.ms", b.replica_fetch_wait_max_ms,
                             "replica.fetch.min.bytes", b.replica_fetch_min_bytes))
    for loc, endpoint, wait_key, wait, min_key, min_bytes in fetchers:
        if wait > 0 and min_bytes > 0:
            continue
        link = endpoint.link
        assert link is not None  # resolved by _resolve_and_check
        latency = typical_value(link.latency_for("to_broker")) + typical_value(link.latency_for("from_broker"))
        round_trip = latency + broker_ms
        if round_trip < MIN_BUSY_FETCH_ROUND_TRIP_MS:
            key = wait_key if wait <= 0 else min_key
            add(
                (*loc, key),
                f"0 answers every fetch at once, and a fetch round trip (link latency both ways plus broker "
                f"costs request, network_read and network_send) takes about {round_trip:.3g} ms: it must take at "
                f"least 10us, or fetches repeat without simulated time passing (allowed: raise a latency or a "
                f"cost, or set {key} > 0)",
            )


def _work_checks(s: Scenario, add: Any) -> None:
    """Refuse what would not fit a run's memory or time before it starts, naming the key to change."""
    partitions = sum(t.partitions for t in s.topics)
    if partitions > MAX_PARTITIONS:
        add(("topics",), f"{partitions} partitions in all is out of range (allowed: up to {MAX_PARTITIONS} over all topics)")
    records = [(i, request_rows.records(s, p)) for i, p in enumerate(s.producers)]
    total = sum(n for _, n in records)
    if total > MAX_RECORDS:
        worst = max(records, key=lambda item: item[1])[0]
        add(
            ("producers", worst, "rate"),
            f"the producers would send about {total:,.0f} records in {show_duration(s.duration)}; a run keeps every "
            f"record, and at most {MAX_RECORDS:,} fit (allowed: lower the rates or the duration)",
        )
    _request_rows_check(s, add)
    per_sample = gauge_rows_per_sample(s)
    samples = s.duration / s.sample_interval
    if samples * per_sample > MAX_GAUGE_ROWS:
        shortest = s.duration * per_sample / MAX_GAUGE_ROWS
        add(
            ("sample_interval",),
            f"{show_duration(s.sample_interval)} over {show_duration(s.duration)} is {samples:,.0f} samples of "
            f"{per_sample} gauges, more than the {MAX_GAUGE_ROWS:,} rows a run keeps (allowed: at least "
            f"{show_duration(float(math.ceil(shortest)))} for this duration and these partitions)",
        )


def _request_rows_check(s: Scenario, add: Any) -> None:
    """Refuse a run whose requests table would not fit: its rows are estimated from the scenario's fetch
    waits, round trips and load (``kafkasim.scenario.request_rows``); the message names the producers,
    consumers or followers that send most of them, why, and the key to change."""
    contributors = request_rows.estimate(s)
    total = math.fsum(r.rows for r in contributors)
    if total <= MAX_REQUEST_ROWS:
        return
    kinds: dict[str, list[request_rows.RequestRows]] = {}
    for r in contributors:
        kinds.setdefault(r.kind, []).append(r)
    ranked = sorted(kinds.values(), key=lambda group: -math.fsum(r.rows for r in group))
    parts = []
    for group in ranked:
        rows = math.fsum(r.rows for r in group)
        if rows < 0.01 * total:
            break
        largest = max(group, key=lambda r: r.rows)
        if len(group) == 1:
            parts.append(f"{largest.who} about {rows:,.0f} ({largest.why})")
        else:
            name = "the followers" if largest.kind == "followers" else f"the {len(group)} {largest.kind}"
            parts.append(f"{name} about {rows:,.0f} (most, {largest.who}: {largest.why})")
    top = max(ranked[0], key=lambda r: r.rows)
    add(
        top.loc,
        f"a run of {show_duration(s.duration)} would record about {total:,.0f} requests, more than the "
        f"{MAX_REQUEST_ROWS:,} a run keeps (it keeps every request): {'; '.join(parts)} (allowed: a shorter "
        f"duration, or {top.advice})",
    )


def gauge_rows_per_sample(s: Scenario) -> int:
    """About how many gauge rows a run of `s` writes per sample (an upper bound): GaugeSampler's per
    partition HW, ISR size, under-min-ISR, leader id and the leader's LEO, two rows per follower (a
    leaderless partition writes only its leader id, -1), and the controller's offline partition count, every
    partition_sample_stride samples; per broker up to fourteen rows (queues, idle ratios, leader and
    under-replicated counts, purgatories, NIC bytes and utilisation), one per network thread, two with
    `cores` (CPU utilisation, run queue) and three with a disk (flush rate and time, utilisation); two per
    producer (in-flight requests, metadata age)."""
    partitions = sum(t.partitions for t in s.topics)
    partition_rows = 1 + sum(t.partitions * (3 + 2 * t.replication_factor) for t in s.topics)
    per_broker = sum(14 + s.broker_for(b).num_network_threads + (2 if s.broker_for(b).cores is not None else 0)
                     + (3 if s.flushes or s.broker_for(b).disk.page_cache is not None else 0)
                     for b in s.broker_ids)
    return math.ceil(partition_rows / partition_sample_stride(partitions)) + per_broker + 2 * len(s.producers)
