"""A real run's directory never outlives the run, and no process of it is started after its teardown began,
however the run ends: a stop request that arrives twice (``uv run`` forwards the SIGTERM its process group
already got, so the run gets it twice, 0.1 ms apart), or a failure while fault actions are still scheduled.

These run ``run_on_kafka`` itself on a stand-in Java (``_STAND_IN``, a small Python script), not on Kafka:
a stand-in node does what a Kafka JVM does that matters here -- it reads its ``server.properties`` a moment
after it starts, and when that is gone it logs the NoSuchFileException to ``server.log`` in a directory it
makes for it (log4j's File appender makes its file's directory). Each stand-in writes its pid to a file
outside the run's directory, so the test checks by pid that none is alive afterwards.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkasim import load_scenario
from kafkasim.real.cluster import ClusterError, RealCluster
from kafkasim.real.kafka_libs import KafkaLibs
from kafkasim.real.processes import Processes, ProcessesClosed, alive
from kafkasim.real.runner import run_on_kafka
from kafkasim.scenario import with_overrides

ROOT = Path(__file__).resolve().parents[2]
PIDS_ENV = "KAFKASIM_STAND_IN_PIDS"
NODE_START_S = 0.3
"""How long a stand-in node takes before it reads its config (a Kafka JVM takes seconds)."""

_STAND_IN = r'''
import json, os, signal, sys, time
from pathlib import Path

args = sys.argv[1:]
main = next((a for a in args if a in ("kafka.tools.StorageTool", "kafka.Kafka", "LoadDriver")), "")
with open(os.environ["KAFKASIM_STAND_IN_PIDS"], "a") as pids:
    pids.write(f"{main or Path(sys.argv[0]).name} {os.getpid()}\n")
if Path(sys.argv[0]).name == "javac":
    sys.exit(0)  # compiled_jar zips the classes it finds: none
if args == ["-version"]:
    print('openjdk version "17.0.15" 2025-04-15', file=sys.stderr)
    sys.exit(0)


def properties(path):
    lines = Path(path).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


if main == "kafka.tools.StorageTool":
    data = Path(properties(args[args.index("-c") + 1])["log.dirs"])
    data.mkdir(parents=True, exist_ok=True)
    (data / "bootstrap.checkpoint").write_bytes(b"stand-in")
    sys.exit(0)
if main == "kafka.Kafka":
    import socket
    jmx = socket.socket()  # the JVM's JMX agent binds its port (every address) before Kafka logs a line
    jmx_port = int(next(a.split("=", 1)[1] for a in args if a.startswith("-Dcom.sun.management.jmxremote.port=")))
    try:
        jmx.bind(("0.0.0.0", jmx_port))
    except OSError:
        print(f"Error: JMX connector server communication error: service:jmx:rmi://vm:{jmx_port}")
        print(f"java.rmi.server.ExportException: Port already in use: {jmx_port}; nested exception is:")
        sys.exit(1)
    jmx.listen()
    logs = Path(next(a.split("=", 1)[1] for a in args if a.startswith("-Dkafka.logs.dir=")))
    config = args[args.index("kafka.Kafka") + 1]
    time.sleep(float(os.environ["KAFKASIM_STAND_IN_START_S"]))
    try:
        properties(config)
    except OSError:
        logs.mkdir(parents=True, exist_ok=True)  # as log4j's File appender does
        with open(logs / "server.log", "a") as log:
            log.write(f"ERROR Exiting Kafka due to fatal exception java.nio.file.NoSuchFileException: {config}\n")
        sys.exit(1)
    with open(logs / "server.log", "a") as log:
        log.write("INFO [KafkaRaftServer] Kafka Server started (kafka.server.KafkaRaftServer)\n")
if main == "LoadDriver" and args[args.index("LoadDriver") + 1] == "run":
    spec = json.loads(Path(args[-1]).read_text())
    Path(spec["ready_file"]).write_text("")
    while not Path(spec["go_file"]).exists():
        time.sleep(0.01)
    sys.exit(3)  # the load driver fails: the run ends with an error while its faults are still to come
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(1)
'''


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KafkaLibs]:
    """A KafkaLibs whose java and javac are the stand-in; run directories made in ``tmp_path/tmp``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("java", "javac"):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable} -IS\n{_STAND_IN}")
        tool.chmod(0o755)
    (tmp_path / "libs").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(PIDS_ENV, str(tmp_path / "pids"))
    monkeypatch.setenv("KAFKASIM_STAND_IN_START_S", str(NODE_START_S))
    monkeypatch.delenv("KAFKASIM_KEEP_REAL_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    yield KafkaLibs(tmp_path / "libs", "4.3.1", "cache", str(bin_dir / "java"), str(bin_dir / "javac"))


def _started(tmp_path: Path, kind: str | None = None) -> list[int]:
    path = tmp_path / "pids"
    lines = path.read_text().splitlines() if path.exists() else []
    return [int(pid) for what, pid in (line.split() for line in lines) if kind is None or what == kind]


def _nothing_left(tmp_path: Path, settle_s: float) -> None:
    """No process of the run alive and no run directory, also ``settle_s`` later (a stand-in that was left
    running reads its config after NODE_START_S, and makes its log's directory again)."""
    time.sleep(settle_s)
    assert list((tmp_path / "tmp").glob("kafkasim-real-*")) == []
    pids = _started(tmp_path)
    assert pids and alive(pids) == []


def test_a_second_stop_signal_during_the_teardown_does_not_leave_nodes_running(stand_in: KafkaLibs,
                                                                                tmp_path: Path) -> None:
    # `kafkasim run --on-kafka` under `uv run`, stopped by a SIGTERM to its process group while the cluster
    # starts: the CLI raises KeyboardInterrupt on SIGTERM, and gets the signal twice (from the group, and from
    # uv). Here the two are a SIGINT and a SIGTERM that arrive together, which Python handles one after the
    # other: the second handler runs as the first one's KeyboardInterrupt unwinds, at the teardown's first line.
    scenario = load_scenario(ROOT / "scenarios/leader_crash.yaml")

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def interrupt_once_the_nodes_started() -> None:
        deadline = time.monotonic() + 30
        while len(_started(tmp_path, "kafka.Kafka")) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        me = threading.get_ident()  # to this thread: the main thread's Python handlers run both, in order
        signal.pthread_kill(me, signal.SIGINT)
        signal.pthread_kill(me, signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm), signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_once_the_nodes_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_on_kafka(scenario, libs=stand_in)
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    assert len(_started(tmp_path, "kafka.Kafka")) == 4
    _nothing_left(tmp_path, NODE_START_S + 0.7)


def test_a_run_that_fails_starts_no_broker_again_afterwards(stand_in: KafkaLibs, tmp_path: Path) -> None:
    # The load driver fails right after time 0; the crash's restart was due 0.6 s later.
    scenario = with_overrides(load_scenario(ROOT / "scenarios/leader_crash.yaml"),
                              ["faults[0].at=300ms", "faults[0].restart_after=300ms"])
    with pytest.raises(RuntimeError, match="the load driver failed"):
        run_on_kafka(scenario, libs=stand_in)
    nodes = len(_started(tmp_path, "kafka.Kafka"))
    _nothing_left(tmp_path, 1.0 + NODE_START_S + 0.7)
    assert len(_started(tmp_path, "kafka.Kafka")) == nodes == 4


def test_processes_start_nothing_once_stopped(tmp_path: Path) -> None:
    # A fault's restart on a thread of its own that comes after the run's end starts no process, and does not
    # make the run's directory again.
    with Processes() as procs:
        first = procs.start("broker-0", ["sleep", "30"], tmp_path / "run" / "broker-0" / "stdout.log")
    assert alive([first.pid]) == []
    with pytest.raises(ProcessesClosed, match="broker-0 was not started"):
        procs.start("broker-0", ["sleep", "30"], tmp_path / "again" / "broker-0" / "stdout.log")
    assert procs.pids == [first.pid] and not (tmp_path / "again").exists()


def test_a_stop_signal_as_a_process_starts_leaves_it_registered_and_stopped(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A SIGTERM whose handler raises (the CLI's) arriving just as Popen returns, before the process was
    # registered: it must be stopped with the others all the same.
    started: list[int] = []
    popen = subprocess.Popen

    def popen_then_signal(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        child = popen(*args, **kwargs)
        started.append(child.pid)
        os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler before os.kill returns
        return child

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with pytest.raises(KeyboardInterrupt), Processes() as procs:
            procs.start("broker-0", ["sleep", "30"], tmp_path / "broker-0" / "stdout.log")
    finally:
        signal.signal(signal.SIGTERM, previous)
        monkeypatch.undo()
    assert started and procs.pids == started
    assert alive(started) == []


def test_a_node_that_fails_before_kafka_logs_says_why_from_its_output(stand_in: KafkaLibs, tmp_path: Path) -> None:
    # A broker started again whose JMX port was taken while it was down: its JVM exits with code 1 before
    # Kafka's logging starts, so server.log holds only the earlier start's lines. The error shows the JVM's
    # own words (a CI run once said only "broker-0 exited with code 1 while starting" and old log lines).
    with Processes() as procs:
        cluster = RealCluster(stand_in, tmp_path / "cluster", procs, {0: {}}, {})
        try:
            cluster.start()
            cluster.crash(0)
            node = cluster.brokers[0]
            with socket.socket() as taken:
                taken.bind(("127.0.0.1", node.jmx_port))
                taken.listen()
                cluster.restart(0)
                with pytest.raises(ClusterError, match=r"broker-0 exited with code 1 while starting; its output: "
                                   r"java.rmi.server.ExportException: Port already in use: \d+; .*the end of its "
                                   r"log: .*Kafka Server started"):
                    cluster.wait_ready(node)
        finally:
            cluster.stop()
