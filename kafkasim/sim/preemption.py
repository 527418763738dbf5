"""A broker thread's waits for a core in the middle of its work, on a machine whose cores other threads share
(a cluster on one host, as a local test cluster is): ``machine_preemption``.

Linux's scheduler (CFS) lets a runnable thread that has waited take a core from one that runs: a thread that
works ``d`` ms is interrupted now and then and waits, each time, for another thread's turn. Here the
interruptions of a thread's work come as a Poisson process of ``rate`` per ms of its work -- the longer the work,
the likelier it waits -- and each lasts a draw of ``wait``. The waits hold the thread as its work does: a request
handler's service time and a network thread's read or send grow by them (their requests' LocalTimeMs,
ResponseSendTimeMs).

On the project's machine (2 cores shared by a controller, three brokers and the clients; Apache Kafka 4.3.1) a
produce's LocalTimeMs (a handler's work of ~0.16 ms) was above 0.4 ms one time in twenty, a consumer's fetch's
(~0.05 ms) one time in seventy (the medians of three runs): a wait that comes as often for short work as for long (a
mixture of a body and a tail, the earlier model) gave both the same tail (docs/calibration.md, "What is left out").

With ``per_running_thread`` (``machine_preemption.per_running_thread``) the rate grows with the other threads of
the machine running when the work starts (kafkasim.sim.machine_load's count: the brokers' request handlers,
network threads and replica fetchers at work): ``rate * (1 + per_running_thread * others)``. On the project's
machine a consumer fetch taken when no broker thread ran had a LocalTimeMs above 0.4 ms 0.6-1.1% of the time, one
taken while one ran 3.3-4.4% (each of three runs; docs/calibration.md, "What is left out").

Simplification (README, "Simplifications"): the rate is set when the work starts (the threads that start or stop
during it do not change it), and a wait is drawn on its own (the thread that takes the core is not simulated).
With the host's cores modelled (``cores``, kafkasim.sim.host_cpu) a wait comes after the work's time on its core,
off it.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kafkasim.sim.machine_load import MachineLoad


class Preemption:
    """One broker's draws: ``rate`` interruptions per ms of a thread's work, each a ``wait`` (ms) long; with
    ``load``, ``1 + per_running_thread`` times as many for each other thread of the machine running."""

    __slots__ = ("rate", "_wait", "_rng", "_load", "_per_running_thread")

    def __init__(self, rate: float, wait: Callable[[], float], rng: random.Random, load: MachineLoad | None = None,
                 per_running_thread: float = 0.0) -> None:
        if not rate > 0.0:
            raise ValueError(f"rate must be > 0 per ms of work, got {rate}")
        if not per_running_thread >= 0.0:
            raise ValueError(f"per_running_thread must be >= 0, got {per_running_thread}")
        if per_running_thread > 0.0 and load is None:
            raise ValueError("per_running_thread needs the machine's load (the threads it counts)")
        self.rate = rate
        self._wait = wait
        self._rng = rng
        # None unless the rate grows with the machine's running threads: no count taken per piece of work.
        self._load = load if per_running_thread > 0.0 else None
        self._per_running_thread = per_running_thread

    def waits(self, work_ms: float) -> float:
        """How long a thread that works ``work_ms`` waits for a core meanwhile (0 most of the time): one draw of
        the interruptions' process, and one of ``wait`` for each interruption that falls within the work."""
        if work_ms <= 0.0:
            return 0.0
        rate = self.rate
        load = self._load
        if load is not None:
            # The thread doing the work is one of the running threads (a handler that took its request, a
            # network thread reading or sending): the others are the rest.
            others = load.running() - 1
            if others > 0:
                rate *= 1.0 + self._per_running_thread * others
        rng = self._rng
        total = 0.0
        at = rng.expovariate(rate)
        while at < work_ms:
            wait = self._wait()
            if wait > 0.0:
                total += wait
            at += rng.expovariate(rate)
        return total
