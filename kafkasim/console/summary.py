"""The tables printed at the end of `kafkasim run`: what RunResult.summary holds, readable in 80 columns.

Every number comes from the summary (kafkasim.record.summary computed it); nothing is recomputed here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from kafkasim.console.format import count, ms, seconds
from kafkasim.record.summary import CORE_KINDS, OUTCOME_WORDS, outcome_counts

STATS = ("p50", "p95", "p99", "p99.9", "max")
# Kafka's RequestMetrics breakdown, in the order a request goes through the broker (``RequestMetrics``).
BREAKDOWN_ROWS = (
    ("TotalTimeMs", "TotalTimeMs"),
    ("RequestQueueTimeMs", "  RequestQueueTimeMs"),
    ("LocalTimeMs", "  LocalTimeMs"),
    ("RemoteTimeMs", "  RemoteTimeMs"),
    ("ResponseQueueTimeMs", "  ResponseQueueTimeMs"),
    ("ResponseSendTimeMs", "  ResponseSendTimeMs"),
    ("client_latency_ms", "client send -> receive"),
)


def _latency_table(title: str, first_column: str) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, title_style="bold")
    table.add_column(first_column, no_wrap=True)
    # Numbers never wrap or get cut: in a narrow (or piped, 80-column) console the label column gives way.
    table.add_column("n", justify="right", no_wrap=True)
    for stat in STATS:
        table.add_column(stat, justify="right", no_wrap=True)
    return table


def _stat_cells(stats: Mapping[str, Any] | None) -> list[str]:
    stats = stats or {}
    return [count(stats.get("count")), *(ms(stats.get(s)) for s in STATS)]


def api_table(api: str, data: Mapping[str, Any]) -> Table:
    """One api's request count, errors and the percentiles of TotalTimeMs and each of its parts (ms)."""
    title = (
        f"{api}: {count(data.get('count'))} requests, {count(data.get('errors'))} errors, "
        f"{count(data.get('client_timeouts'))} client timeouts (ms)"
    )
    table = _latency_table(title, "time")
    for key, label in BREAKDOWN_ROWS:
        if key in data:
            table.add_row(label, *_stat_cells(data[key]))
    return table


def client_latency_table(summary: Mapping[str, Any]) -> Table | None:
    """Produce latency per acks (from the intended send time: no coordinated omission) and end to end."""
    produce = summary.get("produce_latency") or {}
    e2e = summary.get("e2e_latency") or {}
    if not produce and not e2e.get("count"):
        return None
    table = _latency_table(
        "Client-observed latency (ms): 'intended' counts from the intended send time (no coordinated "
        "omission), 'sent' from the actual send",
        "latency",
    )
    for label, data in produce.items():
        table.add_row(f"produce {label}, intended", *_stat_cells(data.get("from_intended")))
        table.add_row(f"produce {label}, sent", *_stat_cells(data.get("from_send")))
    if e2e.get("count"):
        table.add_row("end to end, intended", *_stat_cells(e2e))
    # Per record, as OpenMessaging Benchmark and Kafka's EndToEndLatency count: each record from its own
    # intended send (the rows above time a batch by its oldest record, up to linger.ms more).
    for key, what in (("produce_record_latency", "produce"), ("e2e_record_latency", "end to end")):
        per_acks = summary.get(key) or {}
        for label, data in per_acks.items():
            if (data.get("from_intended") or {}).get("count"):
                name = f"per record: {what}" + (f" {label}" if len(per_acks) > 1 else "")
                table.add_row(name, *_stat_cells(data["from_intended"]))
    return table


def outcomes_line(summary: Mapping[str, Any]) -> Text | None:
    """One line: the run's batches by outcome, the losses' reasons (summary lost_after_ack) beside them."""
    if not (summary.get("per_client") or {}).get("producers"):
        return None
    totals = outcome_counts(summary)
    reasons = ((summary.get("lost_after_ack") or {}).get("by_reason") or {})
    parts = []
    for outcome, n in totals.items():
        words = OUTCOME_WORDS.get(outcome, outcome)
        if outcome == "lost" and reasons:
            words += " (" + ", ".join(f"{count(k)} {reason}" for reason, k in reasons.items()) + ")"
        parts.append(f"{count(n)} {words}")
    line = Text("Outcomes (batches sent after the warm-up): ", style="bold")
    line.append(", ".join(parts), style="yellow" if totals.get("lost") or totals.get("duplicated") else "")
    return line


def phases_table(summary: Mapping[str, Any]) -> Table | None:
    """A run with faults, phase by phase (summary ``phases``, kafkasim.record.phases): when each phase ran, its
    batches' produce latency from the intended send, the produce errors of the requests sent in it, and the
    records acknowledged per second. None without faults."""
    phases: list[Mapping[str, Any]] = summary.get("phases") or []
    if not phases:
        return None
    table = Table(title="Phases: before, during and after the faults (produce latency from the intended send, "
                        "ms; a batch counts in the phase its first record was meant for)",
                  title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("phase", max_width=24)
    for column in ("batches", "p50", "p99", "max", "errors", "acked/s"):
        table.add_column(column, justify="right", no_wrap=True)
    blank = [""] * 6
    for phase in phases:
        # The name on a line of its own (it can be long: several faults, the brokers fenced), wrapped if it
        # must; the numbers on the line below, beside the phase's time window.
        table.add_row(Text(str(phase.get("name", "")), style="bold"), *blank)
        window = f"  {seconds(phase.get('from_ms'))}-{seconds(phase.get('to_ms'))}"
        errors = count(sum((phase.get("produce_errors") or {}).values()))
        rate = count(round(phase.get("acknowledged_records_per_s") or 0))
        latency: Mapping[str, Any] = phase.get("produce_latency") or {}
        if len(latency) <= 1:
            only: Mapping[str, Any] = next(iter(latency.values()), {})
            stats = only.get("from_intended") or {}
            table.add_row(window, count(phase.get("batches")), ms(stats.get("p50")), ms(stats.get("p99")),
                          ms(stats.get("max")), errors, rate)
            continue
        table.add_row(window, count(phase.get("batches")), "", "", "", errors, rate)
        for label, data in latency.items():
            stats = data.get("from_intended") or {}
            table.add_row(f"    {label}", count(data.get("batches")), ms(stats.get("p50")), ms(stats.get("p99")),
                          ms(stats.get("max")), "", "")
    return table


FAILOVER_ROWS = 12


def failovers_table(summary: Mapping[str, Any]) -> Table | None:
    """Each leadership change (summary ``failovers``, kafkasim.run.failovers), phase by phase: from the fault
    to the controller's fence (or the shutdown request it acted on), from the election to the first
    acknowledgement on the new leader, and the whole time the partition's producers waited. The first
    ``FAILOVER_ROWS``; the rest are in summary.json."""
    moved: list[Mapping[str, Any]] = summary.get("failovers") or []
    if not moved:
        return None
    more = len(moved) - FAILOVER_ROWS
    title = ("Failovers: each leadership change, phase by phase (ms)"
             + (f"; {count(more)} more in summary.json (failovers)" if more > 0 else ""))
    table = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("partition: leaders, cause", max_width=40)
    for column in ("fault->fence", "elected->ack", "unavailable"):
        table.add_column(column, justify="right", no_wrap=True)

    def leader(value: Any) -> str:
        return "none" if value is None else str(value)

    def between(a: Any, b: Any) -> str:
        return "-" if a is None or b is None else ms(float(b) - float(a))

    for f in moved[:FAILOVER_ROWS]:
        table.add_row(Text(f"{f.get('partition')}: {leader(f.get('old_leader'))} -> {leader(f.get('new_leader'))}",
                           style="bold"), "", "", "")
        table.add_row(f"  {f.get('cause')}", between(f.get("fault_ms"), f.get("fenced_ms")),
                      between(f.get("elected_ms"), f.get("first_ack_ms")), ms(f.get("unavailable_ms")))
    return table


def per_client_tables(summary: Mapping[str, Any]) -> list[Table]:
    """Each producer's and each consumer's own latency rows (summary per_client): a table for the
    producers when there is more than one, one for the consumers likewise (with one, the tables above
    already show the same numbers)."""
    per_client = summary.get("per_client") or {}
    producers: Mapping[str, Any] = per_client.get("producers") or {}
    consumers: Mapping[str, Any] = per_client.get("consumers") or {}
    tables: list[Table] = []
    if len(producers) > 1:
        table = _latency_table(
            "Per producer (ms): its batches from the intended send time, from the send, and until the first "
            "consumer received them",
            "producer",
        )
        for name, data in producers.items():
            acks = data.get("acks")
            table.add_row(Text(f"{name}, {acks}" if acks else name, style="bold"), *[""] * (len(STATS) + 1))
            table.add_row("  intended", *_stat_cells(data.get("from_intended")))
            table.add_row("  sent", *_stat_cells(data.get("from_send")))
            table.add_row("  end to end", *_stat_cells(data.get("e2e")))
        tables.append(table)
    if len(consumers) > 1:
        table = _latency_table(
            "Per consumer (ms): the batches it received, from their intended send time; its fetches' "
            "RemoteTimeMs (parked in the fetch purgatory)",
            "consumer",
        )
        for name, data in consumers.items():
            table.add_row(Text(name, style="bold"), *[""] * (len(STATS) + 1))
            table.add_row("  end to end", *_stat_cells(data.get("e2e")))
            table.add_row("  fetch RemoteTimeMs", *_stat_cells((data.get("broker") or {}).get("RemoteTimeMs")))
        tables.append(table)
    return tables


def brokers_with_requests(summary: Mapping[str, Any]) -> int:
    return sum(1 for data in (summary.get("per_broker") or {}).values() if data.get("requests"))


def per_broker_tables(summary: Mapping[str, Any]) -> list[Table]:
    """Each broker's TotalTimeMs per API, and its load: requests, errors, the mean idle ratio of its
    request handlers and network threads, its longest request queue (summary per_broker). Only when more
    than one broker handled requests: with one, the api tables above show the same numbers."""
    per_broker: Mapping[str, Any] = summary.get("per_broker") or {}
    if brokers_with_requests(summary) < 2:
        return []
    latency = _latency_table("Per broker: TotalTimeMs of the requests it handled (ms)", "broker")
    load = Table(title="Per broker: load", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                 pad_edge=False)
    load.add_column("broker", no_wrap=True)
    for column in ("requests", "errors", "handlers idle", "network idle", "queue max"):
        load.add_column(column, justify="right", no_wrap=True)

    def percent(data: Mapping[str, Any], name: str) -> str:
        mean = (data.get(name) or {}).get("mean")
        return "-" if mean is None else f"{mean * 100:.0f}%"

    for name, data in per_broker.items():
        apis: Mapping[str, Any] = data.get("apis") or {}
        if apis:
            latency.add_row(Text(name, style="bold"), *[""] * (len(STATS) + 1))
        for api, stats in apis.items():
            latency.add_row(f"  {api}", *_stat_cells(stats.get("TotalTimeMs")))
        queue = (data.get("RequestQueueSize") or {}).get("max")
        load.add_row(name, count(data.get("requests")), count(sum((data.get("errors") or {}).values())),
                     percent(data, "RequestHandlerAvgIdlePercent"), percent(data, "NetworkProcessorAvgIdlePercent"),
                     count(queue))
    return [latency, load]


def cores_line(summary: Mapping[str, Any]) -> Text | None:
    """A simulated run's brokers' modelled CPU after the warm-up (summary per_broker cores, kafkasim.run.cores),
    e.g. "cores the brokers' threads worked after the warm-up: broker-0 0.54 (request handlers 0.21, network
    threads 0.33), broker-1 0.05 (replica fetchers)". None for a real run (it prints its JVMs' own,
    kafkasim.real.process_cpu) or one without them."""
    if summary.get("engine") == "kafka":
        return None
    parts = []
    for name, data in (summary.get("per_broker") or {}).items():
        cores = data.get("cores")
        if not cores:
            continue
        kinds = [(kind, float(cores.get(kind, 0.0))) for kind in CORE_KINDS]
        total = sum(value for _, value in kinds)
        shown = [f"{kind} {value:.2g}" for kind, value in kinds if value > 0]
        parts.append(f"{name} {total:.2g}" + (f" ({', '.join(shown)})" if shown else ""))
    if not parts:
        return None
    return Text("cores the brokers' threads worked after the warm-up: " + ", ".join(parts) + "\n")


def client_errors_table(summary: Mapping[str, Any]) -> Table | None:
    """The clients whose requests failed, with the count of each Kafka error (summary per_client)."""
    per_client = summary.get("per_client") or {}
    table = Table(title="Failed requests per client", title_justify="left", title_style="bold", box=None,
                  show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column(no_wrap=True)
    table.add_column()
    for kind in ("producers", "consumers"):
        for name, data in (per_client.get(kind) or {}).items():
            errors = data.get("errors") or {}
            if errors:
                listed = [f"{count(n)} {error}" for error, n in errors.items()]
                timeouts = data.get("client_timeouts") or 0
                if timeouts:
                    listed.append(f"{count(timeouts)} client timeouts")
                table.add_row(name, ", ".join(listed))
    return table if table.row_count else None


def delivery_table(summary: Mapping[str, Any]) -> Table | None:
    """Per producer, its batches per outcome and per number of attempts (summary per_client) -- only when
    some batch was retried, failed or written twice: otherwise every batch was acknowledged first time."""
    producers: Mapping[str, Any] = (summary.get("per_client") or {}).get("producers") or {}
    table = Table(title="Producer delivery (batches)",
                  title_justify="left", title_style="bold", box=None, show_header=False, pad_edge=False,
                  padding=(0, 2, 0, 0))
    table.add_column(no_wrap=True)
    table.add_column()
    for name, data in producers.items():
        outcomes: Mapping[str, int] = data.get("outcomes") or {}
        attempts: Mapping[str, int] = data.get("attempts") or {}
        if set(outcomes) <= {"acknowledged", "sent"} and set(attempts) <= {"1"}:
            continue
        listed = [f"{count(n)} {outcome}" for outcome, n in outcomes.items()]
        listed.append("attempts " + ", ".join(f"{k}: {count(n)}" for k, n in attempts.items()))
        table.add_row(name, ", ".join(listed))
    return table if table.row_count else None


def lost_after_ack_table(summary: Mapping[str, Any]) -> Table | None:
    """Per producer, its acknowledged batches the final leaders no longer have and why (summary
    ``lost_after_ack``) -- only when some were lost."""
    lost: Mapping[str, Any] = summary.get("lost_after_ack") or {}
    table = Table(title="Acknowledged, then lost (batches)", title_justify="left", title_style="bold yellow",
                  box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column(no_wrap=True)
    table.add_column()
    for name, data in (lost.get("by_producer") or {}).items():
        reasons = ", ".join(f"{count(n)} {reason}" for reason, n in (data.get("by_reason") or {}).items())
        table.add_row(name, f"{count(data.get('batches'))} ({count(data.get('records'))} records): {reasons}")
    return table if table.row_count else None


def counters_table(counters: Mapping[str, Any]) -> Table:
    """ISR changes by who made them -- the leaders (Kafka's IsrShrinksPerSec / IsrExpandsPerSec, through
    AlterPartition) and the controller (fencing, controlled shutdown, elections) -- and expirations per
    purgatory (Kafka's ExpiresPerSec meters, as totals)."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="bold")
    table.add_column(justify="right")
    follower = counters.get("fetch_expires_follower")
    consumer = counters.get("fetch_expires_consumer")
    fetch = None if follower is None and consumer is None else (follower or 0) + (consumer or 0)
    # A real run's JMX has the leaders' meters only: no controller rows then.
    by = " (leaders)" if "controller_isr_shrinks" in counters else ""
    left = [(f"ISR shrinks{by}", counters.get("isr_shrinks")), (f"ISR expands{by}", counters.get("isr_expands"))]
    if by:
        left += [("ISR shrinks (controller)", counters.get("controller_isr_shrinks")),
                 ("ISR expands (controller)", counters.get("controller_isr_expands"))]
    if "controller_elr_elections" in counters:
        # Kafka's PartitionChangeBuilder.tryElection: "Setting new leader ... using ELR / an unclean election".
        left += [("leaders elected clean", counters.get("controller_clean_elections")),
                 ("  from the ELR", counters.get("controller_elr_elections")),
                 ("  unclean", (counters.get("controller_unclean_elections") or 0)
                  + (counters.get("controller_last_known_leader_elections") or 0))]
    left.append(("failed ISR updates", counters.get("failed_isr_updates")))
    right = [("Produce purgatory expirations", count(counters.get("produce_expires"))),
             ("Fetch purgatory expirations", count(fetch)),
             ("  of follower / consumer fetches", f"{count(follower)} / {count(consumer)}")]
    if counters.get("messages_dropped"):
        right.append(("messages dropped", count(counters.get("messages_dropped"))))
    if counters.get("messages_retransmitted"):
        right.append(("TCP retransmissions", count(counters.get("messages_retransmitted"))))
    for (name, value), (other, shown) in itertools.zip_longest(left, right, fillvalue=("", None)):
        table.add_row(name, count(value) if name else "", other, shown if other else "")
    return table


def stalls_table(summary: Mapping[str, Any]) -> Table | None:
    """The hosts' stalls (summary ``stalls``, only in a run whose scenario has stalls on): per host, how many,
    the time stalled and the longest, over the whole run (warm-up included)."""
    stalls: Mapping[str, Any] | None = summary.get("stalls")
    if stalls is None:
        return None
    table = Table(title="Stalls (whole run)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, title_style="bold")
    table.add_column("host", no_wrap=True)
    for column in ("stalls", "stalled ms", "longest ms"):
        table.add_column(column, justify="right", no_wrap=True)
    for host, data in (stalls.get("hosts") or {}).items():
        table.add_row(host, count(data.get("count")), ms(data.get("stalled_ms")), ms(data.get("max_ms")))
    table.add_row("all", count(stalls.get("count")), ms(stalls.get("stalled_ms")), ms(stalls.get("max_ms")),
                  style="bold")
    return table


def headline(summary: Mapping[str, Any], name: str, planned_ms: float | None = None,
             wall_seconds: float | None = None) -> Text:
    duration = summary.get("simulated_duration_ms")
    parts = [f"{name}: seed {summary.get('seed')}"]
    interrupted = summary.get("interrupted_at_ms")
    if interrupted is not None:
        of = f" of {seconds(planned_ms)}" if planned_ms is not None else ""
        parts.append(f"interrupted at simulated time {seconds(interrupted)}{of}")
    else:
        parts.append(f"{seconds(duration)} simulated")
    if wall_seconds is not None:
        parts.append(f"{wall_seconds:.1f} s wall")
    warmup = summary.get("warmup_ms") or 0
    if warmup:
        parts.append(f"first {seconds(warmup)} (warm-up) left out of the tables")
    return Text(", ".join(parts), style="bold")


def summary_renderable(summary: Mapping[str, Any], name: str, planned_ms: float | None = None,
                       wall_seconds: float | None = None) -> RenderableType:
    """Everything `kafkasim run` prints about a finished (or interrupted) run, in reading order;
    `planned_ms` is the scenario's duration (an interrupted run says how far it got), `wall_seconds` the
    time the simulation took (from the result's run-info)."""
    items: list[RenderableType] = [headline(summary, name, planned_ms, wall_seconds)]
    for renderable in (outcomes_line(summary), phases_table(summary), failovers_table(summary)):
        if renderable is not None:
            items.append(renderable)
    apis = summary.get("apis") or {}
    if not apis:
        items.append(Text("no requests completed after the warm-up", style="yellow"))
    for api, data in apis.items():
        items.append(api_table(api, data))
    latency = client_latency_table(summary)
    if latency is not None:
        items.append(latency)
    items.extend(per_client_tables(summary))
    items.extend(per_broker_tables(summary))
    cores = cores_line(summary)
    if cores is not None:
        items.append(cores)
    errors = client_errors_table(summary)
    if errors is not None:
        items.extend((errors, Text("")))
    delivery = delivery_table(summary)
    if delivery is not None:
        items.extend((delivery, Text("")))
    lost = lost_after_ack_table(summary)
    if lost is not None:
        items.extend((lost, Text("")))
    stalls = stalls_table(summary)
    if stalls is not None:
        items.append(stalls)
    items.append(counters_table(summary.get("counters") or {}))
    return Group(*items)


def print_summary(console: Console, summary: Mapping[str, Any], name: str, planned_ms: float | None = None,
                  wall_seconds: float | None = None) -> None:
    console.print(summary_renderable(summary, name, planned_ms, wall_seconds))
