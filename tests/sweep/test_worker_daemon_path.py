"""The local workers import the installed pyspark, not PySpark's zips that Spark puts first on their path.

Defect: with pyspark imported from `pyspark/python/lib/pyspark.zip`, PySpark's per-task
`importlib.invalidate_caches()` re-read the zip's directory once per pyspark package imported from it
(70-80 ms of CPU per task, 0.6 s on a worker's first task)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkasim.sweep.daemon import prefer_installed_pyspark

pyspark = pytest.importorskip("pyspark")
PYSPARK_DIR = Path(pyspark.__file__).parent
ZIPS = sorted(str(z) for z in (PYSPARK_DIR / "python" / "lib").glob("*.zip"))

_PROBE = """
import importlib, json, sys
from kafkasim.sweep.daemon import prefer_installed_pyspark
dropped = prefer_installed_pyspark()
import pyspark, pyspark.worker
importlib.invalidate_caches()
zip_importers = sum(1 for v in sys.path_importer_cache.values() if type(v).__name__ == "zipimporter")
print(json.dumps({"dropped": dropped, "pyspark": pyspark.__file__, "zip_importers": zip_importers,
                  "other_zip_kept": "/elsewhere/spark/python/lib/pyspark.zip" in sys.path}))
"""


def test_the_daemon_takes_the_installed_pysparks_own_zips_off_the_path() -> None:
    if not ZIPS:
        pytest.skip("this pyspark has no python/lib zips")
    import json

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*ZIPS, "/elsewhere/spark/python/lib/pyspark.zip"]))
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert sorted(seen["dropped"]) == ZIPS
    assert ".zip" not in seen["pyspark"] and Path(seen["pyspark"]).parent == PYSPARK_DIR
    assert seen["zip_importers"] == 0
    assert seen["other_zip_kept"]  # another Spark's zip is that JVM's business


def test_nothing_to_do_without_zips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.endswith(".zip")])
    assert prefer_installed_pyspark() == []


@pytest.mark.spark
def test_a_local_sweeps_workers_run_the_installed_pyspark(spark: object) -> None:
    session: Any = spark
    files = session.sparkContext.parallelize([0, 1], 2).map(lambda _: __import__("pyspark").__file__).collect()
    assert all(".zip" not in f for f in files), files
    assert session.conf.get("spark.python.unix.domain.socket.enabled") == "true"
