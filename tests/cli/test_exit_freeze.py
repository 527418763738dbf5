"""The `kafkasim` program freezes the objects alive at its end (gc.freeze) so that Python's shutdown does not
run full collections over every module's objects (~0.1-0.15 CPU s of a ~1.3 CPU s quickstart run, measured);
`main`, which tests and notebooks call in a process that goes on, freezes nothing."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from .support import REPO, cli_env

# atexit handlers run after `program` has returned (or raised SystemExit) and before the shutdown's collections.
_PROBE = """
import atexit, gc, sys
from kafkasim.console import app
atexit.register(lambda: print("frozen", gc.get_freeze_count(), file=sys.stderr))
entry = getattr(app, sys.argv[1])  # app.program or app.main, reading the command line as the program does
sys.argv = ["kafkasim", *sys.argv[2:]]
entry()
"""


def _frozen_at_exit(entry: str, *args: str) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", _PROBE, entry, *args], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    line = [x for x in done.stderr.splitlines() if x.startswith("frozen ")]
    assert line, done.stderr
    return done.returncode, int(line[-1].split()[1])


def test_the_program_freezes_what_is_alive_at_its_end() -> None:
    code, frozen = _frozen_at_exit("program", "--version")
    assert code == 0
    assert frozen > 10_000  # the modules' objects: what the shutdown's collections would have walked


def test_the_program_freezes_also_when_it_exits_with_an_error(tmp_path: Path) -> None:
    code, frozen = _frozen_at_exit("program", "validate", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert frozen > 10_000


def test_main_freezes_nothing() -> None:
    code, frozen = _frozen_at_exit("main", "--version")
    assert code == 0
    assert frozen == 0


def test_the_console_script_and_python_dash_m_run_the_program() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"kafkasim": "kafkasim.console.app:program"}
    assert "program()" in (REPO / "kafkasim" / "__main__.py").read_text(encoding="utf-8")
