"""`kafkasim run --live`: a terminal view of the running broker, refreshed about four times a second.

It shows what an operator would watch on a real cluster: which brokers are up, crashed or paused; per
partition (once, as the controller's metadata has it) its leader's id, the high watermark, every replica's
log end offset and the ISR; the leader changes as they happen; the purgatories' sizes; the request and
response queues; and TotalTimeMs percentiles of the requests that finished in the last few simulated seconds.

The view is refreshed from the engine's progress callback with a snapshot taken on the engine's thread
(kafkasim.run.snapshot), so the simulation is never read while it changes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
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
LEADER_CHANGES_SHOWN = 6


@dataclass(frozen=True)
class LeaderChange:
    time_ms: float
    partition: str
    old: int
    new: int

    def text(self) -> str:
        def who(broker: int) -> str:
            return "none" if broker < 0 else f"broker-{broker}"
        return f"{seconds(self.time_ms)}  {self.partition}: leader {who(self.old)} -> {who(self.new)}"


def _replica_cell(broker: int, r_leo: int, at_leader: int | None, in_isr: bool, down: bool) -> Text:
    # The leader's view only where it differs and means something: not for a down replica, nor one the leader
    # no longer tracks (-1 once it left the ISR by fencing).
    shown = at_leader is not None and at_leader != r_leo and at_leader >= 0 and not down
    text = f"b{broker} {r_leo} ({at_leader})" if shown else f"b{broker} {r_leo}"
    style = "red" if down else ("" if in_isr else "yellow")
    return Text(text + (" down" if down else ""), style=style)


def brokers_line(snapshot: EngineSnapshot) -> Text:
    line = Text("brokers  ", style="bold")
    for b in snapshot.brokers:
        line.append(f"{b.broker_id} {b.state}", style="" if b.state == "up" else "bold red")
        line.append("   ")
    return line


def partitions_table(snapshot: EngineSnapshot) -> Table:
    width = max((len(p.replicas) for p in snapshot.partitions), default=1)
    table = Table(
        title="Log end offsets: b<broker> own (the leader's view), the leader's replica first",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("partition", no_wrap=True)
    table.add_column("leader", justify="right")
    table.add_column("HW", justify="right")
    for i in range(width):
        table.add_column(f"replica {i + 1}", justify="right")
    table.add_column("ISR")
    for p in snapshot.partitions[:MAX_PARTITION_ROWS]:
        leader = Text("none", style="bold red") if p.leader < 0 else Text(str(p.leader))
        if p.leader >= 0 and p.replicas and p.replicas[0].broker_id == p.leader and p.replicas[0].down:
            leader.append(" down", style="bold red")  # named by the metadata, not yet fenced
        cells: list[Text | str] = [p.name, leader, str(p.high_watermark)]
        for r in p.replicas:
            cells.append(_replica_cell(r.broker_id, r.log_end_offset, r.log_end_offset_at_leader, r.in_isr, r.down))
        cells.extend([""] * (width - len(p.replicas)))
        isr = ",".join(str(b) for b in p.isr)
        cells.append(Text(isr + (" under min ISR" if p.under_min_isr else ""), style="red" if p.under_min_isr else ""))
        table.add_row(*cells)
    hidden = len(snapshot.partitions) - MAX_PARTITION_ROWS
    if hidden > 0:
        table.caption = f"... and {hidden} more partitions"
    return table


def broker_table(snapshot: EngineSnapshot) -> RenderableType:
    if any("/" in p.name for p in snapshot.purgatories):
        return _brokers_purgatory_table(snapshot)
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


def _brokers_purgatory_table(snapshot: EngineSnapshot) -> RenderableType:
    """Several leading brokers: one row each, so the view stays readable at 80 columns."""
    queues = snapshot.response_queue_sizes
    head = Text(f"request queues {snapshot.request_queue_size}, response queues {sum(queues)} "
                f"(of {len(queues)}); purgatories: watched / delayed", style="bold")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("broker")
    kinds = list(dict.fromkeys(p.name.split("/", 1)[1] for p in snapshot.purgatories))
    for kind in kinds:
        table.add_column(f"{kind} purgatory", justify="right")
    by_broker: dict[str, dict[str, str]] = {}
    for p in snapshot.purgatories:
        broker, kind = p.name.split("/", 1)
        by_broker.setdefault(broker, {})[kind] = f"{p.watched} / {p.num_delayed}"
    for broker, cells in by_broker.items():
        table.add_row(broker, *(cells.get(kind, "") for kind in kinds))
    return Group(head, table)


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


def render_snapshot(snapshot: EngineSnapshot, label: str = "", changes: tuple[LeaderChange, ...] = ()
                    ) -> RenderableType:
    clock = f"wall-clock x{snapshot.speed:g}" if snapshot.wallclock else "virtual time"
    head = Text(
        f"{label}{' ' if label else ''}t = {seconds(snapshot.now_ms)} of {seconds(snapshot.duration_ms)}, {clock} "
        "(Ctrl-C: stop and save)",
        style="bold",
    )
    items: list[RenderableType] = [head, brokers_line(snapshot), partitions_table(snapshot)]
    if changes:
        items.append(Text("Leader changes (latest last)", style="bold"))
        items.extend(Text(c.text(), style="bold" if c.new < 0 else "") for c in changes[-LEADER_CHANGES_SHOWN:])
    items.append(broker_table(snapshot))
    if snapshot.latencies:
        items.append(latency_table(snapshot))
    return Group(*items)


class LiveView:
    """A rich Live display updated with `update(snapshot)`, at most every REFRESH_INTERVAL_S of wall time."""

    def __init__(self, console: Console, label: str = "") -> None:
        self._label = label
        self._live = Live(console=console, auto_refresh=False, transient=False)
        self._last = -float("inf")
        self._leaders: dict[str, int] = {}
        self._changes: deque[LeaderChange] = deque(maxlen=LEADER_CHANGES_SHOWN)

    def start(self) -> None:
        self._live.start()

    def due(self) -> bool:
        """Whether a new snapshot would be shown now (so the caller can skip taking one)."""
        return monotonic() - self._last >= REFRESH_INTERVAL_S

    def update(self, snapshot: EngineSnapshot, *, force: bool = False) -> None:
        if not force and not self.due():
            return
        self._last = monotonic()
        for p in snapshot.partitions:
            before = self._leaders.get(p.name)
            if before is not None and before != p.leader:
                self._changes.append(LeaderChange(snapshot.now_ms, p.name, before, p.leader))
            self._leaders[p.name] = p.leader
        self._live.update(render_snapshot(snapshot, self._label, tuple(self._changes)), refresh=True)

    def stop(self) -> None:
        self._live.stop()
