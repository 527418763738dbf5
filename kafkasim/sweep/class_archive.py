"""A class-data archive for a local master's Spark JVM: a new session starts in about half the time.

A new local session's JVM spends most of its start loading and verifying Spark's classes (measured: the
session up in 4.1-4.2 s, 2.1 s with the archive; benchmarks/README.md, "Sweeps on Spark"). Java's
class-data sharing maps them, already parsed and verified, from an archive file instead. Java 17 writes
such an archive of every class a JVM loaded when that JVM exits (`-XX:ArchiveClassesAtExit`, a "dynamic"
archive on top of the JDK's own); later JVMs map it (`-XX:SharedArchiveFile`).

Lifecycle:

* The archive lives in kafkasim's user cache (`$XDG_CACHE_HOME/kafkasim/spark-class-archive/`, default
  `~/.cache`), named by a hash of everything it depends on: the `java` executable and its version, Spark's
  jars (their directory, names and sizes) and the JVM options. A new JDK or Spark makes a new name. The JVM also checks an
  archive it is given and, if it does not match, runs without it (a warning in the Spark log), never fails.
* A session a sweep starts while there is no archive asks its JVM to write one when it exits, under a
  temporary name of its own (`<name>.<pid>.tmp`). Only sessions whose stop kafkasim owns do (a sweep's, or
  `build_spark_session(..., write_class_archive=True)` stopped by `stop_spark_session`): a JVM left to exit
  with Python would write it with nobody to move it into place, and the next session would pay again. That session starts slower (the JVM records what it loads: 8.4 s
  against 4.2 s measured) and its JVM takes a few seconds to write ~115 MB when it exits. Stopping the
  session (kafkasim.sweep.session.stop_session) waits for the JVM's exit and then renames the file into
  place: one slow session per machine, JDK and Spark, and every later one is faster.
* A temporary file whose JVM is gone without being waited for (the driver was killed) is removed the next
  time a session plans an archive, and so are all but the MAX_ARCHIVES most recently used archives.

Only local masters use it: a cluster's driver JVM is the same, but its start is small next to a cluster
sweep and its machine is not necessarily this one's (`spark.driver.extraJavaOptions` would name a file
there).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from kafkasim.real.processes import alive

ARCHIVE_DIR = "spark-class-archive"
MAX_ARCHIVES = 4
"""Archives kept in the cache: the most recently used ones (each virtual environment's pyspark has its own)."""
_SUFFIX = ".jsa"


@dataclass(frozen=True)
class ClassArchive:
    """What a session's JVM is told (`java_options`) and, for a JVM that writes the archive, where it
    writes it (`pending`) and where the file goes once that JVM has exited (`path`)."""

    path: Path
    pending: Path | None

    @property
    def java_options(self) -> str:
        if self.pending is None:
            return f"-XX:SharedArchiveFile={self.path}"
        return f"-XX:ArchiveClassesAtExit={self.pending}"

    def complete(self) -> Path | None:
        """After the writing JVM exited: move its archive into place; return it, or None if it wrote none."""
        if self.pending is None or not self.pending.is_file():
            return None
        os.replace(self.pending, self.path)
        return self.path


def archive_key(java_executable: str, java_version: str, spark_jars: Path, java_options: str) -> str:
    """A hash of what an archive is valid for: the JVM, Spark's classes and the JVM's options."""
    digest = hashlib.sha256()
    # The JVM records the class path it archived and refuses the archive on another: the jars' directory
    # is part of the key (each virtual environment's pyspark has its own).
    for part in (os.path.realpath(java_executable), java_version, java_options, os.path.realpath(spark_jars)):
        digest.update(part.encode() + b"\0")
    for jar in sorted(spark_jars.glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}".encode() + b"\0")
    return digest.hexdigest()[:24]


def archive_path(directory: Path, key: str) -> Path:
    """Where the archive of `key` is (once written)."""
    return directory / f"{key}{_SUFFIX}"


def plan_archive(directory: Path, key: str, *, write: bool = True) -> ClassArchive | None:
    """The archive to use (it exists) or, if `write`, to write (it does not); None if there is none to use and
    none to write: not `write`, the directory cannot be written, or its path has a space (Spark splits
    `spark.driver.extraJavaOptions` at whitespace)."""
    path = archive_path(directory, key)
    if any(c.isspace() for c in str(path)):
        return None
    if path.is_file():
        with contextlib.suppress(OSError):
            os.utime(path)  # last used now: pruning keeps the archives in use
        return ClassArchive(path=path, pending=None)
    if not write:
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return None
    _remove_orphans(directory)
    _prune(directory, keep=MAX_ARCHIVES - 1)
    return ClassArchive(path=path, pending=directory / f"{key}{_SUFFIX}.{os.getpid()}.tmp")


def _prune(directory: Path, keep: int) -> None:
    """Delete all but the `keep` most recently used archives (each is ~115 MB; a new JDK, Spark or virtual
    environment makes a new one and leaves the old unused)."""
    used: list[tuple[float, Path]] = []
    for archive in directory.glob(f"*{_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):  # another process's prune got there first
            used.append((archive.stat().st_mtime, archive))
    for _, old in sorted(used, reverse=True)[keep:]:
        old.unlink(missing_ok=True)


def _remove_orphans(directory: Path) -> None:
    """Delete temporary archives whose writing process (the pid in the name) no longer runs."""
    for tmp in directory.glob(f"*{_SUFFIX}.*.tmp"):
        pid = tmp.suffixes[-2].lstrip(".")
        if pid.isdigit() and int(pid) != os.getpid() and not alive([int(pid)]):
            tmp.unlink(missing_ok=True)
