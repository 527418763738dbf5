"""What a run holds when it runs out of memory, counted, and which of it most likely filled the memory.

A run holds its recorded rows -- request rows, batch rows (the records table), gauge samples -- which the
recorder spools to disk as it goes and which come back into memory when the tables are built at the end
(the requests only a few columns at a time: a spooled requests table stays a file,
kafkasim.record.table_file); and the simulation's state, of which two parts grow with a run: the records waiting in the producers
(a rate the brokers do not keep up with, up to each producer's `buffer.memory`) and the batches held in
the logs (every batch of the run, on each replica, unless retention deletes old segments). Counting each
of them and weighing the counts by what one costs says what to change, instead of assuming the producers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkasim.record.recorder import RecordedTables, Recorder
    from kafkasim.run.cluster import Cluster

# About how many bytes one of each costs where it is largest: a row in the tables built at the end (the
# DataFrames' columns, measured on a 2 M-row requests table read back from the spool: ~340 bytes a row --
# once read whole, which a run no longer does itself; records ~260, gauge samples ~100 with their strings), a record in a producer's batches (~65 bytes,
# measured on a producer's backlog at 100 000 records/s), a batch in a log (~200 bytes over its replicas:
# the batch and its index entries, measured at 5 000 records/s). Rough: they only rank the kinds.
BYTES_PER = {
    "request rows": 350,
    "batch rows": 300,
    "gauge samples": 100,
    "records in the producers": 65,
    "batches in the logs": 200,
}
ADVICE = {
    "request rows": "a shorter duration, longer fetch waits (fetch.max.wait.ms, replica.fetch.wait.max.ms) or "
                    "fewer consumers",
    "batch rows": "lower the producers' rates or the duration, or raise their linger.ms",
    "gauge samples": "a longer sample_interval or a shorter duration",
    "records in the producers": "lower the producers' rates, which the brokers do not keep up with, or their "
                                "buffer.memory, or the duration",
    "batches in the logs": "set retention.bytes or retention.ms on the topics, or lower the rates or the duration",
}


@dataclass(frozen=True)
class MemoryUse:
    """How many of each kind the run held (keys of BYTES_PER); a kind left out was not counted (the
    simulation's state is gone)."""

    counts: dict[str, int]

    @property
    def largest(self) -> str | None:
        """The kind that most likely filled the memory (None when the run held nothing)."""
        weighed = {kind: n * BYTES_PER[kind] for kind, n in self.counts.items() if n > 0}
        return max(weighed, key=lambda kind: weighed[kind]) if weighed else None

    def describe(self) -> str:
        """E.g. "holding 8,212,001 request rows and 1,200 gauge samples: most of it the request rows (a shorter
        duration, ...)". Only the kinds with a count above zero are listed."""
        held = [f"{n:,} {kind}" for kind, n in self.counts.items() if n > 0]
        largest = self.largest
        if largest is None:
            return "holding no rows"
        listed = held[0] if len(held) == 1 else ", ".join(held[:-1]) + " and " + held[-1]
        return f"holding {listed}: most of it the {largest} ({ADVICE[largest]})"


def memory_use(recorder: Recorder, components: Cluster | None, tables: RecordedTables | None = None) -> MemoryUse:
    """Count what the run holds: its rows (in `tables` once the recorder has built them, else the recorder's),
    and the simulation's producers and logs when `components` is still there."""
    if tables is not None:
        rows = {"requests": len(tables.requests), "records": len(tables.records), "timeseries": len(tables.timeseries)}
    else:
        rows = recorder.rows
    counts = {"request rows": rows["requests"], "batch rows": rows["records"], "gauge samples": rows["timeseries"]}
    if components is not None:
        counts["records in the producers"] = sum(
            b.record_count
            for p in components.producers
            for b in [*p.accumulator.all_batches(), *p.building(),
                      *(b for _, batches in p.unfinished() for b in batches)]
        )
        logs = {id(partition.log): partition.log
                for broker in components.brokers for partition in broker.replica_manager.partitions.values()}
        counts["batches in the logs"] = sum(len(segment.batches) for log in logs.values() for segment in log.segments)
    return MemoryUse(counts)
