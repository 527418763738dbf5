"""The threads running on one machine that every broker of the run shares (a cluster on one host, as a local
test cluster is), as seen by a thread that is woken: the more of them run, the longer it waits for a core.

A broker thread that waited (a request handler in ``RequestChannel.receiveRequest``, a network thread in
``Selector.poll``) and is signalled for work waits, before it runs, the host's scheduling latency
(``costs.wakeup``) plus ``per_thread_ms`` for each broker thread running at that moment on any broker of the
machine: a request handler between taking a request and going back for the next, a network thread reading a
request or sending a response, a replica fetcher thread appending what a fetch brought (its
``followers.costs.append``). On the project's machine (2 cores shared by a controller, three brokers and the
clients; Apache Kafka 4.3.1) a produce's RequestQueueTimeMs p50 was 0.03-0.05 ms with no broker thread running
when it arrived, 0.05-0.07 with one, 0.08-0.09 with two or more (docs/calibration.md, "What is left out"). The
request logs that count does not see the fetchers, whose work shows in the runs all the same: a produce that
arrived less than 0.1 ms after the last logged broker thread stopped waited 0.056-0.064 ms at its p50, one
that arrived 0.8-1.6 ms after it 0.031-0.045 ms (the followers append just after the leader answers them).
With ``scale_per_thread`` (``machine_wakeup_scale_per_thread``) a woken request handler's own wait grows too:
its draw of ``costs.wakeup`` is ``1 + scale_per_thread`` times longer for each thread running then, so its long
waits come more often on a busy machine. On the project's machine a consumer fetch's RequestQueueTimeMs was
above 0.4 ms 1.4-4.9% of the time with no logged broker thread running when it arrived, 3.6-11% with one and
7.7-18% with two or more (each of three runs); a produce's 3.0-6.5%, 7.2-11% and 11-21%. A network thread woken
for a response does not scale: a consumer fetch's ResponseQueueTimeMs p50 and p99 hardly moved with the count
(its response is mostly queued while the handler that queued it runs), and a fit that scaled both put the
ResponseQueueTimeMs p50s 1.4 times Kafka's. The request's network thread goes on polling after handing a
request over, where a handler that queued a response is about to wait for the next request or, with
``waker_yields``, gives the woken thread its core.
With ``fetcher_weight`` (``machine_fetcher_weight``) an appending replica fetcher counts for that many threads:
on the project's machine a produce that arrived while a follower was between the leader's answer and its next
fetch waited to be taken 0.079-0.116 ms at its p50, one that arrived while none was 0.041-0.064, where a logged
broker thread running added 0.015-0.03 (kafkasim.calibrate.turnaround): the followers' JVMs take the machine's
few cores while they work, where a broker's own running thread is often about to wait again.
The same count sets how often a thread's work waits for a core when ``machine_preemption.per_running_thread``
is set (kafkasim.sim.preemption).

With ``waker_yields`` (``machine_wakeup_preempts``), a request handler that queued a response for an idle
network thread, and so woke it, gives its core to that thread (Linux's wake-up preemption, on a machine whose
cores are all busy; with ``yields_from``, ``machine_wakeup_preempts_from``, only when at least that many of the
machine's threads run, the handler among them: with fewer a core is free and the handler goes on): it goes on to the parked fetches its request completed (ReplicaManager.tryCompleteActions)
only once that thread has sent the response. On the project's machine the first parked follower fetch an acks=1
produce completed was answered 0.19-0.24 ms after the produce's response (the medians of three runs), about the
woken thread's wait and send; a handler that goes on at once answers it 0.08 ms after. It yields once in a
request's handling, to the first idle network thread its responses wake (a produce's or a completed fetch's): the
second follower fetch an acks=1 produce completed was queued 0.04-0.06 ms after the first (the medians of four runs
of 2026-12-02), about one completion's work, where yielding again put 0.22 ms between them; an acks=all produce,
which sends no response of its own there, answered the second 0.16-0.47 ms after the first (the medians of nine
runs of 2026-12-04, acks=all, linger.ms=5, 200 records/s), about the wait and send of the thread the first one's
response woke, where a handler that yielded only to a produce's response answered it 0.12 ms after.

With ``waits_share`` (``machine_wakeup_waits``), a share of a handler's wake-ups of an idle network thread by a
produce's response go another way (the rest as ``waker_yields`` says): the woken network thread, put on the
handler's core, does not preempt it. The handler goes on at once to the parked fetches its
request completed, and the network thread runs only once the handler goes back to the request queue, its wake-up
counted from then (Linux's wake-affine placement of a woken thread on its waker's core, which the waker keeps
until it blocks). On the project's machine (Kafka 4.3.1), of the acks=1 produces that completed both followers'
parked fetches, 56-59% had their response dequeued before the first follower fetch was answered (the handler
yielded: the first answered 0.27-0.35 ms after the produce's response), 27-31% after the second was (both answered
within 0.12-0.16 ms, the produce's response dequeued 0.03 ms after the second: 0.16-0.21 ms after it was queued,
where a produce that completed no parked fetch waited 0.06) and 12-14% between (five runs of 2026-12-04; the
requests' ``response_complete_ms`` and ``response_dequeue_ms``). With every waker yielding, kafkasim's produce
ResponseQueueTimeMs p50 was 0.73-0.76 times Kafka's. Which way each wake-up goes is drawn from the machine's stream
``machine/wakeup_waits``.

Simplification (README, "Simplifications"): a count, not a pool of cores. The woken thread does not queue for
a core that a running thread holds (``HostCpu`` does that for one broker's threads); its wait grows by the
same amount for each running thread, whatever that thread is doing and for how long yet, and the clients'
threads and the controller's are not counted. A fetcher counts from the moment its append is due until it ends,
its wait for a core of ``broker.cores`` included.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kafkasim.sim.cold_start import ColdStart


class MachineLoad:
    """``per_thread_ms`` of wait per running thread, and a woken request handler's own wait ``1 + scale_per_thread``
    times longer for each; each process of the machine adds its count (``add``)."""

    __slots__ = ("per_thread_ms", "scale_per_thread", "fetcher_weight", "waker_yields", "yields_from", "waits_share",
                 "_waits_rng", "_processes", "_appending", "cold")

    def __init__(self, per_thread_ms: float, waker_yields: bool = False, scale_per_thread: float = 0.0,
                 fetcher_weight: float = 1.0, yields_from: float = 0.0, waits_share: float = 0.0,
                 waits_rng: random.Random | None = None, cold: ColdStart | None = None) -> None:
        if not per_thread_ms >= 0.0:
            raise ValueError(f"per_thread_ms must be >= 0, got {per_thread_ms}")
        if not scale_per_thread >= 0.0:
            raise ValueError(f"scale_per_thread must be >= 0, got {scale_per_thread}")
        if not fetcher_weight >= 0.0:
            raise ValueError(f"fetcher_weight must be >= 0, got {fetcher_weight}")
        if not yields_from >= 0.0:
            raise ValueError(f"yields_from must be >= 0, got {yields_from}")
        self.per_thread_ms = per_thread_ms
        self.scale_per_thread = scale_per_thread
        # How many running threads a replica fetcher that appends counts for (1: one like any other).
        self.fetcher_weight = fetcher_weight
        # Whether a request handler whose response woke an idle network thread yields its core to it
        # (machine_wakeup_preempts): it completes the parked fetches its request woke once that thread has sent.
        self.waker_yields = waker_yields
        # How many of the machine's threads must run for the waker to yield (machine_wakeup_preempts_from): with
        # fewer, a core is free for the woken thread and the handler goes on. 0: it always yields.
        self.yields_from = yields_from
        if not 0.0 <= waits_share <= 1.0:
            raise ValueError(f"waits_share must be within [0, 1], got {waits_share}")
        if waits_share > 0.0 and waits_rng is None:
            raise ValueError("waits_share needs waits_rng, the stream its draws come from")
        # The share of the waker's wake-ups in which the woken thread waits for the waker to go back to its queue
        # instead (machine_wakeup_waits), drawn from `waits_rng`.
        self.waits_share = waits_share
        self._waits_rng = waits_rng
        # What work started after a thread's idle costs more (machine_cold_start; kafkasim.sim.cold_start).
        self.cold = cold
        self._processes: list[Callable[[], int]] = []
        self._appending: list[Callable[[], int]] = []

    def add(self, running_threads: Callable[[], int], appending: Callable[[], int] | None = None) -> None:
        """A process of the machine: ``running_threads()`` is how many of its threads run now, ``appending()`` how
        many of those are replica fetchers appending."""
        self._processes.append(running_threads)
        if appending is not None:
            self._appending.append(appending)

    def yields_now(self) -> bool:
        """Whether a request handler that wakes an idle network thread now gives it its core (``waker_yields``):
        only when at least ``yields_from`` of the machine's threads run, the handler itself among them."""
        # With no count asked (0, the presets'), no need to count: every waker yields, as before the count existed.
        return self.waker_yields and (self.yields_from <= 0.0 or self.running() >= self.yields_from)

    def waits_for_waker(self) -> bool:
        """Whether the network thread a yielding handler woke, and which has not run yet, waits instead for the
        handler to go back to its queue (``waits_share`` of the draws). No draw without a share: a run without it
        draws nothing from the stream."""
        rng = self._waits_rng
        if rng is None or self.waits_share <= 0.0:
            return False
        return rng.random() < self.waits_share

    def running(self) -> float:
        """Threads of the machine's processes running now, each appending replica fetcher ``fetcher_weight``."""
        total = 0
        for running_threads in self._processes:
            total += running_threads()
        if self.fetcher_weight == 1.0:
            return float(total)
        fetchers = 0
        for appending in self._appending:
            fetchers += appending()
        return total + (self.fetcher_weight - 1.0) * fetchers

    def delay(self) -> float:
        """What a network thread woken now waits beyond the host's scheduling latency."""
        return self.per_thread_ms * self.running()

    def wait(self, own: float) -> float:
        """What a request handler woken now waits, ``own`` being its draw of the host's scheduling latency."""
        running = self.running()
        return own * (1.0 + self.scale_per_thread * running) + self.per_thread_ms * running
