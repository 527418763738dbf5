"""`kafkasim sweep` however kafkasim was launched: the venv's console script with a clean environment
(no `uv run`, no activated venv), and a worker failure named by its Python exception."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import kafkasim.sweep.sweep as sweep_module
from kafkasim.sweep.sweep import SweepAbortedError, run_sweep

# What PySpark's PythonException said when the workers started an interpreter without kafkasim.
WORKER_FAILURE = """\
An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", line 4197, in invoke_udf
    func, profiler, deserializer, serializer = read_command(pickleSer, init_info.udf_info)
                                               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/serializers.py", line 483, in loads
    return cloudpickle.loads(obj, encoding=encoding)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ModuleNotFoundError: No module named 'kafkasim'

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:621)
\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(PythonArrowOutput.scala:118)
"""

TINY_SWEEP = "base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 2]\nseeds: [1]\nduration: 2s\n"


def test_a_worker_failure_names_the_python_exception(sweep_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (sweep_dir / "s.yaml").write_text(TINY_SWEEP)

    class WorkerFailed(Exception):
        pass

    def failing_job(*args: Any, **kwargs: Any) -> None:
        raise WorkerFailed(WORKER_FAILURE)

    monkeypatch.setattr(sweep_module, "run_job", failing_job)
    session = SimpleNamespace(conf=SimpleNamespace(set=lambda key, value: None))
    with pytest.raises(SweepAbortedError) as caught:
        run_sweep(sweep_dir / "s.yaml", out=sweep_dir / "out", spark=session)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "a Python worker failed: ModuleNotFoundError: No module named 'kafkasim'" in message
    assert "the workers' Python cannot import kafkasim" in message


def test_a_sweep_spark_could_not_finish_keeps_its_spark_log_and_names_it(
        sweep_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 26, item 8: the JVM's log of the session a sweep starts is deleted when the sweep ends, except
    # when Spark failed: then it is kept under a name of its own, which the error names.
    import tempfile

    import pyspark.sql

    from kafkasim.sweep import session as session_module

    (sweep_dir / "s.yaml").write_text(TINY_SWEEP)
    scratch = sweep_dir / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    stopped = []

    def start_session(*args: Any, **kwargs: Any) -> SimpleNamespace:
        session_module.spark_log_path().write_text("ERROR the JVM's own words\n")
        return SimpleNamespace(conf=SimpleNamespace(set=lambda key, value: None), stop=lambda: stopped.append(1))

    def failing_job(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("lost the executors")

    monkeypatch.setattr(sweep_module, "check_pyspark", lambda: None)
    monkeypatch.setattr(sweep_module, "check_java", lambda: None)
    monkeypatch.setattr(pyspark.sql.SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(session_module, "build_spark_session", start_session)
    monkeypatch.setattr(sweep_module, "run_job", failing_job)
    with pytest.raises(SweepAbortedError) as caught:
        run_sweep(sweep_dir / "s.yaml", out=sweep_dir / "out")
    assert stopped == [1]
    [kept] = list(scratch.iterdir())
    assert kept.name.startswith(f"kafkasim-spark-{os.getpid()}-failed-") and kept.read_text().startswith("ERROR")
    assert f"(Spark log: {kept}; incomplete output left in " in str(caught.value)


@pytest.mark.spark
def test_the_venvs_console_script_sweeps_without_uv_or_an_activated_venv(sweep_dir: Path) -> None:
    script = Path(sys.executable).with_name("kafkasim")
    if not script.is_file():
        pytest.skip(f"no console script next to {sys.executable}")
    java = shutil.which("java")
    if java is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java")
    (sweep_dir / "s.yaml").write_text(TINY_SWEEP)
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    if java is not None:
        path.append(str(Path(java).parent))
    scratch = sweep_dir / "tmp"  # the sweep's temporary directory: what it leaves there is checked below
    scratch.mkdir()
    env = {"HOME": os.environ.get("HOME", "/tmp"), "PATH": os.pathsep.join(path), "LANG": "C.UTF-8",
           "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "TMPDIR": str(scratch)}
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    done = subprocess.run([str(script), "sweep", "s.yaml", "--out", "out", "--parallelism", "1"],
                          capture_output=True, text=True, env=env, cwd=sweep_dir, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "planned 2, succeeded 2, failed 0" in done.stdout
    # Issue 26, item 8: every sweep left kafkasim-spark-<pid>.log behind (the JVM's output).
    assert [p.name for p in scratch.iterdir() if p.name.startswith("kafkasim-spark-")] == []


def test_a_missing_dependency_names_what_ships_it() -> None:
    from kafkasim.sweep.sweep import spark_failure_cause

    # mypy_extensions was missing from the list of what executors need (the pure sources import it).
    failure = Exception(WORKER_FAILURE.replace("No module named 'kafkasim'", "No module named 'pyarrow'"))
    cause = spark_failure_cause(failure)
    assert cause.startswith("a Python worker failed: ModuleNotFoundError: No module named 'pyarrow'")
    assert "cannot import pyarrow: a sweep ships kafkasim's dependencies" in cause and "ship_kafkasim(spark)" in cause
    failure = Exception(WORKER_FAILURE.replace("No module named 'kafkasim'", "No module named 'mypy_extensions'"))
    assert "ship_kafkasim(spark)" in spark_failure_cause(failure)
