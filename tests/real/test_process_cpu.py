"""kafkasim.real.process_cpu: the cores each of a real run's processes used, by kind of thread."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kafkasim.real.process_cpu import SMALL_CORES, cores_used, describe, sample, thread_kind, thread_times
from kafkasim.real.processes import Processes, stop_process

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")


def test_a_threads_kind_is_its_name_without_its_numbering() -> None:
    assert thread_kind("GC Thread#3") == "GC Thread"
    assert thread_kind("ReplicaFetcherT") == "ReplicaFetcherT"
    assert thread_kind("data-plane-kafk") == "data-plane-kafk"
    assert thread_kind("kafka-scheduler-7") == "kafka-scheduler"
    assert thread_kind("C2 CompilerThre") == "C2 CompilerThre"
    assert thread_kind("1234") == "(numbered)"


def test_cores_are_each_kinds_growth_over_the_time_between_the_samples() -> None:
    before = {"broker-0": (10, {1: ("GC Thread", 1.0), 2: ("GC Thread", 2.0), 3: ("data-plane-kafk", 5.0)})}
    # Over 10 s: the GC threads grew 0.5 + 0.5 s, the handler 3 s, a new thread 0.02 s (a tiny kind).
    after = {"broker-0": (10, {1: ("GC Thread", 1.5), 2: ("GC Thread", 2.5), 3: ("data-plane-kafk", 8.0),
                               4: ("kafka-scheduler", 0.02)})}
    used = cores_used(before, after, 10.0)
    assert used == {"broker-0": {"total": 0.402, "data-plane-kafk": 0.3, "GC Thread": 0.1,
                                 "other threads": 0.002}}
    assert SMALL_CORES > 0.002
    assert describe(used) == "cores used over the load: broker-0 0.4 (data-plane-kafk 0.3, GC Thread 0.1)"


def test_a_process_gone_or_started_again_between_the_samples_is_left_out() -> None:
    before = {"broker-1": (11, {1: ("x", 1.0)}), "broker-2": (12, {1: ("x", 1.0)})}
    after = {"broker-1": (21, {1: ("x", 9.0)})}  # broker-1 restarted (another pid), broker-2 crashed
    assert cores_used(before, after, 1.0) is None
    assert cores_used(before, before, 0.0) is None


def test_a_live_processs_busy_thread_is_counted_under_its_name(tmp_path: Path) -> None:
    code = ("import threading, time\n"
            "def spin():\n"
            "    end = time.thread_time() + 0.6\n"
            "    while time.thread_time() < end: pass\n"
            "    time.sleep(30)\n"
            "t = threading.Thread(target=spin, name='Spinner-1'); t.start()\n"
            "import ctypes, ctypes.util\n"
            "libc = ctypes.CDLL(ctypes.util.find_library('c'))\n"
            "libc.pthread_setname_np(ctypes.c_ulong(t.ident), b'Spinner-1')\n"
            "t.join()\n")
    with Processes() as procs:
        proc = procs.start("spinner", [sys.executable, "-c", code], tmp_path / "out.log")
        before = sample(procs.running_by_name)
        started = time.monotonic()
        assert before["spinner"][0] == proc.pid
        time.sleep(1.5)
        used = cores_used(before, sample(procs.running_by_name), time.monotonic() - started)
        assert used is not None
        # Its spinning thread burned about 0.6 s of CPU in the 1.5 s (less if it had begun before the first sample).
        assert 0.1 < used["spinner"]["Spinner"] <= used["spinner"]["total"] < 0.7
        stop_process(proc.pid, proc.popen, 5.0, kill_first=True)
    assert thread_times(proc.pid) is None  # gone: nothing to read
