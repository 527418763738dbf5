"""One self-contained HTML page per run: `report.html` in the result directory.

Everything is inside the file: figures as base64 PNGs, the timeline as inline SVG, the style sheet inline;
no script, no font, nothing fetched from a network, so it opens the same from a mail attachment, an
archive or a machine without a connection. Every piece of text that comes from the user (the scenario's
name and description, client names, the YAML) is HTML-escaped.

Sections (each an element with a fixed id, which tests look for): `scenario` (what it is and what it
teaches), `summary` (every table of summary.json), `timeline` (faults and ISR changes), `figures` (every
figure with a sentence on how to read it), `slowest` (the slowest requests, and swimlanes of the slowest
acks=all produces).
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterable, Mapping
from html import escape
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kafkasim.network.tcp import TCP_GAVE_UP, TCP_LOST_AGAIN, TCP_THROUGH
from kafkasim.record.summary import OUTCOME_WORDS, outcome_counts
from kafkasim.report.run_events import RunEvents, run_events, scenario_from_yaml
from kafkasim.report.skip import logger

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from kafkasim.record.result import RunResult
    from kafkasim.scenario import Scenario

SLOWEST_SWIMLANES = 3
SLOWEST_ROWS = 10
SWIMLANE_DPI = 80
STATS = ("p50", "p95", "p99", "p99.9", "max")

# One sentence per figure on how to read it (the figure names of kafkasim.report.write_figures).
FIGURE_CAPTIONS: dict[str, tuple[str, str]] = {
    "latency_cdf": ("Latency by percentile",
                    "Left, the broker's TotalTimeMs per API; right, what the clients saw (produce per acks, from "
                    "the intended send, and end to end): read a percentile on the x axis and its latency on the "
                    "y axis; where a line turns up, its tail begins."),
    "latency_histogram": ("Latency histograms",
                          "How often each TotalTimeMs occurred, per API, in log-spaced bins with p50 and p99 "
                          "marked: two humps are two ways requests are served, e.g. answered at once or parked "
                          "in a purgatory."),
    "request_breakdown": ("Request breakdown (Kafka's RequestMetrics)",
                          "Per API, a bar for the mean and one for the p99 of each phase of TotalTimeMs, "
                          "stacked: the tallest colour is where that API's requests spend their time."),
    "log_offsets": ("High watermark and log end offsets",
                    "The HW (wide grey) follows the slowest in-sync replica's LEO; the lower panel is each "
                    "replica's LEO minus the HW, the offsets written but not yet committed (below 0: a replica "
                    "behind the HW, out of the ISR and catching up). The legend says which replica led when "
                    "(dashed lines mark leader changes); a replica whose broker is down is dotted at its "
                    "frozen log end and left out of the lower panel. With many partitions, the follower lag "
                    "keeps a down broker's replicas at their last offset, so their lag grows while it is down."),
    "isr_size": ("ISR size",
                 "In-sync replicas per partition over time; below the min.insync.replicas line acks=all "
                 "produces fail with NOT_ENOUGH_REPLICAS."),
    "purgatory": ("Purgatory sizes",
                  "Operations waiting per purgatory: where PurgatorySize (black) runs above "
                  "NumDelayedOperations (area), completed operations are still on watch lists until a purge."),
    "fetch_waits": ("Fetch waits and segment rolls",
                    "Each dot is a fetch and how long it waited in the fetch purgatory (RemoteTimeMs) against when "
                    "it completed: most wait for min bytes or their max wait (the top row); a fetch parked when "
                    "a leader rolls a segment completes at once (DelayedFetch.tryComplete), a follower's at the "
                    "roll, a consumer's when the high watermark reaches the new segment (dashed lines)."),
    "produce_swimlane": ("One acks=all produce, step by step",
                         "Lanes top to bottom follow one produce from the producer through the broker's "
                         "threads and the purgatory to the followers' and the consumer's fetches; colours are "
                         "RequestMetrics phases, the dashed line is the moment the HW passes the batch."),
    "failover_swimlane": ("One produce batch across a leader failover",
                          "Top, in seconds: the producer's first attempt to the old leader fails, the batch waits "
                          "while the producer refreshes its metadata (ticks), the partition's leader moves (dashed "
                          "line, from the LeaderId gauge) and the last attempt goes to the new leader; bottom, in "
                          "milliseconds, that attempt's RequestMetrics phases."),
}

_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kafkasim report: $title</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 1.2em 3em;
       color: #1a1a1a; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
nav a { margin-right: 1em; }
.facts { color: #444; } #glance { background: #eef4fb; padding: 0.5em 1em; border-left: 4px solid #0072b2; }
#glance ul { margin: 0.3em 0; padding-left: 1.2em; } .partial { background: #fff3cd; padding: 0.5em 1em; border-left: 4px solid #e69f00; }
.description { white-space: pre-wrap; background: #f7f7f7; padding: 0.8em 1em; border-radius: 4px; }
table { border-collapse: collapse; margin: 0.6em 0 1.4em; font-size: 0.92em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { padding: 0.2em 0.7em; border-bottom: 1px solid #eee; text-align: right; }
table.events th, table.events td { text-align: left; }
.wide { overflow-x: auto; } .wide td, .wide th { white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #ccc; }
figure { margin: 1.2em 0 2em; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #333; margin-top: 0.3em; } figcaption b { color: #000; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
svg text { font-family: system-ui, sans-serif; }
</style>
</head>
<body>
<header>
<h1>$title</h1>
<p class="facts">$facts</p>
$partial
$glance
<nav><a href="#scenario">Scenario</a><a href="#summary">Summary</a><a href="#timeline">Timeline</a>
<a href="#figures">Figures</a><a href="#slowest">Slowest requests</a></nav>
</header>
<section id="scenario">
<h2>The scenario and what it teaches</h2>
$scenario
</section>
<section id="summary">
<h2>Summary</h2>
<p>Times in milliseconds; requests sent during the warm-up are left out. TotalTimeMs and its parts are
Kafka's RequestMetrics; "intended" latencies count from the intended send time (no coordinated omission).</p>
$summary
</section>
<section id="timeline">
<h2>Timeline: faults and ISR changes</h2>
$timeline
</section>
<section id="figures">
<h2>Figures</h2>
$figures
</section>
<section id="slowest">
<h2>Slowest requests</h2>
$slowest
</section>
<footer><p class="facts">Written by kafkasim $version. Every figure and table is computed from the
run's files next to this page (requests.parquet, records.parquet, timeseries.parquet, summary.json).</p>
</footer>
</body>
</html>
""")


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return escape(str(value))
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not np.isfinite(value):
            return escape(str(value))
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return escape(str(value))


def _is_stats(value: Any) -> bool:
    return isinstance(value, Mapping) and "p50" in value


def _stats_table(title: str, rows: list[tuple[str, Mapping[str, Any]]], notes: list[tuple[str, Any]]) -> str:
    note = ", ".join(f"{escape(str(k))} {_number(v)}" for k, v in notes)
    head = "".join(f"<th>{s}</th>" for s in ("", "n", *STATS))
    body = "".join(
        f"<tr><td>{escape(name)}</td><td>{_number(stats.get('count'))}</td>"
        + "".join(f"<td>{_number(stats.get(s))}</td>" for s in STATS) + "</tr>"
        for name, stats in rows)
    caption = escape(title) + (f" <small>({note})</small>" if note else "")
    return f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _facts_table(title: str, facts: list[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><td>{escape(str(k))}</td><td>{_number(v)}</td></tr>" for k, v in facts)
    return f"<table><caption>{escape(title)}</caption><tbody>{body}</tbody></table>"


def _seconds(value_ms: Any) -> str:
    return f"{float(value_ms or 0.0) / 1000.0:,.3f}".rstrip("0").rstrip(".")


def outcomes_table(summary: Mapping[str, Any]) -> str:
    """The run's batches by outcome, zeros included, and why acknowledged ones were lost; "" without
    producers."""
    if not (summary.get("per_client") or {}).get("producers"):
        return ""
    reasons = (summary.get("lost_after_ack") or {}).get("by_reason") or {}
    rows = []
    for outcome, n in outcome_counts(summary).items():
        why = ", ".join(f"{_number(k)} {escape(str(r))}" for r, k in reasons.items()) if outcome == "lost" else ""
        rows.append(f"<tr><td>{escape(OUTCOME_WORDS.get(outcome, outcome))}</td><td>{_number(n)}</td>"
                    f"<td>{why}</td></tr>")
    return ('<table id="outcomes"><caption>Outcomes: every batch sent after the warm-up</caption>'
            f"<thead><tr><th>outcome</th><th>batches</th><th>why</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def glance(summary: Mapping[str, Any]) -> str:
    """The operator's three answers at the top of the page, for a run with faults: produce p99 before,
    during and after them (each phase's), how long partitions had no reachable leader (the failovers), and
    whether anything acknowledged was lost, written twice or failed. "" for a run without faults."""
    phases: list[Mapping[str, Any]] = summary.get("phases") or []
    if not phases:
        return ""
    items = []
    p99s = []
    for phase in phases:
        latency: Mapping[str, Any] = phase.get("produce_latency") or {}
        stats = [(label, (data.get("from_intended") or {}).get("p99")) for label, data in latency.items()]
        stats = [(label, value) for label, value in stats if value is not None]
        if not stats:
            continue
        values = ", ".join(f"{_number(v)} ms" + (f" ({escape(str(label))})" if len(stats) > 1 else "")
                           for label, v in stats)
        p99s.append(f"<b>{escape(str(phase.get('name', '')))}</b> {values}")
    if p99s:
        items.append("<li>Produce p99 from the intended send: " + "; ".join(p99s) + ".</li>")
    moved: list[Mapping[str, Any]] = summary.get("failovers") or []
    if moved:
        waits = [float(f["unavailable_ms"]) for f in moved if f.get("unavailable_ms") is not None]
        causes = sorted({str(f.get("cause")) for f in moved})
        longest = f"; its producers waited {_number(max(waits) / 1000)} s at most" if waits else ""
        items.append(f"<li>{len(moved)} leadership change(s) ({escape(', '.join(causes))}){longest} "
                     '(<a href="#failovers">failovers</a>).</li>')
    counts = outcome_counts(summary)
    if counts:
        bad = [("acknowledged then lost", counts.get("lost", 0)), ("written twice", counts.get("duplicated", 0)),
               ("failed", counts.get("failed", 0))]
        items.append("<li>" + ", ".join(f"{_number(n)} {words}" for words, n in bad)
                     + f" of {_number(sum(counts.values()))} batches.</li>")
    return f'<div id="glance"><b>At a glance</b><ul>{"".join(items)}</ul></div>'


def phases_table(summary: Mapping[str, Any]) -> str:
    """A run with faults, phase by phase (summary.json ``phases``): each phase's time window, batches, produce
    latency from the intended send per acks, produce errors and records acknowledged per second; "" without
    faults."""
    phases: list[Mapping[str, Any]] = summary.get("phases") or []
    if not phases:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("phase", "from (s)", "to (s)", "batches", "acks", "p50", "p99", "max",
                                               "produce errors", "acknowledged records/s"))
    rows = []
    for phase in phases:
        latency: Mapping[str, Any] = phase.get("produce_latency") or {}
        errors = phase.get("produce_errors") or {}
        error_text = ", ".join(f"{_number(n)} {escape(str(name))}" for name, n in errors.items()) or "0"
        labels = list(latency.items()) or [("-", {})]
        for i, (label, data) in enumerate(labels):
            stats = data.get("from_intended") or {}
            lead = (f"<td>{escape(str(phase.get('name', '')))}</td>"
                    f"<td>{_seconds(phase.get('from_ms'))}</td><td>{_seconds(phase.get('to_ms'))}</td>"
                    f"<td>{_number(phase.get('batches'))}</td>") if i == 0 else "<td></td>" * 4
            tail = (f"<td>{error_text}</td><td>{_number(phase.get('acknowledged_records_per_s'))}</td>"
                    if i == 0 else "<td></td><td></td>")
            rows.append(f"<tr>{lead}<td>{escape(str(label))}</td>"
                        + "".join(f"<td>{_number(stats.get(s))}</td>" for s in ("p50", "p99", "max")) + tail + "</tr>")
    caption = ("Phases: before, during and after the faults. Produce latency (ms) from the intended send; a batch "
               "counts in the phase its first record was meant for, a request in the phase it was sent in.")
    return (f'<table id="phases"><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def failovers_table(summary: Mapping[str, Any]) -> str:
    """Each leadership change of the run, phase by phase (summary.json ``failovers``); "" without any."""
    moved: list[Mapping[str, Any]] = summary.get("failovers") or []
    if not moved:
        return ""

    def between(a: Any, b: Any) -> str:
        return "-" if a is None or b is None else _number(float(b) - float(a))

    def leader(value: Any) -> str:
        return "none" if value is None else escape(str(value))

    def learned(f: Mapping[str, Any]) -> str:
        clients: Mapping[str, Any] = f.get("learned_ms") or {}
        return ", ".join(f"{escape(str(c))} {between(f.get('elected_ms'), t)}" for c, t in clients.items()) or "-"

    head = "".join(f"<th>{h}</th>" for h in ("partition", "old leader", "new leader", "cause", "fault (s)",
                                               "fault → fence (ms)", "last heartbeat → fence (ms)", "election (s)",
                                               "election → new leader applied it (ms)",
                                               "election → each client learned it (ms)",
                                               "election → first ack (ms)",
                                               "unavailable (ms)", "bounded by"))
    rows = "".join(
        f"<tr><td>{escape(str(f.get('partition')))}</td><td>{leader(f.get('old_leader'))}</td>"
        f"<td>{leader(f.get('new_leader'))}</td><td>{escape(str(f.get('cause')))}</td>"
        f"<td>{'-' if f.get('fault_ms') is None else _seconds(f.get('fault_ms'))}</td>"
        f"<td>{between(f.get('fault_ms'), f.get('fenced_ms'))}</td>"
        f"<td>{between(f.get('last_heartbeat_ms'), f.get('fenced_ms'))}</td><td>{_seconds(f.get('elected_ms'))}</td>"
        f"<td>{between(f.get('elected_ms'), f.get('applied_ms'))}</td>"
        f"<td>{learned(f)}</td>"
        f"<td>{between(f.get('elected_ms'), f.get('first_ack_ms'))}</td><td>{_number(f.get('unavailable_ms'))}</td>"
        f"<td>{escape(', '.join(f.get('bounded_by') or []))}</td></tr>"
        for f in moved)
    caption = ("Failovers: each leadership change. The controller fences a crashed or paused leader when its "
               "session expires (ReplicationControlManager.handleBrokerFenced) and elects a new leader in the same "
               "event; the producers find it at their next metadata refresh and their batches are acknowledged "
               "there.")
    return (f'<table id="failovers"><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def summary_tables(summary: Mapping[str, Any]) -> str:
    """Every table of summary.json, whatever its nesting: a mapping whose values include percentile stats
    becomes a table (one row per stats entry, its plain values in the caption); a mapping of plain values
    (counters) becomes a two-column table. A run with faults opens with its phases."""
    parts: list[str] = []
    for table in (outcomes_table(summary), phases_table(summary), failovers_table(summary)):
        if table:
            parts.append(table)
    facts = [(k, v) for k, v in summary.items() if not isinstance(v, Mapping | list)]
    if facts:
        parts.append(_facts_table("Run", facts))

    def walk(node: Mapping[str, Any], path: list[str]) -> None:
        rows = [(str(k), v) for k, v in node.items() if _is_stats(v)]
        plain = [(str(k), v) for k, v in node.items() if not isinstance(v, Mapping | list)]
        title = " / ".join(path) or "latency"
        if rows:
            parts.append(_stats_table(title, rows, plain))
        elif plain and path:
            parts.append(_facts_table(title, plain))
        for key, value in node.items():
            if isinstance(value, Mapping) and not _is_stats(value):
                walk(value, [*path, str(key)])

    walk({k: v for k, v in summary.items() if isinstance(v, Mapping) and k != "per_broker"}, [])
    parts.extend(per_broker_tables(summary.get("per_broker") or {}))
    return "\n".join(parts)


def per_broker_tables(per_broker: Mapping[str, Any]) -> list[str]:
    """summary.json's per_broker as two tables: TotalTimeMs per broker and API, and each broker's load
    (requests, errors, idle ratios of its request handlers and network threads, request queue, and the cores its
    data-plane threads and replica fetchers used)."""
    if not per_broker:
        return []
    head = "".join(f"<th>{s}</th>" for s in ("broker", "api", "n", "errors", *STATS))
    rows = []
    for broker, data in per_broker.items():
        for api, stats in (data.get("apis") or {}).items():
            total = stats.get("TotalTimeMs") or {}
            rows.append(f"<tr><td>{escape(str(broker))}</td><td>{escape(str(api))}</td>"
                        f"<td>{_number(stats.get('count'))}</td><td>{_number(stats.get('errors'))}</td>"
                        + "".join(f"<td>{_number(total.get(s))}</td>" for s in STATS) + "</tr>")
    latency = (f"<table><caption>per_broker: TotalTimeMs (ms) of the requests each broker handled</caption>"
               f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>") if rows else ""

    def gauge(data: Mapping[str, Any], name: str, stat: str, scale: float = 1.0) -> str:
        value = (data.get(name) or {}).get(stat)
        return _number(None if value is None else float(value) * scale)

    load_head = "".join(f"<th>{escape(s)}</th>" for s in (
        "broker", "requests", "errors", "handlers idle % (mean)", "handlers idle % (min)",
        "network idle % (mean)", "request queue (mean)", "request queue (max)", "data-plane cores",
        "fetcher cores"))
    load_rows = "".join(
        f"<tr><td>{escape(str(broker))}</td><td>{_number(data.get('requests'))}</td>"
        f"<td>{_number(sum((data.get('errors') or {}).values()))}</td>"
        f"<td>{gauge(data, 'RequestHandlerAvgIdlePercent', 'mean', 100.0)}</td>"
        f"<td>{gauge(data, 'RequestHandlerAvgIdlePercent', 'min', 100.0)}</td>"
        f"<td>{gauge(data, 'NetworkProcessorAvgIdlePercent', 'mean', 100.0)}</td>"
        f"<td>{gauge(data, 'RequestQueueSize', 'mean')}</td><td>{gauge(data, 'RequestQueueSize', 'max')}</td>"
        f"<td>{_number((data.get('cores') or {}).get('data plane'))}</td>"
        f"<td>{_number((data.get('cores') or {}).get('replica fetchers'))}</td></tr>"
        for broker, data in per_broker.items())
    load = (f"<table><caption>per_broker: load after the warm-up</caption><thead><tr>{load_head}</tr></thead>"
            f"<tbody>{load_rows}</tbody></table>")
    return [t for t in (latency, load) if t]


def _scenario_section(scenario: Scenario | None, scenario_yaml: str | None) -> str:
    if scenario is None and scenario_yaml is None:
        return "<p>This run was built in code and saved without a scenario.</p>"
    parts = []
    if scenario is not None:
        parts.append(f"<p><b>{escape(scenario.name)}</b>: seed {scenario.seed}, "
                     f"{scenario.duration / 1000:g} s simulated, warm-up {scenario.warmup / 1000:g} s, "
                     f"{len(scenario.topics)} topic(s), {len(scenario.producers)} producer(s), "
                     f"{len(scenario.consumers)} consumer(s), {len(scenario.faults)} fault(s).</p>")
        parts.append(f'<div class="description">{escape(scenario.description.strip())}</div>')
    if scenario_yaml is not None:
        parts.append("<details><summary>The resolved scenario (scenario.yaml: rerun it for the same "
                     f"result)</summary><pre>{escape(scenario_yaml)}</pre></details>")
    return "\n".join(parts)


def round_ticks(span_ms: float, seconds: bool) -> list[float]:
    """About seven ticks from 0 to `span_ms` at round values (1, 2, 2.5 or 5 times a power of ten, in the
    unit shown): a 35 s run reads 0, 5, 10, ... s, not 0, 5.83333, 11.6667, ... s."""
    from matplotlib.ticker import MaxNLocator

    unit = 1000.0 if seconds else 1.0
    values = MaxNLocator(nbins=7, steps=[1, 2, 2.5, 5, 10]).tick_values(0.0, span_ms / unit)
    return [float(v) * unit for v in values if -1e-9 <= v <= span_ms / unit + 1e-9]


_RETRANSMISSION_COLOURS = {TCP_THROUGH: "#009E73", TCP_LOST_AGAIN: "#E69F00", TCP_GAVE_UP: "#000000"}


def timeline_svg(events: RunEvents, duration_ms: float, warmup_ms: float) -> str:
    """Faults as bands (one row each), each stalling host's stalls as thin bands (one row per host) and ISR
    changes as ticks on one time axis, as inline SVG."""
    width, left, right, row_h = 1000, 170, 20, 26
    tcp_rows = 1 if events.retransmissions else 0
    rows = len(events.faults) + len(events.stalls) + tcp_rows + 1
    height = 40 + rows * row_h + 30
    span = max(duration_ms, 1.0)
    seconds = span >= 10_000

    def x(t: float) -> float:
        return left + (width - left - right) * min(max(t, 0.0), span) / span

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {width} {height}" '
           f'width="100%" aria-label="timeline of faults and ISR changes">']
    axis_y = 30 + rows * row_h
    if warmup_ms > 0:
        out.append(f'<rect x="{x(0):.1f}" y="20" width="{x(warmup_ms) - x(0):.1f}" height="{axis_y - 20}" '
                   'fill="#7f7f7f" fill-opacity="0.15"><title>warm-up</title></rect>')
    for i, fault in enumerate(events.faults):
        y = 24 + i * row_h
        end = fault.end_ms if fault.end_ms is not None else span
        label = escape(fault.text)
        until = "the end of the run" if fault.end_ms is None else f"{fault.end_ms / 1000:g} s"
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="13">{label}</text>')
        out.append(f'<rect class="fault" x="{x(fault.start_ms):.1f}" y="{y}" '
                   f'width="{max(x(end) - x(fault.start_ms), 2):.1f}" height="{row_h - 6}" fill="#D55E00" '
                   f'fill-opacity="0.35"><title>{label}: {fault.start_ms / 1000:g} s to {until}</title></rect>')
    for i, host in enumerate(events.stalls, start=len(events.faults)):
        y = 24 + i * row_h
        label = escape(f"stalls {host.host}")
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="13">{label}</text>')
        for start, duration in host.stalls:
            out.append(f'<rect class="stall" x="{x(start):.1f}" y="{y}" '
                       f'width="{max(x(start + duration) - x(start), 1):.1f}" height="{row_h - 6}" '
                       f'fill="#0072B2" fill-opacity="0.6"><title>{label}: {start / 1000:.3f} s, '
                       f'{duration:.3g} ms</title></rect>')
    if tcp_rows:
        y = 24 + (len(events.faults) + len(events.stalls)) * row_h
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="13">TCP retransmissions</text>')
        for episode in events.retransmissions:
            for i, t in enumerate(episode.times_ms):
                last = i == len(episode.times_ms) - 1
                outcome = episode.outcome if last else "lost again"
                colour = _RETRANSMISSION_COLOURS.get(outcome, "#333")
                what = escape(f"{episode.connection}: lost since {episode.lost_since_ms / 1000:.3f} s, retransmitted "
                              f"at {t / 1000:.3f} s: {outcome}")
                out.append(f'<line class="retransmission" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{y + 3}" '
                           f'y2="{y + row_h - 9}" stroke="{colour}" stroke-width="2"><title>{what}</title></line>')
    isr_y = 24 + (len(events.faults) + len(events.stalls) + tcp_rows) * row_h
    out.append(f'<text x="{left - 8}" y="{isr_y + 15}" text-anchor="end" font-size="13">ISR changes</text>')
    for change in events.isr_changes:
        colour = "#CC79A7" if change.shrink else "#009E73"
        what = escape(f"{change.partition}: ISR {change.before} \u2192 {change.after} at "
                      f"{change.time_ms / 1000:g} s")
        out.append(f'<line class="isr-change" x1="{x(change.time_ms):.1f}" x2="{x(change.time_ms):.1f}" '
                   f'y1="{isr_y}" y2="{isr_y + row_h - 6}" stroke="{colour}" stroke-width="3">'
                   f'<title>{what}</title></line>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{axis_y}" y2="{axis_y}" stroke="#333"/>')
    for tick in round_ticks(span, seconds):
        text = f"{tick / 1000:g} s" if seconds else f"{tick:g} ms"
        out.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{axis_y}" y2="{axis_y + 5}" stroke="#333"/>'
                   f'<text x="{x(tick):.1f}" y="{axis_y + 19}" text-anchor="middle" font-size="12">{text}</text>')
    out.append("</svg>")
    return "".join(out)


def _timeline_section(events: RunEvents, duration_ms: float, warmup_ms: float) -> str:
    parts = [timeline_svg(events, duration_ms, warmup_ms),
             "<p><small>Grey: warm-up. Orange bands: fault windows. Blue marks: a host's stop-the-world "
             "stalls (the scenario's stalls, at least a pixel wide each; stalls.parquet lists them). "
             "TCP retransmissions (retransmissions.parquet): a connection's retransmission timer firing "
             "after a message was lost on the wire, green where the retransmission got through (the stream "
             "resumes), amber where it was lost again (the timeout doubles), black where the kernel gave up. "
             "Ticks: ISR shrinks (pink) and expands "
             "(green), at the first IsrSize sample showing the change (every sample_interval), whoever made "
             "it: the summary's counters say who -- isr_shrinks / isr_expands the leaders (Kafka's "
             "IsrShrinksPerSec / IsrExpandsPerSec), controller_isr_shrinks / controller_isr_expands the "
             "controller (fencing, controlled shutdown, elections); each counts a replica leaving or joining. "
             "Hover for details.</small></p>"]
    rows: list[tuple[float, str]] = []
    for fault in events.faults:
        until = "the end of the run" if fault.end_ms is None else f"{fault.end_ms / 1000:g} s"
        rows.append((fault.start_ms, f"fault: {fault.text}, until {until}"))
    for episode in events.retransmissions:
        times = ", ".join(f"{t / 1000:.3f}" for t in episode.times_ms[:6]) + (", ..." if len(episode.times_ms) > 6
                                                                              else "")
        rows.append((episode.lost_since_ms, f"TCP: {episode.connection} lost a segment; retransmitted "
                                            f"{len(episode.times_ms)}\u00d7 (at {times} s): {episode.outcome}"))
    for host in events.stalls:
        rows.append((host.stalls[0][0], f"stalls of {host.host}: {len(host.stalls)}, {host.stalled_ms:.4g} ms "
                                        "stalled in all, from this time on (stalls.parquet has each)"))
    for change in events.isr_changes:
        verb = "shrinks" if change.shrink else "expands"
        rows.append((change.time_ms, f"ISR of {change.partition} {verb}: {change.before} \u2192 {change.after} "
                                     "replicas (first gauge sample showing it)"))
    if not rows:
        parts.append("<p>No faults and no ISR changes in this run.</p>")
    else:
        body = "".join(f"<tr><td>{t / 1000:.3f} s</td><td>{escape(text)}</td></tr>"
                       for t, text in sorted(rows, key=lambda r: r[0]))
        parts.append(f"<table class=\"events\"><thead><tr><th>simulated time</th><th>event</th></tr></thead><tbody>{body}"
                     "</tbody></table>")
    return "\n".join(parts)


def _png(data: bytes, alt: str) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{encoded}">'


def _figure_png(figure: Figure, dpi: int) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _figures_section(figures: Mapping[str, bytes], stories: Mapping[str, str] | None = None) -> str:
    """Every figure with its caption; `stories` adds a run's own words to a figure's caption (the failover
    swimlane's steps with their times and brokers)."""
    if not figures:
        return "<p>This run's data supports no figure.</p>"
    parts = []
    for name, (title, sentence) in FIGURE_CAPTIONS.items():
        if name not in figures:
            continue
        story = (stories or {}).get(name)
        told = f" {escape(story)}" if story else ""
        parts.append(f'<figure id="figure-{name}">{_png(figures[name], title)}'
                     f"<figcaption><b>{escape(title)}.</b> {escape(sentence)}{told}</figcaption></figure>")
    return "\n".join(parts)


def figure_stories(result: RunResult) -> dict[str, str]:
    """The run's own story for the figures that tell one: the failover swimlane's steps, from the same
    tables the figure is drawn from (computing them draws nothing)."""
    from kafkasim.report.failover_story import build_failover_story
    from kafkasim.report.skip import SkipFigure

    try:
        story = build_failover_story(result.requests, result.records, result.timeseries)
    except SkipFigure:
        return {}
    return {"failover_swimlane": story.caption}


def _slowest_table(requests: pd.DataFrame, warmup_ms: float) -> str:
    needed = {"request_id", "api", "client", "TotalTimeMs", "client_send_ms"}
    if requests is None or requests.empty or not needed <= set(requests.columns):
        return "<p>No requests recorded.</p>"
    rows = requests[requests["client_send_ms"].astype(float) >= warmup_ms]
    rows = rows[np.isfinite(rows["TotalTimeMs"].to_numpy(dtype=float, na_value=np.nan))]
    parts = []
    phases = [c for c in ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
                          "ResponseSendTimeMs") if c in rows.columns]
    for api, group in rows.groupby(rows["api"].astype(str), sort=True):
        top = group.sort_values(["TotalTimeMs", "request_id"], ascending=[False, True]).head(SLOWEST_ROWS)
        head = "".join(f"<th>{escape(c)}</th>" for c in ("request", "client", "sent at", "TotalTimeMs",
                                                         *(p.removesuffix("TimeMs") for p in phases), "error"))
        body = "".join(
            "<tr>" + f"<td>{escape(str(r['request_id']))}</td><td>{escape(str(r['client']))}</td>"
            f"<td>{_number(float(r['client_send_ms']))}</td><td>{_number(float(r['TotalTimeMs']))}</td>"
            + "".join(f"<td>{_number(float(r[c]))}</td>" for c in phases)
            + f"<td>{escape(str(r.get('error_name', r.get('error', ''))))}</td></tr>"
            for _, r in top.iterrows())
        parts.append(f'<div class="wide"><table><caption>{escape(str(api))}: the {len(top)} slowest by '
                     f"TotalTimeMs (ms; the phases are Kafka's RequestMetrics)</caption>"
                     f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")
    return "\n".join(parts)


def slowest_produce_ids(requests: pd.DataFrame | None, warmup_ms: float, n: int = SLOWEST_SWIMLANES) -> list[Any]:
    """The `n` acks=all produces with the largest TotalTimeMs sent after warm-up whose every timestamp was
    recorded (a swimlane needs them all); slowest first, earliest request on ties."""
    from kafkasim.report.frames import acks_column
    from kafkasim.report.swimlane_story import TIMESTAMPS

    if requests is None or requests.empty or not {"api", "acks", "request_id", *TIMESTAMPS} <= set(requests):
        return []
    produce = requests[requests["api"].astype(str) == "Produce"]
    produce = produce[(acks_column(produce) == -1).fillna(False)]
    stamps = produce[list(TIMESTAMPS)].to_numpy(dtype=float, na_value=np.nan)
    produce = produce[np.isfinite(stamps).all(axis=1)]
    produce = produce[produce["client_send_ms"].astype(float) >= warmup_ms]
    ordered = produce.sort_values(["TotalTimeMs", "request_id"], ascending=[False, True])
    return list(ordered["request_id"].head(n))


def _slowest_section(result: RunResult, warmup_ms: float) -> str:
    from kafkasim.report.swimlane import produce_swimlane_figure

    parts = [_slowest_table(result.requests, warmup_ms)]
    ids = slowest_produce_ids(result.requests, warmup_ms)
    if ids:
        parts.append(f"<h3>The {len(ids)} slowest acks=all produces as swimlanes</h3>"
                     "<p>The slowest of those whose every timestamp was recorded (a produce the client gave up "
                     "on has no response to draw). Read each like the swimlane figure above: the orange Remote "
                     "bar is the wait in the produce purgatory for the followers; whatever is longest is why "
                     "this request was slow.</p>")
    rows = result.requests.set_index("request_id", drop=False) if ids else result.requests
    for request_id in ids:
        figure = produce_swimlane_figure(result.requests, result.records, result.timeseries, result.summary,
                                         request_id)
        if figure is None:
            continue
        row = rows.loc[request_id]
        outcome = str(row.get("error_name", "")) if "error_name" in row.index else ""
        parts.append(f'<figure class="swimlane">{_png(_figure_png(figure, SWIMLANE_DPI), f"request {request_id}")}'
                     f"<figcaption><b>Request {escape(str(request_id))}</b> from {escape(str(row['client']))}: "
                     f"TotalTimeMs {_number(float(row['TotalTimeMs']))} ms"
                     f"{', ' + escape(outcome) if outcome else ''}.</figcaption></figure>")
    return "\n".join(parts)


def _facts(result: RunResult, scenario: Scenario | None) -> str:
    bits = []
    if scenario is not None:
        bits.append(f"scenario {escape(scenario.name)}, seed {scenario.seed}")
    elif "seed" in result.summary:
        bits.append(f"seed {_number(result.summary['seed'])}")
    if "simulated_duration_ms" in result.summary:
        bits.append(f"{_number(float(result.summary['simulated_duration_ms']) / 1000)} simulated s")
    bits.append(f"{len(result.requests):,} requests")
    # Nothing from run-info.json (wall seconds, date): the page is a function of the scenario and the seed,
    # byte for byte, like every other file of a result.
    return "; ".join(bits)


def render_report(result: RunResult, figures: Mapping[str, bytes]) -> str:
    """The report page of `result` with `figures` (name -> PNG bytes) embedded."""
    from kafkasim import __version__

    scenario = scenario_from_yaml(result.scenario_yaml)
    warmup = float(result.summary.get("warmup_ms") or 0.0)
    duration = float(result.summary.get("simulated_duration_ms")
                     or (scenario.duration if scenario is not None else 0.0) or 0.0)
    events = run_events(result.timeseries, scenario, result.stalls, result.retransmissions)
    stopped = result.summary.get("interrupted_at_ms")
    partial = (f"the run stopped at simulated time {float(stopped) / 1000:g} s"
               f" ({result.summary.get('interrupted_by', 'interrupted')}); everything here covers the time up "
               "to then" if stopped is not None else "")
    window = result.summary.get("window")
    during = (f", from {float(window['from_ms']) / 1000:g} s to {float(window['to_ms']) / 1000:g} s only"
              if isinstance(window, Mapping) else "")
    return _PAGE.substitute(
        title=escape((scenario.name if scenario is not None else "a kafkasim run") + during),
        facts=_facts(result, scenario),
        partial=f'<p class="partial">Partial result: {escape(str(partial))}</p>' if partial else "",
        glance=glance(result.summary),
        scenario=_scenario_section(scenario, result.scenario_yaml),
        summary=summary_tables(result.summary),
        timeline=_timeline_section(events, duration, warmup),
        figures=_figures_section(figures, figure_stories(result) if "failover_swimlane" in figures else None),
        slowest=_slowest_section(result, warmup),
        version=escape(__version__),
    )


def figure_pngs(result: RunResult, figures_dir: Path | None) -> dict[str, bytes]:
    """The run's figures as PNG bytes: read from `figures_dir` when it holds them (what kafkasim run or
    kafkasim plot wrote), else drawn now in memory (a run saved with --no-figures)."""
    from kafkasim.record.result import FIGURE_NAMES

    if figures_dir is not None and figures_dir.is_dir():
        found = {name: (figures_dir / f"{name}.png").read_bytes() for name in FIGURE_NAMES
                 if (figures_dir / f"{name}.png").is_file()}
        if found:
            return found
    from kafkasim.report.figures import DPI, figure_builders

    drawn: dict[str, bytes] = {}
    scenario = scenario_from_yaml(result.scenario_yaml)
    for name, build in figure_builders(result.requests, result.records, result.timeseries, result.summary, None,
                                       scenario, segments=result.segments):
        figure = build()
        if figure is not None:
            drawn[name] = _figure_png(figure, DPI)
    return drawn


def write_report(result: RunResult, directory: str | os.PathLike[str]) -> Path:
    """Write `directory`/report.html for `result` (figures from `directory`/figures, or drawn now): to a
    hidden partial name first, then renamed, so a crash never leaves half a report under its name."""
    from kafkasim.record.result import FIGURES_DIR, REPORT_FILE

    folder = Path(directory)
    page = render_report(result, figure_pngs(result, folder / FIGURES_DIR))
    target = folder / REPORT_FILE
    partial = folder / f".{REPORT_FILE}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(page)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, target)
    logger.debug("wrote %s", target)
    return target


def section_ids() -> Iterable[str]:
    """The ids of the report's sections, in page order."""
    return ("scenario", "summary", "timeline", "figures", "slowest")
