"""`kafkasim run --on-kafka` as a user runs it: refused faults, Ctrl-C with the results so far, nothing left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkasim.real import netns
from kafkasim.real.kafka_libs import KafkaLibs
from kafkasim.real.processes import alive
from kafkasim.record.result import RunResult

ROOT = Path(__file__).resolve().parents[2]


def test_a_fault_a_real_cluster_cannot_take_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kafkasim", "run", "scenarios/slow_follower_isr_shrink.yaml",
                           "--on-kafka", "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "faults[0] (slow_disk follower-2)" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
    usage = subprocess.run([sys.executable, "-m", "kafkasim", "run", "scenarios/quickstart.yaml", "--kafka-home",
                            str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "applies only with --on-kafka" in usage.stderr


def test_ctrl_c_writes_the_results_so_far_exits_130_and_leaves_nothing_running(kafka_libs: KafkaLibs,
                                                                                  tmp_path: Path) -> None:
    out = tmp_path / "run"
    log = tmp_path / "stderr.log"
    with open(log, "wb") as sink:
        # Interrupted during a network partition: the hosts' network namespaces go with the JVMs.
        proc = subprocess.Popen([sys.executable, "-m", "kafkasim", "run", "scenarios/follower_partitioned_from_leader.yaml",
                                 "--on-kafka", "--set", "producers[0].rate=100/s", "--set", "faults[0].at=2s",
                                 "--out", str(out)], cwd=ROOT, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            deadline = time.monotonic() + 240
            while "kafkasim: running follower_partitioned_from_leader" not in log.read_text(errors="replace"):
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            time.sleep(4.0)
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
            code = proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text(errors="replace")
    assert code == 130, text
    result = RunResult.load(out)
    assert 0 < result.summary["interrupted_at_ms"] < 30_000
    assert "interrupted" in result.run_info["partial"]
    info = json.loads((out / "run-info.json").read_text())
    assert info["engine"] == "kafka" and info["pids"] and alive(info["pids"]) == []
    assert info["network_hosts"] and netns.ours(proc.pid) == []
    # The machine's CPU over the load, split: the JVMs of the run did work (kafkasim.real.machine_cpu).
    cpu = info["machine_cpu"]
    assert cpu["run"] > 0 and cpu["run"] + cpu["other"] + cpu["idle"] == pytest.approx(1.0, abs=1e-3)
    assert "during the load: " in text
    # Every JVM's collector pauses, from its GC log (kafkasim.real.gc_log), in run-info.json and on the screen.
    assert set(info["gc_pauses"]["jvms"]) == {"controller", "driver", *info["brokers"]}, info["gc_pauses"]
    assert "the JVMs' garbage collection after the warm-up" in text
    assert len(result.requests) and len(result.records)
