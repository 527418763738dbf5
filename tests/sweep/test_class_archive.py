"""The local Spark JVM's class-data archive: where it lives, when it is used, written and cleaned up
(kafkasim.sweep.class_archive). The archive's effect on a real JVM is checked in test_session_reuse.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.sweep.class_archive import archive_key, archive_path, plan_archive


def _jars(directory: Path, **sizes: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, size in sizes.items():
        (directory / f"{name}.jar").write_bytes(b"x" * size)
    return directory


def test_without_an_archive_the_jvm_is_asked_to_write_one_under_a_name_of_its_own(tmp_path: Path) -> None:
    plan = plan_archive(tmp_path / "cache", "k1")
    assert plan is not None and plan.pending is not None
    assert plan.pending.name == f"k1.jsa.{os.getpid()}.tmp"
    assert plan.java_options == f"-XX:ArchiveClassesAtExit={plan.pending}"
    assert plan.complete() is None  # the JVM wrote nothing: nothing moved, no error
    plan.pending.write_bytes(b"archive")
    assert plan.complete() == tmp_path / "cache" / "k1.jsa"
    assert not plan.pending.exists()
    again = plan_archive(tmp_path / "cache", "k1")
    assert again is not None and again.pending is None
    assert again.java_options == f"-XX:SharedArchiveFile={tmp_path / 'cache' / 'k1.jsa'}"


def test_only_a_caller_that_will_stop_the_jvm_asks_it_to_write_one(tmp_path: Path) -> None:
    # A JVM left to exit with Python writes its archive with nobody to move it into place: every later
    # session would start slowly again, and leave a JVM writing behind it.
    assert plan_archive(tmp_path / "cache", "k1", write=False) is None
    assert not (tmp_path / "cache").exists()
    (tmp_path / "cache").mkdir()
    archive_path(tmp_path / "cache", "k1").write_bytes(b"archive")
    used = plan_archive(tmp_path / "cache", "k1", write=False)
    assert used is not None and used.pending is None  # one that exists is used all the same


def test_a_dead_writers_temporary_archive_is_removed_a_live_ones_stays(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = cache / f"k0.jsa.{int(done.stdout)}.tmp"  # that process has exited
    alive = cache / f"k0.jsa.{os.getppid()}.tmp"
    dead.write_bytes(b"half")
    alive.write_bytes(b"being written")
    plan_archive(cache, "k1")
    assert not dead.exists() and alive.exists()


def test_a_new_archive_prunes_all_but_the_most_recently_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    for age, name in enumerate(["a", "b", "c", "d", "e"]):  # "a" used last, "e" longest ago
        archive = cache / f"{name}.jsa"
        archive.write_bytes(b"archive")
        os.utime(archive, (1_000_000 - age, 1_000_000 - age))
    used = plan_archive(cache, "e")  # used again: now the most recent
    assert used is not None and used.pending is None
    plan_archive(cache, "new")
    # Three kept, with room for the one the new session's JVM writes (MAX_ARCHIVES = 4).
    assert sorted(p.name for p in cache.glob("*.jsa")) == ["a.jsa", "b.jsa", "e.jsa"]


def test_an_unwritable_cache_means_no_archive_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert plan_archive(blocker / "cache", "k1") is None


def test_no_archive_under_a_path_with_a_space(tmp_path: Path) -> None:
    # Spark splits spark.driver.extraJavaOptions at whitespace: the option would name half a path.
    assert plan_archive(tmp_path / "my cache", "k1") is None


def test_the_key_follows_the_jvm_spark_and_the_options(tmp_path: Path) -> None:
    jars = _jars(tmp_path / "jars", spark_core=10, scala=20)
    java = sys.executable  # any executable: the key takes its real path
    base = archive_key(java, "17.0.15", jars, "-XX:+UseSerialGC")
    assert base == archive_key(java, "17.0.15", jars, "-XX:+UseSerialGC")
    assert base != archive_key(java, "21.0.1", jars, "-XX:+UseSerialGC")
    assert base != archive_key(java, "17.0.15", jars, "-XX:+UseParallelGC")
    other_venv = _jars(tmp_path / "other" / "jars", spark_core=10, scala=20)  # the same jars elsewhere
    assert base != archive_key(java, "17.0.15", other_venv, "-XX:+UseSerialGC")
    _jars(jars, spark_core=11)  # a new Spark: same names, other contents
    assert base != archive_key(java, "17.0.15", jars, "-XX:+UseSerialGC")


def test_the_command_line_is_told_when_a_session_would_write_the_archive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    from kafkasim.sweep.java import JavaNotFoundError, check_java
    from kafkasim.sweep.session import _archive_location, writes_class_archive

    try:
        check_java()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert writes_class_archive("local[2]")
    assert not writes_class_archive("spark://10.0.0.1:7077")  # a cluster's driver JVM takes no archive
    location = _archive_location()
    assert location is not None
    location[0].mkdir(parents=True)
    archive_path(*location).write_bytes(b"archive")
    assert not writes_class_archive("local[2]")
