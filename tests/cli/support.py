"""Running the kafkasim command line as a user does: a subprocess, 100 columns, no colour."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "scenarios" / "quickstart.yaml"
SHIPPED_SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))
SCHEMA_FILE = REPO / "kafkasim.schema.json"
BROKEN_BROKER = Path(__file__).with_name("broken_broker.py")
# A short quickstart: 2 s simulated, 0.5 s warm-up.
SHORT = ["--set", "duration=2s", "--set", "warmup=500ms"]


def cli_env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "PYTHONPATH": str(REPO)}


def kafkasim(*args: str | Path, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkasim", *map(str, args)],
        capture_output=True, text=True, env=cli_env(), cwd=cwd, timeout=timeout,
    )


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr


def call(*args: str | Path) -> int:
    """kafkasim's entry point in this process (no Python start-up): the exit code it would give."""
    from kafkasim.console.app import main

    try:
        main([str(a) for a in args])
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def ran(directory: Path, scenario_yaml: str, name: str = "run") -> Path:
    """``kafkasim run`` of a scenario given as text (written beside the result in ``directory``): the result
    directory, without figures."""
    scenario = directory / f"{name}.yaml"
    scenario.write_text(scenario_yaml)
    out = directory / name
    assert call("run", scenario, "--out", out, "--no-figures", "--no-progress") == 0
    return out
