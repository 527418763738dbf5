"""The garbage collector's pauses of a real run's JVMs (each node's and the load driver's), from the JVM's own
unified GC log (``-Xlog:gc``, JEP 158).

Every JVM a real run starts is run with the serial collector (kafkasim.real.cluster), whose every collection
stops all of that JVM's threads: a broker's network threads and request handlers, or the driver's producer and
consumer. Such a pause is what kafkasim's stalls (``broker.stalls``, ``clients.stalls``) stand for, so a real
run keeps each JVM's log beside Kafka's own and its pauses in ``run-info.json``: what a calibration's stall
parameters can be checked against.

A line of the log, with the ``timemillis`` decoration (the wall clock in epoch milliseconds, as the run's time
0 is)::

    [1796235019012ms] GC(3) Pause Young (Allocation Failure) 20M->5M(61M) 3.456ms
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kafkasim.record.host_pauses import HostPauses

GC_LOG_PATTERN = "gc-%p.log"
"""A JVM's GC log in its directory: one file per process (``%p`` is its pid), so a restarted broker's second
log does not replace its first."""

_PAUSE = re.compile(r"^\[(\d+)ms\] GC\(\d+\) (Pause [A-Za-z]+)[^\n]*? (\d+(?:\.\d+)?)ms$")


def gc_flag(directory: Path) -> str:
    """The JVM option that writes its GC log into ``directory``: each collection's line, stamped in epoch
    milliseconds."""
    return f"-Xlog:gc:file={directory / GC_LOG_PATTERN}:timemillis"


def gc_logs(directory: Path) -> list[Path]:
    """The GC logs ``gc_flag`` had the JVMs write into ``directory``, oldest process first."""
    return sorted(directory.glob(GC_LOG_PATTERN.replace("%p", "*")), key=lambda p: p.stat().st_mtime)


@dataclass(frozen=True)
class Pause:
    at_ms: float
    """When it ended, in the run's time (ms after its time 0): the JVM stamps a line once the pause is over."""
    ms: float
    kind: str
    """The collection's kind as the JVM names it: "Pause Young", "Pause Full", ..."""

    @property
    def start_ms(self) -> float:
        return self.at_ms - self.ms


def pauses(lines: Iterable[str], t0_ms: float) -> list[Pause]:
    """The pauses in a GC log's ``lines``, in the run's time; lines that are not a pause are skipped."""
    out = []
    for line in lines:
        m = _PAUSE.match(line.rstrip("\n"))
        if m:
            out.append(Pause(float(m.group(1)) - t0_ms, float(m.group(3)), m.group(2)))
    return out


def read_pauses(directory: Path, t0_ms: float) -> list[Pause]:
    """Every pause in the GC logs of ``directory`` (``gc_logs``), in the run's time."""
    return [p for log in gc_logs(directory) for p in pauses(log.read_text().splitlines(), t0_ms)]


def summary(found: Iterable[Pause], start_ms: float, end_ms: float) -> dict[str, float | int | None]:
    """The pauses that began in [start_ms, end_ms) (as a window counts a simulated run's stalls,
    kafkasim.record.window): how many, how often, their total, median and longest (kafkasim.record.host_pauses)."""
    began = np.array([p.ms for p in found if start_ms <= p.start_ms < end_ms], dtype=float)
    return HostPauses("", began, max(end_ms - start_ms, 0.0)).statistics()


def describe(gc: object) -> str | None:
    """One line for the person who made the run: each JVM's pauses after the warm-up, e.g. "the JVMs' garbage
    collection after the warm-up (kafka/<jvm>/gc-*.log): broker-0 25 pauses, 1.9% of its time, median 12.8 ms,
    longest 20.4 ms; driver 2 pauses, ...". None when the run has no GC logs (a run made before they were kept)."""
    jvms = gc.get("jvms") if isinstance(gc, dict) else None
    if not isinstance(jvms, dict) or not jvms:
        return None
    parts = []
    for name, s in jvms.items():
        if not s.get("count"):
            parts.append(f"{name} none")
            continue
        share = s.get("share_of_time") or 0.0
        parts.append(f"{name} {s['count']} pause{'s' if s['count'] != 1 else ''}, {share:.1%} of its time, median "
                     f"{s['p50_ms']:.3g} ms, longest {s['max_ms']:.3g} ms")
    return "the JVMs' garbage collection after the warm-up (kafka/<jvm>/gc-*.log): " + "; ".join(parts)
