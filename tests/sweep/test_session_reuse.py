"""The session a sweep starts is kept for the next sweep of the process, and stopped with its JVM, by process
id, by `stop_session()` or at the interpreter's exit; the JVM's class archive is written once and then used.

The end-to-end test runs in a child process: this one has the test session's SparkSession active, which a sweep
would use. Which session a sweep picks is checked with stand-ins, without a JVM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

_CHILD = """
import json, os, signal, sys
from pathlib import Path
from kafkasim.sweep import run_sweep, stop_session
from kafkasim.sweep import session as S

ctrl_c = signal.getsignal(signal.SIGINT)

here = Path(sys.argv[1])
seen = {}

def jvm_arguments():
    bean = S.kept_session().sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    return [str(a) for a in bean.getInputArguments()]

first = run_sweep(here / "s.yaml", master="local[1]", out=here / "out1")
seen["first_pid"] = S._launch.jvm.pid
seen["first_args"] = jvm_arguments()
second = run_sweep(here / "s.yaml", master="local[1]", out=here / "out2")
seen["second_start"] = second.timings["spark_start"]
seen["same_session"] = S._launch is not None and S._launch.jvm.pid == seen["first_pid"]
seen["same_results"] = first.per_variant.equals(second.per_variant)
stop_session()
seen["kept_after_stop"] = S.kept_session() is not None
# PySpark's SparkContext put its own SIGINT handler in (it cancels that context's jobs) and leaves it.
seen["ctrl_c_restored"] = signal.getsignal(signal.SIGINT) is ctrl_c
try:
    os.kill(seen["first_pid"], 0)
    seen["first_alive_after_stop"] = True
except ProcessLookupError:
    seen["first_alive_after_stop"] = False
third = run_sweep(here / "s.yaml", master="local[1]", out=here / "out3")
seen["third_pid"] = S._launch.jvm.pid
seen["third_args"] = jvm_arguments()
# The JVM says so in its output (the Spark log) when it cannot use an archive it was given.
seen["cds_warnings"] = [line for line in S.spark_log_path().read_text().splitlines() if "cds" in line.lower()]
print(json.dumps(seen))
"""  # the interpreter's exit stops the third session's JVM (atexit)

SWEEP = "base: base.yaml\nseeds: [1, 2]\nduration: 2s\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.spark
def test_a_second_sweep_reuses_the_session_and_its_jvm_is_stopped_by_pid(sweep_dir: Path, tmp_path: Path) -> None:
    (sweep_dir / "s.yaml").write_text(SWEEP)
    cache = tmp_path / "cache"  # a cache of its own: the first session writes the class archive
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(sweep_dir)], capture_output=True, text=True, env=env,
                          timeout=600, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert seen["second_start"] == 0.0 and seen["same_session"] and seen["same_results"]
    assert not seen["kept_after_stop"] and not seen["first_alive_after_stop"] and seen["ctrl_c_restored"]
    assert seen["third_pid"] != seen["first_pid"]
    deadline = time.monotonic() + 5  # the child has exited; its atexit waited for the JVM
    while _alive(seen["third_pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(seen["third_pid"]), "the kept session's JVM outlived the interpreter"

    archives = sorted((cache / "kafkasim" / "spark-class-archive").iterdir())
    assert [a.suffix for a in archives] == [".jsa"], archives  # written, moved into place, nothing temporary left
    assert any(a.startswith("-XX:ArchiveClassesAtExit=") for a in seen["first_args"])
    assert f"-XX:SharedArchiveFile={archives[0]}" in seen["third_args"]
    assert seen["cds_warnings"] == []
    shutil.rmtree(cache)  # ~115 MB: not left in pytest's kept temporary directories


class _FakeSession:
    """Stands for a SparkSession: what sweep_session and stop_spark_session look at."""

    def __init__(self, master: str) -> None:
        self.master = master
        self.stopped = False
        self.sparkContext = self

    @property
    def _jsc(self) -> object | None:
        return None if self.stopped else object()

    def stop(self) -> None:
        self.stopped = True


def test_which_session_a_sweep_runs_on(monkeypatch: pytest.MonkeyPatch) -> None:
    pyspark_sql = pytest.importorskip("pyspark.sql")
    from kafkasim.sweep import session as S

    started: list[_FakeSession] = []

    def build(master: str | None, *, parallelism: int | None = None, write_class_archive: bool = False
              ) -> _FakeSession:
        assert write_class_archive  # a kept session is stopped by stop_session: it may write the archive
        started.append(_FakeSession(S.resolve_master(master, parallelism)))
        return started[-1]

    active: list[_FakeSession] = []
    monkeypatch.setattr(S, "build_spark_session", build)
    monkeypatch.setattr(S, "remove_spark_log", lambda: None)
    monkeypatch.setattr(S, "_kept", None)
    monkeypatch.setattr(S, "_atexit_registered", True)  # not this test's business: no handler left behind
    monkeypatch.setattr(pyspark_sql.SparkSession, "getActiveSession",
                        classmethod(lambda cls: next((s for s in active if not s.stopped), None)))

    first, new = S.sweep_session("local[2]", None)
    assert new and S.kept_session() is first
    again, new = S.sweep_session(None, 2)  # the same master, said another way
    assert again is first and not new
    other, new = S.sweep_session("local[1]", None)  # another master: the kept one stopped, a new one kept
    assert new and other is not first and first.stopped and S.kept_session() is other
    other.stop()  # the user stopped it (spark.stop()): the next sweep starts a new one
    third, new = S.sweep_session("local[1]", None)
    assert new and third is not other and S.kept_session() is third
    S.stop_session()
    assert third.stopped and S.kept_session() is None
    mine = _FakeSession("local[4]")
    active.append(mine)  # a session the caller made: used as is, never kept, never stopped
    used, new = S.sweep_session("local[2]", None)
    assert used is mine and not new and S.kept_session() is None
    S.stop_session()
    assert not mine.stopped and len(started) == 3
