"""The sweep's Python worker daemon (local masters) imports the engine once and freezes what that made
before it forks workers, so that their collections never walk (or write to) the preloaded modules."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import gc, sys
from kafkasim.sweep.daemon import preload
assert gc.get_freeze_count() == 0
preload()
assert "kafkasim.run.engine" in sys.modules and "kafkasim.sweep.task" in sys.modules
print(gc.get_freeze_count())
"""


def test_preload_imports_the_engine_and_freezes_it() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 10_000
