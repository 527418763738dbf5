"""kafkasim.real.process_cpu: the cores each of a real run's processes used, by kind of thread."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kafkasim.real.process_cpu import (
    SMALL_CORES,
    broker_cores,
    cores_used,
    describe,
    java_thread_names,
    sample,
    thread_kind,
    thread_times,
)
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


THREAD_PRINT = '''2026-12-04 12:40:01
Full thread dump OpenJDK 64-Bit Server VM (17.0.13+11-Debian-2 mixed mode, sharing):

"data-plane-kafka-request-handler-0" #61 daemon prio=5 os_prio=0 cpu=1931.50ms elapsed=52.10s tid=0x00007f nid=0x1f40 waiting on condition  [0x00007f]
   java.lang.Thread.State: TIMED_WAITING (parking)

"data-plane-kafka-network-thread-0-ListenerName(PLAINTEXT)-PLAINTEXT-1" #55 prio=5 os_prio=0 cpu=2710.02ms elapsed=52.30s tid=0x00007e nid=0x1f3b runnable  [0x00007e]

"ReplicaFetcherThread-0-0" #70 prio=5 os_prio=0 cpu=10.00ms elapsed=50.00s tid=0x00007d nid=0x1f50 runnable

"GC Thread#0" os_prio=0 cpu=12.00ms elapsed=53.00s tid=0x00007c nid=0x1f01 runnable
'''


def test_a_jvms_thread_print_names_its_linux_threads() -> None:
    assert java_thread_names(THREAD_PRINT) == {
        0x1f40: "data-plane-kafka-request-handler-0",
        0x1f3b: "data-plane-kafka-network-thread-0-ListenerName(PLAINTEXT)-PLAINTEXT-1",
        0x1f50: "ReplicaFetcherThread-0-0",
        0x1f01: "GC Thread#0",
    }


def test_kafkas_threads_named_by_the_jvm_are_kinds_of_their_own() -> None:
    """Cut to 15 characters, a request handler and a network thread are one kind; named, they are apart."""
    before = {"broker-0": (10, {0x1f40: ("data-plane-kafk", 1.0), 0x1f3b: ("data-plane-kafk", 1.0),
                                0x1f01: ("GC Thread", 0.0)})}
    after = {"broker-0": (10, {0x1f40: ("data-plane-kafk", 3.0), 0x1f3b: ("data-plane-kafk", 4.0),
                               0x1f01: ("GC Thread", 0.5)})}
    cut = cores_used(before, after, 10.0)
    assert cut == {"broker-0": {"total": 0.55, "data-plane-kafk": 0.5, "GC Thread": 0.05}}
    assert broker_cores(cut) == {"broker-0": {"data plane": 0.5, "replica fetchers": 0.0}}
    named = cores_used(before, after, 10.0, names={"broker-0": java_thread_names(THREAD_PRINT)})
    assert named == {"broker-0": {"total": 0.55, "network threads": 0.3, "request handlers": 0.2,
                                  "GC Thread": 0.05}}
    follower = {"broker-1": {"total": 0.08, "replica fetchers": 0.065}}
    assert broker_cores({**named, **follower}) == {
        "broker-0": {"request handlers": 0.2, "network threads": 0.3, "data plane": 0.5, "replica fetchers": 0.0},
        "broker-1": {"request handlers": 0.0, "network threads": 0.0, "data plane": 0.0, "replica fetchers": 0.065},
    }
    # broker-2's jcmd failed: its data-plane threads stay together, and the split is not claimed for it.
    unnamed = {"broker-2": {"total": 0.5, "data-plane-kafk": 0.45}}
    assert broker_cores({**named, **unnamed})["broker-2"] == {"data plane": 0.45, "replica fetchers": 0.0}
    assert broker_cores({"controller": {"total": 0.03}}) is None
    assert broker_cores(None) is None
