"""docs/timing-wheel.md stays true: every command it shows is run, and every output line it quotes must
appear in the real output, in the same order (`...` marks lines the doc left out)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "timing-wheel.md"
PREFIX = "$ uv run kafkasim "


def examples() -> list[tuple[str, list[str]]]:
    """(command after `kafkasim`, quoted output lines) for every ```console block of the doc."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        command, *quoted = block.rstrip("\n").split("\n")
        assert command.startswith(PREFIX), f"a console block must start with {PREFIX!r}: {command!r}"
        out.append((command.removeprefix(PREFIX), [line for line in quoted if line != "..."]))
    return out


EXAMPLES = examples()


def test_the_doc_shows_every_fact_it_promises() -> None:
    commands = [command for command, _ in EXAMPLES]
    for command in (
        "wheel --add 10 --add 8@2",
        "wheel --tick-ms 10 --wheel-size 8 --add 700",
        "wheel --add 500",
        "wheel --add 350",
        "wheel --add 30000 --complete T1@5",
    ):
        assert command in commands


@pytest.mark.parametrize(("command", "quoted"), EXAMPLES, ids=[command for command, _ in EXAMPLES])
def test_every_quoted_line_is_in_the_real_output_in_order(command: str, quoted: list[str]) -> None:
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "kafkasim", *shlex.split(command)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    position = 0
    for line in quoted:
        try:
            position = lines.index(line.rstrip(), position) + 1
        except ValueError:
            pytest.fail(f"`kafkasim {command}` no longer prints, at this point:\n{line}\n\nIt printed:\n{result.stdout}")
