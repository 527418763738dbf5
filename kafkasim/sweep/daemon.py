"""Spark's Python worker daemon for sweeps, with the engine imported once, before it forks any worker.

Spark starts one daemon per executor (`python -m <spark.python.daemon.module>`), and the daemon forks a
Python worker for each concurrent task slot. With PySpark's own daemon every worker imports the
simulator (pandas, pyarrow, pydantic, SimPy, the engine: ~1.5 s of CPU each) on its first task. This one
imports them first and then runs PySpark's daemon unchanged, so the forked workers inherit the imported
modules. Used for local masters only, where the driver's interpreter (whose kafkasim this imports) runs
the workers; a cluster's executors use PySpark's daemon and import kafkasim from the shipped archive.
"""

from __future__ import annotations

import gc
import sys
from importlib.machinery import PathFinder
from pathlib import Path


def preload() -> None:
    """Import what every sweep task imports, then freeze the objects that made (`gc.freeze`). Never fails:
    a worker reports its own import errors.

    Frozen, the imported modules' objects are left out of every collection in the workers forked from this
    daemon, and the collector does not write to their pages, which the workers then share with the daemon
    (what Python's documentation of `gc.freeze` advises before a fork). Measured on local[2]: 36 tasks that
    do nothing took 0.94-1.00 s instead of 1.00-1.14 s (three alternating runs of each, warm sessions).
    """
    try:
        import kafkasim.run.engine  # noqa: F401
        import kafkasim.scenario.load  # noqa: F401
        import kafkasim.sweep.task  # noqa: F401
    except Exception:  # noqa: BLE001, S110 - the task's own import raises the same error, with context
        pass
    gc.freeze()


def prefer_installed_pyspark() -> list[str]:
    """Take PySpark's own zips (`pyspark/python/lib/pyspark.zip`, `py4j-*-src.zip`) off `sys.path` when they
    belong to the pyspark this interpreter has installed, so the daemon and its workers import that same
    pyspark from its directory instead; return the entries taken off.

    Why: Spark puts the zips first on a Python worker's PYTHONPATH, and PySpark's worker calls
    `importlib.invalidate_caches()` for every task (`pyspark.worker_util.setup_spark_files`). A zip importer's
    `invalidate_caches` reads its whole zip directory again (5 ms for pyspark.zip's 1,485 entries), and there
    is one importer per package of pyspark imported from the zip (14-18): 70-80 ms of CPU per task, more
    than a 3 s run's own parse and write. A directory's importer only forgets a timestamp. Zips of another
    Spark (a SPARK_HOME whose pyspark is not the installed one) stay: the workers must match that JVM.
    """
    zips = [entry for entry in sys.path if entry.endswith(".zip")]
    if not zips:
        return []
    installed = PathFinder.find_spec("pyspark", [entry for entry in sys.path if not entry.endswith(".zip")])
    if installed is None or installed.origin is None:
        return []
    own_lib = Path(installed.origin).parent / "python" / "lib"
    dropped = [entry for entry in zips if Path(entry).parent == own_lib]
    sys.path[:] = [entry for entry in sys.path if entry not in dropped]
    for entry in dropped:  # the importers made while looking for kafkasim itself: invalidated all the same
        sys.path_importer_cache.pop(entry, None)
    return dropped


if __name__ == "__main__":
    prefer_installed_pyspark()
    preload()
    from pyspark import daemon

    daemon.manager()
