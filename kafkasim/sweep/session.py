"""Starting (quietly) the SparkSession a sweep runs on.

Default master `local[*]`: Spark runs inside this Python process's JVM child, with one Python worker per
core, so a sweep works on one machine with nothing else running. `--master spark://…`, `k8s://…` or `yarn`
points the same job at a cluster; nothing else changes. kafkasim ships itself and its dependencies to the
executors (kafkasim.sweep.shipping), so they need only the driver's Python version; the output directory
must be visible at the same path to the driver and every executor (a shared mount), since each task writes
its run's Parquet there.

Spark is chatty when it starts (log4j profile banner, JVM module warnings, native-hadoop and hostname
warnings, console progress bars). A sweep has its own progress display, so the JVM's stdout/stderr go to a
log file (`spark_log_path()`), its log level is WARN, and the console progress bar is off. When Spark fails,
the file is kept (``keep_spark_log``) and the error message points at it; a sweep that ends otherwise deletes
it with the session it started.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkasim.sweep.class_archive import ARCHIVE_DIR, ClassArchive, archive_key, archive_path, plan_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
APP_NAME = "kafkasim-sweep"

LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM options of a local master's Spark (driver and executor in one JVM, on the cores the simulations
run on): the C1 JIT only and the serial collector. A sweep's JVM runs short-lived query plans that C2
would spend more CPU compiling than they run; measured in benchmarks/README.md ("Sweeps on Spark"): the
fixed cost of a sweep in a new session about halves, mostly the JVM's own CPU."""

_LOCAL_MASTER_RE = re.compile(r"local(\[(\*|[0-9]+)(, *[0-9]+)?\])?")  # matched whole (fullmatch)
_LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


def is_local_master(master: str) -> bool:
    """True for `local`, `local[*]`, `local[N]` and `local[N,F]` (Spark inside this machine's JVM)."""
    return _LOCAL_MASTER_RE.fullmatch(master) is not None


def resolve_master(master: str | None, parallelism: int | None) -> str:
    """The master URL to use; `parallelism` on a local master becomes `local[N]` (N concurrent runs)."""
    resolved = master or DEFAULT_MASTER
    if parallelism is not None:
        if parallelism < 1:
            raise ValueError(f"parallelism must be at least 1, got {parallelism}")
        if is_local_master(resolved):
            return f"local[{parallelism}]"
    return resolved


def spark_log_path() -> Path:
    """Where the Spark JVM's own output goes (one file per driver process) while a session runs."""
    return Path(tempfile.gettempdir()) / f"kafkasim-spark-{os.getpid()}.log"


def remove_spark_log() -> None:
    """Delete the JVM's log once the sweep that started the session ended well: nothing in it is needed, and
    one was left in the temporary directory per sweep."""
    spark_log_path().unlink(missing_ok=True)


def keep_spark_log() -> Path:
    """Keep the JVM's log of a sweep Spark could not finish, under a name of its own (a later sweep of the same
    process would otherwise write to it, and delete it when it ends well); return where it is."""
    log = spark_log_path()
    kept = log.with_name(f"kafkasim-spark-{os.getpid()}-failed-{time.strftime('%Y%m%d-%H%M%S')}.log")
    try:
        log.rename(kept)  # the JVM, still running, goes on writing to it under the new name
    except OSError:
        return log
    return kept


@contextmanager
def _jvm_output_to(log_path: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 at `log_path` while the JVM is spawned, so the child inherits them.

    PySpark starts the JVM with `Popen` and inherited stdout/stderr; there is no option to redirect them.
    The parent's descriptors are restored as soon as the gateway is up.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log_fd):
            os.close(fd)


def use_this_python(local: bool) -> None:
    """Make Spark's Python workers (and driver) run this interpreter, the one that imports kafkasim.

    PySpark's SparkContext takes the workers' interpreter from the PYSPARK_PYTHON environment variable
    (default `python3` on PATH), not from `spark.pyspark.python`, which only spark-submit reads. Under
    `uv run` or an activated venv `python3` happens to be the venv's; `.venv/bin/kafkasim` launched
    directly would start the base interpreter, which has no kafkasim. So it is set before the JVM starts:
    always for a local master (the workers are on this machine and must import this kafkasim), and only
    if unset for a cluster (whose executors may keep Python elsewhere).
    """
    for variable in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        if local:
            os.environ[variable] = sys.executable
        else:
            os.environ.setdefault(variable, sys.executable)


def _archive_location() -> tuple[Path, str] | None:
    """The class archives' directory and this JVM's key (kafkasim.sweep.class_archive); None without a usable
    Java or Spark."""
    from pyspark.find_spark_home import _find_spark_home

    from kafkasim.real.kafka_libs import cache_root
    from kafkasim.sweep.java import check_java

    try:
        java = check_java()  # SparkUnavailableError without a usable Java
        jars = Path(_find_spark_home()) / "jars"
    except (Exception, SystemExit):  # noqa: BLE001 - no archive; Spark's own start says what is wrong
        return None  # (PySpark's _find_spark_home exits rather than raises when it finds no Spark)
    if not jars.is_dir():
        return None
    return cache_root() / ARCHIVE_DIR, archive_key(java.executable, java.version, jars, LOCAL_JVM_OPTIONS)


def class_archive(*, write: bool) -> ClassArchive | None:
    """The class-data archive for a local master's JVM (kafkasim.sweep.class_archive): the one to use, or, if
    `write`, the one its JVM is to write; None if there is no usable Java or Spark, no archive and no `write`,
    or the cache cannot be written (the session then starts without one)."""
    location = _archive_location()
    return None if location is None else plan_archive(*location, write=write)


def writes_class_archive(master: str | None, parallelism: int | None = None) -> bool:
    """Whether a session started now on `master` would first write the JVM's class archive (a slower session,
    once per JDK, Spark and environment), for the command line to say why."""
    if not is_local_master(resolve_master(master, parallelism)) or kept_session() is not None:
        return False
    location = _archive_location()
    return location is not None and not archive_path(*location).is_file()


@dataclass
class _Launch:
    """What build_spark_session started: the session, and the JVM process if it launched one (PySpark reuses
    a JVM this process already has), with the class archive that JVM writes or reads."""

    session: SparkSession
    jvm: subprocess.Popen[bytes] | None
    archive: ClassArchive | None
    sigint: Any = None
    """This process's SIGINT handler before the session (PySpark's SparkContext installs its own in the main
    thread, which cancels the context's jobs, and leaves it there when the context stops)."""


_launch: _Launch | None = None  # one SparkContext per process: the last one build_spark_session started


def build_spark_session(master: str | None = None, *, parallelism: int | None = None,
                        write_class_archive: bool = False) -> SparkSession:
    """A SparkSession for sweeps: Arrow enabled, small shuffles, WARN logs, no console progress bar.

    `getOrCreate` semantics: if this process already has an active SparkSession, that one is returned
    (Spark allows one SparkContext per JVM) and `master` does not change it. `stop_spark_session` stops it
    and the JVM it launched. A local JVM starts from the class archive if there is one; with
    `write_class_archive` (for a caller that will stop the session with `stop_spark_session`) one that
    finds none writes it when it exits (kafkasim.sweep.class_archive).
    """
    global _launch
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    resolved = resolve_master(master, parallelism)
    local = is_local_master(resolved)
    use_this_python(local)
    if local:
        # Bind to loopback: no firewall prompts, no "hostname resolves to a loopback address" warning.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(resolved)
        .appName(APP_NAME)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        # Sweeps aggregate a few thousand groups at most; Spark's default of 200 shuffle partitions
        # makes each tiny aggregation schedule 200 tasks. The job sets a size-based value per run.
        .config("spark.sql.shuffle.partitions", "8")
    )
    java_options = f"-Dlog4j2.configurationFile=file:{_LOG4J_CONFIG}"
    had_jvm = SparkContext._gateway is not None
    archive = class_archive(write=write_class_archive) if local and not had_jvm else None
    if local:
        java_options += f" {LOCAL_JVM_OPTIONS}"
        if archive is not None:
            java_options += f" {archive.java_options}"
    builder = builder.config("spark.driver.extraJavaOptions", java_options)
    # A Python worker serves task after task (Spark's default, made explicit: a sweep relies on it, since a
    # worker's first task pays the imports).
    builder = builder.config("spark.python.worker.reuse", "true")
    # The JVM and its Python workers (always on the same machine) talk over Unix domain sockets instead of
    # loopback TCP (Spark 4.1+; older versions ignore the key). Over TCP every Python task waited ~40 ms for
    # its input (a delayed-ACK stall): 64 tasks that do nothing took 1.7 s on local[2], 0.4 s with this
    # (benchmarks/README.md, "Sweeps on Spark").
    builder = builder.config("spark.python.unix.domain.socket.enabled", "true")
    if local:
        # Workers must import the same kafkasim (and its dependencies) as the driver; the daemon imports the
        # engine once before it forks them (kafkasim.sweep.daemon).
        builder = (
            builder.config("spark.pyspark.python", sys.executable)
            .config("spark.ui.enabled", "false")
            .config("spark.python.daemon.module", "kafkasim.sweep.daemon")
        )
    elif parallelism is not None:
        # Standalone and Mesos cap a job's cores this way; on YARN/k8s size the executors instead.
        builder = builder.config("spark.cores.max", str(parallelism))
    main_thread = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main_thread else None
    with _jvm_output_to(spark_log_path()):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    jvm = None if had_jvm else getattr(SparkContext._gateway, "proc", None)
    _launch = _Launch(session=spark, jvm=jvm, archive=archive if jvm is not None else None,
                      sigint=sigint if jvm is not None else None)
    return spark


JVM_EXIT_TIMEOUT_S = 60.0
"""How long stopping a session waits for its JVM to exit (writing a class archive takes a few seconds)."""


def stop_spark_session(session: SparkSession) -> None:
    """Stop `session` and, if build_spark_session launched its JVM, that JVM too, by process id: its stdin is
    closed (PySpark's gateway exits on end of input, as when Python exits), then it is waited for and killed
    if it has not exited within JVM_EXIT_TIMEOUT_S. A class archive that JVM wrote is moved into place."""
    global _launch
    from pyspark import SparkContext

    launch = _launch if _launch is not None and _launch.session is session else None
    session.stop()
    if launch is None or launch.jvm is None:
        return
    _launch = None
    gateway = SparkContext._gateway
    if gateway is not None:
        with contextlib.suppress(Exception):  # the connection may already be gone; the process is what matters
            gateway.shutdown()
    proc = launch.jvm
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=JVM_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    # The next session launches a JVM of its own (PySpark reuses the gateway while it is set).
    SparkContext._gateway = None
    SparkContext._jvm = None
    if launch.sigint is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, launch.sigint)  # Ctrl-C as it was before the session
    if launch.archive is not None and proc.returncode == 0:
        launch.archive.complete()


# ---------------------------------------------------------------------------------------------------------
# The session a process keeps for its sweeps
# ---------------------------------------------------------------------------------------------------------

_kept: tuple[SparkSession, str] | None = None  # (session, master): started by a sweep, kept for the next
_kept_lock = threading.Lock()
_atexit_registered = False


def sweep_session(master: str | None, parallelism: int | None) -> tuple[SparkSession, bool]:
    """The session a sweep runs on, and whether this call started it.

    In order: the session an earlier sweep of this process started and kept, if it runs the master asked
    for (a notebook's second sweep pays no JVM start; one on another master stops it and starts anew); a
    session the caller made active themselves (used as is, never stopped); else a new one, kept for later
    sweeps until `stop_session()` or the interpreter's exit.
    """
    global _kept, _atexit_registered
    from pyspark.sql import SparkSession

    resolved = resolve_master(master, parallelism)
    with _kept_lock:
        kept = _kept
    if kept is not None:
        session, kept_master = kept
        # PySpark has no public "stopped" flag: SparkContext.stop() sets _jsc to None (a user's spark.stop()).
        if kept_master == resolved and getattr(session.sparkContext, "_jsc", None) is not None:
            return session, False
        stop_session()
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    # Stopped by stop_session (at the latest at the interpreter's exit): it may write the class archive.
    session = build_spark_session(master, parallelism=parallelism, write_class_archive=True)
    with _kept_lock:
        _kept = (session, resolved)
        if not _atexit_registered:
            atexit.register(stop_session)
            _atexit_registered = True
    return session, True


def kept_session() -> SparkSession | None:
    """The session sweeps of this process started and keep, if any."""
    with _kept_lock:
        return None if _kept is None else _kept[0]


def stop_session() -> None:
    """Stop the session sweeps of this process kept, and its JVM (by process id); a no-op without one.

    Its Spark log is deleted (a sweep that Spark failed has already moved it aside, see keep_spark_log).
    Called at the interpreter's exit; a notebook calls it to give the JVM's memory back sooner.
    """
    global _kept
    with _kept_lock:
        kept, _kept = _kept, None
    if kept is None:
        return
    stop_spark_session(kept[0])
    remove_spark_log()
