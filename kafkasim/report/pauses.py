"""The stop-the-world pauses of a run's hosts, for `kafkasim compare`: a simulated run's stalls (its
stalls.parquet: the scenario's `broker.stalls`, `machine_stalls`, `clients_stalls` and the clients' `stalls`,
kafkasim.run.stalls) and a real run's garbage collections (each JVM's GC log, kept in ``kafka/<jvm>/``:
kafkasim.real.gc_log).

The stalls stand for the collections, so the two are read alike: the pauses that began inside the run's window
(the compared window, else from the warm-up's end to the run's end), per host, with how often they came and
what share of the window they took. A simulated host is a broker, a client, ``machine`` (every broker at
once) or ``clients`` (every client at once); a real one is a JVM: ``controller``, ``broker-<id>``, or ``driver``
(every client of the run: a simulated ``clients`` stands for it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kafkasim.real import gc_log
from kafkasim.record.host_pauses import HostPauses
from kafkasim.record.result import KAFKA_LOGS_DIR, RunResult
from kafkasim.report.frames import natural_key, warmup_ms


def window_of(result: RunResult) -> tuple[float, float]:
    """The run's window in its own time: the compared window (`kafkasim compare --from/--to`), else from the
    warm-up's end to the run's end."""
    summary = result.summary
    window = summary.get("window")
    if isinstance(window, dict) and window.get("from_ms") is not None:
        return float(window["from_ms"]), float(window["to_ms"])
    end = summary.get("interrupted_at_ms", summary.get("simulated_duration_ms"))
    return warmup_ms(summary), float(end) if end is not None else float("inf")


def run_pauses(result: RunResult, directory: Path) -> list[HostPauses] | None:
    """Each host's pauses that began in the run's window; None when the run kept none to read (a simulated run
    without stalls, a real run made before its GC logs were kept, a request log)."""
    start, end = window_of(result)
    span = max(end - start, 0.0)
    if result.run_info.get("engine") == "kafka":
        logs = directory / KAFKA_LOGS_DIR
        t0 = result.run_info.get("epoch_ms_at_0")
        jvms = [p for p in logs.iterdir() if p.is_dir() and gc_log.gc_logs(p)] if logs.is_dir() else []
        jvms.sort(key=lambda p: natural_key(p.name))  # broker-2 before broker-10
        if t0 is None or not jvms:
            return None
        out = []
        for jvm in jvms:
            found = gc_log.read_pauses(jvm, t0)
            out.append(HostPauses(jvm.name, np.array([p.ms for p in found if start <= p.start_ms < end], dtype=float),
                                  span))
        return out
    stalls = result.stalls
    if stalls is None:
        return None
    began = stalls["start_ms"].to_numpy(dtype=float)
    inside = (began >= start) & (began < end)
    hosts = stalls["host"].astype(str).to_numpy()
    durations = stalls["duration_ms"].to_numpy(dtype=float)
    return [HostPauses(host, durations[inside & (hosts == host)], span) for host in sorted(set(hosts), key=natural_key)]
