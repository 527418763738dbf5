"""What the notebook tests share: a kernel on this very interpreter, running a notebook, staleness."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import psutil
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from kafkasim.real.processes import alive

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
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


def without_outputs(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `notebook` with every code cell's outputs and execution count cleared."""
    copy = nbformat.from_dict(notebook)
    for cell in copy.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return copy


def assert_generated(notebook: Path, generator: Path, *, outputs_stored: bool = False) -> None:
    """The committed notebook is exactly what its generator script builds (so edits go to the script).

    `outputs_stored`: the notebook is committed with its outputs; its cells, outputs aside, must be the
    generator's (the test that executes it checks the outputs)."""
    spec = importlib.util.spec_from_file_location(generator.stem, generator)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # A generator imports its sibling notebook_builder, as it does when run as a script from notebooks/.
    sys.path.insert(0, str(generator.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(generator.parent))
    committed = notebook.read_text(encoding="utf-8")
    if outputs_stored:
        committed = nbformat.writes(without_outputs(nbformat.reads(committed, as_version=4)))
    assert committed == nbformat.writes(module.build()), (
        f"notebooks/{notebook.name} is stale: run `uv run python notebooks/{generator.name}`"
    )


def assert_stored_with_outputs(notebook: Path) -> None:
    """Viewed without running it (on a code host, in a file browser), it shows what it computes: every
    code cell that prints or draws has its output stored (make_*.py runs it before saving)."""
    stored = nbformat.read(notebook, as_version=4)
    code = [cell for cell in stored.cells if cell.cell_type == "code"]
    with_output = [cell for cell in code if cell.outputs]
    assert len(with_output) >= len(code) - 2, f"{len(with_output)} of {len(code)} code cells have outputs"
    assert not [o for cell in code for o in cell.outputs if o.output_type == "error"]


def execute(notebook_path: Path, kernels_dir: Path, *, timeout: int, wait_s: float = 30.0) -> list[Any]:
    """Run the notebook headless from the notebooks folder; return every code cell's outputs. The kernel is
    shut down after it, and every process it started must end with it (a Spark JVM, the sweep's workers) within
    `wait_s`.

    Raises CellExecutionError, with the cell and its traceback, if any cell fails."""
    notebook = nbformat.read(notebook_path, as_version=4)
    km = kernel_manager(kernels_dir)
    client = NotebookClient(
        notebook,
        km=km,
        timeout=timeout,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    try:
        client.execute()
    finally:
        # nbclient shuts down only a kernel it created itself (NotebookClient.owns_km): one given to it kept
        # running, with the sweep notebook's Spark JVM, for the rest of the pytest worker's session.
        left = _shut_down(km, wait_s)
    assert not left, f"processes the notebook's kernel started outlived it (stopped now): {left}"
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


def _shut_down(km: KernelManager, wait_s: float) -> list[str]:
    """Shut the kernel down; the processes of its tree still running `wait_s` later, each stopped then (by
    process id, SIGKILL)."""
    pid = getattr(km.provisioner, "pid", None) if km.has_kernel else None
    if pid is None:
        return []
    tree = [pid, *_descendants(pid)]
    km.shutdown_kernel(now=False)
    deadline = time.monotonic() + wait_s
    while (running := alive(tree)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [f"{p} {_command(p)}" for p in running]
    for p in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while alive(running) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _command(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())[:120]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "?"
