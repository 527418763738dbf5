"""Rich tables for `kafkasim wheel`: a timing-wheel walkthrough, step by step in simulated time.

A top-level module rather than part of `kafkasim.report`, whose package imports matplotlib and pandas:
`kafkasim wheel` needs only rich and should start in a blink.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kafkasim.timer.trace import BucketExpired, TaskDropped, TaskExecuted, TaskPlaced, TimerEvent
from kafkasim.timer.walkthrough import Walkthrough

_EVENT_STYLE = {"add": "bold cyan", "demote": "yellow", "bucket due": "magenta", "run": "bold green", "drop": "red"}


def _range(start_ms: int, end_ms: int) -> str:
    return f"[{start_ms}, {end_ms})"


def _row(event: TimerEvent) -> tuple[str, str, str, str, str, str, str, str]:
    """(time, event, task, level, bucket, bucket range, size, note) for one trace event."""
    if isinstance(event, TaskPlaced):
        window = _range(event.wheel_time_ms, event.wheel_time_ms + event.wheel_interval_ms)
        fits = f"exp {event.expiration_ms} fits L{event.level} window {window}"
        queued = f"; bucket queued for {event.bucket_start_ms}" if event.bucket_queued else ""
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
            note,
        )
    if isinstance(event, BucketExpired):
        clocks = " ".join(f"L{level}={t}" for level, t in enumerate(event.wheel_times_ms, start=1))
        plural = "entry" if event.entries == 1 else "entries"
        return (
            str(event.time_ms),
            "bucket due",
            "",
            f"L{event.level}",
            str(event.bucket_index),
            _range(event.bucket_start_ms, event.bucket_end_ms),
            str(event.size),
            f"flush {event.entries} {plural}; wheel clocks {clocks}",
        )
    if isinstance(event, TaskExecuted):
        expired = f"exp {event.expiration_ms} < L1 time {event.wheel_time_ms} + tick {event.tick_ms}"
        if event.from_level is None:
            note = f"already expired on add: {expired} → executor at once, never counted in size"
        else:
            note = f"{expired} → executor"
        return (str(event.time_ms), "run", str(event.task), "", "", "", str(event.size), note)
    return (
        str(event.time_ms),
        "drop",
        str(event.task),
        "",
        "",
        "",
        str(event.size),
        "cancelled entry refused by the wheel",
    )


def wheel_trace_table(walkthrough: Walkthrough) -> Table:
    table = Table(show_lines=False)
    for header, justify in (
        ("time ms", "right"),
        ("event", "left"),
        ("task", "left"),
        ("level", "left"),
        ("bucket", "right"),
        ("bucket range", "left"),
        ("size", "right"),
        ("note", "left"),
    ):
        table.add_column(header, justify=justify, no_wrap=header != "note")  # type: ignore[arg-type]
    for event in walkthrough.events:
        cells = _row(event)
        table.add_row(*cells[:1], Text(cells[1], style=_EVENT_STYLE[cells[1]]), *cells[2:])
    return table


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
    added_at: dict[str, int] = {}
    for event in walkthrough.events:
        if isinstance(event, (TaskPlaced, TaskExecuted, TaskDropped)) and event.from_level is None:
            added_at.setdefault(str(event.task), event.time_ms)
    table = Table()
    for header in ("task", "added at ms", "delay ms", "expires at ms", "ran at ms"):
        table.add_column(header, justify="left" if header == "task" else "right")
    for task in walkthrough.tasks:
        at = added_at.get(task.name)
        table.add_row(
            task.name,
            "" if at is None else str(at),
            str(task.delay_ms),
            "" if at is None else str(at + task.delay_ms),
            "" if task.ran_at_ms is None else str(task.ran_at_ms),
        )
    return table


def print_walkthrough(walkthrough: Walkthrough, console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:
            # Piped or captured output: rich would default to 80 columns and fold the notes.
            console = Console(width=max(console.width, 140))
    console.print(
        Group(
            Text(
                f"Kafka's timing wheel: tick {walkthrough.tick_ms} ms, {walkthrough.wheel_size} buckets per level; "
                "each level's tick is the interval of the level below",
                style="bold",
            ),
            wheel_levels_table(walkthrough),
            Text("Tasks", style="bold"),
            wheel_tasks_table(walkthrough),
            Text("Step by step (size = entries in buckets, Kafka's size())", style="bold"),
            wheel_trace_table(walkthrough),
        )
    )
