"""What the notebook generators share: cells -> a notebook with stable ids, and writing it.

The generators (make_*.py) hold each notebook's text; `uv run python notebooks/make_<name>.py` rewrites the
.ipynb, and tests/notebooks checks the committed notebook is exactly what its generator builds.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def build_notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """`cells` are ("md" | "code", text) pairs, in order."""
    nodes = [new_markdown_cell(text) if kind == "md" else new_code_cell(text) for kind, text in cells]
    for i, cell in enumerate(nodes):
        cell.id = f"cell-{i:02d}"  # stable ids: regenerating gives the same file
    notebook = new_notebook(cells=nodes)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def write_notebook(path: Path, notebook: nbformat.NotebookNode) -> None:
    nbformat.validate(notebook)
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    print(f"wrote {path}")
