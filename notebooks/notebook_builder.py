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


def execute_notebook(notebook: nbformat.NotebookNode, cwd: Path, *, timeout: int = 120) -> nbformat.NotebookNode:
    """Run `notebook` in a kernel on this very interpreter, from `cwd`, and return it with its outputs.

    For notebooks stored with their outputs (so they read well where they are viewed without running
    them). No timing metadata is recorded, so a deterministic notebook gives the same file every time.
    """
    import copy
    import json
    import sys
    import tempfile

    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory() as kernels:
        # A kernel spec naming sys.executable: the machine's `python3` spec may be another Python.
        spec = Path(kernels) / "kafkasim-notebook"
        spec.mkdir()
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "kafkasim", "language": "python"}))
        specs = KernelSpecManager(kernel_dirs=[kernels], ensure_native_kernel=False)
        manager = KernelManager(kernel_name="kafkasim-notebook", kernel_spec_manager=specs)
        client = NotebookClient(
            notebook, km=manager, timeout=timeout, record_timing=False, resources={"metadata": {"path": str(cwd)}}
        )
        metadata = copy.deepcopy(notebook.metadata)
        client.execute()
    notebook.metadata = metadata  # not the kernel's language_info: it names this machine's Python version
    return notebook
