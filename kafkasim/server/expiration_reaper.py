"""Kafka's purgatory expiration reaper (`ExpirationReaper-<brokerId>-<purgatoryName>`, the inner class
`DelayedOperationPurgatory.ExpiredOperationReaper`) on SimPy.

Kafka's reaper thread loops `purgatory.advanceClock(200)`: a `DelayQueue.poll(200 ms)` that returns the
earliest timer bucket as soon as it is due -- or nothing once 200 ms have passed -- then the timer
advance and the purge check. The poll's 200 ms budget is fixed when the poll starts; a bucket offered
meanwhile that becomes the new head wakes the poll, which then waits for *that* bucket (if it is due
before the budget runs out). So expirations fire at their due time, and the 200 ms only bounds how often
the purge check runs when nothing expires.

Here a pass is one scheduled wake-up (a `Call`, `kafkasim.sim.calls`' one-heap-entry event) instead of a
generator process: the reaper wakes at `min(poll deadline, earliest bucket expiration)`. The request handler
(`KafkaRequestHandler`) calls `poke()` after each handled request (anything that may add a bucket): it
reads `next_expiration_ms` and re-arms only if that is earlier than the armed wake-up, so it costs one
property read when nothing changed.

Example (tick 1 ms): a pass starts at t=0 (deadline 200). At t=30 a produce parks with delay 100 and its
bucket (exp 130) becomes the head; `poke()` re-arms for 130. At 130 the bucket is due: advance_clock runs
the expiration and the purge check; the next pass starts at 130 with deadline 330.
"""

from __future__ import annotations

import math
from typing import Final, Protocol

from simpy import Environment

from kafkasim.sim.calls import Call, Pausable

# Kafka: DelayedOperationPurgatory.ExpiredOperationReaper calls advanceClock(200L).
WORK_TIMEOUT_MS: Final = 200.0


class _Timer(Protocol):
    @property
    def next_expiration_ms(self) -> int | None: ...


class Reapable(Protocol):
    """What the reaper drives: `DelayedOperationPurgatory` (its timer's delay queue and its advance)."""

    @property
    def timer(self) -> _Timer: ...

    def advance_clock(self) -> bool: ...


class ExpirationReaper:
    """Drives one purgatory's timer on the simulated clock. `start()` once, `poke()` after adds."""

    __slots__ = ("env", "purgatory", "work_timeout_ms", "_wake", "_wake_at", "_deadline", "_running",
                 "passes", "expirations", "stw", "_timer")

    def __init__(
        self, env: Environment, purgatory: Reapable, work_timeout_ms: float = WORK_TIMEOUT_MS,
        stw: Pausable | None = None,
    ) -> None:
        self.env = env
        self.stw = stw if stw is not None else Pausable()
        self.purgatory = purgatory
        # A purgatory keeps its timer for life; poke() runs after every request, so it is looked up once.
        self._timer = purgatory.timer
        self.work_timeout_ms = work_timeout_ms
        self._wake: Call | None = None
        self._wake_at = math.inf
        self._deadline = math.inf
        self._running = False
        self.passes = 0
        """advance_clock calls so far (each followed by Kafka's purge check)."""
        self.expirations = 0
        """Passes in which the timer flushed at least one bucket."""

    @property
    def wake_at_ms(self) -> float:
        """When the reaper wakes next (inf when stopped)."""
        return self._wake_at

    def start(self) -> None:
        if self._running:
            return
        self._running = True
        self._begin_poll()

    def stop(self) -> None:
        """Kafka's `shutdown()`: the reaper stops waking up (pending wake-up cancelled)."""
        self._running = False
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        self._wake_at = math.inf

    def poke(self) -> None:
        """A bucket may have been offered to the delay queue: wake earlier if it is the new head."""
        if not self._running:
            return
        nxt = self._timer.next_expiration_ms
        if nxt is not None and nxt < self._wake_at:
            self._arm()

    def _begin_poll(self) -> None:
        self._deadline = self.env.now + self.work_timeout_ms
        self._arm()

    def _arm(self) -> None:
        nxt = self._timer.next_expiration_ms
        target = self._deadline if nxt is None or nxt > self._deadline else float(nxt)
        now = self.env.now
        if target < now:
            target = now  # an already-due bucket: poll returns at once
        if self._wake is not None:
            self._wake.cancel()
        self._wake_at = target
        self._wake = Call(self.env, target - now, self._on_wake)

    def _on_wake(self, _event: object) -> None:
        if self.stw.paused:
            self.stw.defer(lambda: self._on_wake(_event))
            return
        self._wake = None
        now = self.env.now
        nxt = self._timer.next_expiration_ms
        if now < self._deadline and (nxt is None or nxt > now):
            # Woken for a head bucket that is no longer due (e.g. flushed by another caller meanwhile):
            # DelayQueue.poll keeps waiting within the same 200 ms budget.
            self._arm()
            return
        self.passes += 1
        if self.purgatory.advance_clock():
            self.expirations += 1
        if self._running:
            self._begin_poll()
