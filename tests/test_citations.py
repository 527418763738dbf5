"""Every citation in the repository can be followed by a reader who has only the repository.

Docstrings, comments, scenario descriptions, the JSON Schema, notebooks and docs cite Kafka's own classes
and methods (``DelayedProduce.tryComplete``, ``Partition.maybeShrinkIsr``) or a page under docs/; never a
section sign pointing into a specification document that is not in the repository. This test fails on any
section sign in a tracked text file, naming file:line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = (".py", ".md", ".yaml", ".yml", ".json", ".ipynb", ".toml")
SECTION_SIGN = "\u00a7"
# JSON files (the schema, notebooks) may store the sign escaped.
ESCAPED = "\\u00a7"
JSON_SUFFIXES = (".json", ".ipynb")


def section_citations(path: Path, text: str) -> list[str]:
    """`path:line: text` for every line of `text` that holds a section sign (plain or JSON-escaped)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if SECTION_SIGN in line or (path.suffix in JSON_SUFFIXES and ESCAPED in line.lower()):
            found.append(f"{path}:{number}: {line.strip()[:120]}")
    return found


def tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    return [Path(name) for name in listed.split("\0") if name.endswith(SUFFIXES)]


def test_the_check_finds_a_spec_citation_and_names_its_line() -> None:
    text = f"first line\n# Completed when the HW moves (spec {SECTION_SIGN}3.2).\nlast line\n"
    assert section_citations(Path("kafkasim/x.py"), text) == [
        f"kafkasim/x.py:2: # Completed when the HW moves (spec {SECTION_SIGN}3.2)."
    ]
    assert section_citations(Path("s.yaml"), f"  see {SECTION_SIGN}13 rule 8\n") == [
        f"s.yaml:1: see {SECTION_SIGN}13 rule 8"
    ]
    assert section_citations(Path("k.json"), '{"description": "spec \\u00a76.3"}') != []
    assert section_citations(Path("ok.py"), "# Kafka's Partition.maybeIncrementLeaderHW\n") == []
    # In Python source the escape is how a test names the sign without writing it.
    assert section_citations(Path("t.py"), 'assert "spec \\u00a7" not in text') == []


def test_no_tracked_text_file_cites_a_section_of_a_document_outside_the_repository() -> None:
    files = tracked_text_files()
    assert any(f.suffix == ".py" for f in files), "git ls-files listed no Python file: wrong root?"
    found = []
    for relative in files:
        path = ROOT / relative
        if not path.is_file():  # deleted in the work tree but still tracked
            continue
        found += section_citations(relative, path.read_text(encoding="utf-8", errors="replace"))
    assert not found, (
        "cite Kafka's class and method (e.g. DelayedProduce.tryComplete) or a page under docs/, not a "
        "section of a document that is not in the repository:\n" + "\n".join(found)
    )
