"""The README's first lines are the contract with a newcomer; .ci/run must run its test command verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README.md must open with a ```bash block holding the two commands"
    return [line.split("#")[0].strip() for line in block.group(1).strip().splitlines()]


def test_readme_opens_with_two_commands() -> None:
    cmds = readme_commands()
    assert len(cmds) == 2
    assert "kafkasim" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_cmd = readme_commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines
