"""Selecting the rows a figure is about: after warm-up, per API, per acks, per time-series metric."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.report.skip import SkipFigure

# Kafka's wire values for the producer's acks; -1 is what `acks=all` sends.
ACKS_NAMES = {-1: "all", 0: "0", 1: "1"}


def warmup_ms(summary: Mapping[str, Any] | None) -> float:
    """The warm-up length recorded in the summary; 0 when the run had none."""
    if not summary:
        return 0.0
    value = summary.get("warmup_ms", 0.0)
    try:
        warmup = float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0
    return warmup if np.isfinite(warmup) and warmup > 0 else 0.0


def require_columns(frame: pd.DataFrame | None, columns: Iterable[str], what: str) -> pd.DataFrame:
    """The frame, or SkipFigure naming the missing columns (an empty frame is also a reason to skip)."""
    if frame is None or frame.empty:
        raise SkipFigure(f"no {what}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SkipFigure(f"{what} lack column(s) {', '.join(missing)}")
    return frame


def after_warmup(requests: pd.DataFrame, warmup: float) -> pd.DataFrame:
    """Requests the client sent at or after the warm-up (the summary's rule for latency figures). A table read
    from a real broker's request log has no client send times: there the broker's arrival time stands in."""
    if warmup <= 0 or "client_send_ms" not in requests.columns:
        return requests
    sent = requests["client_send_ms"].to_numpy(dtype=float, na_value=np.nan)
    if len(sent) and np.isnan(sent).all() and "start_ms" in requests.columns:
        sent = requests["start_ms"].to_numpy(dtype=float, na_value=np.nan)
    return requests[sent >= warmup]


def finite(values: pd.Series) -> np.ndarray:
    """The series as floats without NaN (a timestamp or latency the request never reached)."""
    array = values.to_numpy(dtype=float, na_value=np.nan)
    return array[np.isfinite(array)]


def acks_value(value: Any) -> int | None:
    """-1, 0 or 1 from an acks cell holding a number, "all", or a null (fetch rows)."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        return -1 if text == "all" else int(text)
    return int(value)


def acks_column(frame: pd.DataFrame) -> pd.Series:
    """The acks column as nullable integers, whatever encoding the writer used."""
    return frame["acks"].map(acks_value).astype("Int64")


def acks_label(acks: int) -> str:
    return f"acks={ACKS_NAMES.get(acks, str(acks))}"


def metric(timeseries: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rows of one gauge, entity as str, sorted by entity then time (the order step lines need)."""
    rows = timeseries[timeseries["metric"].astype(str) == name]
    rows = rows.assign(entity=rows["entity"].astype(str))
    return rows.sort_values(["entity", "time_ms"], kind="stable")


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort "orders-10" after "orders-2" and "replica-10" after "replica-2"."""
    parts: list[Any] = []
    for chunk in name.replace("/", "-").split("-"):
        parts.append((0, int(chunk), "") if chunk.isdigit() else (1, 0, chunk))
    return tuple(parts)
