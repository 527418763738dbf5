"""The open-loop load of a real run: every record's intended send time, size and (where kafkasim's producer
picks it without looking at its batches) partition, drawn by the simulator's own code from the scenario's
seed, so a real run sends the same records at the same intended times as the simulated run.

The draws are the producer's: ``clients.producer.ArrivalProcess`` on the stream ``<producer>/arrivals``,
the record size on ``<producer>/record_size`` (rounded as ``Producer._draw`` rounds it), the partition of a
``round_robin`` or ``random`` producer by ``clients.accumulator.Partitioner`` on ``<producer>/partitioner``.
A ``sticky`` producer's partition is left to Kafka's own BuiltInPartitioner (it depends on how the batches
fill, which only the real producer knows). Records intended at or after ``duration`` are not sent.

The load driver reads a schedule as big-endian records of (double intended ms, int size, int partition),
partition -1 meaning "the producer's partitioner decides".
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkasim.broker.records import TopicPartition
from kafkasim.clients.accumulator import Partitioner
from kafkasim.clients.producer import ArrivalProcess
from kafkasim.run.build import producer_config_of
from kafkasim.scenario import Scenario
from kafkasim.scenario.clients import ProducerConfig
from kafkasim.sim.distributions import constant_value, zero_arg_sampler
from kafkasim.sim.random_streams import RandomStreams

RECORD = struct.Struct(">dii")
MIN_RECORD_BYTES = 16
"""A record's value carries its producer and sequence number in its first 16 bytes (kafkasim.real.driver)."""


@dataclass(frozen=True)
class Planned:
    intended_ms: float
    size: int
    partition: int  # -1: Kafka's partitioner decides


def planned_records(scenario: Scenario, producer: ProducerConfig, seed: int) -> Iterator[Planned]:
    """The records ``producer`` of ``scenario`` sends, in order, with ``seed``'s draws."""
    streams = RandomStreams(seed)
    config = producer_config_of(producer)
    arrivals = ArrivalProcess(config.rate_per_s, config.arrival, streams.stream(f"{producer.name}/arrivals"))
    sampler = zero_arg_sampler(producer.record_size, streams.stream(f"{producer.name}/record_size"))
    constant = constant_value(sampler)
    constant_size = max(1, int(constant + 0.5)) if constant is not None else 0
    topic = scenario.topic(producer.topic)
    partitions = [TopicPartition(topic.name, p) for p in range(topic.partitions)]
    partitioner = None
    if producer.partitioner != "sticky" and len(partitions) > 1:
        partitioner = Partitioner(producer.partitioner, partitions, producer.batch_size,
                                  streams.stream(f"{producer.name}/partitioner"))
    duration = float(scenario.duration)
    intended = arrivals.first()
    while intended < duration:
        size = constant_size or max(1, int(sampler() + 0.5))
        if partitioner is not None:
            partition = partitioner.partition(partitioner.state, None, size).partition  # type: ignore[arg-type]
        else:
            partition = 0 if len(partitions) == 1 else -1
        yield Planned(intended, size, partition)
        intended = arrivals.next_after(intended)


def write_schedule(path: Path, records: Iterator[Planned]) -> int:
    """Write ``records`` for the driver; how many."""
    count = 0
    with open(path, "wb") as handle:
        for record in records:
            handle.write(RECORD.pack(record.intended_ms, max(record.size, MIN_RECORD_BYTES), record.partition))
            count += 1
    return count
