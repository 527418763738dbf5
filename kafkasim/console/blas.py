"""One BLAS thread for kafkasim's processes.

numpy's wheels link OpenBLAS, which starts a pool of threads (one per core) when numpy is imported. kafkasim
does no linear algebra (no matrix products, no numpy.linalg), so the pool only costs: starting it took
~0.1 CPU s of a ~3.4 CPU s `kafkasim run` of the quickstart (benchmarks/README.md, "Quickstart"). OpenBLAS
reads its variable once, when numpy loads it, so the CLI sets it first, as it sets Arrow's allocator.
"""

from __future__ import annotations

import os

BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"


def single_blas_thread() -> None:
    """One OpenBLAS thread in this process (and the processes it starts), unless the user chose a number.
    Call it before numpy is imported."""
    os.environ.setdefault(BLAS_THREADS_VARIABLE, "1")
