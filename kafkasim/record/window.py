"""A time window of a saved run: what ``kafkasim report|compare|export|trace RUN_DIR --from T --to T`` read.

The rows are cut by the rules the run's phases use (``kafkasim.record.phases``): a request belongs to the
window it was sent in (``client_send_ms``; a request read from a real broker's log without one, to the one
it arrived in), a batch to the window its first record was meant to be sent in (``first_intended_ms``: a
batch that waited out a fault in the accumulator counts where it was meant to go, not where it finally
went), a gauge sample or a segment roll to the window it was taken in, a stall to the window it began in, a
TCP retransmission to the window it happened in. The summary is computed again from the rows kept, by the run's own rules (``kafkasim.record.summary.summarize``: the run's warm-up still left
out), its phases clipped to the window and its failovers those that began in it. The run's counters (ISR
shrinks and expands, purgatory expirations, dropped messages) are whole-run totals the rows cannot cut: a
window's summary leaves them out and says so under ``window``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.record.phases import Phase
from kafkasim.record.result import RunResult
from kafkasim.record.stalls import stalls_summary
from kafkasim.record.summary import summarize


class WindowError(ValueError):
    """A window that cannot be cut from the run: the message says what is wrong and what is allowed."""


@dataclass(frozen=True)
class Window:
    from_ms: float
    to_ms: float

    @property
    def label(self) -> str:
        """'20s-30s', '1.5s-2.25s', '250ms-900ms': for directory names and titles."""
        return f"{_short(self.from_ms)}-{_short(self.to_ms)}"

    def describe(self) -> str:
        return f"{_short(self.from_ms)} to {_short(self.to_ms)}"


def _short(ms: float) -> str:
    if ms >= 1000.0 and ms % 1.0 == 0.0:
        return f"{ms / 1000.0:g}s"
    return f"{ms:g}ms"


def window_of(result: RunResult, from_text: str | None, to_text: str | None) -> Window | None:
    """The window `--from` / `--to` ask for (either may be left out: the run's start or end), or None when
    neither is given. Durations as a scenario writes them ('20s', '1500ms')."""
    if from_text is None and to_text is None:
        return None
    from kafkasim.scenario.units import parse_duration

    end_ms = float(result.summary.get("simulated_duration_ms") or 0.0)
    bounds: list[float] = []
    for option, text, default in (("--from", from_text, 0.0), ("--to", to_text, end_ms)):
        if text is None:
            bounds.append(default)
            continue
        try:
            bounds.append(parse_duration(text))
        except ValueError as exc:
            raise WindowError(f"{option} {text}: {exc}; write a time from the run's start, e.g. 20s or "
                              "1500ms") from None
    start, end = bounds
    if end_ms and start >= end_ms:
        raise WindowError(f"--from {_short(start)}: the run lasted {_short(end_ms)}; allowed: a start before "
                          "its end")
    if end <= start:
        raise WindowError(f"--from {_short(start)} --to {_short(end)}: the window must end after it starts")
    return Window(start, min(end, end_ms) if end_ms else end)


def _between(values: np.ndarray, window: Window) -> np.ndarray:
    return (values >= window.from_ms) & (values < window.to_ms)


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return frame[column].to_numpy(dtype=float, na_value=np.nan)


def _began(failover: dict[str, Any]) -> float:
    """When a failover began: its fault, else the fence, else the election (a preferred leader's return)."""
    for key in ("fault_ms", "fenced_ms", "elected_ms"):
        value = failover.get(key)
        if value is not None:
            return float(value)
    return float("nan")


def windowed(result: RunResult, window: Window) -> RunResult:
    """The run cut to `window` (see the module doc), as a result the report, compare, export and trace read."""
    requests = result.requests
    sent = _floats(requests, "client_send_ms")
    sent = np.where(np.isnan(sent), _floats(requests, "start_ms"), sent)
    requests = requests[_between(sent, window)].reset_index(drop=True)
    records = result.records
    records = records[_between(_floats(records, "first_intended_ms"), window)].reset_index(drop=True)
    timeseries = result.timeseries
    sampled = _floats(timeseries, "time_ms")
    timeseries = timeseries[(sampled >= window.from_ms) & (sampled <= window.to_ms)].reset_index(drop=True)
    segments = result.segments
    rolled = _floats(segments, "time_ms")
    segments = segments[(rolled >= window.from_ms) & (rolled <= window.to_ms)].reset_index(drop=True)
    summary = result.summary
    per_client = summary.get("per_client") or {}
    phases = [Phase(str(p["name"]), max(float(p["from_ms"]), window.from_ms), min(float(p["to_ms"]), window.to_ms))
              for p in summary.get("phases") or ()
              if float(p["from_ms"]) < window.to_ms and float(p["to_ms"]) > window.from_ms]
    cut: dict[str, Any] = summarize(
        requests, records, seed=summary.get("seed"),
        simulated_duration_ms=float(summary.get("simulated_duration_ms") or window.to_ms),
        warmup_ms=float(summary.get("warmup_ms") or 0.0),
        producers=list(per_client.get("producers") or {}) or None,
        consumers=list(per_client.get("consumers") or {}) or None,
        timeseries=timeseries, phases=phases,
    )
    del cut["counters"]
    failovers = [f for f in summary.get("failovers") or () if window.from_ms <= _began(f) < window.to_ms]
    if failovers:
        cut["failovers"] = failovers
    cut["window"] = {
        "from_ms": window.from_ms,
        "to_ms": window.to_ms,
        "note": "rows cut to the window; the run's counters (ISR changes, purgatory expirations, dropped "
                "messages) are whole-run totals and left out: see the run's own summary",
    }
    stalls = result.stalls
    if stalls is not None:  # the stalls that began in the window
        began = _floats(stalls, "start_ms")
        stalls = stalls[(began >= window.from_ms) & (began < window.to_ms)].reset_index(drop=True)
        cut["stalls"] = stalls_summary(stalls, window.to_ms)
    retransmissions = result.retransmissions
    if retransmissions is not None:
        at = _floats(retransmissions, "time_ms")
        retransmissions = retransmissions[(at >= window.from_ms) & (at < window.to_ms)].reset_index(drop=True)
    return RunResult(requests, records, timeseries, cut, result.scenario_yaml, result.run_info, segments=segments,
                     stalls=stalls, retransmissions=retransmissions)
