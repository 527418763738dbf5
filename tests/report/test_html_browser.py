"""report.html in a real headless browser (Debian's chromium): it renders without console errors, every
section is laid out, every embedded figure decodes, and it does so from a file:// URL with no network.

Skipped, saying why, where no chromium binary is installed (.ci/run installs Debian's `chromium`).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from kafkasim.record.result import RunResult
from kafkasim.report.html import section_ids, write_report

from .conftest import Tables

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BROWSER = next((path for name in BROWSERS if (path := shutil.which(name))), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium binary on PATH (Debian: apt-get install "
                                                        "chromium; .ci/run installs it)")

SCENARIO = """
name: browser-check
description: "Checked in a headless browser: <b>not bold</b> & fine"
duration: 800ms
warmup: 30ms
topics: [{name: orders, partitions: 1, replication.factor: 3, min.insync.replicas: 2}]
producers: [{name: producer-1, topic: orders, acks: all, rate: 100/s}]
faults: [{type: pause, target: follower-2, at: 100ms, duration: 150ms}]
"""

# Appended to a copy of the page (the report itself has no script): after the load event, writes what the
# browser made of the page into the DOM, where --dump-dom shows it.
PROBE = """<script>
window.addEventListener("load", () => {
  const images = [...document.images];
  const sections = [...document.querySelectorAll("section")].map(s => s.id + ":" + s.offsetHeight);
  const svg = document.querySelector("svg");
  const probe = document.createElement("div");
  probe.id = "probe";
  probe.dataset.images = images.length;
  probe.dataset.decoded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  probe.dataset.sections = sections.join(",");
  probe.dataset.svgWidth = svg ? Math.round(svg.getBoundingClientRect().width) : 0;
  probe.dataset.bold = document.querySelectorAll("#scenario b").length;
  document.body.appendChild(probe);
});
</script>"""


def _browse(page: Path) -> tuple[str, list[str]]:
    """(the DOM after load, the console messages) of `page` opened from a file:// URL."""
    assert BROWSER is not None
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--window-size=1280,2000",
         "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    return done.stdout, console


def _probe(dom: str) -> dict[str, str]:
    match = re.search(r'<div id="probe"([^>]*)>', dom)
    assert match, "the probe script did not run: the page did not finish loading"
    return {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', match.group(1))}


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from .conftest import build_tables

    tables: Tables = build_tables()
    isr = pd.DataFrame({"time_ms": [0.0, 200.0, 300.0], "metric": "IsrSize", "entity": "orders-0",
                        "value": [3.0, 2.0, 3.0]})
    timeseries = pd.concat([tables.timeseries[tables.timeseries["metric"] != "IsrSize"], isr], ignore_index=True)
    result = RunResult(tables.requests, tables.records, timeseries, {**tables.summary, "simulated_duration_ms": 800.0},
                       SCENARIO)
    return write_report(result, tmp_path_factory.mktemp("run"))


def test_the_report_renders_without_console_errors(report_page: Path) -> None:
    dom, console = _browse(report_page)
    assert console == []
    for section in section_ids():
        assert f'id="{section}"' in dom
    assert "The scenario and what it teaches" in dom and "Timeline: faults and ISR changes" in dom


def test_every_section_is_laid_out_and_every_figure_decodes(report_page: Path, tmp_path: Path) -> None:
    probed = tmp_path / "probed.html"
    probed.write_text(report_page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                      encoding="utf-8")
    dom, console = _browse(probed)
    assert console == []
    probe = _probe(dom)
    heights = dict(item.split(":") for item in probe["sections"].split(","))
    assert list(heights) == list(section_ids())
    assert all(int(h) > 50 for h in heights.values()), heights
    assert int(probe["images"]) >= 8  # 7 figures and the slowest produces' swimlanes
    assert probe["decoded"] == probe["images"]
    assert int(probe["svg-width"]) > 500  # the timeline
    assert probe["bold"] == "1"  # only the report's own <b>; the description's "<b>" stayed text


def test_the_console_check_catches_a_broken_page(tmp_path: Path) -> None:
    # Without this the two tests above could pass on a browser that reports nothing.
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><body><img src="missing.png"><script>undefinedFunction();</script>'
                      "</body></html>", encoding="utf-8")
    _dom, console = _browse(broken)
    assert any("undefinedFunction" in line for line in console), console


CRASH = """
name: crash-first-screen
description: Broker 2 of four crashes at 4 s; acks=all at 4,000 records/s.
seed: 3
duration: 16s
warmup: 1s
cluster: {brokers: 4}
topics: [{name: events, partitions: 12, replication.factor: 3, min.insync.replicas: 2}]
producers: [{name: producer-1, topic: events, acks: all, rate: 4000/s, arrival: poisson, buffer.memory: 4MiB}]
consumers: [{name: consumer-1, topic: events}]
faults: [{type: crash, target: broker-2, at: 4s}]
"""

# What a 1280x800 window shows before any scrolling: the text of every element laid out in it.
FIRST_SCREEN = """<script>
window.addEventListener("load", () => {
  const seen = [];
  for (const el of document.querySelectorAll("h1, p, li, caption, th, td")) {
    const r = el.getBoundingClientRect();
    if (r.height > 0 && r.top < window.innerHeight && r.bottom > 0) seen.push(el.textContent.replace(/\\s+/g, " "));
  }
  const probe = document.createElement("pre");
  probe.id = "first-screen";
  probe.textContent = seen.join("\\n");
  document.body.appendChild(probe);
});
</script>"""


def test_a_runs_first_screen_answers_the_operators_three_questions(tmp_path: Path) -> None:
    """Issue 23: p99 before / during / after the fault, how long partitions waited for a leader, and whether
    anything acknowledged was lost -- on report.html's first screen, without scrolling."""
    from kafkasim import load_scenario
    from kafkasim.run.engine import Engine

    result = Engine(load_scenario(CRASH)).run()
    (tmp_path / "run").mkdir()
    page = write_report(result, tmp_path / "run")
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", FIRST_SCREEN + "</body>"), encoding="utf-8")
    assert BROWSER is not None
    done = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--virtual-time-budget=5000", "--window-size=1280,800", "--dump-dom", probed.resolve().as_uri()],
                          capture_output=True, text=True, timeout=60)
    match = re.search(r'<pre id="first-screen">(.*?)</pre>', done.stdout, re.S)
    assert match, "the probe did not run"
    screen = html.unescape(match.group(1))
    p99 = {p["name"]: p["produce_latency"]["acks=all"]["from_intended"]["p99"] for p in result.summary["phases"]}
    assert len(p99) == 3
    for name, value in p99.items():
        assert f"{name} {value:,.4g} ms".replace(",", "") in screen.replace(",", ""), (name, value, screen)
    longest = max(f["unavailable_ms"] for f in result.summary["failovers"])
    assert f"waited {longest / 1000:.4g} s at most" in screen, screen
    assert "0 acknowledged then lost, 0 written twice, 0 failed" in screen, screen
