"""notebooks/wheel_and_purgatory.ipynb runs headless, and the outputs stored with it are the ones it gives.

The notebook is committed with its outputs (it reads well on GitHub without running); it drives the timer,
the purgatory and the broker by hand on a ManualTime clock, so its outputs are the same on every run and
any drift in what the code does shows up here as a stale notebook.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from .support import NOTEBOOK_DIR, assert_generated, execute

NOTEBOOK = NOTEBOOK_DIR / "wheel_and_purgatory.ipynb"
GENERATOR = NOTEBOOK_DIR / "make_wheel_and_purgatory.py"


def texts(outputs: list) -> list[str]:
    return [o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs]


def test_notebook_is_what_the_generator_writes() -> None:
    assert_generated(NOTEBOOK, GENERATOR, outputs_stored=True)


def test_notebook_runs_and_its_stored_outputs_are_current(tmp_path: Path) -> None:
    outputs = execute(NOTEBOOK, tmp_path / "kernels", timeout=60)
    assert not [o for o in outputs if o.output_type == "error"]
    stored = nbformat.read(NOTEBOOK, as_version=4)
    stored_outputs = [o for cell in stored.cells if cell.cell_type == "code" for o in cell.outputs]
    # Compared as one text: a kernel on a busy machine may flush one cell's print()s as several stream outputs.
    assert "".join(texts(outputs)) == "".join(texts(stored_outputs)), (
        "notebooks/wheel_and_purgatory.ipynb's stored outputs are stale: "
        "run `uv run --extra dev python notebooks/make_wheel_and_purgatory.py`"
    )

    text = "".join(texts(outputs))
    # Placement: a 10 ms task in bucket index 10; a 30 s timeout on level 4.
    assert "10 ms: level 1, bucket 10, due at 10" in text
    assert "30000 ms: level 4, bucket  3, due at 24000" in text
    # The skip-level cascade and the cancel that empties the count at once but leaves the bucket queued.
    assert "640  demote      T1    L1          6  [700, 710)       1       1" in text
    assert "after:  None size 0, 1 buckets queued" in text
    # The two-phase watch: the append between the checks found nobody; the second check completed B.
    assert "append 100 bytes: checkAndComplete(tp-0) completed 0\n  B check 2: 200/200 bytes, complete" in text
    # DelayedProduce and DelayedFetch: two completions, two expirations.
    assert "5 ms  produce of offsets 0..9 answered: NONE" in text
    assert "20 ms  follower's fetch from 10 answered: NONE, 10 records, HW 10" in text
    assert "507 ms  consumer's fetch from 10 answered: NONE, 0 records, HW 10" in text
    assert "1020 ms  produce of offsets 10..19 answered: REQUEST_TIMED_OUT" in text
    assert "produce expirations 1, consumer fetch expirations 1" in text
