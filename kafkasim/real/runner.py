"""`kafkasim run --on-kafka`: a scenario on a real Apache Kafka cluster, written as a simulated run's result.

1. Refuse what a real cluster here cannot take (``config_map.refusals``), list once what it ignores.
2. Kafka's jars (``kafka_libs``), the load driver compiled once into the user cache (and Toxiproxy built once, for a
   link_delay or connection_reset: ``toxiproxy``).
3. A KRaft controller and the scenario's brokers (``cluster``), every node's files inside the run's
   temporary directory; topics created with the replica assignment kafkasim's placer gives for the seed.
4. The load driver (``driver/LoadDriver.java``: Kafka's own producer and consumer) sends the records of the
   simulated run's schedule (``schedule``) at their intended times from time 0; faults happen at their
   scenario times (SIGKILL, SIGTERM, SIGSTOP/SIGCONT; a network_partition cuts the links between hosts,
   each in its own network namespace, and a link_drop the client's links to the brokers: ``netns``; a link_delay
   adds a latency toxic to the Toxiproxy proxies its target's traffic goes through and a connection_reset
   closes their connections: ``link_proxies``); a sampler inside each node (``driver/GaugeReporter.java``, a
   `metric.reporters` class) reads its gauges every ``sample_interval``.
5. At the end, the cuts still in place heal, brokers still down are started again (their logs are what the simulated audit reads), every
   partition is read from offset 0, everything is stopped, and the tables are assembled (``request_log``,
   ``assemble``, ``jmx``); ``summary.json`` by the simulated run's summary code.

Every process is stopped by pid whatever happens (``processes.Processes``), before the run's directory is
removed, and none starts after that (a fault's late restart included); a stop signal during that teardown
waits until it is done (``stop_signals``). A stop request (Ctrl-C) ends the load at once and the result
covers the time until then (summary ``interrupted_at_ms``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from kafkasim.real import assemble, gc_log, process_cpu
from kafkasim.real.class_archive import ClassArchive, archive_path
from kafkasim.real.cluster import RealCluster
from kafkasim.real.config_map import (
    CLIENTS_HOST,
    OBSERVER_HOST,
    RefusedOnKafka,
    kafka_configs,
    network_hosts,
    partition_host,
    refusals,
)
from kafkasim.real.failovers import real_failovers
from kafkasim.real.jmx import read_samples
from kafkasim.real.kafka_libs import KafkaLibs, compiled_jar, locate
from kafkasim.real.link_proxies import LinkProxies, proxied_targets
from kafkasim.real.machine_cpu import cpu_sample, cpu_shares
from kafkasim.real.netns import HostNetwork
from kafkasim.real.process_cpu import Sample as ThreadsSample
from kafkasim.real.processes import Proc, Processes, rss_bytes
from kafkasim.real.request_log import parse_lines
from kafkasim.real.schedule import MIN_RECORD_BYTES, planned_records, write_schedule
from kafkasim.real.server_log import controller_events, leader_starts
from kafkasim.real.stop_signals import StopSignals
from kafkasim.real.toxiproxy import Toxiproxy, server_binary
from kafkasim.record.phases import cut_phases, fault_spans
from kafkasim.record.result import KAFKA_LOGS_DIR, RunResult
from kafkasim.record.summary import summarize
from kafkasim.run.build import fetcher_counts, fetcher_name
from kafkasim.run.cluster_layout import ClusterLayout, cluster_layout
from kafkasim.scenario import Scenario, dump_scenario
from kafkasim.scenario.faults import (
    ConnectionResetFault,
    CrashFault,
    LinkDelayFault,
    LinkDropFault,
    NetworkPartitionFault,
    PauseFault,
    ShutdownFault,
)

DRIVER_DIR = Path(__file__).with_name("driver")
DRIVER_SOURCES = [DRIVER_DIR / "LoadDriver.java"]
REPORTER_SOURCES = [DRIVER_DIR / "GaugeReporter.java"]
"""The gauge sampler inside each Kafka node (a `metric.reporters` class on the nodes' classpath, after Kafka's jars)."""
DRIVER_LOG4J = DRIVER_DIR / "log4j2.properties"
DRAIN_MS = 1000
"""How long the producers may still finish what is in flight after the run's end (what they finish after
the end counts as pending, as in a simulated run that stops at its duration)."""
GO_DELAY_MS = 500
WARMUP_MS = 3000
"""Before time 0 each producer sends this long of its load to a warm-up topic (JIT, connections), then the
topic is deleted: a fresh client JVM's first second is several times slower than the rest."""
ENGINE = "kafka"
MIN_JMX_INTERVAL_MS = 1000.0
"""The nodes' gauges are sampled at the scenario's sample_interval, but at most once a second (each node's own
MBeans, read by driver/GaugeReporter.java inside it): a sample is a few dozen MBean reads per node, and the
differential suite's gauge comparisons were made at that cadence."""
GAUGE_REPORTERS = "org.apache.kafka.common.metrics.JmxReporter,GaugeReporter"
"""Kafka's default `metric.reporters` (its JMX reporter), and kafkasim's sampler."""
KEEP_ENV = "KAFKASIM_KEEP_REAL_DIR"


@dataclass
class FaultAction:
    at_ms: float
    label: str
    act: Callable[[], None]
    follows: FaultAction | None = None
    """The action that begins the fault this one ends (a cut's heal, a pause's resume, a crash's restart):
    this one waits until that one was applied and then the fault's length, so a start applied late (a loaded
    machine, a slow ``ip``) does not shorten the fault."""
    done_ms: float = math.nan
    """When it began (a signal sent, a command started), from time 0."""
    applied_ms: float = math.nan
    """When it was applied (its command returned; a crash's process exited), from time 0."""
    finished: threading.Event = field(default_factory=threading.Event)


@dataclass
class RealRun:
    """What a real run measured besides its tables (run-info.json)."""

    setup_s: float = 0.0
    cluster_start_s: float = 0.0
    rss_bytes: dict[str, int] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    load_average: float | None = None
    """The machine's 1-minute load average half way through the load (the latencies depend on it)."""
    machine_cpu: dict[str, float] | None = None
    """The machine's CPU over the load: this run's share, other work's, steal's, idle's (kafkasim.real.machine_cpu)."""
    process_cpu: dict[str, dict[str, float]] | None = None
    """Cores each process used over the load, in all and by kind of thread (kafkasim.real.process_cpu)."""
    thread_samples: tuple[ThreadsSample, ThreadsSample, float] | None = None
    """The processes' threads at the warm-up's end and near the load's end, and the seconds between."""
    pids: list[int] = field(default_factory=list)
    """Every process the run started (all stopped when it returns)."""
    network: dict[str, str] | None = None
    """Each host's address, in a run with network faults (every host in its own network namespace)."""
    link_proxies: dict[str, dict[str, object]] | None = None
    """Per link_delay or connection_reset target, its listener and proxy ports (kafkasim.real.link_proxies)."""


def broker_of(target: str) -> int:
    """``broker-3`` or ``follower-3`` -> 3."""
    return int(target.rsplit("-", 1)[1])


def fault_actions(scenario: Scenario, cluster: RealCluster, network: HostNetwork | None = None,
                  proxies: LinkProxies | None = None) -> list[FaultAction]:
    """The scenario's faults as timed actions on the cluster (on the hosts' network, for cuts; on the link
    proxies' toxics, for delays)."""
    actions: list[FaultAction] = []
    for i, fault in enumerate(scenario.faults):
        label = f"faults[{i}] {fault.type} {fault.target}"
        if isinstance(fault, CrashFault | ShutdownFault):
            b = broker_of(fault.target)
            stop = cluster.crash if isinstance(fault, CrashFault) else cluster.shutdown
            start = FaultAction(float(fault.at), label, partial(stop, b))
            actions.append(start)
            if fault.restart_after is not None:
                actions.append(FaultAction(float(fault.at + fault.restart_after), f"{label}: restart",
                                           partial(cluster.restart, b), start))
        elif isinstance(fault, PauseFault):
            b = broker_of(fault.target)
            start = FaultAction(float(fault.at), label, partial(cluster.pause, b))
            actions.append(start)
            actions.append(FaultAction(float(fault.at + fault.duration), f"{label}: resume",
                                       partial(cluster.resume, b), start))
        elif isinstance(fault, NetworkPartitionFault) and network is not None:
            # Both ways between every host of one side and every host of the other (kafkasim.real.netns).
            sides = [sorted({partition_host(h) for h in side}) for side in fault.sides]
            pairs = [(a, b) for a in sides[0] for b in sides[1]] + [(b, a) for a in sides[0] for b in sides[1]]
            start = FaultAction(float(fault.at), label, partial(network.cut_each, pairs))
            actions.append(start)
            if fault.end is not None:
                actions.append(FaultAction(float(fault.end), f"{label}: healed", partial(network.heal_each, pairs),
                                           start))
        elif isinstance(fault, LinkDropFault) and network is not None:
            # The client's links to every broker, silently, in the fault's direction(s) (kafkasim.real.netns; the
            # refusals allow only a scenario's sole client): the kernel's TCP retransmits what the outage lost.
            brokers = [f"broker-{b}" for b in cluster.brokers]
            pairs = ([(CLIENTS_HOST, b) for b in brokers] if fault.direction != "from_broker" else []) + \
                ([(b, CLIENTS_HOST) for b in brokers] if fault.direction != "to_broker" else [])
            start = FaultAction(float(fault.at), label, partial(network.cut_each, pairs))
            actions.append(start)
            actions.append(FaultAction(float(fault.at + fault.duration), f"{label}: up again",
                                       partial(network.heal_each, pairs), start))
        elif isinstance(fault, ConnectionResetFault) and proxies is not None:
            actions.append(FaultAction(float(fault.at), label, partial(proxies.reset, fault)))
        elif isinstance(fault, LinkDelayFault) and proxies is not None:
            start = FaultAction(float(fault.at), label, partial(proxies.delay_on, i, fault))
            actions.append(start)
            actions.append(FaultAction(float(fault.at + fault.duration), f"{label}: over",
                                       partial(proxies.delay_off, i, fault), start))
    return sorted(actions, key=lambda a: a.at_ms)


class FaultSchedule:
    """Runs each action at time 0 + its ``at_ms`` on its own thread (a controlled shutdown's restart waits for
    the old process; a pause must not wait for it)."""

    def __init__(self, actions: list[FaultAction], t0_epoch_ms: float) -> None:
        self.actions = actions
        self.t0 = t0_epoch_ms
        self._cancel = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(a,), daemon=True) for a in actions]
        self.errors: list[str] = []

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def _run(self, action: FaultAction) -> None:
        try:
            at_ms = action.at_ms
            if (start := action.follows) is not None:
                start.finished.wait()
                if self._cancel.is_set():
                    return
                if not math.isnan(start.applied_ms):  # the fault's length from when it was applied
                    at_ms = max(at_ms, start.applied_ms + action.at_ms - start.at_ms)
            delay = (self.t0 + at_ms) / 1000.0 - time.time()
            if delay > 0 and self._cancel.wait(delay):
                return
            action.done_ms = time.time() * 1000.0 - self.t0  # when the signal is sent (a crash then waits for the exit)
            action.act()
            action.applied_ms = time.time() * 1000.0 - self.t0
        except Exception as exc:  # reported in run-info, the run goes on
            self.errors.append(f"{action.label}: {exc}")
        finally:
            action.finished.set()

    def stop(self, timeout_s: float = 90.0) -> None:
        self.cancel()
        for thread in self._threads:
            thread.join(timeout_s)

    def cancel(self) -> None:
        """No action that is still waiting runs (one under way ends on its own: the run's processes refuse to
        start once they were stopped, ``ProcessesClosed``)."""
        self._cancel.set()


def _follower_namer(layout: ClusterLayout, scenario: Scenario) -> Callable[[int, int, int], str]:
    counts = fetcher_counts(scenario, layout)

    def name(replica: int, fetcher: int, source: int) -> str:
        return fetcher_name(layout, counts.get(replica, 1), replica, fetcher, source)

    return name


def run_on_kafka(
    scenario: Scenario,
    *,
    seed: int | None = None,
    kafka_home: str | None = None,
    say: Callable[[str], None] = lambda _m: None,
    stop: threading.Event | None = None,
    libs: KafkaLibs | None = None,
) -> RunResult:
    """Run ``scenario`` on a local Kafka cluster; its result in the simulated run's format. Raises
    ``RefusedOnKafka`` (what it cannot take) or ``RealKafkaUnavailable`` (what to install) before starting
    anything."""
    problems = refusals(scenario)
    if problems:
        raise RefusedOnKafka("\n".join(problems))
    seed = scenario.seed if seed is None else seed
    started = time.monotonic()
    libs = libs if libs is not None else locate(kafka_home, progress=say)
    driver_jar = compiled_jar(DRIVER_SOURCES, libs, progress=say)
    reporter_jar = compiled_jar(REPORTER_SOURCES, libs, progress=say)
    toxiproxy = server_binary(progress=say) if proxied_targets(scenario) else None
    layout = cluster_layout(scenario, seed=seed)
    configs = kafka_configs(scenario, layout)
    say("not applied on a real cluster (simulator-only): " + "; ".join(configs.not_applied))
    # A second stop signal must not cut the teardown short (kafkasim.real.stop_signals): the directory goes
    # only after every process of the run was stopped, and a JVM left running would make it again.
    with StopSignals() as signals:
        workdir = Path(tempfile.mkdtemp(prefix="kafkasim-real-"))
        info = RealRun(setup_s=time.monotonic() - started)
        try:
            return _run(scenario, seed, libs, (driver_jar, reporter_jar), layout, configs, workdir, info, say, stop,
                        toxiproxy, signals)
        finally:
            signals.hold()
            if os.environ.get(KEEP_ENV):
                say(f"kept the real run's files in {workdir} ({KEEP_ENV} is set)")
            else:
                shutil.rmtree(workdir, ignore_errors=True)


def _java(libs: KafkaLibs, driver_jar: Path, heap: str, archive_flags: list[str], *extra: str) -> list[str]:
    return [libs.java, heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *archive_flags, *extra,
            "-cp", f"{driver_jar}{os.pathsep}{libs.classpath}"]


def _gauge_properties(out: Path, go_file: Path, scenario: Scenario) -> dict[str, str]:
    """A node's `metric.reporters` with kafkasim's sampler (driver/GaugeReporter.java) and what it reads: where
    the run's time 0 is written, how often to sample, until when, and the file its rows go to."""
    return {"metric.reporters": GAUGE_REPORTERS, "kafkasim.gauges.out": str(out),
            "kafkasim.gauges.go.file": str(go_file),
            "kafkasim.gauges.interval.ms": str(max(float(scenario.sample_interval), MIN_JMX_INTERVAL_MS)),
            "kafkasim.gauges.duration.ms": str(float(scenario.duration))}


def _run(scenario: Scenario, seed: int, libs: KafkaLibs, jars: tuple[Path, Path], layout: ClusterLayout, configs: Any,
         workdir: Path, info: RealRun, say: Callable[[str], None], stop: threading.Event | None,
         toxiproxy_binary: Path | None = None, signals: StopSignals | None = None) -> RunResult:
    stop = stop or threading.Event()
    wall_started = time.monotonic()
    driver_jar, reporter_jar = jars
    gauges_dir = workdir / "gauges"
    gauges_dir.mkdir()
    go_file = workdir / "go"
    brokers = {b: {**props, **_gauge_properties(gauges_dir / f"broker-{b}.tsv", go_file, scenario)}
               for b, props in configs.brokers.items()}
    controller = {**configs.controller, **_gauge_properties(gauges_dir / "controller.tsv", go_file, scenario)}
    driver_dir = workdir / "driver"
    driver_dir.mkdir()
    hosts = network_hosts(scenario, layout)
    # Processes are stopped before the network goes (the exits run in reverse order); from the end of the block
    # on, stop signals wait until the teardown is done.
    with HostNetwork(hosts) if hosts else contextlib.nullcontext() as network, Processes() as procs, \
            signals.held_after() if signals is not None else contextlib.nullcontext():
        if network is not None:
            say("network faults: every host in its own network namespace (" +
                ", ".join(f"{h} {network.address[h]}" for h in network.hosts) + ")")
        proxies = None
        if toxiproxy_binary is not None:
            toxiproxy = Toxiproxy(procs, toxiproxy_binary, workdir / "toxiproxy.log")
            toxiproxy.start()
            proxies = LinkProxies(toxiproxy, scenario, list(layout.broker_ids))
            info.link_proxies = {target: dict(about) for target, about in proxies.describe().items()}
            say("link delays and resets through Toxiproxy: " + "; ".join(
                f"{t} on listener {d['listener']}" for t, d in info.link_proxies.items()))
        cluster = RealCluster(libs, workdir / "cluster", procs, brokers, controller, say=say,
                              features=configs.features, network=network, classpath_after=reporter_jar,
                              extra_listeners=proxies.extra_listeners() if proxies else None,
                              inter_broker_listeners=proxies.inter_broker_listeners() if proxies else None)
        info.cluster_start_s = cluster.start()
        say(f"cluster ready in {info.cluster_start_s:.1f} s: brokers {', '.join(map(str, cluster.brokers))} "
            f"on {cluster.bootstrap_servers}")

        def bootstrap(client: str) -> str:
            # A client whose links are delayed or reset talks to the brokers through its proxies (link_proxies).
            return (proxies.bootstrap(client) if proxies else None) or cluster.bootstrap_servers

        sizes: list[np.ndarray] = []
        producers_spec = []
        for i, (p, props) in enumerate(zip(scenario.producers, configs.producers, strict=True)):
            planned = list(planned_records(scenario, p, seed))
            path = workdir / f"schedule-{i}.bin"
            write_schedule(path, iter(planned))
            sizes.append(np.array([max(r.size, MIN_RECORD_BYTES) for r in planned], dtype=np.int64))
            producers_spec.append({"name": p.name, "topic": p.topic, "count": len(planned), "schedule": str(path),
                                   "config": {"bootstrap.servers": bootstrap(p.name), **props}})
        consumers_spec = [
            {"name": c.name, "topic": c.topic, "partitions": list(range(scenario.topic(c.topic).partitions)),
             "config": {"bootstrap.servers": bootstrap(c.name), **props}}
            for c, props in zip(scenario.consumers, configs.consumers, strict=True)
        ]
        duration = float(scenario.duration)
        spec = {
            "bootstrap": cluster.bootstrap_servers, "out_dir": str(driver_dir),
            "ready_file": str(workdir / "ready"), "go_file": str(workdir / "go"),
            "duration_ms": duration, "drain_ms": DRAIN_MS, "topics": configs.topics,
            "producers": producers_spec, "consumers": consumers_spec, "audit_timeout_ms": 60_000,
            "warmup_ms": WARMUP_MS,
        }
        spec_path = workdir / "spec.json"
        spec_path.write_text(json.dumps(spec, indent=1))
        log4j = [f"-Dlog4j2.configurationFile={DRIVER_LOG4J}", f"-Dkafkasim.driver.log={driver_dir / 'clients.log'}"]
        # The tools' classes are shared between runs as Kafka's are (kafkasim.real.class_archive): the driver
        # (Kafka's clients) dumps the archive the first time, every later tool JVM maps it.
        tools = ClassArchive(archive_path(libs, "tools", driver_jar))
        dumps: list[tuple[Path, Proc]] = []

        def tool(name: str, host: str, heap: str, args: list[str], output: Path, *extra: str) -> Proc:
            flags, dump = tools.flags(name)
            where = network.exec_prefix(host) if network is not None else []
            proc = procs.start(name, [*where, *_java(libs, driver_jar, heap, flags, *extra, *log4j), *args], output)
            if dump is not None:
                dumps.append((dump, proc))
            return proc

        driver = tool("driver", CLIENTS_HOST, "-Xmx768m", ["LoadDriver", "run", str(spec_path)],
                      driver_dir / "stdout.log", gc_log.gc_flag(driver_dir))
        _wait_for_file(workdir / "ready", driver, 180.0, stop)
        t0 = int(time.time() * 1000) + GO_DELAY_MS
        go_next = go_file.with_name("go.next")
        go_next.write_text(f"{t0}\n")
        os.replace(go_next, go_file)  # whole: the driver and every node's sampler read it as soon as it exists
        schedule = FaultSchedule(fault_actions(scenario, cluster, network, proxies), t0)
        try:
            schedule.start()
            say(f"running {scenario.name} on Kafka {libs.version} for {duration / 1000:g} s (seed {seed})")
            stop.wait(max(0.0, t0 / 1000.0 - time.time()))  # the machine's CPU from the load's start
            cpu_before = cpu_sample(procs.pids)
            interrupted_at = _wait_for_driver(driver, duration, t0, stop, info, cluster, procs,
                                              float(scenario.warmup))
            info.machine_cpu = cpu_shares(cpu_before, cpu_sample(procs.pids))
        finally:
            # A run that fails or is interrupted here restarts no broker later (a crash's restart_after).
            schedule.cancel()
        schedule.stop()
        info.faults = [{"fault": a.label, "at_ms": a.at_ms, "done_ms": None if math.isnan(a.done_ms) else a.done_ms,
                        "applied_ms": None if math.isnan(a.applied_ms) else a.applied_ms} for a in schedule.actions]
        if network is not None:
            # A cut to the end of the run ends with it: the audit reads every partition's final log.
            network.heal_all()
            info.network = dict(network.address)
        # The simulated audit reads every partition's final leader's log, crashed brokers' included: start
        # the brokers that are down, continue the paused ones.
        for b, node in cluster.brokers.items():
            node.proc.signal(signal.SIGCONT) if node.proc else None
            if not node.running:
                say(f"starting broker-{b} again to read its log")
                cluster.restart(b)
                cluster.wait_ready(node)
        if info.thread_samples is not None:
            # Before the audit, not beside it: the audit's reads of the final logs keep the machine to themselves.
            measured = {pid for pid, _threads in info.thread_samples[1].values()}
            names = _thread_names(_thread_prints(libs, cluster, procs, workdir / "threads", measured), procs)
            info.process_cpu = process_cpu.cores_used(*info.thread_samples, names=names)
        audit = tool("audit", OBSERVER_HOST, "-Xmx256m", ["LoadDriver", "audit", str(spec_path)],
                     driver_dir / "audit.log")
        audit.popen.wait(timeout=120)
        cluster.stop()
        if proxies is not None:
            proxies.release()
        tools.keep([(dump, proc.popen.returncode) for dump, proc in dumps])
        info.pids = procs.pids
    end = duration if interrupted_at is None else interrupted_at
    result = _assemble(scenario, seed, layout, configs, cluster, workdir, sizes, end, t0, info)
    result.run_info["wall_seconds"] = time.monotonic() - wall_started
    if interrupted_at is not None:
        result.summary["interrupted_at_ms"] = interrupted_at
    if schedule.errors:
        result.run_info["fault_errors"] = schedule.errors
    _attach_logs(result, cluster, workdir / "driver")
    return result


def _thread_prints(libs: KafkaLibs, cluster: RealCluster, procs: Processes, out: Path,
                   measured: set[int]) -> dict[str, Proc]:
    """``jcmd <pid> Thread.print`` on each running broker whose threads were measured over the load (pid in
    ``measured``: not one started again since), started together after the load (the JVMs' thread names for
    kafkasim.real.process_cpu; each output in ``out``). None started without a jcmd."""
    jcmd = process_cpu.jcmd_binary(libs.java)
    if jcmd is None:
        return {}
    started = {}
    for b, node in cluster.brokers.items():
        if node.proc is not None and node.proc.running() and node.proc.pid in measured:
            name = f"broker-{b}"
            started[name] = procs.start(f"jcmd-{name}", [jcmd, str(node.proc.pid), "Thread.print"],
                                        out / f"{name}.txt")
    return started


def _thread_names(jcmds: dict[str, Proc], procs: Processes) -> dict[str, dict[int, str]]:
    """Each broker's Java thread names by thread id, from its ``jcmd`` (waited for, stopped if it hangs)."""
    names = {}
    for name, proc in jcmds.items():
        try:
            proc.popen.wait(timeout=JCMD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            procs.stop(proc, kill_first=True)
            continue
        if proc.popen.returncode == 0:
            names[name] = process_cpu.java_thread_names(proc.output.read_text(errors="replace"))
    return names


# How long a broker's jcmd Thread.print may take (a JVM's attach listener starts on the first attach).
JCMD_TIMEOUT_S = 30.0


def _wait_for_file(path: Path, proc: Proc, timeout_s: float, stop: threading.Event) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if not proc.running():
            raise RuntimeError(f"the load driver exited with code {proc.popen.returncode} before it was ready: "
                               f"{_tail(proc.output)}")
        if stop.is_set():
            raise KeyboardInterrupt
        if time.monotonic() > deadline:
            raise RuntimeError(f"the load driver was not ready within {timeout_s:.0f} s: {_tail(proc.output)}")
        time.sleep(0.05)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no output)"
    return " / ".join(text[-lines:]) or "(no output)"


# Where in the load each process's cores stop being counted, from the warm-up's end (kafkasim.real.process_cpu):
# the driver exits soon after the load's end.
PROCESS_CPU_UNTIL = 0.95


def _wait_for_driver(driver: Proc, duration: float, t0: int, stop: threading.Event, info: RealRun,
                     cluster: RealCluster, procs: Processes, warmup: float) -> float | None:
    """Wait for the load to end; sample the JVMs' memory meanwhile, and the cores each process used from the
    end of the ``warmup`` to near the load's end, while the driver, which exits once the load is over, is still
    there (kafkasim.real.process_cpu). The time of a stop request, if any."""
    deadline = t0 / 1000.0 + duration / 1000.0 + DRAIN_MS / 1000.0 + 120.0
    sampled = False
    threads: tuple[process_cpu.Sample, float] | None = None
    while driver.running():
        elapsed = time.time() * 1000.0 - t0
        if threads is None and elapsed >= warmup:
            threads = (process_cpu.sample(procs.running_by_name), time.monotonic())
        elif threads is not None and info.thread_samples is None and elapsed > PROCESS_CPU_UNTIL * duration:
            info.thread_samples = (threads[0], process_cpu.sample(procs.running_by_name),
                                   time.monotonic() - threads[1])
        if stop.wait(0.1):
            at = time.time() * 1000.0 - t0
            driver.signal(signal.SIGTERM)  # its shutdown hook writes what it recorded
            try:
                driver.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                procs.stop(driver, kill_first=True)
            return max(0.0, min(at, duration))
        if not sampled and time.time() * 1000.0 - t0 > duration / 2:
            sampled = True
            for node in cluster.nodes:
                if node.proc is not None and (rss := rss_bytes(node.proc.pid)) is not None:
                    info.rss_bytes[node.name] = rss
            if (rss := rss_bytes(driver.pid)) is not None:
                info.rss_bytes["driver"] = rss
            info.load_average = os.getloadavg()[0]
        if time.time() > deadline:
            procs.stop(driver, kill_first=True)
            raise RuntimeError("the load driver did not finish in time")
    if driver.popen.returncode != 0:
        raise RuntimeError(f"the load driver failed (exit {driver.popen.returncode}): {_tail(driver.output)}")
    return None


def _assemble(scenario: Scenario, seed: int, layout: ClusterLayout, configs: Any, cluster: RealCluster,
              workdir: Path, sizes: list[np.ndarray], end: float, t0: int, info: RealRun) -> RunResult:
    driver_dir = workdir / "driver"
    topic_ids = {}
    topics_file = driver_dir / "topics.tsv"
    if topics_file.is_file():
        for line in topics_file.read_text().splitlines():
            name, topic_id = line.split("\t")
            topic_ids[topic_id] = name
    log = parse_lines([(b, n.request_log) for b, n in cluster.brokers.items()], origin_epoch_ms=float(t0),
                      topic_names=topic_ids, follower_name=_follower_namer(layout, scenario),
                      heartbeat_sources=[cluster.controller.request_log])
    requests = log.requests[log.requests["end_ms"].to_numpy(dtype=float) >= 0].reset_index(drop=True)
    requests = requests[requests["start_ms"].to_numpy(dtype=float) <= end].reset_index(drop=True)
    producers = [
        assemble.read_producer(driver_dir / f"producer-{i}.tsv", i, p.name, p.topic, p.acks, sizes[i])
        for i, p in enumerate(scenario.producers)
    ]
    consumers = {c.name: assemble.read_consumer(driver_dir / f"consumer-{i}.tsv")
                 for i, c in enumerate(scenario.consumers)}
    retries = assemble.read_retries(driver_dir / "clients.log")
    records, batch_of = assemble.records_table(producers, consumers, log.batches, retries, end)
    events = controller_events(cluster.controller.server_log, float(t0))
    names = {v: k for k, v in topic_ids.items()}
    unclean: dict[tuple[str, int], list[float]] = {}
    for t, topic_id, partition, _ in events.unclean:
        unclean.setdefault((topic_ids.get(topic_id, topic_id), partition), []).append(t)
    elr: dict[tuple[str, int], list[float]] = {}
    for t, topic_id, partition, _ in events.elr:
        elr.setdefault((topic_ids.get(topic_id, topic_id), partition), []).append(t)
    min_isr = {t.name: min(t.min_insync_replicas, t.replication_factor) for t in scenario.topics}
    audit = assemble.read_audit(driver_dir / "audit.tsv")
    final = assemble.final_logs(audit, batch_of, {}, min_isr, unclean, elr)
    records = assemble.audited(records, final)
    timeseries = read_samples(sorted((workdir / "gauges").glob("*.tsv")), end)
    # The summary's warm-up cut is by client send time, which a broker does not know: its arrival stands in.
    for_summary = requests.copy()
    for_summary["client_send_ms"] = for_summary["start_ms"]
    counters = {
        "brokers_fenced": len(events.fenced),
        "unclean_elections": len(events.unclean),
        "elr_elections": len(events.elr),
        "requests_handled": int(len(requests)),
        "other_requests": dict(sorted(log.other_apis.items())),
    }
    summary = summarize(for_summary, records, seed=seed, simulated_duration_ms=end,
                        warmup_ms=float(scenario.warmup), counters=counters,
                        producers=[p.name for p in scenario.producers],
                        consumers=[c.name for c in scenario.consumers], timeseries=timeseries,
                        # Cut at the scenario's fault times and the real controller's fences (its server.log).
                        phases=cut_phases(fault_spans(scenario.faults, list(events.unfenced)), list(events.fenced),
                                          float(scenario.warmup), end),
                        cores=process_cpu.broker_cores(info.process_cpu))
    summary["engine"] = ENGINE
    # Every leadership change, phase by phase, as a simulated run's summary has it (only when there was one).
    starts = [s for b, node in cluster.brokers.items() for s in leader_starts(node.server_log, b, float(t0))]
    moved = real_failovers(starts, events, topic_ids, scenario.faults, records, end, log.heartbeats)
    if moved:
        summary["failovers"] = moved
    heartbeats = log.heartbeats
    fences = []
    for t, broker in events.fenced:
        before = [h for h in heartbeats.get(broker, []) if h <= t]
        fences.append({"at_ms": t, "broker": broker, "last_heartbeat_ms": max(before) if before else None})
    run_info = {
        "engine": ENGINE,
        "kafka_version": cluster.libs.version,
        "kafka_libs": cluster.libs.source,
        "epoch_ms_at_0": t0,
        "brokers": {f"broker-{b}": {"node_id": b, "host": n.host, "port": n.port} for b, n in cluster.brokers.items()},
        "network_hosts": info.network,
        "link_proxies": info.link_proxies,
        "controller": {"node_id": cluster.controller.node_id},
        "not_applied": configs.not_applied,
        "setup_seconds": info.setup_s,
        "cluster_start_seconds": info.cluster_start_s,
        "rss_bytes": info.rss_bytes,
        "load_average": info.load_average,
        "machine_cpu": info.machine_cpu,
        "process_cpu": info.process_cpu,
        "cpus": os.cpu_count(),
        "faults": info.faults,
        "pids": info.pids,
        "controller_events": {
            "fenced": fences,
            "unclean_elections": [{"at_ms": t, "topic": topic_ids.get(i, i), "partition": p, "leader": b}
                                  for t, i, p, b in events.unclean],
            "elr_elections": [{"at_ms": t, "topic": topic_ids.get(i, i), "partition": p, "leader": b}
                              for t, i, p, b in events.elr],
            "registered": [{"at_ms": t, "broker": b} for t, b in events.registered],
            "unfenced": [{"at_ms": t, "broker": b} for t, b in events.unfenced],
        },
        "heartbeats_ms": {f"broker-{b}": times for b, times in sorted(heartbeats.items())},
        "request_log_bad_lines": [str(b) for b in log.bad_lines[:20]],
        "audit_incomplete": sorted(f"{t}-{p}" for t, p in audit.incomplete),
        "gc_pauses": _gc_pauses(cluster, driver_dir, float(t0), float(scenario.warmup), end),
    }
    del names
    return RunResult(requests, records, timeseries, summary, dump_scenario(scenario.model_copy(update={"seed": seed})),
                     run_info)


def _gc_pauses(cluster: RealCluster, driver_dir: Path, t0: float, start: float, end: float) -> dict[str, object]:
    """Each JVM's garbage-collection pauses after the warm-up (kafkasim.real.gc_log), by node and the driver."""
    where = {node.name: node.directory for node in cluster.nodes} | {"driver": driver_dir}
    found: dict[str, object] = {}
    for name, directory in where.items():
        if gc_log.gc_logs(directory):
            found[name] = gc_log.summary(gc_log.read_pauses(directory, t0), start, end)
    return {"from_ms": start, "to_ms": end, "jvms": found}


def _attach_logs(result: RunResult, cluster: RealCluster, driver_dir: Path) -> None:
    """Keep the Kafka nodes' logs with the result (``kafka/<node>/``), and every JVM's GC log (the driver's in
    ``kafka/driver/``): the lines a reader checks a figure by."""
    for node in cluster.nodes:
        for path in (node.server_log, node.request_log, *gc_log.gc_logs(node.directory)):
            if path.is_file():
                result.extra_files[f"{KAFKA_LOGS_DIR}/{node.name}/{path.name}"] = path.read_bytes()
    for path in gc_log.gc_logs(driver_dir):
        result.extra_files[f"{KAFKA_LOGS_DIR}/driver/{path.name}"] = path.read_bytes()
    result.run_info["kafka_logs"] = sorted(result.extra_files)
