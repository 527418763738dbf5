"""Kafka's ``ExponentialBackoff`` (``org.apache.kafka.common.utils``): the delay before attempt n+1 after n
failed ones, ``random(1 - jitter, 1 + jitter) * initial * multiplier ** min(n, expMax)``, never above
``max_interval``. Brokers use it for heartbeats to the controller (``BrokerLifecycleManager``: 100 ms x2 up to
``broker.session.timeout.ms``, jitter 0.02); clients for retries (KIP-580: ``retry.backoff.ms`` x2 up to
``retry.backoff.max.ms``, jitter 0.2).

Kafka draws the jitter from ``ThreadLocalRandom``; here from the ``random.Random`` passed in (a named stream),
so runs are reproducible. Plain Python, no SimPy.

Worked example, ``ExponentialBackoff(100, 2, 1000, 0.2)``: expMax = log2(10) = 3.32, so attempts 0, 1, 2, 3
give about 100, 200, 400, 800 ms (each times a factor in [0.8, 1.2)), and every later attempt
100 * 2 ** 3.32 = 1000 times the factor, capped at 1000: 1000 ms at least half the time.
"""

from __future__ import annotations

import math
import random
import sys


class ExponentialBackoff:
    """``ExponentialBackoff(initialInterval, multiplier, maxInterval, jitter)``; ``backoff(attempts)`` in ms."""

    __slots__ = ("initial_interval", "multiplier", "max_interval", "jitter", "exp_max", "rng")

    def __init__(
        self, initial_interval: float, multiplier: float, max_interval: float, jitter: float,
        rng: random.Random | None = None,
    ) -> None:
        if jitter < 0 or jitter > 1:
            raise ValueError("jitter must be between 0 and 1")
        self.initial_interval = min(max_interval, initial_interval)
        self.multiplier = multiplier
        self.max_interval = max_interval
        self.jitter = jitter
        self.exp_max = (
            math.log(max_interval / max(self.initial_interval, 1)) / math.log(multiplier)
            if max_interval > self.initial_interval
            else 0.0
        )
        # The stream the jitter is drawn from when ``backoff`` is not given one.
        self.rng = rng

    def backoff(self, attempts: int, rng: random.Random | None = None) -> float:
        """Kafka's ``backoff(attempts)``: the delay in whole ms (a Java long); draws one jitter factor from
        ``rng`` (default: the backoff's own stream) when jittered."""
        if self.exp_max == 0:
            return self.initial_interval
        exp = min(float(attempts), self.exp_max)
        term = self.initial_interval * self.multiplier**exp
        jitter = self.jitter
        # ThreadLocalRandom.nextDouble(origin, bound): uniform in [origin, bound).
        if jitter < sys.float_info.min:
            factor = 1.0
        else:
            stream = rng if rng is not None else self.rng
            assert stream is not None, "a jittered ExponentialBackoff needs a random stream"
            factor = stream.uniform(1 - jitter, 1 + jitter)
        return min(int(factor * term), self.max_interval)

    def __repr__(self) -> str:
        return (
            f"ExponentialBackoff(multiplier={self.multiplier}, expMax={self.exp_max}, "
            f"initialInterval={self.initial_interval}, jitter={self.jitter})"
        )
