"""The progress bar of `kafkasim run`: simulated time against the scenario's duration, on stderr.

Driven by the engine's progress callback (at most ~10 calls per wall second, on the engine's own thread),
so the bar never reads engine state from another thread. It appears only once a run has taken longer than
`show_after_s` of wall time: a quick run prints no bar at all.
"""

from __future__ import annotations

from time import monotonic

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from kafkasim.console.format import seconds

SHOW_AFTER_S = 1.0


class RunProgress:
    """A callable `progress(sim_now_ms, duration_ms)` for `Engine`; `close()` removes nothing, it just stops."""

    def __init__(self, console: Console, label: str, *, show_after_s: float = SHOW_AFTER_S) -> None:
        self._console = console
        self._label = label
        self._show_after_s = show_after_s
        self._started_wall = monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def __call__(self, sim_now_ms: float, duration_ms: float) -> None:
        wall = monotonic() - self._started_wall
        if self._progress is None:
            if wall < self._show_after_s:
                return
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[sim]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[rate]}"),
                console=self._console,
                auto_refresh=False,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._label, total=duration_ms, sim="", rate="")
        assert self._task is not None
        rate = sim_now_ms / wall if wall > 0 else 0.0  # simulated ms per wall second
        self._progress.update(
            self._task,
            completed=min(sim_now_ms, duration_ms),
            sim=f"{seconds(sim_now_ms)} / {seconds(duration_ms)} simulated",
            rate=f"{rate:,.0f} sim-ms/s",
        )
        self._progress.refresh()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
