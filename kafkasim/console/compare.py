"""`kafkasim compare`: the tables it prints (80 columns wide at most) and where it writes the figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kafkasim.console.format import count, ms
from kafkasim.record.summary import (
    CORES_DATA_PLANE,
    CORES_NETWORK_THREADS,
    CORES_REPLICA_FETCHERS,
    CORES_REQUEST_HANDLERS,
)
from kafkasim.report.compare import CORES_ALL, STATS, CompareError, Group, Run, difference

_KIND_TITLES = {
    "api": "Broker TotalTimeMs per API (ms)",
    "broker": "Per broker: TotalTimeMs of the requests it handled, per API (ms)",
    "client": "Per client: client send -> receive of one request (ms)",
    "producer": "Per producer: intended send -> ack, no coordinated omission (ms)",
    "consumer": "Per consumer: end to end, intended send -> first seen (ms)",
}


def _signed(value: float, stat: str) -> str:
    if value == 0:
        return "0"
    text = f"{int(value):,}" if stat == "count" else ms(value)
    return ("+" if value > 0 else "") + text


def _ratio(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.2f}x"


def group_table(runs: Sequence[Run], group: Group) -> Table:
    """One latency: a row per run, and under each later run its difference and ratio to run A."""
    table = Table(title=f"{group.key}  [dim]{group.measure}[/dim]", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, title_style="bold")
    table.add_column("run", no_wrap=True)
    for stat in STATS:
        table.add_column("n" if stat == "count" else stat, justify="right", no_wrap=True)
    base = group.stats[0]
    for index, (run, stats) in enumerate(zip(runs, group.stats, strict=True)):
        if stats is None:
            table.add_row(run.letter, *(["-"] * len(STATS)), style="dim")
            continue
        table.add_row(run.letter, count(stats.get("count")), *(ms(stats.get(s)) for s in STATS[1:]))
        if index == 0 or base is None:
            continue
        pairs = [difference(base, stats, s) for s in STATS]
        table.add_row(f"  {run.letter}-A", *(_signed(p[0], s) if p else "-" for p, s in zip(pairs, STATS, strict=True)),
                      style="cyan")
        table.add_row(f"  {run.letter}/A", *(_ratio(p[1]) if p else "-" for p in pairs), style="cyan")
    return table


def print_comparison(console: Console, runs: Sequence[Run], groups: Sequence[Group]) -> None:
    for run in runs:
        console.print(Text.assemble((f"{run.letter} ", "bold"), f"= {run.path}  ({run.name})"))
    for run in runs:
        if run.cannot_show is not None:
            console.print(Text(f"{run.letter} {run.cannot_show}.", style="dim"))
        if (shared := run.shared_machine) is not None:
            console.print(Text(f"{run.letter}: {shared}; its latencies carry those waits.", style="dim"))
    windows = {run.result.summary.get("window", {}).get("from_ms") for run in runs}
    if windows != {None}:
        window = runs[0].result.summary["window"]
        console.print(Text(f"Each run from {window['from_ms'] / 1000:g} s to {window['to_ms'] / 1000:g} s only: "
                           "requests sent and batches meant to be sent in that window.", style="dim"))
    console.print(Text("X-A rows: the later run X minus A, in ms; X/A rows: X divided by A.", style="dim"))
    kind = None
    for group in groups:
        if group.kind != kind:
            kind = group.kind
            console.print()
            console.print(Text(_KIND_TITLES[kind], style="bold underline"))
        console.print(group_table(runs, group))
    _print_pauses(console, runs)
    _print_cores(console, runs)
    _print_bands(console, runs)


def pauses_table(runs: Sequence[Run]) -> Table | None:
    """Each run's stop-the-world pauses per host (kafkasim.report.pauses): a simulated run's stalls beside a real
    run's garbage collections. None when no run kept any."""
    found = [(run, run.pauses) for run in runs]
    if all(hosts is None for _run, hosts in found):
        return None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("run", "host", "n", "per s", "of time", "p50", "max"):
        table.add_column(column, justify="left" if column in ("run", "host") else "right", no_wrap=True)
    for run, hosts in found:
        if hosts is None:
            table.add_row(run.letter, "none kept", *(["-"] * 5), style="dim")
            continue
        for host in hosts:
            table.add_row(run.letter, host.host, count(host.count), f"{host.per_second:.2f}", f"{host.share:.1%}",
                          ms(host.p50_ms) if host.count else "-", ms(host.max_ms) if host.count else "-")
    return table


def _print_section(console: Console, table: Table | None, title: str, caption: str) -> None:
    """A table under its underlined title and a dim caption; nothing when there is no table."""
    if table is None:
        return
    console.print()
    console.print(Text(title, style="bold underline"))
    console.print(Text(caption, style="dim"))
    console.print(table)


def _print_pauses(console: Console, runs: Sequence[Run]) -> None:
    _print_section(console, pauses_table(runs), "Stop-the-world pauses per host, begun in the window (ms)",
                   "A simulated run's stalls (stalls.parquet; `machine` stops every broker at once); a real run's "
                   "garbage collections from each JVM's GC log (kafka/<jvm>/gc-*.log; `driver` is every client's "
                   "JVM).")


# The cores table's columns: a kind of broker thread (summary per_broker cores) and its heading.
_CORE_COLUMNS = ((CORES_REQUEST_HANDLERS, "handlers"), (CORES_NETWORK_THREADS, "network"),
                 (CORES_DATA_PLANE, "data plane"), (CORES_REPLICA_FETCHERS, "fetchers"), (CORES_ALL, "all"))


def _cores(value: float) -> str:
    return "0" if value == 0 else f"{value:.3f}"


def cores_table(runs: Sequence[Run]) -> Table | None:
    """Each run's cores per broker and kind of thread after the warm-up (Run.cores), and under each later run
    its ratio to run A's, broker by broker. None when no run has any."""
    found = [(run, run.cores) for run in runs]
    if all(cores is None for _run, cores in found):
        return None
    used = [(kind, title) for kind, title in _CORE_COLUMNS
            if any(kind in per for _r, cores in found for per in (cores or {}).values())]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("run", no_wrap=True)
    table.add_column("broker", no_wrap=True)
    for _kind, title in used:
        table.add_column(title, justify="right", no_wrap=True)
    base = found[0][1] or {}
    for index, (run, cores) in enumerate(found):
        if cores is None:
            table.add_row(run.letter, "none kept", *(["-"] * len(used)), style="dim")
            continue
        for broker, kinds in cores.items():
            table.add_row(run.letter, broker, *(_cores(kinds[k]) if k in kinds else "-" for k, _t in used))
        if index == 0:
            continue
        for broker, kinds in cores.items():
            first = base.get(broker, {})
            table.add_row(f"  {run.letter}/A", broker,
                          *(_ratio(kinds[k] / first[k]) if first.get(k) and k in kinds else "-" for k, _t in used),
                          style="cyan")
    return table


def _print_cores(console: Console, runs: Sequence[Run]) -> None:
    _print_section(console, cores_table(runs), "Cores each broker's threads used after the warm-up, by kind",
                   "A simulated run's modelled CPU (the service times of its handlers and network threads, its "
                   "fetchers' appends); a real run's JVM threads (/proc, named by jcmd), counted to 95% of the load. "
                   "Where two runs of one scenario differ here, the same work cost a different amount of CPU: a "
                   "real run's machine slower or faster than the one a preset was fitted on, or work kafkasim's "
                   "model of that scenario leaves out.")


def _print_bands(console: Console, runs: Sequence[Run]) -> None:
    """A run predicted with a fitted preset carries its band (`kafkasim run --preset`): shown beside the first
    other run's values (a real run, say)."""
    from kafkasim.calibrate.targets import statistics

    for run in runs:
        prediction = run.result.run_info.get("prediction")
        if not isinstance(prediction, dict):
            continue
        other = next((r for r in runs if r is not run), None)
        real = ({k: v for k, (_g, v, _n) in statistics(other.result.summary).items()} if other is not None
                else None)
        console.print()
        console.print(Text(f"{run.letter}: a prediction" + (f"; measured: {other.letter}" if other else ""),
                           style="bold underline"))
        console.print(band_table(prediction, real))


def _windowed(run: Run, from_text: str | None, to_text: str | None) -> Run:
    """The run cut to --from/--to (each run by its own clock: the same window of every run)."""
    from dataclasses import replace

    from kafkasim.record.window import WindowError, window_of, windowed

    try:
        window = window_of(run.result, from_text, to_text)
    except WindowError as exc:
        raise CompareError(f"{run.path}: {exc}") from None
    return run if window is None else replace(run, result=windowed(run.result, window))


def compare_command(paths: Sequence[str], out: str | None, *, from_text: str | None = None,
                    to_text: str | None = None) -> int:
    from pathlib import Path

    from kafkasim.report.compare import (
        check_compare_dir,
        compare_groups,
        default_compare_dir,
        load_runs,
        write_comparison,
    )

    error = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        runs = load_runs(paths)
        runs = [_windowed(run, from_text, to_text) for run in runs]
        target = Path(out) if out is not None else default_compare_dir(runs)
        check_compare_dir(target, label=f"--out {out}" if out is not None else str(target))
        groups = compare_groups(runs)
        console = Console(highlight=False, width=min(Console().width, 80))
        print_comparison(console, runs, groups)
        written = write_comparison(runs, groups, target)
    except CompareError as exc:
        error.print(f"kafkasim compare: {exc}", markup=False)
        return 2
    console.print()
    console.print(f"figure: {written / 'compare.png'}  (tables as JSON: {written / 'compare.json'})",
                  markup=False)
    return 0


def band_table(prediction: dict[str, Any], real: dict[str, float] | None = None) -> Table:
    """A predicted run's band (run-info.json's `prediction`, kafkasim.calibrate.predict): each client
    statistic's value at the fitted values and its least and greatest over the draws; beside a measured run's
    value when `real` is given."""
    table = Table(title=f"Prediction with preset {prediction.get('preset')} ({prediction.get('draws')} draws of "
                        "the fit's uncertainty)", title_justify="left")
    for column in ("statistic (ms)", "predicted", "band", *(("measured",) if real is not None else ())):
        table.add_column(column, justify="left" if column.startswith("statistic") else "right")
    for key, stat in prediction.get("statistics", {}).items():
        if not (key.startswith("produce ") or key.startswith("end to end")):
            continue
        row = [key, f"{stat['value']:.3g}", f"{stat['low']:.3g}-{stat['high']:.3g}"]
        if real is not None:
            row.append(f"{real[key]:.3g}" if key in real else "-")
        table.add_row(*row)
    return table
