"""Where a real run's CPU went: each of the run's processes (the controller, each broker, the load driver) and,
within one, each kind of thread, as cores used over the load.

kafkasim.real.machine_cpu says how much of the machine the run took; this says which JVM and which of its threads
took it, the measurement a model of the brokers' costs is held to. A thread's kind is its name as Linux keeps it
(``/proc/<pid>/task/<tid>/comm``, at most 15 characters: HotSpot cuts a longer Java name there) without the
numbers it ends in: ``GC Thread#0`` and ``GC Thread#1`` are one kind, ``GC Thread``. Kafka's
request handlers and network threads both begin ``data-plane-kafka-``, so on a JVM that cuts their names they
count as one kind (``data-plane-kafk``) -- unless the JVM's own names are known: after the load, ``jcmd <pid>
Thread.print`` lists every Java thread's full name with its Linux thread id (``nid``), and Kafka's request
handlers (``data-plane-kafka-request-handler-*``), network threads (``data-plane-kafka-network-thread-*``) and
replica fetchers (``ReplicaFetcherThread-*``) are then each a kind of their own (`KAFKA_THREADS`).

Only processes alive at both samples are counted (a broker that crashed or was started during the load is left
out: its threads' times before the crash are gone with it); a thread that ended between the samples is missing
from its kind, one that started counts from zero. Linux only (``/proc``); elsewhere nothing is sampled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from kafkasim.real.machine_cpu import stat_seconds
from kafkasim.record.summary import (
    BROKER_PREFIX,
    CORES_DATA_PLANE,
    CORES_NETWORK_THREADS,
    CORES_REPLICA_FETCHERS,
    CORES_REQUEST_HANDLERS,
)

# Kinds of thread under this share of one core over the load are summed into "other threads".
SMALL_CORES = 0.005
# Kafka's thread names as a JVM on Linux keeps them (15 characters).
DATA_PLANE_THREADS = "data-plane-kafk"
FETCHER_THREADS = "ReplicaFetcherT"
KAFKA_THREADS = (("data-plane-kafka-request-handler-", CORES_REQUEST_HANDLERS),
                 ("data-plane-kafka-network-thread-", CORES_NETWORK_THREADS),
                 ("ReplicaFetcherThread-", CORES_REPLICA_FETCHERS))
"""A Java thread name's beginning -> its kind (KafkaRequestHandler, SocketServer's Processor,
ReplicaFetcherThread's names)."""
_THREAD_LINE = re.compile(r'^"(.*)" .*\bnid=(0x[0-9a-fA-F]+)', re.MULTILINE)
_NUMBERING = re.compile(r"([-_ #]*\d+)+$")

ThreadTimes = dict[int, tuple[str, float]]
"""A process's threads: thread id -> (kind, CPU seconds so far)."""


def thread_kind(comm: str) -> str:
    """The kind of a thread named ``comm``: its name without the numbers it ends in and their separators
    (``GC Thread#3`` -> ``GC Thread``, ``kafka-scheduler-7`` -> ``kafka-scheduler``, ``C2 CompilerThre`` stays)."""
    return _NUMBERING.sub("", comm) or "(numbered)"


def thread_times(pid: int) -> ThreadTimes | None:
    """Every thread of the live process ``pid`` with its kind and CPU seconds; None if it is gone."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        tids = [int(t.name) for t in tasks.iterdir() if t.name.isdigit()]
    except OSError:
        return None
    times: ThreadTimes = {}
    for tid in tids:
        try:
            comm = (tasks / str(tid) / "comm").read_text().strip()
            seconds = stat_seconds((tasks / str(tid) / "stat").read_text())
        except OSError:
            continue  # the thread ended while being read
        if seconds is not None:
            times[tid] = (thread_kind(comm), seconds)
    return times


Sample = dict[str, tuple[int, ThreadTimes]]
"""Each process's name -> (its pid, its threads)."""


def sample(named: Mapping[str, int]) -> Sample:
    """``named``: process name -> pid. Each live one's threads now."""
    taken: Sample = {}
    for name, pid in named.items():
        if (times := thread_times(pid)) is not None:
            taken[name] = (pid, times)
    return taken


def java_thread_names(thread_print: str) -> dict[int, str]:
    """Linux thread id -> Java thread name, from ``jcmd <pid> Thread.print``'s output (each thread's line:
    ``"name" #12 daemon prio=5 ... nid=0x1f3e runnable``)."""
    return {int(nid, 16): name for name, nid in _THREAD_LINE.findall(thread_print)}


def _kind(tid: int, kind: str, names: Mapping[int, str] | None) -> str:
    name = names.get(tid) if names is not None else None
    if name is not None:
        for prefix, known in KAFKA_THREADS:
            if name.startswith(prefix):
                return known
    return kind


def cores_used(before: Sample, after: Sample, seconds: float,
               names: Mapping[str, Mapping[int, str]] | None = None) -> dict[str, dict[str, float]] | None:
    """Cores each process used between two samples ``seconds`` apart: ``{name: {"total": cores, kind: cores,
    ..., "other threads": cores}}``, the kinds largest first, each under `SMALL_CORES` summed into "other
    threads". ``names``: a process's Java thread names by thread id (`java_thread_names`), which name Kafka's
    threads' kinds (`KAFKA_THREADS`). Only a process in both samples under the same pid (a restarted broker is
    another process); None without time between the samples or without a process in both."""
    if seconds <= 0:
        return None
    used: dict[str, dict[str, float]] = {}
    for name, (pid, then) in before.items():
        later = after.get(name)
        if later is None or later[0] != pid:
            continue
        now = later[1]
        kinds: dict[str, float] = {}
        known = names.get(name) if names is not None else None
        for tid, (comm, spent) in now.items():
            earlier = then.get(tid)
            grown = spent - (earlier[1] if earlier is not None and earlier[0] == comm else 0.0)
            kind = _kind(tid, comm, known)
            kinds[kind] = kinds.get(kind, 0.0) + max(0.0, grown)
        total = sum(kinds.values())
        shown: dict[str, float] = {"total": round(total / seconds, 4)}
        small = 0.0
        for kind, spent in sorted(kinds.items(), key=lambda item: (-item[1], item[0])):
            if spent / seconds < SMALL_CORES:
                small += spent
            else:
                shown[kind] = round(spent / seconds, 4)
        if small > 0:
            shown["other threads"] = round(small / seconds, 4)
        used[name] = shown
    return used or None


def describe(used: Mapping[str, Mapping[str, float]], largest: int = 3) -> str:
    """One line: each process's cores and its ``largest`` kinds of thread, e.g. "cores used over the load:
    broker-0 0.41 (data-plane-kafk 0.22, GC Thread 0.05, C2 CompilerThre 0.04), driver 0.3 (...)"."""
    parts = []
    for name, kinds in used.items():
        top = [f"{kind} {cores:.2g}" for kind, cores in kinds.items() if kind not in ("total", "other threads")]
        parts.append(f"{name} {kinds.get('total', 0.0):.2g}" + (f" ({', '.join(top[:largest])})" if top else ""))
    return "cores used over the load: " + ", ".join(parts)


def broker_cores(used: Mapping[str, Mapping[str, float]] | None) -> dict[str, dict[str, float]] | None:
    """The summary's ``per_broker`` ``cores`` of a real run, as kafkasim.run.cores has them for a simulated one:
    each broker's data-plane threads (request handlers and network threads; each apart too when the JVM's
    thread names were read) and replica fetchers; a kind too small to be shown counts 0."""
    if not used:
        return None
    cores: dict[str, dict[str, float]] = {}
    # The JVMs' thread names were read if any broker's request handlers or network threads are named.
    named = any(CORES_REQUEST_HANDLERS in kinds or CORES_NETWORK_THREADS in kinds for kinds in used.values())
    for name, kinds in used.items():
        if not name.startswith(BROKER_PREFIX):
            continue
        # A broker whose own names were not read (its jcmd failed) shows its data-plane threads together: the
        # split is unknown for it, and the summary says so by leaving it out.
        if named and DATA_PLANE_THREADS not in kinds:
            handlers = float(kinds.get(CORES_REQUEST_HANDLERS, 0.0))
            network = float(kinds.get(CORES_NETWORK_THREADS, 0.0))
            cores[name] = {CORES_REQUEST_HANDLERS: handlers, CORES_NETWORK_THREADS: network,
                           CORES_DATA_PLANE: round(handlers + network, 4)}
        else:
            cores[name] = {CORES_DATA_PLANE: float(kinds.get(DATA_PLANE_THREADS, 0.0))}
        cores[name][CORES_REPLICA_FETCHERS] = float(kinds.get(CORES_REPLICA_FETCHERS, kinds.get(FETCHER_THREADS, 0.0)))
    return cores or None


def jcmd_binary(java: str) -> str | None:
    """``jcmd`` beside the run's ``java`` (the same JDK), or None."""
    beside = Path(java).resolve().with_name("jcmd")
    return str(beside) if beside.is_file() else None
