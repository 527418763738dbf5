"""Stop a run cleanly before its address space runs out.

Under an address-space limit (``ulimit -v``, RLIMIT_AS: what turns exhaustion into Python's MemoryError),
glibc's malloc does not always fail fast at the edge: with the limit reached it retries with consolidation
and mmap fallbacks, and a run can crawl for minutes an allocation at a time instead of raising. So the
engine, between slices of simulated time, compares the process's mapped size with the limit and ends the
run as out of memory once less than ``MIN_ADDRESS_SPACE_LEFT_BYTES`` is left -- with the engine's own
reserve (``MEMORY_RESERVE_BYTES``) still mapped, to be given back for tabulating what was recorded.

Only where the limit and ``/proc/self/statm`` exist (Linux); elsewhere, and without a limit, it does
nothing and the run relies on MemoryError alone.
"""

from __future__ import annotations

import os
import resource

# A slice of simulated time is ~0.1 s of wall time; a run allocates a few MB in that (a 200 000 records/s
# producer's backlog, measured: ~2 MB). The margin leaves room for several such slices.
MIN_ADDRESS_SPACE_LEFT_BYTES = 24 * 1024 * 1024
# What a spool write (a chunk of rows converted by Arrow and written as a Parquet row group) may map, on top
# of the margin. Measured with Arrow's system allocator and one thread (kafkasim's CLI and the recorder's
# spool): a 50 000-row chunk maps under 8 MB. Arrow's default allocator (mimalloc) reserves 1 GiB on first
# use and each Arrow thread ~72 MB (stack and malloc arena), which is why the CLI and the spool avoid both.
SPOOL_WRITE_BYTES = 32 * 1024 * 1024
_STATM = "/proc/self/statm"


class AddressSpaceGuard:
    """``exhausted()`` is True once the process maps more than ``limit - margin`` bytes."""

    __slots__ = ("limit_bytes", "margin_bytes", "_page")

    def __init__(self, limit_bytes: int, margin_bytes: int = MIN_ADDRESS_SPACE_LEFT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.margin_bytes = margin_bytes
        self._page = os.sysconf("SC_PAGE_SIZE")

    @classmethod
    def from_process_limit(cls) -> AddressSpaceGuard | None:
        """A guard for this process's RLIMIT_AS, or None when there is no limit or no /proc."""
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or not os.path.exists(_STATM):
            return None
        return cls(soft)

    def mapped_bytes(self) -> int:
        with open(_STATM, "rb") as f:
            return int(f.read().split()[0]) * self._page

    def exhausted(self) -> bool:
        return not self.has_room(0)

    def has_room(self, extra_bytes: int) -> bool:
        """True while `extra_bytes` more can be mapped and the margin still be left."""
        return self.mapped_bytes() + extra_bytes <= self.limit_bytes - self.margin_bytes

    def before_spool(self) -> None:
        """For `Recorder(before_spool=...)`: MemoryError, in Python, rather than a spool write that could
        run out of address space inside Arrow's C++ (which ends the process with std::bad_alloc)."""
        if not self.has_room(SPOOL_WRITE_BYTES):
            raise MemoryError("address space nearly exhausted (no room for a spool write)")
