"""notebooks/quickstart.ipynb runs headless from top to bottom (so it never rots) and shows its figures."""

from __future__ import annotations

import re
from pathlib import Path

from .support import NOTEBOOK_DIR, assert_generated, assert_stored_with_outputs, execute

NOTEBOOK = NOTEBOOK_DIR / "quickstart.ipynb"
GENERATOR = NOTEBOOK_DIR / "make_quickstart.py"


def test_notebook_is_what_the_generator_writes() -> None:
    assert_generated(NOTEBOOK, GENERATOR, outputs_stored=True)



def test_notebook_is_stored_with_its_outputs() -> None:
    assert_stored_with_outputs(NOTEBOOK)


def test_notebook_runs_and_shows_its_figures(tmp_path: Path) -> None:
    outputs = execute(NOTEBOOK, tmp_path / "kernels", timeout=180)
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
