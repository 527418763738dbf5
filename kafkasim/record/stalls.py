"""The stalls table (`stalls.parquet`, in a result whose scenario has stalls on): one row per stall of a host
(``kafkasim.run.stalls``), and its summary (`stalls` in summary.json).

Columns: `host` (``broker-<id>`` or a client's name), `start_ms`, `duration_ms` (as drawn: a stall still in force
at the end of the run, or cut short by its broker's crash, keeps its whole duration here; the summary counts
only the part before the end of the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

STALLS_FILE = "stalls.parquet"


def stalls_frame(rows: Sequence[tuple[str, float, float]]) -> pd.DataFrame:
    """The stalls table from (host, start_ms, duration_ms) rows, in the order the stalls started."""
    return pd.DataFrame({
        "host": pd.Series([r[0] for r in rows], dtype=object),
        "start_ms": pd.Series([r[1] for r in rows], dtype="float64"),
        "duration_ms": pd.Series([r[2] for r in rows], dtype="float64"),
    })


def stalls_summary(stalls: pd.DataFrame, end_ms: float) -> dict[str, Any]:
    """Stalls started before ``end_ms``: how many, the time stalled (up to ``end_ms``) and the longest, in all
    and per host."""
    frame = stalls[stalls["start_ms"] < end_ms]
    stalled = (frame["start_ms"] + frame["duration_ms"]).clip(upper=end_ms) - frame["start_ms"]

    def figures(mask: pd.Series) -> dict[str, Any]:
        return {"count": int(mask.sum()), "stalled_ms": float(stalled[mask].sum()),
                "max_ms": float(frame["duration_ms"][mask].max()) if mask.any() else 0.0}

    everything = pd.Series(True, index=frame.index)
    return {**figures(everything),
            "hosts": {str(host): figures(frame["host"] == host) for host in sorted(set(frame["host"]))}}
