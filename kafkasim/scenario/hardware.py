"""Hardware presets: a named host that supplies the simulator-only hardware knobs in one line.

    hardware: {preset: kreps-2014}

A preset replaces kafkasim's built-in defaults of the fields below, and only where the scenario leaves them
out: anything the scenario writes wins, field by field (`broker.disk.fsync: 2ms` beside the preset keeps the
preset's other disk fields). The fields a preset supplies:

- `cluster.nic.bandwidth` (both directions; only with a `cluster:`, the only scenarios with NICs),
- `network.default_link.latency` and `.bandwidth` (and so every producer's, consumer's and follower's link
  that does not set its own),
- `broker.disk` (`fsync`, `write_per_kib`, `read_latency`, `read_per_kib`, `page_cache`), also of a
  `cluster.overrides` entry that writes a `disk:` of its own,
- `broker.costs.per_partition` where a source gives it,
- where a preset was fitted to its source's own figures (`kreps-2014`): `broker.costs.request`, the producers'
  and consumers' `costs` and `broker.stalls`, each the value at which kafkasim reproduces one published figure
  (docs/make_published.py --fit; docs/validation.md, "Published measurements", says which figure fitted which
  value and how the figures nothing was fitted to compare).

`aws-i3en-6xlarge` sets no stalls and no client costs: how often a JVM collects garbage follows its allocation
rate, i.e. the load, not the host, and no source gives them for that host; a scenario that wants them names
them itself. Other handler costs have no published figure and stay kafkasim's defaults.

Values are resolved during validation without being marked as set, as `stalls:` resolves its preset: a
scenario dumped with `exclude_unset` (what `--set` edits) holds only what its author wrote, so
`--set hardware.preset=...` swaps every preset value and `--set broker.disk.fsync=...` keeps the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from pydantic import model_validator

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import (
    DurationDistribution,
    DurationExponential,
    DurationLogNormal,
    constant_ms,
)
from kafkasim.scenario.errors import fail_at
from kafkasim.scenario.stalls import STALL_PRESETS

HardwarePreset = Literal["kreps-2014", "aws-i3en-6xlarge"]

GIB = 1024**3

KREPS_FITTED: dict[str, float] = {
    "per_partition_ms": 0.004972,
    "producer_request_ms": 0.122,
    "broker_request_ms": 0.1324,
    "consumer_poll_median_ms": 1.436,
    "consumer_poll_p99_ms": 2.345,
    "stall_interval_ms": 7320.0,
}
"""The kreps-2014 values fitted to published figures by docs/make_published.py --fit (docs/published.json keeps
the fit; tests/docs/test_published.py holds the two equal)."""


@dataclass(frozen=True)
class HostPreset:
    """The values one preset supplies (canonical units: ms, bytes, bytes per second)."""

    nic_bandwidth: float
    link_latency: DurationDistribution
    link_bandwidth: float
    disk: dict[str, object] = field(default_factory=dict)
    costs: dict[str, object] = field(default_factory=dict)
    producer_costs: dict[str, object] = field(default_factory=dict)
    """Every producer's `costs` where it writes none."""
    consumer_costs: dict[str, object] = field(default_factory=dict)
    """Every consumer's `costs` where it writes none."""
    broker_stalls: tuple[DurationDistribution, DurationDistribution] | None = None
    """`broker.stalls` (interval, pause) where the scenario writes none."""


HOST_PRESETS: dict[str, HostPreset] = {
    # Jay Kreps, "Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)", LinkedIn
    # engineering blog, 27 April 2014: six machines, each "Intel Xeon 2.5 GHz processor with six cores, six
    # 7200 RPM SATA drives, 32GB of RAM, 1Gb Ethernet" (three brokers, three for ZooKeeper and the clients).
    "kreps-2014": HostPreset(
        # Published: 1 Gb Ethernet = 1e9 bit/s = 1.25e8 bytes/s per direction.
        nic_bandwidth=1.25e8,
        # Assumed (the post gives none): one switched gigabit LAN, a round trip of ~0.2 ms (a ping's usual
        # figure), so a one-way median of 0.1 ms; p99 4x the median, the shape of kafkasim's default link.
        link_latency=DurationLogNormal(median=0.1, p99=0.4),
        # Published: a connection cannot send faster than the host's 1 Gb NIC.
        link_bandwidth=1.25e8,
        disk={
            # Assumed for a 7200 rpm SATA drive (the post gives the drives, not their figures): a rotation
            # takes 60/7200 s = 8.3 ms; an fsync waits half of one on average plus a seek of a few ms: 8 ms.
            "fsync": constant_ms(8.0),
            # Assumed: ~120 MB/s sequential writes for a 2014 7200 rpm SATA drive, 1 KiB in 0.008 ms. kafkasim
            # has one disk per broker; the post's six drives (Kafka spreads partitions over log.dirs) serve
            # flushes of different partitions at once, so a flush-bound run here is pessimistic.
            "write_per_kib": constant_ms(0.008),
            # Assumed as fsync and write_per_kib: a random read costs a seek and half a rotation, then ~120 MB/s.
            "read_latency": constant_ms(8.0),
            "read_per_kib": constant_ms(0.008),
            # Published 32 GB of RAM; assumed: 8 GiB of it for the broker's JVM heap and the OS (the post does
            # not give the heap), the rest page cache.
            "page_cache": 24 * GIB,
        },
        costs={
            # Fitted (docs/make_published.py --fit) to Jun Rao, "How to choose the number of topics/partitions in
            # a Kafka cluster?", Confluent blog, 12 March 2015 (same era of hardware): "replicating 1000
            # partitions from one broker to another can take up to 20ms. This can add to the end-to-end
            # latency": the cost per partition a fetch reads at which an acks=all produce to 1,000 partitions
            # replicated by one fetcher thread takes 20 ms longer than to 10. Not 20 ms / 1,000: a commit waits
            # for the fetch under way, the fetch that carries the record, and the next, whose arrival moves
            # the high watermark after reading every partition (ReplicaManager.fetchMessages reads the log,
            # then updateFollowerFetchState).
            "per_partition": constant_ms(KREPS_FITTED["per_partition_ms"]),
            # Fitted to Kreps' "Single producer thread, 3x synchronous replication" (421,823 records/s): the
            # 2014 broker's handler time per request (kafkasim's default, 0.05 ms, is no measurement either).
            # With acks=all one producer's throughput follows the time a produce waits for its followers'
            # fetches (a connection's next request is read only once the last one is answered,
            # SocketServer's Processor mutes it), so this figure decides it.
            "request": constant_ms(KREPS_FITTED["broker_request_ms"]),
        },
        # Fitted to Kreps' own figures (docs/make_published.py --fit): the CPU of his clients on these hosts,
        # which kafkasim cannot know from the hardware. The 2014 producer's per-record work (send()'s CRC
        # and accumulator append) is charged per request on its Sender (kafkasim has no per-record send cost):
        # the value at which one producer thread sends 821,557 records/s ("Single producer thread, no
        # replication").
        producer_costs={"per_request": constant_ms(KREPS_FITTED["producer_request_ms"])},
        # The consumer's time from a fetch response to the application (the 0.8 consumer's fetcher thread,
        # chunk queue and iterator): the lognormal at which the end-to-end test's median and 99th percentile
        # are the post's 2 and 3 ms (each a whole ms, truncated by its tool: aimed at 2.5 and 3.5 ms).
        consumer_costs={"per_poll": DurationLogNormal(median=KREPS_FITTED["consumer_poll_median_ms"],
                                                      p99=KREPS_FITTED["consumer_poll_p99_ms"])},
        # Broker JVM pauses: `jvm-g1-young`'s pause lengths (the one published figure for Kafka's broker
        # JVM), one every `interval` on average, fitted to the end-to-end test's 99.9th percentile (14 ms,
        # aimed at 14.5). A busier broker collects more often: set `broker.stalls` for another load.
        broker_stalls=(DurationExponential(mean=KREPS_FITTED["stall_interval_ms"]), STALL_PRESETS["jvm-g1-young"][1]),
    ),
    # AWS EC2 i3en.6xlarge (the broker instance of the OpenMessaging Benchmark's Kafka deployment on AWS):
    # 24 vCPUs, 192 GiB, 2 x 7500 GB NVMe SSD, 25 Gigabit network (AWS's instance type table).
    "aws-i3en-6xlarge": HostPreset(
        # Published: 25 Gbit/s = 3.125e9 bytes/s per direction.
        nic_bandwidth=3.125e9,
        # Assumed (AWS publishes no figure): within one availability zone a round trip of ~0.2 ms, one way
        # 0.1 ms; p99 4x the median, the shape of kafkasim's default link.
        link_latency=DurationLogNormal(median=0.1, p99=0.4),
        # Published (AWS, "Amazon EC2 instance network bandwidth"): one flow (a TCP connection) is limited to
        # 5 Gbit/s between instances that are not in the same cluster placement group: 6.25e8 bytes/s.
        link_bandwidth=6.25e8,
        disk={
            # Assumed, as kafkasim's DiskConfig defaults (a current NVMe SSD): fdatasync 0.2 ms, ~2 GB/s
            # sequential writes, reads 0.1 ms + ~3 GB/s; AWS publishes IOPS, not these.
            "fsync": constant_ms(0.2),
            "write_per_kib": constant_ms(0.0005),
            "read_latency": constant_ms(0.1),
            "read_per_kib": constant_ms(0.0003),
            # Published 192 GiB of RAM; assumed: 8 GiB of it for the broker's JVM heap and the OS.
            "page_cache": 184 * GIB,
        },
        # No published per-partition cost for current hardware: kafkasim's defaults stay.
    ),
}
"""Every preset's values, each with its source."""


class Hardware(ScenarioModel):
    """Simulator-only (Kafka has no such config): a named host that supplies the hardware fields a scenario
    leaves out: the brokers' NIC bandwidth (`cluster.nic.bandwidth`), the default link's latency and bandwidth,
    the brokers' disk (`broker.disk`) and, where a source gives it, `broker.costs.per_partition`; `kreps-2014`
    also the CPU costs and JVM pauses fitted to its source's own figures (`broker.costs.request`, the
    producers' and consumers' `costs`, `broker.stalls`). Anything the scenario writes wins, field by field (a
    client's or the broker's own `costs` or `stalls` block wins whole). Absent: kafkasim's own defaults."""

    preset: HardwarePreset
    """`kreps-2014`: Jay Kreps' 2014 benchmark host (six-core 2.5 GHz Xeon, six 7200 rpm SATA drives,
    32 GB RAM, 1 Gb Ethernet): NIC and links 1 Gbit/s, link latency median 0.1 ms / p99 0.4 ms (assumed), fsync
    and disk reads 8 ms, ~120 MB/s (assumed), page cache 24 GiB; fitted to published figures (docs/validation.md,
    "Published measurements"): a cost per partition a fetch reads (Jun Rao 2015), the broker's cost per request,
    the producer's per request, the consumer's per poll and broker pauses of `jvm-g1-young`'s length (Kreps 2014).
    `aws-i3en-6xlarge`: an AWS i3en.6xlarge (NVMe, 25 Gbit/s): NIC 25 Gbit/s, links 5 Gbit/s (AWS's single-flow
    limit), link latency as above (assumed), NVMe disk as kafkasim's defaults (assumed), page cache 184 GiB.
    Every number and its source: README, "Hardware presets"."""

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, data: Any) -> Any:
        if isinstance(data, str):  # `hardware: kreps-2014`: say how to write it, as stalls' `preset` is written
            fail_at([((), f"is text {data!r}; name a preset as a mapping, e.g. {{preset: kreps-2014}} (allowed "
                          f"presets: {', '.join(get_args(HardwarePreset))})")])
        return data


M = TypeVar("M", bound=ScenarioModel)


def filled(model: M, values: dict[str, object]) -> M:
    """`model` with `values` in the fields its author left out, still unset: a dump with `exclude_unset`
    shows only what the author wrote."""
    own = model.model_fields_set
    update = {k: v for k, v in values.items() if k not in own}
    if not update:
        return model
    current = {name: getattr(model, name) for name in type(model).model_fields}
    return type(model).model_construct(set(own), **(current | update))
