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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

# (generation 0, 1, 2): a young collection after 50,000 net allocations, an older one after every 20 of those.
RUN_GC_THRESHOLDS: Final = (50_000, 20, 100)

# The thresholds are the process's: blocks that overlap (runs in several threads of a notebook) share one
# raise, made by the first to enter and undone by the last to leave. Saving and restoring per block would
# leave the raise in place for good when they leave out of order.
_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def run_gc_thresholds() -> Iterator[None]:
    """Raise the collector's thresholds to at least ``RUN_GC_THRESHOLDS`` (a caller's higher ones stay) for the
    block, and restore the caller's when the last such block still open ends, however it ends."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(RUN_GC_THRESHOLDS, _saved, strict=True)))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)
