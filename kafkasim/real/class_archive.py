"""Class-data sharing for the JVMs of a real cluster: Kafka's classes parsed and verified once per machine.

A Kafka node spends most of its start-up loading some ten thousand classes (Kafka's, Scala's, its
libraries'): about 6.5 CPU seconds each on this project's 2-core machines, four nodes per cluster, a cluster
per differential scenario. The JVM's dynamic class-data sharing archive (JEP 350, Java 13+) keeps those classes
parsed and verified in a file the next JVMs map: a node then starts in about 3.4 CPU seconds (measured on one
3-broker cluster start on this machine, with and without the archive).

The archive is made by the first cluster that stops cleanly: its nodes run with ``-XX:ArchiveClassesAtExit``
(each into a file of its own), and at the cluster's stop one broker's file that its JVM finished writing
(the JVM exited on SIGTERM, not SIGKILL) is moved into place with an atomic rename; later clusters' nodes run
with ``-XX:SharedArchiveFile``. The archive's name holds a digest of what it depends on (the Java binary, the
jars on the classpath with their sizes and times), so a new JDK or another Kafka gets an archive of its own.
The JVM itself checks an archive before using it (``-Xshare:auto``, the default): one it cannot use is
skipped and the classes load from the jars, as without this module. Nothing here changes what Kafka does,
only how fast its JVMs start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import time
import uuid
from pathlib import Path

from kafkasim.real.kafka_libs import KafkaLibs, cache_root

MIN_ARCHIVE_BYTES = 1 << 20
"""A dump smaller than this was cut short; it is never moved into place."""
STALE_DUMP_S = 3600.0


def archive_path(libs: KafkaLibs, kind: str, driver_jar: Path | None = None) -> Path:
    """Where ``kind``'s archive for ``libs`` lives in the user cache: "node" (Kafka's controller and brokers),
    "tools" (kafkasim's load driver, in ``driver_jar``, ahead of Kafka's jars)."""
    digest = hashlib.sha256()
    if driver_jar is not None:
        digest.update(f"{driver_jar.resolve()}\n".encode())
    java = Path(libs.java).resolve()
    digest.update(str(java).encode())
    with contextlib.suppress(OSError):
        st = java.stat()
        digest.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    for jar in sorted(libs.libs.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return cache_root() / "class-archives" / f"{kind}-kafka-{libs.version}-{digest.hexdigest()[:16]}.jsa"


class ClassArchive:
    """The JVM flags that use (or, until it exists, make) one archive, and the step that keeps a dump."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def flags(self, name: str) -> tuple[list[str], Path | None]:
        """The flags for the JVM ``name`` about to start (map the archive, or dump one at exit), and the file
        it dumps to (None when it maps the archive)."""
        if self.path.is_file():
            # -Xshare:auto: an archive this JVM cannot map is skipped (and says so on stdout), never fatal.
            return ["-Xshare:auto", f"-XX:SharedArchiveFile={self.path}"], None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for stale in self.path.parent.glob(f".{self.path.stem}.*.jsa"):
            # Dumps of runs that ended without reaching keep() (the machine went down mid-run).
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > STALE_DUMP_S:
                    stale.unlink()
        dump = self.path.with_name(f".{self.path.stem}.{os.getpid()}.{name}.{uuid.uuid4().hex[:8]}.jsa")
        return [f"-XX:ArchiveClassesAtExit={dump}"], dump

    def keep(self, dumps: list[tuple[Path, int | None]]) -> Path | None:
        """After the JVMs ended (``dumps``: each one's dump file and return code, None if it still runs): move
        a dump its JVM finished into place if there is no archive yet, delete the others. The archive kept."""
        kept = None
        for dump, code in dumps:
            # A JVM killed (SIGKILL) or still running has not finished writing its dump.
            finished = code is not None and code not in (-signal.SIGKILL, 128 + signal.SIGKILL)
            try:
                whole = finished and dump.stat().st_size >= MIN_ARCHIVE_BYTES
            except OSError:
                whole = False
            if whole and kept is None and not self.path.is_file():
                os.replace(dump, self.path)
                kept = self.path
            with contextlib.suppress(OSError):
                dump.unlink()
        return kept
