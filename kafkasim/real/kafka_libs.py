"""Where the real Kafka comes from: its jars, fetched once into a user cache, or an existing distribution.

`kafkasim run --on-kafka` runs Apache Kafka's own broker and clients, version ``KAFKA_VERSION``. Their jars
are resolved by Maven from the pom shipped inside this package (``pom.xml``: kafka_2.13, kafka-tools and the
log4j2 backend with its slf4j 1.x binding) into ``$XDG_CACHE_HOME/kafkasim/kafka-<version>/libs`` (default
``~/.cache``), never into the working directory; later runs take them from there. ``--kafka-home DIR`` or the
``KAFKA_HOME`` environment variable uses an existing Kafka distribution's ``libs/`` instead (its version is
read from its kafka_2.13 jar). No Java, no Maven and no distribution: `RealKafkaUnavailable`, one line saying
what to install (the CLI exits 2).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import kafkasim

KAFKA_VERSION = kafkasim.KAFKA_VERSION  # one Kafka version for the model and the real cluster
"""The Apache Kafka release the real cluster runs (every hand-measured figure in docs/ was taken on it)."""
MIN_JAVA_MAJOR = 17
JAVA_HINT = ("install a Java runtime and compiler, 17 or newer (`apt-get install openjdk-17-jdk-headless`; macOS: "
             "`brew install openjdk@17`), and put it on PATH or set JAVA_HOME")
MAVEN_HINT = ("install Maven to fetch Kafka's jars (`apt-get install maven`; macOS: `brew install maven`), or point "
              "--kafka-home (or KAFKA_HOME) at an Apache Kafka distribution")
_POM = Path(__file__).with_name("pom.xml")
_KAFKA_JAR = re.compile(r"^kafka_2\.13-(?P<version>\d[\w.-]*?)\.jar$")
_JAVA_VERSION = re.compile(r'version "(?P<version>[^"]+)"')


class RealKafkaUnavailable(RuntimeError):
    """The real cluster cannot run here; the message is one line saying what to install or set."""


@dataclass(frozen=True)
class KafkaLibs:
    """A directory of Kafka's jars (the classpath is ``libs/*``) and the Java to run them with."""

    libs: Path
    version: str
    source: str
    """"cache" (fetched by Maven into the user cache) or "kafka-home" (an existing distribution)."""
    java: str
    javac: str | None

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")


def cache_root() -> Path:
    """kafkasim's user cache: ``$XDG_CACHE_HOME/kafkasim`` (default ``~/.cache/kafkasim``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafkasim"


def find_java() -> tuple[str, str | None]:
    """(java, javac or None): ``$JAVA_HOME/bin`` if JAVA_HOME is set, else PATH; 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java: str | None = str(Path(java_home) / "bin" / "java")
        javac: str | None = str(Path(java_home) / "bin" / "javac")
        if not Path(java or "").is_file():
            java = None
        if javac is not None and not Path(javac).is_file():
            javac = None
    else:
        java, javac = shutil.which("java"), shutil.which("javac")
    if java is None:
        raise RealKafkaUnavailable(f"a real Kafka cluster needs Java, which was not found; {JAVA_HINT}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RealKafkaUnavailable(f"{java} -version failed ({exc}); {JAVA_HINT}") from None
    match = _JAVA_VERSION.search(out.stderr + out.stdout)
    major = _java_major(match.group("version")) if match else 0
    if major < MIN_JAVA_MAJOR:
        found = match.group("version") if match else "an unknown version"
        raise RealKafkaUnavailable(f"Kafka {KAFKA_VERSION} needs Java {MIN_JAVA_MAJOR}+, found {found} at {java}; "
                                   f"{JAVA_HINT}")
    return java, javac


def _java_major(version: str) -> int:
    parts = re.split(r"[._+-]", version)
    if not parts or not parts[0].isdigit():
        return 0
    major = int(parts[0])
    return int(parts[1]) if major == 1 and len(parts) > 1 and parts[1].isdigit() else major


def distribution_version(libs: Path) -> str | None:
    """The Kafka version of a ``libs/`` directory (from its kafka_2.13-<version>.jar), None if it has none."""
    for jar in sorted(libs.glob("kafka_2.13-*.jar")):
        match = _KAFKA_JAR.match(jar.name)
        if match and not jar.name.endswith(("-test.jar", "-sources.jar", "-javadoc.jar")):
            return match.group("version")
    return None


def from_kafka_home(home: Path) -> Path:
    """The ``libs/`` of a Kafka distribution at ``home`` (``home`` itself if it is the libs directory)."""
    for candidate in (home / "libs", home):
        if candidate.is_dir() and distribution_version(candidate) is not None:
            return candidate
    raise RealKafkaUnavailable(f"--kafka-home {home}: no Apache Kafka distribution there (no libs/kafka_2.13-*.jar); "
                               "give the directory a Kafka tarball unpacks to")


def locate(kafka_home: str | os.PathLike[str] | None = None, *,
           progress: Callable[[str], None] | None = None) -> KafkaLibs:
    """Kafka's jars and Java: from ``kafka_home`` (or ``$KAFKA_HOME``) if given, else the user cache, fetching
    them with Maven the first time (``progress`` gets a line per downloaded file)."""
    java, javac = find_java()
    home = kafka_home if kafka_home is not None else os.environ.get("KAFKA_HOME") or None
    if home is not None:
        libs = from_kafka_home(Path(home).expanduser())
        version = distribution_version(libs)
        assert version is not None
        return KafkaLibs(libs, version, "kafka-home", java, javac)
    libs = cache_root() / f"kafka-{KAFKA_VERSION}" / "libs"
    if not _complete(libs):
        fetch(libs, progress=progress)
    return KafkaLibs(libs, KAFKA_VERSION, "cache", java, javac)


_DONE_MARKER = ".kafkasim-complete"


def _complete(libs: Path) -> bool:
    return (libs / _DONE_MARKER).is_file()


def fetch(libs: Path, *, progress: Callable[[str], None] | None = None) -> None:
    """Resolve the pom's dependencies into ``libs`` (atomically: a fetch cut short leaves no half directory)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RealKafkaUnavailable(f"Kafka {KAFKA_VERSION}'s jars are not in {libs.parent} yet and Maven was not "
                                   f"found; {MAVEN_HINT}")
    libs.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=libs.parent))
    try:
        shutil.copyfile(_POM, work / "pom.xml")
        out = work / "libs"
        command = [mvn, "-B", "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={out}",
                   f"-Dkafka.version={KAFKA_VERSION}"]
        tail: list[str] = []
        downloaded = 0
        with subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True) as proc:
            assert proc.stdout is not None
            try:
                for line in proc.stdout:
                    line = line.rstrip()
                    tail = (tail + [line])[-40:]
                    if line.startswith("Downloaded from") and ".jar (" in line:
                        downloaded += 1
                        if progress is not None:
                            progress(f"fetching Kafka {KAFKA_VERSION}'s jars with Maven: {downloaded} downloaded")
                code = proc.wait()
            except BaseException:
                _stop_group(proc)
                raise
        if code != 0:
            errors = [line for line in tail if "[ERROR]" in line][:3] or tail[-3:]
            detail = " / ".join(e.replace("[ERROR]", "").strip() for e in errors if e.strip())
            raise RealKafkaUnavailable(f"Maven could not fetch Kafka {KAFKA_VERSION}'s jars ({detail}); check that "
                                       "Maven Central can be reached, or use --kafka-home")
        (out / _DONE_MARKER).write_text(f"{KAFKA_VERSION}\n")
        if libs.exists():
            shutil.rmtree(libs)
        os.rename(out, libs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stop_group(proc: subprocess.Popen[str]) -> None:
    from kafkasim.real.processes import stop_process

    stop_process(proc.pid, proc, timeout_s=5.0)


def compiled_jar(sources: list[Path], libs: KafkaLibs, *, progress: Callable[[str], None] | None = None) -> Path:
    """``sources`` compiled against ``libs`` into a jar in the user cache (once per content), for ``java -cp``.
    A jar, not a directory of classes: the JVM's class-data sharing archives no class from a directory
    (kafkasim.real.class_archive)."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    digest.update(str(libs.libs).encode())
    target = cache_root() / f"kafka-{libs.version}" / f"driver-{digest.hexdigest()[:16]}.jar"
    if target.is_file():
        return target
    if libs.javac is None:
        raise RealKafkaUnavailable(f"the load driver is compiled with javac, which was not found; {JAVA_HINT}")
    if progress is not None:
        progress("compiling kafkasim's load driver")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".javac-", dir=target.parent))
    try:
        result = subprocess.run([libs.javac, "-nowarn", "-cp", libs.classpath, "-d", str(work), *map(str, sources)],
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"javac failed on kafkasim's load driver:\n{result.stderr[-4000:]}")
        jar = work / target.name
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: kafkasim\n")
            for path in sorted(work.rglob("*.class")):
                archive.write(path, path.relative_to(work).as_posix())
        os.replace(jar, target)  # atomic: a concurrent run sees the whole jar or none
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
