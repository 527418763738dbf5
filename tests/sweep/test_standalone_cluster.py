"""A sweep on a real Spark standalone cluster: a master and a worker on 127.0.0.1, started here from PySpark's
own launch classes, run `kafkasim sweep --master spark://127.0.0.1:PORT`; its results equal a local sweep's.

The executors' Python has nothing installed: it runs with `-S`, so neither the editable install's .pth file
nor any site-packages is read, and it cannot import kafkasim, pyarrow, pandas or pydantic. The sweep works
only because kafkasim ships itself and its dependencies to the executors (kafkasim.sweep.shipping).

Both JVMs are always stopped, even when the test fails; ports are chosen free at run time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow.dataset as ds
import pytest

from kafkasim.sweep.session import _LOG4J_CONFIG
from kafkasim.sweep.sweep import run_sweep

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SWEEP = "base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 4]\nseeds: [1, 2]\nduration: 2s\n"


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _wait_for_worker(master_ui: int, processes: list[subprocess.Popen[bytes]], logs: list[Path],
                     timeout: float) -> None:
    """Until the master's status page (its web UI's /json) lists one alive worker. While the master starts, its
    UI can answer /json/ with the HTML of its root page (the JSON handler not yet attached): not ready yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and all(p.poll() is None for p in processes):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{master_ui}/json/", timeout=2) as response:
                if json.load(response).get("aliveworkers", 0) >= 1:
                    return
        except (OSError, ValueError):  # not listening yet, or not JSON yet (json.JSONDecodeError)
            pass
        time.sleep(0.3)
    tails = "\n".join(f"{log}:\n{log.read_text(errors='replace')[-2000:]}" for log in logs)
    raise AssertionError(f"no worker registered with the master after {timeout} s\n{tails}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group this test started (the worker's executors are in it), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[str]:
    """A standalone master and one worker (1 core, 1 GiB) on 127.0.0.1; yields the master URL."""
    import shutil

    import pyspark

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java")
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else "java"
    spark_home = Path(pyspark.__file__).parent
    master_port, master_ui, worker_port, worker_ui = _free_ports(4)
    # No PYTHONPATH of the test's for the executors: only what the sweep ships may reach their Python.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
           "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
           # What bin/load-spark-env.sh sets: the worker's launcher needs it to build the executors' command.
           "SPARK_SCALA_VERSION": "2.13"}
    base = [java, "-Xmx256m", "-cp", f"{spark_home / 'jars'}/*", f"-Dlog4j2.configurationFile=file:{_LOG4J_CONFIG}"]
    master_url = f"spark://127.0.0.1:{master_port}"
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with master_log.open("wb") as out:
            processes.append(subprocess.Popen(
                [*base, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port),
                 "--webui-port", str(master_ui)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        with worker_log.open("wb") as out:
            processes.append(subprocess.Popen(
                [*base, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                 "--port", str(worker_port), "--webui-port", str(worker_ui), "--cores", "1", "--memory", "1g",
                 "--work-dir", str(tmp_path / "work")],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for_worker(master_ui, processes, [master_log, worker_log], timeout=90)
        yield master_url
    finally:
        for process in reversed(processes):
            _stop(process)


def _bare_python(directory: Path) -> Path:
    """An interpreter for the executors with nothing installed: this Python without its site-packages."""
    wrapper = directory / "bare-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    for module in ("kafkasim", "pyarrow", "pandas", "numpy", "pydantic", "simpy", "yaml"):
        probe = subprocess.run([str(wrapper), "-c", f"import {module}"], capture_output=True, text=True,
                               cwd=directory, env={"PATH": os.environ["PATH"]})
        assert f"No module named '{module}'" in probe.stderr, (module, probe.stderr)
    return wrapper


def _rows(out: Path, table: str) -> pd.DataFrame:
    frame = ds.dataset(out / table, format="parquet", partitioning="hive").to_table().to_pandas()
    frame["variant_id"] = frame["variant_id"].astype(str)
    return frame.sort_values(list(frame.columns), ignore_index=True)


def test_a_sweep_on_a_standalone_cluster_equals_a_local_sweep(cluster: str, spark: SparkSession,
                                                               tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(Path(__file__).with_name("base.yaml").read_text())
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    python = _bare_python(tmp_path)
    script = Path(sys.executable).with_name("kafkasim")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "kafkasim"]
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
           "PYSPARK_PYTHON": str(python), "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run([*command, "sweep", "sweep.yaml", "--master", cluster, "--out", "on-cluster"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"4 runs on {cluster}" in done.stdout and "planned 4, succeeded 4, failed 0" in done.stdout

    local = run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "local", spark=spark)
    assert local.failed == 0
    on_cluster = tmp_path / "on-cluster"
    for name in ("per_seed.parquet", "per_variant.parquet", "runs.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(on_cluster / name), pd.read_parquet(tmp_path / "local" / name),
                                      check_exact=True)
    for table in ("requests", "records"):
        pd.testing.assert_frame_equal(_rows(on_cluster, table), _rows(tmp_path / "local", table), check_exact=True)


def test_the_shipped_zip_holds_the_package_sources_and_is_reused(tmp_path: Path) -> None:
    import zipfile

    from kafkasim.sweep.shipping import kafkasim_zip

    first = kafkasim_zip(tmp_path)
    names = zipfile.ZipFile(first).namelist()
    assert "kafkasim/__init__.py" in names and "kafkasim/sweep/task.py" in names
    assert "kafkasim/sweep/log4j2.properties" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".so"))]
    assert kafkasim_zip(tmp_path) == first and len(list(tmp_path.iterdir())) == 1


def test_the_dependencies_archive_holds_what_a_task_imports_and_is_reused(tmp_path: Path) -> None:
    import tarfile

    from kafkasim.sweep.shipping import EXECUTOR_DEPENDENCIES, dependencies_archive, dependency_distributions

    names = {d.metadata["Name"].lower().replace("_", "-") for d in dependency_distributions()}
    # Every root, and what they require here: pandas needs numpy and python-dateutil, pydantic its core.
    assert {"simpy", "pydantic", "pydantic-core", "pyyaml", "hdrhistogram", "pyarrow", "pandas", "numpy",
            "mypy-extensions", "python-dateutil"} <= names
    assert set(EXECUTOR_DEPENDENCIES) <= names
    assert not names & {"kafkasim", "pyspark", "matplotlib", "rich", "typer"}  # not what a task imports
    first = dependencies_archive(tmp_path)
    with tarfile.open(first) as archive:
        members = archive.getnames()
    assert {"numpy/__init__.py", "pandas/__init__.py", "pyarrow/__init__.py", "simpy/__init__.py",
            "yaml/__init__.py", "mypy_extensions.py"} <= set(members)
    assert any(n.startswith("pyarrow/lib.") and n.endswith(".so") for n in members)
    assert not [n for n in members if n.startswith(("/", "..")) or "__pycache__" in n]
    assert dependencies_archive(tmp_path) == first and len(list(tmp_path.iterdir())) == 1


def test_a_dependency_without_a_file_list_is_named_not_shipped_empty() -> None:
    from types import SimpleNamespace

    from kafkasim.sweep.shipping import _archive_members

    unlisted = SimpleNamespace(files=None, metadata={"Name": "somedep"})
    with pytest.raises(RuntimeError, match="cannot ship somedep to the executors: its installation lists no files"):
        _archive_members([unlisted])  # type: ignore[list-item]


def test_waiting_for_the_worker_takes_a_starting_masters_html_answer_for_not_ready(tmp_path: Path) -> None:
    """CI once failed here: while the master started, its UI answered /json/ with its root page's HTML, and the
    JSON decoder's error ended the wait."""
    import http.server
    import threading

    answers = [b"<!DOCTYPE html><html></html>", b"<!DOCTYPE html><html></html>", b'{"aliveworkers": 0}',
               b'{"aliveworkers": 1}']
    asked: list[str] = []

    class Master(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            asked.append(self.path)
            body = answers[min(len(asked), len(answers)) - 1]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.HTTPServer(("127.0.0.1", 0), Master)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    alive = subprocess.Popen(["sleep", "60"], start_new_session=True)  # stands for the master's JVM
    try:
        _wait_for_worker(server.server_address[1], [alive], [], timeout=20)
    finally:
        alive.kill()
        alive.wait()
        server.shutdown()
        server.server_close()
    assert asked == ["/json/"] * 4
