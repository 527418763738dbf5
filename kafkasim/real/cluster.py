"""A local Apache Kafka cluster in KRaft mode: one controller-only node and N brokers, each a JVM on 127.0.0.1.

The recipe (Kafka's own quickstart, made small): every node gets its own directory inside the run's
temporary directory (``server.properties``, ``data/``, ``server.log`` and ``kafka-request.log``), its storage
formatted with Kafka's ``StorageTool``, its ports chosen free at start, a small heap. A broker is ready when
its ``server.log`` says ``Kafka Server started`` (after it registered and was unfenced). Node ids are
kafkasim's broker ids (``broker-0`` is node 0); the controller is node ``CONTROLLER_ID``, so a run's tables
name brokers the way a simulated run does.

In a run with network faults every node runs on a host of its own (``kafkasim.real.netns``: a network
namespace, an address of its own, ``ip netns exec`` in front of its command line); the cuts are the
network's, not the cluster's.

Faults act on the JVMs: ``crash`` is SIGKILL, ``shutdown`` SIGTERM (Kafka's controlled shutdown), ``pause``
SIGSTOP and ``resume`` SIGCONT, ``restart`` starts the node again on its directory. Every JVM is started and
stopped by ``kafkasim.real.processes`` (its own process group, stopped by pid).
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkasim.real import ports as listen_ports
from kafkasim.real.class_archive import ClassArchive, archive_path
from kafkasim.real.gc_log import gc_flag
from kafkasim.real.kafka_libs import KafkaLibs
from kafkasim.real.netns import HostNetwork
from kafkasim.real.processes import Proc, Processes

CONTROLLER_ID = 1000
"""The controller's node id: outside kafkasim's broker ids (0..63)."""
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
READY_LINE = "Kafka Server started"
BROKER_HEAP = "-Xmx384m"
CONTROLLER_HEAP = "-Xmx256m"
START_TIMEOUT_S = 120.0
DUMP_STOP_TIMEOUT_S = 60.0
SERVER_LOG = "server.log"
REQUEST_LOG = "kafka-request.log"


class ClusterError(RuntimeError):
    """The cluster could not be started (the message names the node and the end of its log)."""


@dataclass
class Node:
    node_id: int
    role: str  # "broker" or "controller"
    directory: Path
    port: int
    """The port it listens on (clients and followers, or the controller quorum)."""
    advertised_port: int
    """The port it tells clients and followers to use (a proxy's, for link faults; else ``port``)."""
    jmx_port: int
    host: str = "127.0.0.1"
    """Its address: 127.0.0.1, or its own network namespace's in a run with network faults."""
    properties: dict[str, str] = field(default_factory=dict)
    proc: Proc | None = None
    starts: int = 0
    output_from: int = 0
    """Where this start's output begins in its stdout.log (a restart appends)."""

    @property
    def name(self) -> str:
        return "controller" if self.role == "controller" else f"broker-{self.node_id}"

    @property
    def server_log(self) -> Path:
        return self.directory / SERVER_LOG

    @property
    def request_log(self) -> Path:
        return self.directory / REQUEST_LOG

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.running()


def random_cluster_id() -> str:
    """A cluster id as ``StorageTool random-uuid`` prints it (a UUID in URL-safe base64, no padding). Like
    Kafka's ``Uuid.randomUuid``, never one that starts with '-': a command line would read it as an option
    (StorageTool's ``-t -xyz...`` fails with its usage text)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class RealCluster:
    """One controller and the brokers ``broker_ids``; ``broker_properties[id]`` are each broker's Kafka
    configs (kafkasim.real.config_map), ``controller_properties`` the controller's."""

    def __init__(
        self,
        libs: KafkaLibs,
        workdir: Path,
        procs: Processes,
        broker_properties: Mapping[int, Mapping[str, str]],
        controller_properties: Mapping[str, str],
        *,
        advertised_ports: Mapping[int, int] | None = None,
        say: Callable[[str], None] | None = None,
        features: Mapping[str, int] | None = None,
        network: HostNetwork | None = None,
        extra_listeners: Mapping[int, list[tuple[str, int, int]]] | None = None,
        inter_broker_listeners: Mapping[int, str] | None = None,
        classpath_after: Path | None = None,
    ) -> None:
        """``features``: levels the metadata is formatted with (StorageTool's ``--feature``), say
        ``eligible.leader.replicas.version``. ``network``: every node on its own host (network namespace,
        kafkasim.real.netns), hosts named as the nodes are (``controller``, ``broker-<id>``).
        ``extra_listeners[b]``: more PLAINTEXT listeners of broker b as (name, port, advertised port), say a
        proxy's for a delayed link (kafkasim.real.link_proxies); ``inter_broker_listeners[b]``: the one of them
        broker b's replica fetchers use instead of PLAINTEXT. ``classpath_after``: a jar after Kafka's on every
        node's classpath (kafkasim's gauge sampler, a `metric.reporters` class: kafkasim.real.runner); after, so the
        nodes' class archive, made with Kafka's jars alone, still maps (kafkasim.real.class_archive)."""
        self.classpath = libs.classpath if classpath_after is None else f"{libs.classpath}{os.pathsep}{classpath_after}"
        self.network = network
        self.libs = libs
        self.features = dict(features or {})
        self.workdir = workdir
        self.procs = procs
        self._say = say or (lambda _m: None)
        self.cluster_id = random_cluster_id()
        self.archive = ClassArchive(archive_path(libs, "node"))
        self._dumps: list[tuple[Path, Proc]] = []
        ids = sorted(broker_properties)
        # Outside the ephemeral range (kafkasim.real.ports): a restarted node finds its ports free.
        ports = self.ports = listen_ports.claim(2 * len(ids) + 2)
        self.controller = Node(CONTROLLER_ID, "controller", workdir / "controller", ports[0], ports[0], ports[1])
        self.brokers: dict[int, Node] = {}
        for i, b in enumerate(ids):
            port, jmx = ports[2 + 2 * i], ports[3 + 2 * i]
            advertised = (advertised_ports or {}).get(b, port)
            self.brokers[b] = Node(b, "broker", workdir / f"broker-{b}", port, advertised, jmx)
        if network is not None:
            for node in self.nodes:
                node.host = network.address[node.name]
        voters = f"{CONTROLLER_ID}@{self.controller.host}:{self.controller.port}"
        common = {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
        }
        self.controller.properties = {
            "process.roles": "controller",
            "node.id": str(CONTROLLER_ID),
            "listeners": f"CONTROLLER://{self.controller.host}:{self.controller.port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            **common,
            "log.dirs": str(self.controller.directory / "data"),
            **controller_properties,
        }
        for b, node in self.brokers.items():
            extra = (extra_listeners or {}).get(b, [])
            node.properties = {
                "process.roles": "broker",
                "node.id": str(b),
                "listeners": ",".join([f"PLAINTEXT://{node.host}:{node.port}",
                                       *(f"{name}://{node.host}:{port}" for name, port, _ in extra)]),
                "advertised.listeners": ",".join([f"PLAINTEXT://{node.host}:{node.advertised_port}",
                                                  *(f"{name}://{node.host}:{adv}" for name, _, adv in extra)]),
                "inter.broker.listener.name": (inter_broker_listeners or {}).get(b, "PLAINTEXT"),
                "listener.security.protocol.map": ",".join(["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT",
                                                            *(f"{name}:PLAINTEXT" for name, _, _ in extra)]),
                **common,
                "log.dirs": str(node.directory / "data"),
                **broker_properties[b],
            }

    @property
    def nodes(self) -> list[Node]:
        return [self.controller, *self.brokers.values()]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n.advertised_port}" for n in self.brokers.values())

    # --- start ----------------------------------------------------------------------------------------

    def start(self) -> float:
        """Format every node's storage, start the controller and the brokers, wait until all are ready;
        the seconds it took."""
        started = time.monotonic()
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            _write_properties(node.directory / "server.properties", node.properties)
        self._say(f"formatting the storage of {len(self.nodes)} Kafka nodes")
        # StorageTool formats the controller; each broker's log directory gets what StorageTool would write
        # there (the same bootstrap.checkpoint, a meta.properties of its own): one JVM instead of N + 1.
        self._format(self.controller)
        checkpoint = (self.controller.directory / "data" / "bootstrap.checkpoint").read_bytes()
        for node in self.brokers.values():
            data = node.directory / "data"
            data.mkdir(parents=True, exist_ok=True)
            (data / "bootstrap.checkpoint").write_bytes(checkpoint)
            (data / "meta.properties").write_text(
                f"node.id={node.node_id}\ndirectory.id={random_cluster_id()}\nversion=1\ncluster.id={self.cluster_id}\n")
        self._say(f"starting a KRaft controller and {len(self.brokers)} broker(s), Kafka {self.libs.version}")
        for node in self.nodes:
            self._launch(node)
        for node in self.nodes:
            self.wait_ready(node)
        return time.monotonic() - started

    def _format(self, node: Node) -> None:
        command = [self.libs.java, "-Xmx128m", "-cp", self.libs.classpath, "kafka.tools.StorageTool", "format",
                   "-t", self.cluster_id, "-c", str(node.directory / "server.properties")]
        for name, level in sorted(self.features.items()):
            command += ["--feature", f"{name}={level}"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, start_new_session=True)
        if result.returncode != 0:
            raise ClusterError(f"Kafka's StorageTool could not format {node.name}: "
                               f"{(result.stderr or result.stdout).strip()[-500:]}")

    def _launch(self, node: Node) -> None:
        heap = CONTROLLER_HEAP if node.role == "controller" else BROKER_HEAP
        archive_flags, dump = self.archive.flags(node.name)
        # Small heaps, the serial collector and the client compiler only (no C2): on 2 shared cores the JVMs'
        # own threads (G1's, C2's) took a fifth of a differential test's CPU and tripled Kafka's produce latency
        # (quickstart p50 152 ms with G1 and C2, 19 ms without, same machine). Kafka's rules are the same.
        argv = [
            self.libs.java, "-Xms64m", heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *archive_flags,
            gc_flag(node.directory), "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={node.directory}", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            "-Dcom.sun.management.jmxremote", "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false", f"-Dcom.sun.management.jmxremote.port={node.jmx_port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={node.jmx_port}", f"-Djava.rmi.server.hostname={node.host}",
            "-cp", self.classpath, "kafka.Kafka", str(node.directory / "server.properties"),
        ]
        if self.network is not None:
            argv = [*self.network.exec_prefix(node.name), *argv]
        node.starts += 1
        output = node.directory / "stdout.log"
        node.output_from = output.stat().st_size if output.exists() else 0
        node.proc = self.procs.start(node.name, argv, output)
        if dump is not None:
            self._dumps.append((dump, node.proc))

    def wait_ready(self, node: Node, timeout_s: float = START_TIMEOUT_S) -> None:
        """Block until ``node`` logged ``Kafka Server started`` (its start number ``node.starts``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            if _count_lines_with(node.server_log, READY_LINE) >= node.starts:
                return
            if node.proc is not None and not node.proc.running():
                # A JVM that fails before Kafka's logging starts (its JMX agent's port taken, a bad flag) says why on
                # its output only.
                raise ClusterError(f"{node.name} exited with code {node.proc.popen.returncode} while starting; "
                                   f"its output: {_tail(node.proc.output, skip=node.output_from)}; "
                                   f"the end of its log: {_tail(node.server_log)}")
            if time.monotonic() > deadline:
                raise ClusterError(f"{node.name} did not start within {timeout_s:.0f} s; the end of its log: "
                                   f"{_tail(node.server_log, node.proc.output if node.proc else None)}")
            time.sleep(0.1)

    # --- faults ---------------------------------------------------------------------------------------

    def crash(self, broker: int) -> None:
        """SIGKILL: the process dies at once, its logs stay on disk."""
        node = self.brokers[broker]
        if node.proc is not None:
            node.proc.signal(signal.SIGKILL)
            node.proc.popen.wait(timeout=30)

    def shutdown(self, broker: int) -> None:
        """SIGTERM: Kafka's controlled shutdown (the controller moves leadership away first)."""
        node = self.brokers[broker]
        if node.proc is not None:
            node.proc.signal(signal.SIGTERM)

    def pause(self, broker: int) -> None:
        node = self.brokers[broker]
        if node.proc is not None:
            node.proc.signal(signal.SIGSTOP)

    def resume(self, broker: int) -> None:
        node = self.brokers[broker]
        if node.proc is not None:
            node.proc.signal(signal.SIGCONT)

    def restart(self, broker: int, *, stop_timeout_s: float = 60.0) -> None:
        """Start the broker again on its directory (after the old process has ended: a controlled shutdown
        may still be under way)."""
        node = self.brokers[broker]
        if node.proc is not None and node.proc.running():
            try:
                node.proc.popen.wait(timeout=stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.procs.stop(node.proc, kill_first=True)
        self._launch(node)

    # --- stop -----------------------------------------------------------------------------------------

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the brokers (all at once), then the controller: SIGTERM, SIGKILL after ``timeout_s``."""
        if self._dumps:
            timeout_s = max(timeout_s, DUMP_STOP_TIMEOUT_S)  # writing the class archive takes its time, once
        brokers = [n.proc for n in self.brokers.values() if n.proc is not None and n.proc.running()]
        for proc in brokers:
            proc.signal(signal.SIGCONT)
            proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in brokers:
            try:
                proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.procs.stop(proc, kill_first=True)
        if self.controller.proc is not None:
            self.procs.stop(self.controller.proc, timeout_s)
        for node in self.nodes:
            if node.proc is not None:
                self.procs.stop(node.proc, kill_first=True)
        # A broker's dump first: it holds the classes both roles load, the controller's only its own.
        ordered = sorted(self._dumps, key=lambda d: d[1].name == "controller")
        self.archive.keep([(dump, proc.popen.returncode) for dump, proc in ordered])
        self._dumps.clear()
        listen_ports.release(self.ports)


def _write_properties(path: Path, properties: Mapping[str, str]) -> None:
    lines = [f"{key}={value}" for key, value in properties.items()]
    path.write_text("# Written by kafkasim.real.cluster\n" + "\n".join(lines) + "\n", encoding="utf-8")


def _count_lines_with(path: Path, text: str) -> int:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return sum(1 for line in handle if text in line)
    except OSError:
        return 0


def _tail(*paths: Path | None, lines: int = 3, skip: int = 0) -> str:
    """The last ``lines`` lines of the first of ``paths`` that has any (its errors first), from byte ``skip``."""
    for path in paths:
        if path is None:
            continue
        try:
            with open(path, "rb") as handle:
                handle.seek(skip)
                whole = handle.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        text = [line for line in whole.splitlines() if line.strip()]
        errors = [line for line in text if " ERROR " in line or "Exception" in line]
        chosen = (errors or text)[-lines:]
        if chosen:
            return " / ".join(line.strip()[:300] for line in chosen)
    return "(empty)"
