"""report.html: one self-contained page per run (the hand-made spec run, and a real short run via the CLI)."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from kafkasim.record.result import FIGURE_NAMES, RunResult
from kafkasim.report.html import (
    FIGURE_CAPTIONS,
    render_report,
    section_ids,
    slowest_produce_ids,
    write_report,
)

from .conftest import Tables

HOSTILE = "<script>alert('x')</script> & \"quotes\" </section>"
SCENARIO = f"""
name: html-report
description: |
  What it teaches: {HOSTILE}
  second line
duration: 800ms
warmup: 30ms
topics: [{{name: orders, partitions: 1, replication.factor: 3, min.insync.replicas: 2}}]
producers: [{{name: producer-1, topic: orders, acks: all, rate: 100/s}}]
consumers: [{{name: consumer-1, topic: orders}}]
faults: [{{type: pause, target: follower-2, at: 100ms, duration: 150ms}}]
"""


class _Page(HTMLParser):
    """Ids, image sources, link targets and visible text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.sources: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.append(str(values["id"]))
        if tag == "img":
            self.sources.append(str(values.get("src")))
        if tag in ("link", "a") and values.get("href"):
            self.links.append(str(values["href"]))
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    return parser


def _result(tables: Tables, scenario_yaml: str | None = SCENARIO) -> RunResult:
    summary = {"warmup_ms": 30.0, "simulated_duration_ms": 800.0, "seed": 0,
               "apis": {"Produce": {"count": 3, "errors": 0,
                                    "TotalTimeMs": {"count": 3, "p50": 1.5, "p95": 2.0, "p99": 2.5, "p99.9": 2.5,
                                                    "max": 2.5}}},
               "counters": {"isr_shrinks": 1, "isr_expands": 1}}
    return RunResult(tables.requests, tables.records, _with_isr_shrink(tables.timeseries), summary, scenario_yaml,
                     {"wall_seconds": 0.5})


def _with_isr_shrink(timeseries: pd.DataFrame) -> pd.DataFrame:
    isr = pd.DataFrame({"time_ms": [0.0, 200.0, 300.0], "metric": "IsrSize", "entity": "orders-0",
                        "value": [3.0, 2.0, 3.0]})
    return pd.concat([timeseries[timeseries["metric"] != "IsrSize"], isr], ignore_index=True)


def test_the_page_has_every_section_and_escapes_the_users_text(tables: Tables) -> None:
    page = render_report(_result(tables), {})
    parsed = _parse(page)
    assert [i for i in parsed.ids if i in section_ids()] == list(section_ids())
    assert parsed.scripts == 0  # the description's <script> stays text
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quotes&quot; &lt;/section&gt;" in page
    assert HOSTILE in "".join(parsed.text)  # and reads exactly as written


def test_nothing_is_fetched_from_anywhere(tables: Tables) -> None:
    figures = {name: b"\x89PNG fake " + name.encode() for name in FIGURE_NAMES}
    page = render_report(_result(tables), figures)
    parsed = _parse(page)
    assert all(src.startswith("data:image/png;base64,") for src in parsed.sources)
    assert all(link.startswith("#") for link in parsed.links)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page


def test_every_figure_is_embedded_with_a_sentence_on_how_to_read_it(tables: Tables) -> None:
    figures = {name: f"png of {name}".encode() for name in FIGURE_NAMES}
    page = render_report(_result(tables), figures)
    assert set(FIGURE_CAPTIONS) == set(FIGURE_NAMES)
    for name in FIGURE_NAMES:
        encoded = base64.b64encode(figures[name]).decode()
        assert f'id="figure-{name}"' in page and encoded in page
        title, sentence = FIGURE_CAPTIONS[name]
        assert sentence.endswith(".") and len(sentence) > 40
    without = render_report(_result(tables), {"isr_size": b"x"})
    assert 'id="figure-isr_size"' in without and 'id="figure-purgatory"' not in without


def test_the_summary_tables_show_every_percentile(tables: Tables) -> None:
    page = render_report(_result(tables), {})
    summary = page[page.index('id="summary"'):page.index('id="timeline"')]
    assert "apis / Produce" in summary
    for stat in ("p50", "p95", "p99", "p99.9", "max"):
        assert f"<th>{stat}</th>" in summary
    assert "<td>TotalTimeMs</td><td>3</td><td>1.5</td><td>2</td><td>2.5</td>" in summary
    assert "isr_shrinks" in summary


def test_the_timeline_shows_faults_and_isr_changes(tables: Tables) -> None:
    page = render_report(_result(tables), {})
    timeline = page[page.index('id="timeline"'):page.index('id="figures"')]
    assert timeline.count('class="fault"') == 1 and "pause follower-2" in timeline
    assert timeline.count('class="isr-change"') == 2
    assert "ISR of orders-0 shrinks: 3 \u2192 2" in timeline and "expands: 2 \u2192 3" in timeline
    assert "0.100 s" in timeline  # the fault's start
    bare = render_report(_result(tables, scenario_yaml=None), {})
    assert "saved without a scenario" in bare


def test_the_slowest_acks_all_produces_are_drawn_as_swimlanes(tables: Tables) -> None:
    result = _result(tables)
    ids = slowest_produce_ids(result.requests, 30.0)
    produce = result.requests[result.requests["request_id"].isin(ids)]
    assert len(ids) == 3 and (produce["acks"] == -1).all() and (produce["client_send_ms"] >= 30).all()
    others = result.requests[(result.requests["api"] == "Produce") & (result.requests["acks"] == -1)
                             & (result.requests["client_send_ms"] >= 30) & ~result.requests["request_id"].isin(ids)]
    assert produce["TotalTimeMs"].min() >= others["TotalTimeMs"].max()
    page = render_report(result, {})
    slowest = page[page.index('id="slowest"'):]
    assert slowest.count('class="swimlane"') == 3
    for request_id in ids:
        assert f"<b>Request {request_id}</b> from producer-1: TotalTimeMs" in slowest
    assert "FetchFollower: the 10 slowest by TotalTimeMs" in slowest


def test_write_report_replaces_the_page_whole(tables: Tables, tmp_path: Path) -> None:
    result = _result(tables)
    (tmp_path / "report.html").write_text("old")
    written = write_report(result, tmp_path)
    assert written == tmp_path / "report.html"
    text = written.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    # No figures/ next to it: drawn in memory and embedded, nothing else written.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    assert text.count("data:image/png;base64,") >= 5


@pytest.mark.slow
def test_kafkasim_run_writes_the_report_and_kafkasim_report_rewrites_it(tmp_path: Path) -> None:
    from tests.cli.support import QUICKSTART, SHORT, call

    out = tmp_path / "run"
    assert call("run", QUICKSTART, *SHORT, "--figures", "--out", out) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    for name in ("latency_cdf", "log_offsets", "purgatory", "produce_swimlane"):
        png = (out / "figures" / f"{name}.png").read_bytes()
        assert base64.b64encode(png).decode() in page  # the very figures the run wrote
    assert "quickstart" in page
    (out / "report.html").unlink()
    assert call("report", out) == 0
    assert (out / "report.html").read_text(encoding="utf-8") == page  # the same page, byte for byte
    # A result holding its report is still kafkasim's own: a new run may replace it.
    assert call("run", QUICKSTART, *SHORT, "--seed", "3", "--out", out) == 0


def test_kafkasim_report_of_a_directory_that_is_no_result_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli.support import call

    assert call("report", tmp_path / "nothing") == 2
    err = capsys.readouterr().err
    assert "no kafkasim result at" in err and "Traceback" not in err


def test_the_timeline_ticks_at_round_times() -> None:
    """Issue 23's trial: a 35 s run's timeline read 0, 5.83333, 11.6667, ... s."""
    import re

    from kafkasim.report.html import round_ticks, timeline_svg
    from kafkasim.report.run_events import RunEvents

    assert round_ticks(35_000.0, True) == [0.0, 5_000.0, 10_000.0, 15_000.0, 20_000.0, 25_000.0, 30_000.0, 35_000.0]
    assert round_ticks(1_500.0, False) == [0.0, 250.0, 500.0, 750.0, 1_000.0, 1_250.0, 1_500.0]
    svg = timeline_svg(RunEvents((), ()), 35_000.0, 0.0)
    labels = re.findall(r'font-size="12">([^<]+)</text>', svg)
    assert labels == ["0 s", "5 s", "10 s", "15 s", "20 s", "25 s", "30 s", "35 s"]
