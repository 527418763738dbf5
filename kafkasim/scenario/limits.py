"""How often the gauges sample partitions: ``record/gauges.py`` samples by this rule, and the scenario's
checks estimate a run's gauge rows with it (a run keeps at most ``MAX_GAUGE_ROWS``)."""

from __future__ import annotations

import math

# Partitions sampled at every sample; more are sampled every ceil(n / this) samples.
PARTITIONS_PER_SAMPLE = 100


def partition_sample_stride(partitions: int) -> int:
    """Every how many samples the partition gauges are taken, for a run with `partitions` partitions."""
    return max(1, math.ceil(partitions / PARTITIONS_PER_SAMPLE))
