"""The machine's CPU while a real run's load ran: the share the run's own processes used, the share other work
on the machine used, and the share the hypervisor took (steal time).

A real run's latencies are the machine's as much as Kafka's: on 2 cores shared by a controller, three brokers
and the load driver, a thread waits for a core as often as it waits for anything in Kafka. Another process's
work, or a busy host under a virtual machine (its steal time), lengthens those waits: a produce's p50 was
1.7-10.1 ms in three runs of one configuration one afternoon, 1.06-1.45 ms that morning (docs/calibration.md,
"The held-out check"). The shares say which kind of run a result came from.

Linux only (``/proc/stat`` and ``/proc/<pid>/stat``); elsewhere there is no sample and the run says nothing.
The run's own CPU is this process's, its children's that exited and were waited for (a crashed broker,
``os.times``), and the live children's (``/proc/<pid>/stat``: utime and stime, every thread of a JVM). Each
share is of the machine's whole capacity over the load, every core counted: run 0.5, other 0.1 and idle 0.4
on 2 cores mean the run kept one core busy, other work a fifth of a core, and the rest was idle.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# From this share of the machine taken by other work and steal together (as printed, whole percents), a run says
# its latencies carry them.
NOTABLE_SHARE = 0.1


@dataclass(frozen=True)
class CpuSample:
    """The machine's CPU time so far (``/proc/stat``'s first line, in clock ticks over every core) and the run's
    own (CPU seconds)."""

    busy: int
    """user + nice + system + irq + softirq (a guest's time is inside user)."""
    idle: int
    """idle + iowait."""
    steal: int
    """Time the hypervisor gave another virtual machine while this one had work."""
    own_s: float


def stat_seconds(stat: str) -> float | None:
    """utime + stime, in seconds, of a ``/proc/<pid>/stat`` (a whole process: every thread) or
    ``/proc/<pid>/task/<tid>/stat`` (one thread); None if the text is not one."""
    try:
        fields = stat.rsplit(")", 1)[1].split()
        # Fields after the command's closing parenthesis start at the state (field 3): utime is 14, stime 15.
        return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S
    except (IndexError, ValueError):
        return None


def _process_seconds(pid: int) -> float:
    """utime + stime of a live (or not yet waited for) process, every thread; 0 if it is gone."""
    try:
        seconds = stat_seconds(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return 0.0
    return 0.0 if seconds is None else seconds


def cpu_sample(pids: Sequence[int]) -> CpuSample | None:
    """The machine's CPU and the run's own now (``pids``: the run's processes, children of this one); None
    where ``/proc/stat`` cannot be read."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:9]] + [0] * max(0, 9 - len(first))
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    own += sum(_process_seconds(pid) for pid in pids)
    return CpuSample(user + nice + system + irq + softirq, idle + iowait, steal, own)


def cpu_shares(before: CpuSample | None, after: CpuSample | None) -> dict[str, float] | None:
    """The shares of the machine's capacity between two samples: ``run`` (the run's own processes), ``other``
    (everything else that ran) and ``idle``, which add up to 1, and ``steal``, the part of ``run`` and ``other``
    the hypervisor took. A process's CPU time (``/proc/<pid>/stat``) counts the time its virtual core was
    stolen, while ``/proc/stat`` counts that time as steal, not as busy: measured here, a run's processes
    were given 1282 ticks while the machine was busy for 1229 and stolen from for 104. So the run's and the
    other work's shares both hold their steal. None without both samples or without time between them."""
    if before is None or after is None:
        return None
    busy, idle, steal = after.busy - before.busy, after.idle - before.idle, after.steal - before.steal
    total = busy + idle + steal
    if total <= 0:
        return None
    working = (busy + steal) / total
    # The run's own CPU and the machine's are read at slightly different instants: capped at what ran.
    run = min(max(0.0, (after.own_s - before.own_s) * _TICKS_PER_S / total), working)
    shares = {"run": run, "other": working - run, "idle": idle / total, "steal": steal / total}
    return {name: round(share, 4) for name, share in shares.items()}


def foreign_share(shares: object) -> float | None:
    """The share of the machine's cores that a run's ``machine_cpu`` says went to other work and the hypervisor's
    steal together (what `shared_machine` and the calibration's quiet runs, kafkasim.calibrate.quiet_runs, judge
    a run by); None without the figures (a simulated run, a real run made before they were kept)."""
    if not isinstance(shares, dict) or not all(isinstance(shares.get(k), int | float) for k in ("other", "steal")):
        return None
    return float(shares["other"]) + float(shares["steal"])


def shared_machine(shares: object) -> str | None:
    """What a run's ``machine_cpu`` says when other work and steal took ``NOTABLE_SHARE`` of the cores or more,
    e.g. "other work took 12% of the machine's cores during the load and the hypervisor 8% (steal)"; None for a
    quieter run, or one without the figures (a simulated run, a real run made before they were kept)."""
    foreign = foreign_share(shares)
    if foreign is None or round(100 * foreign) < round(100 * NOTABLE_SHARE):
        return None
    assert isinstance(shares, dict)
    other, steal = float(shares["other"]), float(shares["steal"])
    return f"other work took {other:.0%} of the machine's cores during the load and the hypervisor {steal:.0%} (steal)"


def describe(shares: dict[str, float], cpus: int | None) -> str:
    """One line for the person who made the run, e.g. "the machine's 2 cores during the load: 61% this run, 2%
    other work, 37% idle; the hypervisor took 5% of them (steal)"."""
    cores = f"{cpus} cores" if cpus else "cores"
    text = (f"the machine's {cores} during the load: {shares['run']:.0%} this run, {shares['other']:.0%} other "
            f"work, {shares['idle']:.0%} idle; the hypervisor took {shares['steal']:.0%} of them (steal)")
    if shared_machine(shares) is not None:
        text += ("; the latencies carry the other work's and the hypervisor's share (a quieter machine measures "
                 "Kafka alone)")
    return text
