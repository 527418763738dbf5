"""Rich output for `kafkasim wheel`: a timing-wheel walkthrough, step by step in simulated time.

A top-level module rather than part of `kafkasim.report`, whose package imports matplotlib and pandas:
`kafkasim wheel` needs only rich and should start in a blink.

The default view fits the terminal (80 columns is enough): each step is one line of short columns with its
note on the lines below, wrapped, never cut. `wide=True` puts the note in a last column instead, one line
per step, at whatever width that takes (for a wide terminal or `less -S`).
"""

from __future__ import annotations

import textwrap

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from kafkasim.timer.trace import (
    BucketExpired,
    TaskCancelled,
    TaskExecuted,
    TaskPlaced,
    TimerEvent,
)
from kafkasim.timer.walkthrough import Walkthrough

_EVENT_STYLE = {
    "add": "bold cyan",
    "demote": "yellow",
    "bucket due": "magenta",
    "run": "bold green",
    "drop": "red",
    "cancel": "bold red",
    "complete": "bold blue",
}
_HEADERS = ("time ms", "event", "task", "level", "bucket", "bucket range", "size", "queued", "note")
_RIGHT = {"time ms", "bucket", "size", "queued"}


def _range(start_ms: int, end_ms: int) -> str:
    return f"[{start_ms}, {end_ms})"


def _cancel_note(event: TaskCancelled, ran_at_ms: int | None) -> str:
    prefix = "done before its timeout, DelayedOperation.forceComplete cancels it: " if event.completed else ""
    if event.level is None:
        where = f"it ran at {ran_at_ms}" if ran_at_ms is not None else "it was cancelled before"
        return f"{prefix}in no bucket ({where}): nothing to remove"
    plural = "entry" if event.bucket_entries == 1 else "entries"
    return (
        f"{prefix}TimerTaskEntry.remove unlinks it from L{event.level} bucket {event.bucket_index} at once, "
        f"O(1); {event.bucket_entries} {plural} left, the bucket stays queued until {event.bucket_start_ms}"
    )


def _row(event: TimerEvent, ran_at: dict[str, int | None]) -> tuple[str, ...]:
    """(time, event, task, level, bucket, bucket range, size, queued, note) for one trace event."""
    if isinstance(event, TaskPlaced):
        window = _range(event.wheel_time_ms, event.wheel_time_ms + event.wheel_interval_ms)
        fits = f"exp {event.expiration_ms} fits L{event.level} window {window}"
        queued = (
            f"; bucket queued for {event.bucket_start_ms}" if event.bucket_queued else "; bucket already queued"
        )
        if event.from_level is None:
            name, note = "add", f"delay {event.task.delay_ms} → {fits}{queued}"
        else:
            name, note = "demote", f"from L{event.from_level}: {fits}{queued}"
        return (
            str(event.time_ms),
            name,
            str(event.task),
            f"L{event.level}",
            str(event.bucket_index),
            _range(event.bucket_start_ms, event.bucket_end_ms),
            str(event.size),
            str(event.queued),
            note,
        )
    if isinstance(event, BucketExpired):
        clocks = " ".join(f"L{level}={t}" for level, t in enumerate(event.wheel_times_ms, start=1))
        plural = "entry" if event.entries == 1 else "entries"
        early = " (its tasks left early)" if event.entries == 0 else ""
        return (
            str(event.time_ms),
            "bucket due",
            "",
            f"L{event.level}",
            str(event.bucket_index),
            _range(event.bucket_start_ms, event.bucket_end_ms),
            str(event.size),
            str(event.queued),
            f"flush {event.entries} {plural}{early}; wheel clocks {clocks}",
        )
    if isinstance(event, TaskExecuted):
        expired = f"exp {event.expiration_ms} < L1 time {event.wheel_time_ms} + tick {event.tick_ms}"
        if event.from_level is None:
            note = f"already expired on add: {expired} → executor at once, never counted in size"
        else:
            note = f"{expired} → executor"
        return (str(event.time_ms), "run", str(event.task), "", "", "", str(event.size), str(event.queued), note)
    if isinstance(event, TaskCancelled):
        return (
            str(event.time_ms),
            "complete" if event.completed else "cancel",
            str(event.task),
            "" if event.level is None else f"L{event.level}",
            "" if event.bucket_index is None else str(event.bucket_index),
            ""
            if event.bucket_start_ms is None or event.bucket_end_ms is None
            else _range(event.bucket_start_ms, event.bucket_end_ms),
            str(event.size),
            str(event.queued),
            _cancel_note(event, ran_at.get(str(event.task))),
        )
    return (
        str(event.time_ms),
        "drop",
        str(event.task),
        "",
        "",
        "",
        str(event.size),
        str(event.queued),
        "cancelled entry refused by the wheel",
    )


def _rows(walkthrough: Walkthrough) -> list[tuple[str, ...]]:
    ran_at = {task.name: task.ran_at_ms for task in walkthrough.tasks}
    return [_row(event, ran_at) for event in walkthrough.events]


def wheel_trace_table(walkthrough: Walkthrough) -> Table:
    """Every step as one table row, the note in the last column (the wide view)."""
    table = Table(show_lines=False)
    for header in _HEADERS:
        table.add_column(header, justify="right" if header in _RIGHT else "left", no_wrap=True)
    for cells in _rows(walkthrough):
        table.add_row(*cells[:1], Text(cells[1], style=_EVENT_STYLE[cells[1]]), *cells[2:])
    return table


def wheel_trace_lines(walkthrough: Walkthrough, width: int) -> Text:
    """Every step as one line of short columns, its note wrapped to `width` on the lines below it."""
    rows = _rows(walkthrough)
    columns = _HEADERS[:-1]
    widths = [max([len(header), *(len(row[i]) for row in rows)]) for i, header in enumerate(columns)]

    def line(cells: tuple[str, ...], event_style: str = "") -> Text:
        text = Text()
        for i, (header, cell) in enumerate(zip(columns, cells, strict=False)):
            if i:
                text.append("  ")
            padded = cell.rjust(widths[i]) if header in _RIGHT else cell.ljust(widths[i])
            text.append(padded, style=event_style if i == 1 else "")
        text.rstrip()
        return text

    indent = " " * (widths[0] + 2)  # notes start under the event column
    out = Text()
    out.append_text(line(columns, "bold"))
    out.stylize("bold")
    out.append("\n")
    for cells in rows:
        out.append_text(line(cells[:-1], _EVENT_STYLE[cells[1]]))
        out.append("\n")
        note = textwrap.fill(
            cells[-1], width=max(width, len(indent) + 20), initial_indent=indent, subsequent_indent=indent,
            break_long_words=False, break_on_hyphens=False,
        )
        out.append(note + "\n", style="dim")
    out.rstrip()
    return out


def wheel_levels_table(walkthrough: Walkthrough) -> Table:
    """The levels the trace used: each level's tick is the previous level's interval."""
    levels = max(
        (e.level for e in walkthrough.events if isinstance(e, (TaskPlaced, BucketExpired))),
        default=1,
    )
    table = Table()
    table.add_column("level")
    table.add_column("tick ms", justify="right")
    table.add_column("interval ms", justify="right")
    for level in range(1, levels + 1):
        tick = walkthrough.tick_ms * walkthrough.wheel_size ** (level - 1)
        table.add_row(f"L{level}", str(tick), str(tick * walkthrough.wheel_size))
    return table


def wheel_tasks_table(walkthrough: Walkthrough) -> Table:
    table = Table()
    for header in ("task", "added at ms", "delay ms", "expires at ms", "left at ms", "how"):
        table.add_column(header, justify="left" if header in ("task", "how") else "right")
    for task, at in zip(walkthrough.tasks, walkthrough.added_at_ms, strict=True):
        if task.ran_at_ms is not None:
            left, how = str(task.ran_at_ms), "ran"
        elif task.removed_at_ms is not None:
            left, how = str(task.removed_at_ms), "completed" if task.completed else "cancelled"
        else:
            left, how = "", ""
        table.add_row(task.name, str(at), str(task.delay_ms), str(at + task.delay_ms), left, how)
    return table


def walkthrough_renderable(walkthrough: Walkthrough, *, wide: bool = False, width: int = 80) -> Group:
    steps: RenderableType = wheel_trace_table(walkthrough) if wide else wheel_trace_lines(walkthrough, width)
    return Group(
        Text(
            f"Kafka's timing wheel: tick {walkthrough.tick_ms} ms, {walkthrough.wheel_size} buckets per "
            "level; each level's tick is the interval of the level below",
            style="bold",
        ),
        wheel_levels_table(walkthrough),
        Text("Tasks", style="bold"),
        wheel_tasks_table(walkthrough),
        Text(
            "Step by step. size: entries in buckets (Kafka's size()); queued: buckets in the delay queue "
            "(one entry per bucket, however many tasks it holds)",
            style="bold",
        ),
        steps,
    )


def print_walkthrough(walkthrough: Walkthrough, console: Console | None = None, *, wide: bool = False) -> None:
    """Print the walkthrough to `console` (default: the terminal, or 80 columns when piped, unless COLUMNS
    says otherwise). Wide: as wide as the one-line-per-step table needs."""
    if console is None:
        console = Console()
    if wide:
        needed = console.measure(wheel_trace_table(walkthrough), options=console.options.update_width(10_000))
        console = Console(
            width=max(console.width, needed.maximum),
            force_terminal=console.is_terminal,
            no_color=console.no_color,
        )
    console.print(walkthrough_renderable(walkthrough, wide=wide, width=console.width))
