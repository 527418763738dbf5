"""kafkasim's CLI starts numpy with one BLAS thread: kafkasim does no linear algebra, and OpenBLAS's thread
pool, started when numpy is imported, cost ~0.1 CPU s of a ~3.4 CPU s quickstart run (measured)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .support import cli_env

_PROBE = """
import os, sys
import kafkasim.console.app as app
assert "numpy" not in sys.modules, "numpy imported before main() could choose its BLAS threads"
try:
    app.main(["schema", "--out", sys.argv[1]])
except SystemExit as e:
    assert not e.code, e.code
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def _probe(tmp_path: Path, **env: str) -> str:
    environment = {k: v for k, v in cli_env().items() if k != "OPENBLAS_NUM_THREADS"} | env
    done = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "schema.json")], capture_output=True,
                          text=True, env=environment, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_cli_asks_openblas_for_one_thread_before_numpy_starts(tmp_path: Path) -> None:
    assert _probe(tmp_path) == "1"


def test_a_users_own_setting_is_kept(tmp_path: Path) -> None:
    assert _probe(tmp_path, OPENBLAS_NUM_THREADS="3") == "3"
