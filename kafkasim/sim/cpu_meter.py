"""The CPU one broker's threads spend on the work kafkasim models, by kind of thread: its request handlers' and
network threads' service times and its replica fetchers' appends, not their waits for a core or off it.

The simulated counterpart of what a real run measures per JVM (kafkasim.real.process_cpu: a broker's
``data-plane-kafka-*`` threads, its request handlers and network threads, and its ``ReplicaFetcherThread``\\s).
Set beside it, it says how much of a real broker's CPU the modelled costs account for: on the project's machine
(Kafka 4.3.1, scenarios/calibration_base.yaml) the leader's data-plane threads used 0.47-0.50 of a core.
One meter per broker process, kept across its restarts (the summary's ``per_broker`` ``cores``).
"""

from __future__ import annotations


class CpuMeter:
    """Milliseconds of modelled CPU work so far, per kind of thread of one broker."""

    __slots__ = ("handlers_ms", "network_ms", "fetchers_ms")

    def __init__(self) -> None:
        self.handlers_ms = 0.0
        """Request handlers (``KafkaRequestHandler``): every service time, parked fetches' completions included."""
        self.network_ms = 0.0
        """Network threads (``Processor``): reading requests and sending responses."""
        self.fetchers_ms = 0.0
        """Replica fetcher threads: appending what a fetch brought."""

    def totals(self) -> tuple[float, float, float]:
        """(handlers, network threads, fetchers), in ms."""
        return (self.handlers_ms, self.network_ms, self.fetchers_ms)
