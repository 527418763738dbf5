"""notebooks/quickstart.ipynb runs headless from top to bottom (so it never rots) and shows its figures."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOK = NOTEBOOK_DIR / "quickstart.ipynb"
GENERATOR = NOTEBOOK_DIR / "make_quickstart.py"
KERNEL = "kafkasim-test-python"


def kernel_manager(kernels_dir: Path) -> KernelManager:
    """A kernel running this very interpreter (the uv venv), whatever kernel specs the machine has:
    the notebook's `python3` spec would resolve `python` on PATH, which on a fresh CI machine may be
    another Python without kafkasim."""
    spec = kernels_dir / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "kafkasim tests",
                "language": "python",
            }
        )
    )
    specs = KernelSpecManager(kernel_dirs=[str(kernels_dir)], ensure_native_kernel=False)
    return KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


def test_notebook_is_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("make_quickstart", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert NOTEBOOK.read_text(encoding="utf-8") == nbformat.writes(module.build()), (
        "notebooks/quickstart.ipynb is stale: run `uv run python notebooks/make_quickstart.py`"
    )


def test_notebook_runs_and_shows_its_figures(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        km=kernel_manager(tmp_path / "kernels"),
        timeout=180,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails

    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) == 4, "latency percentiles, breakdown, HW/LEO and swimlane figures"
    assert all(len(o["data"]["image/png"]) > 10_000 for o in images)

    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "What to look for" in text  # the scenario's description was printed
    # The summary table names Kafka's RequestMetrics phases.
    tables = "".join(o["data"].get("text/plain", "") for o in outputs if o.output_type == "execute_result")
    assert "RequestQueueTimeMs" in tables and "RemoteTimeMs" in tables
    # Wall-clock pacing for 300 simulated ms took at least that long, and changed nothing.
    paced = re.search(r"with 300 ms paced: ([0-9.]+) s", text)
    assert paced and float(paced.group(1)) >= 0.3
    assert "same requests, same timings: True" in text
