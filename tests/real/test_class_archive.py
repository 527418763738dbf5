"""The class-data sharing archive of the real cluster's JVMs (kafkasim.real.class_archive): which dump is kept,
which is not, and what the next JVM is given. The JVM side (a dump at exit, an archive mapped) is
tests/real/test_cluster_lifecycle.py's."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from kafkasim.real.class_archive import MIN_ARCHIVE_BYTES, ClassArchive, archive_path
from kafkasim.real.kafka_libs import KafkaLibs


@pytest.fixture
def libs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KafkaLibs:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    jars = tmp_path / "libs"
    jars.mkdir()
    (jars / "kafka_2.13-4.3.1.jar").write_bytes(b"jar")
    return KafkaLibs(jars, "4.3.1", "cache", sys.executable, None)


def _dump(archive: ClassArchive, name: str, size: int = MIN_ARCHIVE_BYTES) -> Path:
    flags, dump = archive.flags(name)
    assert dump is not None and flags == [f"-XX:ArchiveClassesAtExit={dump}"]
    dump.write_bytes(b"\0" * size)
    return dump


def test_a_finished_dump_becomes_the_archive_and_the_others_are_deleted(libs: KafkaLibs) -> None:
    archive = ClassArchive(archive_path(libs, "node"))
    broker, controller = _dump(archive, "broker-0"), _dump(archive, "controller")
    assert archive.keep([(broker, 143), (controller, 143)]) == archive.path
    assert archive.path.is_file() and not broker.exists() and not controller.exists()
    assert archive.flags("broker-1") == (["-Xshare:auto", f"-XX:SharedArchiveFile={archive.path}"], None)


def test_a_killed_or_cut_short_dump_is_never_kept(libs: KafkaLibs) -> None:
    archive = ClassArchive(archive_path(libs, "node"))
    killed, short, running = _dump(archive, "broker-0"), _dump(archive, "broker-1", 100), _dump(archive, "broker-2")
    assert archive.keep([(killed, -signal.SIGKILL), (short, 0), (running, None)]) is None
    assert not archive.path.exists() and not killed.exists() and not short.exists()
    # The next cluster dumps again.
    assert archive.flags("broker-0")[1] is not None


def test_an_archive_in_place_is_not_replaced(libs: KafkaLibs) -> None:
    archive = ClassArchive(archive_path(libs, "node"))
    first = _dump(archive, "broker-0")
    second = ClassArchive(archive.path)  # a concurrent cluster that also started before any archive existed
    other = _dump(second, "broker-0", MIN_ARCHIVE_BYTES + 1)
    assert archive.keep([(first, 0)]) == archive.path
    assert second.keep([(other, 0)]) is None
    assert archive.path.stat().st_size == MIN_ARCHIVE_BYTES and not other.exists()


def test_another_java_or_other_jars_get_an_archive_of_their_own(libs: KafkaLibs, tmp_path: Path) -> None:
    node = archive_path(libs, "node")
    assert node.parent == tmp_path / "cache" / "kafkasim" / "class-archives"
    assert archive_path(libs, "node") == node
    assert archive_path(libs, "tools", tmp_path / "driver.jar") != node
    (libs.libs / "kafka-clients-4.3.1.jar").write_bytes(b"another jar")
    assert archive_path(libs, "node") != node
