"""A host's cores, shared by the threads of the process on it (a broker's network threads, request handlers
and replica fetcher threads): a thread with CPU work to do takes a core, holds it for the work's service
time, and gives it back; when every core is busy it waits in the host's run queue.

Simplifications (README, "Simplifications"): the run queue is first come first served and a thread keeps its
core until its service time is spent (no time slices, no preemption, no priorities; Linux's CFS would share
the cores among the runnable threads -- processor sharing -- which keeps the same busy time and total wait
but spreads it differently); a context switch costs nothing; a thread waiting for something else (the disk,
the network, a request) holds no core. Only the service times given to ``run`` use the CPU: threads whose
work the simulator does not cost (the controller, the purgatory reapers, the periodic tasks, the clients)
never wait for a core.

A stop-the-world pause of the process (``stw``) starts no new work: work that ends during the pause gives its
core back (its thread then waits for the pause's end, as every thread does), and the run queue starts moving
again at ``dispatch()``, which the process calls when the pause ends. ``crash()`` drops everything: the work
waiting, and the work on a core, whose end then runs nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from kafkasim.sim.calls import Call, Pausable

if TYPE_CHECKING:
    from simpy import Environment
    from simpy.events import Event


class HostCpu:
    """``cores`` cores; ``run(cost, done)`` calls ``done(event)`` once a core has spent ``cost`` ms on it."""

    __slots__ = ("env", "cores", "stw", "_free", "_waiting", "_epoch", "_last", "_busy_acc", "_queue_acc",
                 "slices", "waits")

    def __init__(self, env: Environment, cores: int) -> None:
        if cores < 1:
            raise ValueError(f"cores must be >= 1, got {cores}")
        self.env = env
        self.cores = cores
        # The process's stop-the-world state (a restarted process brings a new one: BrokerServer sets it).
        self.stw = Pausable()
        self._free = cores
        self._waiting: deque[tuple[float, Callable[[Event], None]]] = deque()
        self._epoch = 0  # bumped by a crash: work started before it ends without effect
        # Time integrals of the busy cores and of the run queue's length, up to ``_last``.
        self._last = 0.0
        self._busy_acc = 0.0
        self._queue_acc = 0.0
        self.slices = 0  # pieces of work run
        self.waits = 0  # of which had to wait for a core

    # --- the hot path ------------------------------------------------------------------------------

    def run(self, cost: float, done: Callable[[Event], None]) -> None:
        """A thread has ``cost`` ms of CPU work: on a free core at once, else after the threads queued before it."""
        self._advance()
        self.slices += 1
        if self._free > 0 and not self._waiting and not self.stw.paused:
            self._start(cost, done)
            return
        self.waits += 1
        self._waiting.append((cost, done))
        if self._free > 0 and not self.stw.paused:
            self.dispatch()

    def _start(self, cost: float, done: Callable[[Event], None]) -> None:
        self._free -= 1
        Call(self.env, cost, partial(self._finished, self._epoch, done))

    def _finished(self, epoch: int, done: Callable[[Event], None], event: Event) -> None:
        if epoch != self._epoch:
            return  # started by a process that crashed since: its thread is gone
        self._advance()
        self._free += 1
        if self._waiting and not self.stw.paused:
            cost, waiter = self._waiting.popleft()
            self._start(cost, waiter)
        done(event)

    def dispatch(self) -> None:
        """Start queued work on the free cores (the process's pause ended)."""
        self._advance()
        waiting = self._waiting
        while self._free > 0 and waiting and not self.stw.paused:
            cost, done = waiting.popleft()
            self._start(cost, done)

    def crash(self) -> None:
        """The process died: its threads leave the cores and the run queue, their work is never done."""
        self._advance()
        self._epoch += 1
        self._waiting.clear()
        self._free = self.cores

    # --- what the gauges read ----------------------------------------------------------------------

    def _advance(self) -> None:
        now = self.env.now
        span = now - self._last
        if span > 0.0:
            self._busy_acc += (self.cores - self._free) * span
            self._queue_acc += len(self._waiting) * span
            self._last = now

    @property
    def busy_core_ms(self) -> float:
        """Core-milliseconds spent on work since the start (the integral of the busy cores over time)."""
        self._advance()
        return self._busy_acc

    @property
    def run_queue_ms(self) -> float:
        """Thread-milliseconds spent waiting for a core since the start (the run queue's length integrated)."""
        self._advance()
        return self._queue_acc

    @property
    def run_queue(self) -> int:
        """Threads waiting for a core now."""
        return len(self._waiting)


OnCore = Callable[[float, float, Callable[[object], None], object], None]
"""A thread's own bookkeeping once its CPU work is done: ``on_core(asked, cost, then, event)`` (the time it
waited for a core is ``now - asked - cost``), which then calls ``then(event)``."""


def hold(env: Environment, cpu: HostCpu | None, cost: float, off_cpu: float, then: Callable[[object], None],
         on_core: OnCore) -> None:
    """A thread works ``cost`` ms -- on a core of ``cpu`` when the host models its cores (``on_core`` then
    runs, for the thread's own busy time), else for that time alone -- then waits ``off_cpu`` ms off any core (a
    disk read, a wait for another thread's turn: kafkasim.sim.preemption), then ``then``: a request handler's
    work and a network thread's read or send alike."""
    if cpu is None:
        Call(env, cost + off_cpu, then)
    elif off_cpu > 0.0:
        cpu.run(cost, partial(on_core, env.now, cost, partial(_off_cpu, env, off_cpu, then)))
    else:
        cpu.run(cost, partial(on_core, env.now, cost, then))


def _off_cpu(env: Environment, delay: float, then: Callable[[object], None], _event: object = None) -> None:
    Call(env, delay, then)
