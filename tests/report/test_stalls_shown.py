"""Stalls in what a reader sees: the summary, the printed summary's stalls table, the report's timeline."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from kafkasim.console.summary import print_summary
from kafkasim.record.stalls import stalls_frame, stalls_summary
from kafkasim.report.html import timeline_svg
from kafkasim.report.run_events import RunEvents, host_stalls

ROWS = [("broker-10", 100.0, 5.0), ("broker-2", 150.0, 20.0), ("broker-10", 900.0, 300.0), ("p1", 400.0, 1.0)]


def test_the_summary_counts_stalls_per_host_up_to_the_end_of_the_run() -> None:
    summary = stalls_summary(stalls_frame(ROWS), 1000.0)
    # broker-10's second stall runs past the end (900 + 300): only its first 100 ms count.
    assert summary["count"] == 4 and summary["stalled_ms"] == 5.0 + 20.0 + 100.0 + 1.0
    assert summary["max_ms"] == 300.0
    assert list(summary["hosts"]) == ["broker-10", "broker-2", "p1"]
    assert summary["hosts"]["broker-10"] == {"count": 2, "stalled_ms": 105.0, "max_ms": 300.0}


def test_the_printed_summary_has_a_stalls_table_only_when_stalls_were_on() -> None:
    def printed(summary: dict[str, object]) -> list[str]:
        buffer = StringIO()
        print_summary(Console(file=buffer, width=80, no_color=True), summary, "s")
        return [line.strip() for line in buffer.getvalue().splitlines()]

    assert "Stalls (whole run)" not in printed({"seed": 1})
    lines = printed({"seed": 1, "stalls": stalls_summary(stalls_frame(ROWS), 1000.0)})
    rows = [line.split() for line in lines[lines.index("Stalls (whole run)"):]]
    assert ["host", "stalls", "stalled", "ms", "longest", "ms"] in rows
    assert ["broker-10", "2", "105.0", "300.0"] in rows and ["all", "4", "126.0", "300.0"] in rows


def test_the_timeline_has_a_row_of_marks_per_stalling_host() -> None:
    hosts = host_stalls(stalls_frame(ROWS))
    assert [h.host for h in hosts] == ["broker-2", "broker-10", "p1"]  # natural order
    svg = timeline_svg(RunEvents((), (), (), hosts), 1000.0, 0.0)
    assert svg.count('class="stall"') == 4
    assert ">stalls broker-10</text>" in svg and "stalls broker-10: 0.900 s, 300 ms" in svg
    assert 'class="stall"' not in timeline_svg(RunEvents((), (), (), host_stalls(None)), 1000.0, 0.0)
