"""What kafkasim says it is (its --help, its package docstring, its distribution's description) covers the
cluster: those three said "one Kafka broker" long after clusters and failover had landed."""

from __future__ import annotations

import tomllib

import kafkasim

from .support import REPO
from .support import kafkasim as run_kafkasim


def _descriptions() -> dict[str, str]:
    help_text = run_kafkasim("--help").stdout
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {"--help": " ".join(help_text.split()), "package docstring": kafkasim.__doc__ or "",
            "pyproject description": project["description"]}


def test_kafkasim_describes_itself_as_more_than_one_broker() -> None:
    for where, text in _descriptions().items():
        assert "one Kafka broker" not in text, where
        assert "cluster" in text, where


def test_help_examples_are_whole_at_80_columns() -> None:
    """Issue 23's trial: `run --help` at 80 columns cut its --set example to `producers[0].linger.…`."""
    import os
    import subprocess
    import sys

    from .support import cli_env

    for command in ("run", "report", "compare", "export", "trace", "sweep", "validate", "import-request-log"):
        done = subprocess.run([sys.executable, "-m", "kafkasim", command, "--help"], capture_output=True, text=True,
                              env={**cli_env(), "COLUMNS": "80"}, timeout=60, cwd=os.getcwd())
        assert done.returncode == 0, done.stderr
        assert "…" not in done.stdout, (command, done.stdout)
        assert max(map(len, done.stdout.splitlines())) <= 80, command
    run_help = subprocess.run([sys.executable, "-m", "kafkasim", "run", "--help"], capture_output=True, text=True,
                              env={**cli_env(), "COLUMNS": "80"}, timeout=60).stdout
    assert "--set producers[0].linger.ms=0" in run_help
