"""Parameter sweeps on Spark: a grid of scenario variants times seeds -> Parquet -> percentiles with CIs.

    from kafkasim.sweep import run_sweep
    result = run_sweep("sweeps/io-threads.yaml")          # Spark local[*]; master="spark://host:7077" etc.
    result.planned, result.succeeded, result.failed
    result.per_variant                                     # mean / 95% CI / pooled per variant and metric
    result.variant_table("p99")
    run_sweep("sweeps/other.yaml")                         # reuses the session the first sweep started
    stop_session()                                         # its JVM stopped (else at the interpreter's exit)

Command line: `kafkasim sweep SWEEP.yaml [--master URL] [--out DIR] [--parallelism N]` (see cli.py for the
exit codes). The sweep file format is documented in model.py, the output layout in output.py.

How numbers are computed:
- Each (variant, seed) is one Spark task running the simulator in the executor's Python worker and writing
  the run's rows as Parquet itself (task.py); then one Spark task per variant reads its files and computes
  the statistics (aggregate.py, stats.py).
- Rows sent during the scenario's warm-up are stored but excluded, as in a single run's summary.
- Percentiles (p50, p95, p99, p99.9) are exact: percentile q of n values is the value of rank ceil(q·n)
  among them sorted (numpy's method='inverted_cdf'); the definition is written into every sweep's
  `_MANIFEST.json`.
- Across seeds: mean, sample standard deviation and a 95% confidence interval of the mean from Student's
  t with n-1 degrees of freedom (confidence.py; no interval with a single seed). `pooled` is the statistic
  over all seeds' rows together.

Spark needs Java 17+ (java.py checks it first and says how to install it); single runs never need Java.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkasim._lazy import lazy_getattr

if TYPE_CHECKING:
    from kafkasim.sweep.model import SweepFile, load_sweep
    from kafkasim.sweep.output import IncompleteSweepError, read_manifest
    from kafkasim.sweep.session import stop_session
    from kafkasim.sweep.sweep import SweepAbortedError, SweepResult, run_sweep

__all__ = [
    "IncompleteSweepError",
    "SweepAbortedError",
    "SweepFile",
    "SweepResult",
    "load_sweep",
    "read_manifest",
    "run_sweep",
    "stop_session",
]

# Lazy (PEP 562): a Spark task imports kafkasim.sweep.task, and with it this package; it must not pay for
# pandas, Spark SQL and figures, which only the driver uses.
_LAZY = {
    "SweepFile": "kafkasim.sweep.model",
    "load_sweep": "kafkasim.sweep.model",
    "IncompleteSweepError": "kafkasim.sweep.output",
    "read_manifest": "kafkasim.sweep.output",
    "SweepAbortedError": "kafkasim.sweep.sweep",
    "SweepResult": "kafkasim.sweep.sweep",
    "run_sweep": "kafkasim.sweep.sweep",
    "stop_session": "kafkasim.sweep.session",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
