"""`kafkasim trace`: one request's story in the terminal (80 columns) and its swimlane in a directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from kafkasim.record.output_dir import Layout
    from kafkasim.report.trace import Trace

FIGURE_FILE = "trace.png"
STORY_FILE = "trace.json"  # also the marker of a trace directory kafkasim wrote


def _layout() -> Layout:
    from kafkasim.record.output_dir import Layout

    def foreign(directory: Path) -> list[str]:
        return [p.name for p in directory.iterdir()
                if p.name not in (FIGURE_FILE, STORY_FILE) or p.is_symlink() or not p.is_file()]

    return Layout("a kafkasim trace", STORY_FILE, lambda d: (d / STORY_FILE).is_file(), foreign)


def print_trace(console: Console, trace: Trace) -> None:
    row = trace.request
    console.print(Text(f"{row['api']} #{int(row['request_id'])} from {row['client']} ({trace.how_picked})",
                       style="bold"))
    error = str(row.get("error_name", "NONE"))
    total = row.get("TotalTimeMs")
    console.print(f"response {error}, {int(row['request_bytes']):,} bytes out, {int(row['response_bytes']):,} "
                  f"bytes back; TotalTimeMs {total:.3f} ms" if total == total else f"response {error}", markup=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("t (ms)", justify="right", no_wrap=True)
    table.add_column("stage: what happens", ratio=1)
    table.add_column("since previous", no_wrap=False, max_width=24)
    for step in trace.steps:
        table.add_row(f"{step.at_ms:.3f}", Text.assemble((step.name, "bold"), "\n", (step.meaning, "dim")),
                      step.since_previous)
    console.print(table)
    for line in trace.waited:
        console.print(line, markup=False)


def trace_command(run_dir: str, *, request_id: int | None, slowest: str | None, client: str | None,
                  at_ms: float | None, out: str | None, from_text: str | None = None,
                  to_text: str | None = None, batch_id: int | None = None) -> int:
    from kafkasim.record.output_dir import OutputDirError, check_output_dir, write_dir
    from kafkasim.record.result import ResultDirectoryError, RunResult
    from kafkasim.record.window import WindowError, window_of, windowed
    from kafkasim.report.batch_wait import BatchError, explain_batch, pick_batch
    from kafkasim.report.trace import TraceError, scenario_of, trace_figure, trace_json, trace_request

    error = Console(stderr=True, highlight=False, soft_wrap=True)
    layout = _layout()
    window = None
    try:
        result = RunResult.load(run_dir)
        window = window_of(result, from_text, to_text)
        if window is not None:
            result = windowed(result, window)  # --slowest among the requests sent in it; --request one of them
        _say_what_a_real_run_cannot_show(result.run_info)
        batch_story: tuple[str, ...] = ()
        if batch_id is not None:
            if request_id is not None or slowest is not None or client is not None or at_ms is not None:
                raise TraceError("pick one: --batch ID, --request ID, --slowest API, or --client NAME --at TIME")
            batch = pick_batch(result, batch_id)
            batch_story = explain_batch(result, batch, scenario_of(result))
            request_id = int(batch["first_request_id"]) if batch["first_request_id"] == batch["first_request_id"] \
                and int(batch["first_request_id"]) >= 0 else None
            if request_id is None:
                raise TraceError(f"--batch {batch_id}: no request carried it ({batch['outcome']})")
        trace = trace_request(result, request_id=request_id, slowest=slowest, client=client, at_ms=at_ms)
        rid = int(trace.request["request_id"])
        target_text = out if out is not None else str(Path("runs") / f"trace-{Path(run_dir).resolve().name}-{rid}")
        target = check_output_dir(target_text, layout, label=f"--out {out}" if out is not None else target_text)
    except (ResultDirectoryError, TraceError, BatchError, OutputDirError, WindowError) as exc:
        error.print(f"kafkasim trace: {exc}" + (f" (in the window {window.describe()})"
                                                if window is not None and isinstance(exc, TraceError) else ""),
                    markup=False)
        return 2
    console = Console(highlight=False, width=min(Console().width, 80))
    for line in batch_story:
        console.print(line, markup=False)
    if batch_story:
        console.print()
    print_trace(console, trace)
    figure = trace_figure(trace)

    def write(tmp: Path) -> None:
        if figure is not None:
            figure.savefig(tmp / FIGURE_FILE, dpi=100)
        story = dict(trace_json(trace))
        if batch_story:
            story["batch"] = {"batch_id": batch_id, "before_its_request": list(batch_story)}
        (tmp / STORY_FILE).write_text(json.dumps(story, indent=2) + "\n", encoding="utf-8")

    try:
        write_dir(target, layout, write, label=target_text)
    except OutputDirError as exc:
        error.print(f"kafkasim trace: {exc}", markup=False)
        return 2
    console.print()
    where = target / (FIGURE_FILE if figure is not None else STORY_FILE)
    console.print(f"swimlane: {where}" if figure is not None else f"no swimlane (never completed); story: {where}",
                  markup=False)
    return 0


def _say_what_a_real_run_cannot_show(run_info: dict[str, object]) -> None:
    from kafkasim.report.compare import cannot_show

    note = cannot_show(run_info)
    if note is not None:
        print(f"kafkasim trace: note: this run {note}; a trace starts at the broker", file=sys.stderr)
