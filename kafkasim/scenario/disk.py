"""A broker's disk, as its log flushes see it (simulator-only; Kafka has no such config)."""

from __future__ import annotations

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import DurationDistribution, constant_ms
from kafkasim.scenario.units import KafkaBytes


class DiskConfig(ScenarioModel):
    """This broker's disk and page cache. The cost of a log flush: `fsync` per flush plus `write_per_kib` per dirty KiB it
    writes, each drawn per flush. The disk serves one flush at a time, first come first served, for every
    partition of the broker; the thread that asked (a request handler for a leader's append, a replica fetcher
    for a follower's) waits for its flush.

    Only used when a topic flushes (`flush.messages` or `flush.ms` set, or the broker's
    `log.flush.interval.messages` / `log.flush.interval.ms`); with Kafka's defaults flushing is left to the OS
    and the disk costs nothing. The defaults stand for a current NVMe SSD; they are assumed, not measured here:
    a flush (fdatasync) of a few ms on consumer drives, tens of us on datacenter drives with power-loss
    protection, 0.2 ms taken as a middle; ~2 GB/s of sequential writes (NVMe spec sheets state 1-7 GB/s). A
    2014 spinning disk (7,200 rpm): `fsync: 8ms` (a rotation takes 8.3 ms: half of one on average plus a seek
    of a few ms) and `write_per_kib: 0.008ms` (~120 MB/s sequential), also assumed; its reads likewise
    (`read_latency: 8ms`, `read_per_kib: 0.008ms`).

    With `page_cache` set, the broker's page cache holds the last `page_cache` bytes its logs took, over all
    partitions; a fetch answered at once that reads older batches (a lagging or replaying consumer, a follower
    catching up) reads them from the disk (`read_latency` + `read_per_kib` per KiB, on the same FIFO device),
    and its request handler waits."""

    fsync: DurationDistribution = Field(default_factory=lambda: constant_ms(0.2))
    """Latency of one flush (FileChannel.force of the segment and its indexes), whatever it writes."""
    write_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0005))
    """Time per KiB of dirty data the flush writes (the disk's sequential write bandwidth)."""
    page_cache: KafkaBytes | None = Field(default=None, ge=0)
    """The page cache's size (bytes, or a size: `8GiB`); unset (the default): unlimited, every read from memory
    and the disk unused unless a topic flushes."""
    read_latency: DurationDistribution = Field(default_factory=lambda: constant_ms(0.1))
    """Latency of one read from the disk (a page-cache miss), whatever it reads (assumed: NVMe ~0.1 ms)."""
    read_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0003))
    """Time per KiB read from the disk (assumed: ~3 GB/s sequential reads)."""
