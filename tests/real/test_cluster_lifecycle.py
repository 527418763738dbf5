"""The real cluster starts, answers on its ports, and leaves nothing behind: no process, no port, whether it
is stopped normally or an exception unwinds the run."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from kafkasim.real.cluster import RealCluster
from kafkasim.real.kafka_libs import KafkaLibs, RealKafkaUnavailable, locate
from kafkasim.real.processes import Processes, alive, port_in_use


def _one_broker(libs: KafkaLibs, tmp_path: Path, procs: Processes) -> RealCluster:
    props = {"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
             "transaction.state.log.min.isr": "1"}
    return RealCluster(libs, tmp_path, procs, {0: props}, {})


def test_a_cluster_starts_and_stops_leaving_no_process_or_port(kafka_libs: KafkaLibs, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # A cache of its own: this cluster is the first, its nodes dump the class archive the next ones map.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run_dir = tmp_path / "run"
    with Processes() as procs:
        cluster = _one_broker(kafka_libs, run_dir, procs)
        assert not cluster.archive.path.exists()
        cluster.start()
        assert all(any(a.startswith("-XX:ArchiveClassesAtExit=") for a in node.proc.argv)
                   for node in cluster.nodes if node.proc is not None)
        assert all(port_in_use(node.port) for node in cluster.nodes)
        assert "Kafka Server started" in cluster.brokers[0].server_log.read_text()
        pids = procs.pids
        assert len(alive(pids)) == 2
        cluster.stop()
        assert alive(pids) == []
        assert not any(port_in_use(node.port) for node in cluster.nodes)
    # Every file of the run is inside its directory.
    assert {p.name for p in run_dir.iterdir()} == {"controller", "broker-0"}
    # The broker's dump became the archive, and nothing else was left beside it.
    archive = cluster.archive.path
    assert [p.name for p in archive.parent.iterdir()] == [archive.name]
    # A JVM maps it (-Xshare:on fails if it cannot) and takes Kafka's classes from it, not from the jars.
    probe = subprocess.run([kafka_libs.java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-Xlog:class+load=info",
                            "-cp", kafka_libs.classpath, "kafka.Kafka", "--version"],
                           capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stdout[-2000:] + probe.stderr[-2000:]
    loaded = [line for line in probe.stdout.splitlines() if " kafka.Kafka " in line]
    assert loaded and "shared objects file (top)" in loaded[0], loaded
    assert kafka_libs.version in [line.strip() for line in probe.stdout.splitlines()]
    # The next cluster's nodes map it.
    with Processes() as procs:
        again = _one_broker(kafka_libs, tmp_path / "again", procs)
        argv = again.archive.flags("broker-0")[0]
        assert argv == ["-Xshare:auto", f"-XX:SharedArchiveFile={archive}"]


def test_an_exception_stops_every_process(kafka_libs: KafkaLibs, tmp_path: Path) -> None:
    pids: list[int] = []
    ports: list[int] = []
    with pytest.raises(KeyboardInterrupt), Processes() as procs:
        cluster = _one_broker(kafka_libs, tmp_path, procs)
        cluster.start()
        pids, ports = procs.pids, [n.port for n in cluster.nodes]
        cluster.pause(0)  # a stopped JVM must be stopped too
        raise KeyboardInterrupt
    assert pids and alive(pids) == []
    assert not any(port_in_use(port) for port in ports)


def test_no_java_is_one_line_saying_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(RealKafkaUnavailable) as caught:
        locate()
    message = str(caught.value)
    assert "\n" not in message and "Java" in message and "install" in message


def test_no_maven_and_no_jars_is_one_line_saying_what_to_install(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = bin_dir / "java"  # a Java that is there, and no mvn beside it
    java.write_text('#!/bin/sh\necho \'openjdk version "17.0.15" 2025-04-15\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(RealKafkaUnavailable) as caught:
        locate()
    message = str(caught.value)
    assert "\n" not in message and "Maven" in message and "--kafka-home" in message


def test_kafka_home_must_be_a_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.environ.get("JAVA_HOME") is None and not any(Path(p, "java").exists()
                                                       for p in os.environ.get("PATH", "").split(":")):
        pytest.skip("no Java")
    with pytest.raises(RealKafkaUnavailable, match="no Apache Kafka distribution"):
        locate(tmp_path)


def test_kafka_home_uses_the_distributions_libs(kafka_libs: KafkaLibs, tmp_path: Path) -> None:
    home = tmp_path / "kafka_2.13-4.3.1"
    home.mkdir()
    (home / "libs").symlink_to(kafka_libs.libs)
    found = locate(home)
    assert found.source == "kafka-home" and found.version == "4.3.1" and found.libs == home / "libs"
