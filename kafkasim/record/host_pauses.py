"""One host's stop-the-world pauses in a window, and what is said of them: how many, how often, their total, the
share of the window they took, their median and longest. A real run's JVMs' garbage collections
(kafkasim.real.gc_log, in its run-info.json) and `kafkasim compare`'s rows (kafkasim.report.pauses, a simulated
run's stalls beside a real run's collections) are both these statistics of the pauses that began in the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HostPauses:
    """One host's pauses in a window of ``span_ms``."""

    host: str
    durations_ms: np.ndarray
    span_ms: float

    @property
    def count(self) -> int:
        return len(self.durations_ms)

    @property
    def per_second(self) -> float:
        return self.count / (self.span_ms / 1000.0) if self.span_ms > 0 else float("nan")

    @property
    def share(self) -> float:
        return float(self.durations_ms.sum()) / self.span_ms if self.span_ms > 0 else float("nan")

    @property
    def p50_ms(self) -> float:
        return float(np.median(self.durations_ms)) if self.count else float("nan")

    @property
    def max_ms(self) -> float:
        return float(self.durations_ms.max()) if self.count else float("nan")

    def statistics(self) -> dict[str, int | float | None]:
        """The statistics, rounded as the result files keep them: None where there is nothing to say (no pause,
        an empty window)."""
        def finite(value: float, digits: int) -> float | None:
            return round(value, digits) if np.isfinite(value) else None

        return {"count": self.count, "per_second": finite(self.per_second, 4),
                "total_ms": round(float(self.durations_ms.sum()), 3), "share_of_time": finite(self.share, 5),
                "p50_ms": finite(self.p50_ms, 3), "max_ms": finite(self.max_ms, 3)}

    def as_json(self) -> dict[str, str | int | float | None]:
        """compare.json's row: the host and its statistics but the total."""
        return {"host": self.host} | {k: v for k, v in self.statistics().items() if k != "total_ms"}
