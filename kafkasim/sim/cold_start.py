"""Work that a thread starts after it has been idle costs more than the same work right after other work: its
code and data have left the core's caches meanwhile (the other JVMs of the machine ran there, or the virtual
core slept and the host ran others), and it runs slower until they are back.

A broker's request handlers, network threads and replica fetchers each pay ``cost_ms * (1 - exp(-(idle -
grace_ms) / ramp_ms))`` on top of their work's cost once ``idle``, how long they had been without work, passes
``grace_ms``: the request handler pool since its last handler went back to the queue with none other at work, the
network threads (one pool per broker) since the last read or send of any of them was due to end, a replica fetcher
since its last append ended. It is CPU work (the cores the threads use count it), and a thread at work pays
nothing more.

On the project's machine (2 cores shared by a controller, three brokers and the load driver; Apache Kafka 4.3.1,
acks=1 at 300 records/s of 1 KiB) a produce's LocalTimeMs p50 was 0.14-0.19 ms when a handler had finished
work less than 0.6 ms before, 0.01 ms more after 0.6-1 ms, 0.03 after 1-1.5 ms, 0.08-0.12 after 2-4 ms and 0.2
after more than 6 ms; a consumer fetch's 0.06-0.07 ms, then 0.13-0.27 ms after 2-6 ms (docs/calibration.md, "Work
after idle"). A consumer fetch's response took its network thread 0.10-0.11 ms to send when the broker's network
threads had read or sent less than 0.3 ms before, 0.17-0.18 after 2-4 ms. At acks=all, linger.ms=5 and 200 records/s,
where the requests come further apart, the leader's handlers spent 0.35-0.40 ms of CPU per request against
0.21-0.24 at the base load, its network threads 0.44-0.51 against 0.31-0.34, the followers' fetchers 0.52-0.61 ms
per fetch response against 0.35-0.39 (the same work, fewer times a second).

Simplification (README, "Simplifications"): one cost, grace and ramp for every kind of thread, and the idle time
of the thread's own pool, not of the core: a core that ran another of the broker's pools meanwhile is as cold as
one that ran another JVM.
"""

from __future__ import annotations

import math


class ColdStart:
    """``cost_ms`` more for work started after a long idle; ``1 - exp(-(idle - grace_ms) / ramp_ms)`` of it after
    ``idle`` ms, nothing within ``grace_ms``."""

    __slots__ = ("cost_ms", "grace_ms", "ramp_ms")

    def __init__(self, cost_ms: float, ramp_ms: float, grace_ms: float = 0.0) -> None:
        if not cost_ms >= 0.0:
            raise ValueError(f"cost_ms must be >= 0, got {cost_ms}")
        if not ramp_ms > 0.0:
            raise ValueError(f"ramp_ms must be > 0, got {ramp_ms}")
        if not grace_ms >= 0.0:
            raise ValueError(f"grace_ms must be >= 0, got {grace_ms}")
        self.cost_ms = cost_ms
        self.grace_ms = grace_ms
        self.ramp_ms = ramp_ms

    def extra(self, idle_ms: float) -> float:
        """The extra work, in ms, of work started after ``idle_ms`` without any (0 within the grace)."""
        cold = idle_ms - self.grace_ms
        if cold <= 0.0:
            return 0.0
        return self.cost_ms * (1.0 - math.exp(-cold / self.ramp_ms))


class PoolClock:
    """When the work of a pool of threads (one broker's network threads) was last due to end: the pool's idle
    time, for `ColdStart`, runs from there."""

    __slots__ = ("due",)

    def __init__(self) -> None:
        self.due = 0.0

    def start(self, cold: ColdStart, now: float, cost: float) -> float:
        """A thread of the pool starts ``cost`` ms of work now: the work's extra (``cold``'s for the pool's idle
        time), the pool's work due to end no sooner than this work's end (``now`` + ``cost`` + that extra)."""
        extra = cold.extra(now - self.due)
        end = now + cost + extra
        if end > self.due:
            self.due = end
        return extra
