"""What Spark needs on this machine: PySpark (the `spark` extra) and a Java runtime it can start (17+).

Only `kafkasim sweep` needs Java: PySpark's driver is a JVM. Single runs are pure Python and never call
this module. The check runs before any Spark code so a missing Java is one clear line, not a Py4J
traceback from deep inside `SparkSession.builder`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIN_JAVA_MAJOR = 17
"""PySpark 4 runs on Java 17 and 21 (Spark 4.0 dropped Java 8 and 11)."""

INSTALL_HINT = (
    "install it with `sudo apt-get install openjdk-17-jre-headless` (macOS: `brew install openjdk@17`) "
    "and put it on PATH or set JAVA_HOME"
)

# `java -version` prints e.g. `openjdk version "17.0.15" 2025-04-15` or `java version "1.8.0_292"`
# (pre-9 releases report the major version after "1.").
_VERSION_RE = re.compile(r'version "(?P<version>[^"]+)"')


PYSPARK_HINT = (
    "run it with the `spark` extra: `uv run --extra spark kafkasim sweep ...` "
    "(or `pip install 'kafkasim[spark]'`)"
)


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here; the message is one line for the user saying what to install."""


class JavaNotFoundError(SparkUnavailableError):
    """No usable Java (missing, unrunnable or older than 17)."""


class PySparkMissingError(SparkUnavailableError):
    """PySpark is not installed: it lives in the optional `spark` extra so single runs never download it."""


def check_pyspark() -> None:
    """Raise `PySparkMissingError` (one line, with how to get it) unless `pyspark` can be imported."""
    if importlib.util.find_spec("pyspark") is None:
        raise PySparkMissingError(f"kafkasim sweep needs PySpark, which is not installed; {PYSPARK_HINT}.")


@dataclass(frozen=True)
class JavaInfo:
    executable: str
    version: str
    major: int


def parse_java_major(version: str) -> int:
    """Major Java version from the quoted string `java -version` prints ("1.8.0_292" -> 8, "17.0.1" -> 17)."""
    parts = re.split(r"[._+-]", version)
    if not parts or not parts[0].isdigit():
        raise ValueError(f"unrecognised Java version {version!r}")
    major = int(parts[0])
    if major == 1 and len(parts) > 1 and parts[1].isdigit():
        return int(parts[1])
    return major


def find_java_executable() -> str | None:
    """`$JAVA_HOME/bin/java` if JAVA_HOME is set (that is what Spark's launcher uses), else `java` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


def check_java(min_major: int = MIN_JAVA_MAJOR) -> JavaInfo:
    """The Java PySpark will use, or `JavaNotFoundError` with a one-line message saying how to install it."""
    executable = find_java_executable()
    if executable is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") else (
            "no `java` on PATH"
        )
        raise JavaNotFoundError(f"kafkasim sweep needs Java {min_major}+ for Spark ({where}); {INSTALL_HINT}.")
    try:
        completed = subprocess.run(
            [executable, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(
            f"kafkasim sweep needs Java {min_major}+ for Spark ({executable} could not run: {exc}); "
            f"{INSTALL_HINT}."
        ) from exc
    # `java -version` writes to stderr; some wrappers use stdout.
    match = _VERSION_RE.search(completed.stderr + completed.stdout)
    if match is None:
        raise JavaNotFoundError(
            f"kafkasim sweep needs Java {min_major}+ for Spark (could not read the version of {executable}); "
            f"{INSTALL_HINT}."
        )
    version = match.group("version")
    try:
        major = parse_java_major(version)
    except ValueError as exc:
        raise JavaNotFoundError(
            f"kafkasim sweep needs Java {min_major}+ for Spark ({exc} from {executable}); {INSTALL_HINT}."
        ) from exc
    if major < min_major:
        raise JavaNotFoundError(
            f"kafkasim sweep needs Java {min_major}+ for Spark (found Java {major} at {executable}); "
            f"{INSTALL_HINT}."
        )
    return JavaInfo(executable=executable, version=version, major=major)
