"""notebooks/sweep.ipynb runs headless from top to bottom on local[2] and shows its table and figures.

The notebook runs in its own kernel, so it starts its own JVM (the test session's shared SparkSession
cannot be handed to it); its sweep is kept tiny (12 runs of 2.5 simulated seconds) for that reason.
Skipped when pyspark or Java 17+ is missing, like the other Spark tests.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOK = NOTEBOOK_DIR / "sweep.ipynb"
GENERATOR = NOTEBOOK_DIR / "make_sweep.py"
KERNEL = "kafkasim-test-python"


def kernel_manager(kernels_dir: Path) -> KernelManager:
    """A kernel running this very interpreter (the uv venv), whatever kernel specs the machine has.

    The notebook's `python3` spec would resolve `python` on PATH, which on a fresh CI machine may be
    another Python without kafkasim. (Same approach as test_quickstart_notebook.py.)
    """
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
    spec = importlib.util.spec_from_file_location("make_sweep", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert NOTEBOOK.read_text(encoding="utf-8") == nbformat.writes(module.build()), (
        "notebooks/sweep.ipynb is stale: run `uv run python notebooks/make_sweep.py`"
    )


@pytest.mark.spark
@pytest.mark.slow
def test_notebook_runs_a_sweep_and_shows_table_and_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    from kafkasim.sweep.java import JavaNotFoundError, check_java

    try:
        check_java()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    runs = tmp_path / "runs"
    monkeypatch.setenv("KAFKASIM_NOTEBOOK_RUNS", str(runs))  # inherited by the kernel: nothing in the repo

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        km=kernel_manager(tmp_path / "kernels"),
        timeout=300,  # per cell; the sweep cell starts a JVM on a possibly busy CI machine
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails

    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "4 variants x 3 seeds = 12 runs" in text
    assert "12/12 runs succeeded" in text

    # The variant table: parameters, runs ok, and p99 as mean ± CI half-width for each metric.
    tables = [o["data"]["text/plain"] for o in outputs if o.output_type == "execute_result"]
    variant_table = next(t for t in tables if "runs ok" in t)
    assert "TotalTimeMs [Produce]" in variant_table and "produce_latency_ms" in variant_table
    assert variant_table.count("3/3") == 4 and "±" in variant_table

    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) == 4, "three line figures and one heatmap"
    assert all(len(o["data"]["image/png"]) > 10_000 for o in images)

    # The sweep wrote a complete result where the notebook said, and the numbers show what the
    # markdown claims: acks=all Produce waits for the followers, acks=1 does not.
    from kafkasim.sweep import read_manifest

    out = runs / "sweeps" / "notebook" / "linger_x_acks"
    manifest = read_manifest(out)
    assert manifest["master"] == "local[2]" and manifest["succeeded"] == 12
    import pandas as pd

    per_variant = pd.read_csv(out / "per_variant.csv")
    p50 = per_variant[
        (per_variant["metric"] == "TotalTimeMs") & (per_variant["group"] == "Produce") & (per_variant["stat"] == "p50")
    ]
    by_acks = p50.groupby(p50["producers[0].acks"].astype(str))["mean"].mean()
    assert by_acks["all"] > by_acks["1"] + 0.5
