"""Stalls: a host's stop-the-world pauses drawn by a seeded process (simulator-only; Kafka has no such config).

A JVM stops every application thread for a garbage collection (G1's young collections, "evacuation pauses"),
and an operating system can stall a process that writes (page-cache writeback throttling) or touches a
swapped-out page. A `pause` fault places one such pause by hand; `stalls:` draws them all run long:

    broker:
      stalls: {preset: jvm-g1-young}                          # a preset, as is
    producers:
      - name: p1
        stalls:                                               # or distributions of their own
          interval: {type: exponential, mean: 10s}            # from one stall's start to the next's
          pause: {type: lognormal, median: 8ms, p99: 30ms}    # how long each lasts

A preset's fields can be overridden one by one (`{preset: jvm-g1-young, interval: 5s}`). `stalls: {}` is no
stalls (how a `cluster.overrides` entry spares one broker of `broker.stalls`). Off unless a scenario asks.

A broker's stalls can follow its load instead of the clock: a young collection comes when the young generation
fills, and what fills it is the requests the broker reads and handles. `every_requests: 600` in place of
`interval` stalls the broker each time 600 more requests have reached its request channel (measured on a real
local cluster: a leader collected once per 430-650 requests at every configuration tried, docs/calibration.md).
A follower reads no requests but allocates for every fetch response its replica fetchers receive: `every_fetches:
1500` stalls it each time 1,500 more have arrived. With both, a request fills 1/every_requests of the young
generation and a fetch response 1/every_fetches: a broker that leads some partitions and follows others
collects when the two together have filled it. A follower's collections are shorter than a leader's (fewer live
objects to copy: measured, a median of 4 ms against 11): `fetch_pause` is the pause of a collection that a fetch
response started (`pause` when not given).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import (
    DurationDistribution,
    DurationExponential,
    DurationLogNormal,
    typical_value,
)
from kafkasim.scenario.errors import fail_at

MIN_TYPICAL_INTERVAL_MS = 1.0
"""The least typical gap between two stalls' starts: a smaller one would have the run draw stalls in a busy loop."""

StallPreset = Literal["jvm-g1-young"]

STALL_PRESETS: dict[str, tuple[DurationDistribution, DurationDistribution]] = {
    # (interval, pause). Source: Kafka's documentation, "Java Version" (docs/ops, 0.9 to 4.x): on one of
    # LinkedIn's busiest clusters at peak (60 brokers, 800k messages/s in, 300 MB/s in, 1 GB/s+ out) with
    # -XX:+UseG1GC -XX:MaxGCPauseMillis=20, "all of the brokers in that cluster have a 90% GC pause time of
    # about 21ms with less than 1 young GC per second". Assumed here: the pause length is lognormal with
    # median 12 ms and p99 35 ms (its p90 is then 21.6 ms; the median and the p99 are not published), and
    # young collections come as a Poisson process at that upper bound, one a second (a young collection comes
    # when the young generation fills, so its rate grows with the allocation rate, i.e. the load: a lightly
    # loaded broker collects less often; set `interval` for it).
    "jvm-g1-young": (
        DurationExponential(mean=1000.0),
        DurationLogNormal(median=12.0, p99=35.0),
    ),
}
"""The named presets: (interval, pause) for each."""


class Stalls(ScenarioModel):
    """Stop-the-world stalls of one host: every `interval` a stall of `pause` (each a fresh draw from the host's
    own random streams). A stall stops the whole host, as a `pause` fault does: a broker's network and request
    handler threads, purgatory reapers, periodic tasks, replica fetchers and heartbeats to the controller; a
    producer's application (its records wait, counted from their intended time) and Sender; a consumer.
    A crashed broker does not stall. `{}` means no stalls."""

    preset: StallPreset | None = None
    """A named pair of distributions: `jvm-g1-young` (G1 young collections of a busy broker, from LinkedIn's
    figures in Kafka's documentation: exponential interval, mean 1 s; lognormal pause, median 12 ms, p99
    35 ms, p90 ≈ 21 ms). `interval` and `pause` given beside it replace its values."""
    interval: DurationDistribution | None = None
    """Time from one stall's start to the next one's (e.g. {type: exponential, mean: 10s}); a stall never
    starts before the previous one has ended. Its typical value (mean; a lognormal's median) must be >= 1 ms."""
    every_requests: int | None = Field(default=None, ge=1)
    """In place of `interval`, a broker's only: a stall each time this many more requests have reached the
    broker's request channel (`RequestChannel.sendRequest`, every API's alike), counted from the request that
    started the last one (a restarted broker's from its first), as a JVM collects each time the requests'
    allocations have filled its young generation. Not for a client or `machine_stalls`, which handle no
    requests."""
    every_fetches: int | None = Field(default=None, ge=1)
    """In place of `interval` too, beside `every_requests` or alone, a broker's only: a stall each time this many
    more fetch responses have reached the broker's replica fetchers (``ReplicaFetcherThread`` reads each into
    memory and appends it: a follower's allocations). Beside `every_requests`, a request fills 1/every_requests
    of the young generation and a fetch response 1/every_fetches, and the broker stalls when they have filled
    it. Not for a client or `machine_stalls`."""
    pause: DurationDistribution | None = None
    """How long each stall lasts (e.g. {type: lognormal, median: 8ms, p99: 30ms}); a negative draw is 0."""
    fetch_pause: DurationDistribution | None = None
    """Beside `every_fetches`: how long a stall that a fetch response started lasts (a follower's collection,
    with less alive in its young generation than a leader's); `pause` when not given."""

    @model_validator(mode="after")
    def _resolve(self) -> Stalls:
        if self.preset is not None:
            interval, pause = STALL_PRESETS[self.preset]
            # Resolved without being marked as set: a --set of one field keeps the preset for the other.
            if self.interval is None:
                object.__setattr__(self, "interval", interval)
            if self.pause is None:
                object.__setattr__(self, "pause", pause)
        if self.fetch_pause is not None and self.every_fetches is None:
            fail_at([(("fetch_pause",), "is given without every_fetches (allowed: beside every_fetches, the pause of "
                                        "a collection a fetch response started)")])
        if self.counted:
            key = "every_requests" if self.every_requests is not None else "every_fetches"
            if self.interval is not None and "interval" in self.model_fields_set:
                fail_at([((key,), "is given beside interval (allowed: one of them: a stall every interval of "
                                  "time, or every so many requests or fetch responses)")])
            # A preset's interval gives way to the count: `{preset: jvm-g1-young, every_requests: 600}`.
            object.__setattr__(self, "interval", None)
            if self.pause is None:
                fail_at([(("pause",), f"is required beside {key} (a duration distribution, e.g. {{type: "
                                      "lognormal, median: 12ms, p99: 25ms})")])
            return self
        if (self.interval is None) != (self.pause is None):
            missing = "interval" if self.interval is None else "pause"
            fail_at([((missing,), "is required beside " + ("pause" if missing == "interval" else "interval")
                      + " (a duration distribution, e.g. {type: exponential, mean: 10s}), or name a preset "
                      f"({', '.join(STALL_PRESETS)}); {{}} means no stalls")])
        if self.interval is not None and typical_value(self.interval) < MIN_TYPICAL_INTERVAL_MS:
            fail_at([(("interval",), f"typical value {typical_value(self.interval):g} ms is too short (allowed: "
                                     f">= {MIN_TYPICAL_INTERVAL_MS:g} ms between stall starts)")])
        return self

    @property
    def counts(self) -> dict[str, int]:
        """The counts it sets, by key (every_requests, every_fetches): its stalls come by count, not by time."""
        counts = {"every_requests": self.every_requests, "every_fetches": self.every_fetches}
        return {key: n for key, n in counts.items() if n is not None}

    @property
    def counted(self) -> bool:
        return self.every_requests is not None or self.every_fetches is not None

    @property
    def enabled(self) -> bool:
        return (self.interval is not None or self.counted) and self.pause is not None
