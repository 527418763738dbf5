"""Arrow's allocator for kafkasim's processes.

Arrow allocates through mimalloc by default, and mimalloc reserves 1 GiB of address space on first use
(measured: a first 50 000-row Parquet write maps +1168 MB, +0 MB with the system allocator and one thread).
Under an address-space limit (``ulimit -v``, RLIMIT_AS) that reservation and Arrow's threads (~72 MB each:
a stack and a malloc arena) fail inside Arrow's C++, which can end the process with std::bad_alloc instead
of the MemoryError that lets a run save its partial results. kafkasim's CLI therefore uses Arrow's system
allocator (malloc), and its Parquet writes convert with one thread.
"""

from __future__ import annotations

import os

ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def prefer_system_allocator() -> None:
    """Make malloc Arrow's default allocator in this process, unless the user chose one. Arrow reads the
    variable when it first allocates, so call this before pyarrow is used (kafkasim's CLI does, first)."""
    os.environ.setdefault(ARROW_POOL_VARIABLE, "system")
