"""Numbers as a terminal table shows them: milliseconds with about four significant digits, times in s."""

from __future__ import annotations

import math


def ms(value: float | int | None) -> str:
    """A latency in ms: `0.081`, `4.615`, `12.35`, `123.4`, `4451`; `-` when there is none."""
    if value is None or not math.isfinite(value):
        return "-"
    v = float(value)
    magnitude = abs(v)
    if magnitude < 10:
        return f"{v:.3f}"
    if magnitude < 100:
        return f"{v:.2f}"
    if magnitude < 1000:
        return f"{v:.1f}"
    return f"{v:.0f}"


def seconds(value_ms: float | int | None) -> str:
    """A span of simulated or wall time given in ms, shown in seconds: `1.204 s`, `30 s`."""
    if value_ms is None or not math.isfinite(value_ms):
        return "-"
    s = float(value_ms) / 1000.0
    if s == int(s):
        return f"{int(s)} s"
    return f"{s:.3f} s"


def count(value: float | int | None) -> str:
    return "-" if value is None else f"{int(value):,}"
