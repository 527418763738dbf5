"""The notebook tests' kernels end with each test, and so does everything they started (tests/notebooks/support.py):
nbclient shuts down only a kernel it created, and the sweep notebook's kernel and its Spark JVM used to outlive
their test for the rest of the pytest worker's session."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from kafkasim.real.processes import alive
from tests.notebooks.support import execute


def _notebook(tmp_path: Path, source: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    path = tmp_path / "cell.ipynb"
    nbformat.write(notebook, path)
    return path


def _printed(outputs: list) -> int:
    return int("".join(o.get("text", "") for o in outputs).split()[0])


def test_the_kernel_ends_with_the_run(tmp_path: Path) -> None:
    outputs = execute(_notebook(tmp_path, "import os\nprint(os.getpid(), flush=True)"), tmp_path / "kernels",
                      timeout=60)
    assert alive([_printed(outputs)]) == []


def test_a_process_the_kernel_left_running_is_reported_and_stopped(tmp_path: Path) -> None:
    # In a session of its own: jupyter_client's shutdown stops the kernel's process group, not this.
    path = _notebook(tmp_path, "import subprocess\n"
                               "print(subprocess.Popen(['sleep', '600'], start_new_session=True).pid, flush=True)")
    with pytest.raises(AssertionError, match="outlived it") as failed:
        execute(path, tmp_path / "kernels", timeout=60, wait_s=2.0)
    child = int(str(failed.value).split("[")[1].split()[0].strip("'"))
    assert "sleep 600" in str(failed.value) and alive([child]) == []
