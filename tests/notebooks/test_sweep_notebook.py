"""notebooks/sweep.ipynb runs headless from top to bottom on local[2] and shows its table and figures.

The notebook runs in its own kernel, so it starts its own JVM (the test session's shared SparkSession
cannot be handed to it); its sweep is kept tiny (12 runs of 2.5 simulated seconds) for that reason.
Skipped when pyspark or Java 17+ is missing, like the other Spark tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import NOTEBOOK_DIR, assert_generated, assert_stored_with_outputs, execute

NOTEBOOK = NOTEBOOK_DIR / "sweep.ipynb"
GENERATOR = NOTEBOOK_DIR / "make_sweep.py"


def test_notebook_is_what_the_generator_writes() -> None:
    assert_generated(NOTEBOOK, GENERATOR, outputs_stored=True)



def test_notebook_is_stored_with_its_outputs() -> None:
    assert_stored_with_outputs(NOTEBOOK)


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

    # timeout is per cell: the sweep cell starts a JVM on a possibly busy CI machine.
    outputs = execute(NOTEBOOK, tmp_path / "kernels", timeout=300)
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
