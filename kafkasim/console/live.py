"""`kafkasim run --live`: a terminal view of the running broker, refreshed about four times a second.

It shows what an operator would watch on a real broker: per partition the high watermark, every replica's
log end offset and the ISR; the purgatories' sizes; the request and response queues; and TotalTimeMs
percentiles of the requests that finished in the last few simulated seconds.

The view is refreshed from the engine's progress callback with a snapshot taken on the engine's thread
(kafkasim.run.snapshot), so the simulation is never read while it changes.
"""

from __future__ import annotations

from time import monotonic

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kafkasim.console.format import count, ms, seconds
from kafkasim.run.snapshot import EngineSnapshot

REFRESH_INTERVAL_S = 0.25
MAX_PARTITION_ROWS = 20


def _replica_cell(r_leo: int, at_leader: int | None, in_isr: bool, down: bool) -> Text:
    text = str(r_leo) if at_leader is None or at_leader == r_leo else f"{r_leo} ({at_leader})"
    style = "red" if down else ("" if in_isr else "yellow")
    return Text(text + (" down" if down else ""), style=style)


def partitions_table(snapshot: EngineSnapshot) -> Table:
    width = max((len(p.replicas) for p in snapshot.partitions), default=1)
    table = Table(
        title="Log end offsets (follower: own (leader's view))",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("partition", no_wrap=True)
    table.add_column("HW", justify="right")
    for i in range(width):
        table.add_column("leader" if i == 0 else f"replica {i}", justify="right")
    table.add_column("ISR")
    for p in snapshot.partitions[:MAX_PARTITION_ROWS]:
        cells: list[Text | str] = [p.name, str(p.high_watermark)]
        for r in p.replicas:
            cells.append(_replica_cell(r.log_end_offset, r.log_end_offset_at_leader, r.in_isr, r.down))
        cells.extend([""] * (width - len(p.replicas)))
        isr = ",".join(str(b) for b in p.isr)
        cells.append(Text(isr + (" under min ISR" if p.under_min_isr else ""), style="red" if p.under_min_isr else ""))
        table.add_row(*cells)
    hidden = len(snapshot.partitions) - MAX_PARTITION_ROWS
    if hidden > 0:
        table.caption = f"... and {hidden} more partitions"
    return table


def broker_table(snapshot: EngineSnapshot) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="bold")
    table.add_column(justify="right")
    queues = ", ".join(str(n) for n in snapshot.response_queue_sizes)
    purgatories = [(f"{p.name} purgatory (watched / delayed)", f"{p.watched} / {p.num_delayed}")
                   for p in snapshot.purgatories]
    rows = [("request queue", str(snapshot.request_queue_size)), ("response queues", queues), *purgatories]
    for i in range(0, len(rows), 2):
        left = rows[i]
        right = rows[i + 1] if i + 1 < len(rows) else ("", "")
        table.add_row(*left, *right)
    return table


def latency_table(snapshot: EngineSnapshot) -> Table:
    table = Table(
        title=f"TotalTimeMs over the last {seconds(snapshot.latency_window_ms)} simulated",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("api", "n", "p50", "p99", "max"):
        table.add_column(name, justify="left" if name == "api" else "right")
    for lat in snapshot.latencies:
        table.add_row(lat.api, count(lat.count), ms(lat.p50), ms(lat.p99), ms(lat.max))
    return table


def render_snapshot(snapshot: EngineSnapshot, label: str = "") -> RenderableType:
    clock = f"wall-clock x{snapshot.speed:g}" if snapshot.wallclock else "virtual time"
    head = Text(
        f"{label}{' ' if label else ''}t = {seconds(snapshot.now_ms)} of {seconds(snapshot.duration_ms)}, {clock} "
        "(Ctrl-C: stop and save)",
        style="bold",
    )
    items: list[RenderableType] = [head, partitions_table(snapshot), broker_table(snapshot)]
    if snapshot.latencies:
        items.append(latency_table(snapshot))
    return Group(*items)


class LiveView:
    """A rich Live display updated with `update(snapshot)`, at most every REFRESH_INTERVAL_S of wall time."""

    def __init__(self, console: Console, label: str = "") -> None:
        self._label = label
        self._live = Live(console=console, auto_refresh=False, transient=False)
        self._last = -float("inf")

    def start(self) -> None:
        self._live.start()

    def due(self) -> bool:
        """Whether a new snapshot would be shown now (so the caller can skip taking one)."""
        return monotonic() - self._last >= REFRESH_INTERVAL_S

    def update(self, snapshot: EngineSnapshot, *, force: bool = False) -> None:
        if not force and not self.due():
            return
        self._last = monotonic()
        self._live.update(render_snapshot(snapshot, self._label), refresh=True)

    def stop(self) -> None:
        self._live.stop()
