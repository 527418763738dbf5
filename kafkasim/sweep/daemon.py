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


if __name__ == "__main__":
    preload()
    from pyspark import daemon

    daemon.manager()
