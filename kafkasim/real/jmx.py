"""The nodes' gauges a real run sampled (driver/GaugeReporter.java, inside each node: one file per node), as the
timeseries table.

Metric and entity names are kafkasim's (``kafkasim.record.gauges``) where Kafka has the gauge:
``RequestQueueSize``, ``NetworkProcessorAvgIdlePercent``, ``LeaderCount``, ``UnderReplicatedPartitions``,
``UnderMinIsrPartitionCount`` per broker; ``PurgatorySize`` and ``NumDelayedOperations`` per purgatory
(``broker-<id>/Produce``, ``broker-<id>/Fetch``); ``IsrSize``, ``UnderMinIsr`` and ``LeaderId`` per partition
(its leader's ``InSyncReplicasCount`` and ``UnderMinIsr``, 0 on a follower: the broker reporting a non-zero
count leads it, and only it reports them); ``LogEndOffset`` per
replica; ``OfflinePartitionsCount`` for the cluster (entity ``controller``, the active controller's
``ControllerMetadataMetrics``). Kafka's ``IsrShrinksPerSec`` and ``IsrExpandsPerSec`` are meters: their counts since the broker
started are ``IsrShrinksTotal`` and ``IsrExpandsTotal``. A real broker has no JMX gauge of its high
watermark, of the leader's view of each follower, nor (as a ratio of the last interval) of its request
handlers' idle time: those rows are missing. A paused or crashed broker misses its samples. Samples are at
most one a second (``runner.MIN_JMX_INTERVAL_MS``), whatever the scenario's sample_interval. A line a node killed
in the middle of writing left incomplete is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from kafkasim.record.recorder import timeseries_frame

PURGATORIES = ("Produce", "Fetch")


def read_samples(paths: Sequence[Path], end_ms: float) -> pd.DataFrame:
    times: list[float] = []
    metrics: list[str] = []
    entities: list[str] = []
    values: list[float] = []
    for path in paths:
        for line in path.read_text(errors="replace").splitlines() if path.is_file() else ():
            parts = line.split("\t")
            if len(parts) != 4:
                continue
            try:
                t, value = float(parts[0]), float(parts[3])
            except ValueError:
                continue
            entity = parts[2]
            if t > end_ms or entity.startswith("__") or ("/" in entity and entity.startswith("broker-")
                                                         and entity.rsplit("/", 1)[1] not in PURGATORIES):
                continue  # Kafka's internal topics; purgatories kafkasim does not have (ElectLeader, ...)
            times.append(t)
            metrics.append(parts[1])
            entities.append(parts[2])
            values.append(value)
    frame = timeseries_frame(times, metrics, entities, values)
    return frame.sort_values(["time_ms", "metric", "entity"], kind="stable", ignore_index=True)
