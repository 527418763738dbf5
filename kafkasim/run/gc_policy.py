"""The cyclic garbage collector's thresholds for a run, from building the cluster to its tables.

A run allocates a few hundred short-lived objects per request and keeps every logged batch; building a large
cluster allocates hundreds of thousands of long-lived ones (partitions, replicas, fetch sessions). With
CPython's default thresholds (700, 10, 10) the collector runs after every 700 net allocations and its older
passes walk everything kept: 60-70% of building a 12-broker, 3,000-partition cluster, 5-7% of a long loop
(benchmarks/README.md, "Speed at production size"). The simulator's own objects are freed by reference
counting alone (tests/engine/test_cyclic_garbage.py holds it to that), so collecting less often finds no more
garbage: it only walks the same live objects fewer times. Collection timing never changes simulated results.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

# (generation 0, 1, 2): a young collection after 50,000 net allocations, an older one after every 20 of those.
RUN_GC_THRESHOLDS: Final = (50_000, 20, 100)


@contextmanager
def run_gc_thresholds() -> Iterator[None]:
    """Raise the collector's thresholds to at least ``RUN_GC_THRESHOLDS`` (a caller's higher ones stay) for the
    block, and restore the caller's on the way out, however it ends."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(RUN_GC_THRESHOLDS, thresholds, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
