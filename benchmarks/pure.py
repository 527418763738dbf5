"""Run a benchmark (or any script) against the pure-Python build of this checkout, while the compiled build
stays installed: the script's command line runs with a copy of kafkasim/ without its extension modules
first on PYTHONPATH (its subprocesses inherit it).

    uv run python benchmarks/pure.py benchmarks/engine_bench.py --quick
    uv run python benchmarks/pure.py benchmarks/purgatory_bench.py --quick

Each benchmark prints which build it measured (``kafkasim.compiled.describe()``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    with tempfile.TemporaryDirectory(prefix="kafkasim-pure-") as scratch:
        shutil.copytree(ROOT / "kafkasim", Path(scratch) / "kafkasim",
                        ignore=shutil.ignore_patterns("*.so", "__pycache__", "_compiled.json"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [scratch, os.environ.get("PYTHONPATH")]))}
        return subprocess.run([sys.executable, *argv], env=env, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
