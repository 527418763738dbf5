"""`kafkasim plot --per-partition`: the replication figures partition by partition for a run with many."""

from __future__ import annotations

import struct
from pathlib import Path

from kafkasim.run.engine import run_scenario
from tests.cli.support import call
from tests.engine.support import scenario


def _png_height(path: Path) -> int:
    return int(struct.unpack(">II", path.read_bytes()[16:24])[1])  # IHDR: width, height


def test_plot_aggregates_many_partitions_and_draws_each_on_request(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_scenario(scenario(duration="600ms", warmup="100ms", topic={"partitions": 10})).save(out)
    assert call("plot", out) == 0
    aggregated = _png_height(out / "figures" / "log_offsets.png")
    assert call("plot", out, "--per-partition") == 0
    each = _png_height(out / "figures" / "log_offsets.png")
    assert each > 4 * aggregated  # ten partitions' panels, one above the other
