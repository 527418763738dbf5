"""The `kafkasim` command line (typer + rich). Every verb mirrors a library function."""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from kafkasim.console.blas import single_blas_thread
from kafkasim.record.arrow_allocator import prefer_system_allocator
from kafkasim.timer.walkthrough import ScheduledAdd, ScheduledCancel

app = typer.Typer(
    name="kafkasim",
    help="Simulate Kafka brokers' request handling (one leader or a cluster with failover) and measure its latency.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# click's UsageError.exit_code: what tells a usage error from typer's other exceptions.
_USAGE_ERROR_EXIT_CODE = 2

# Kafka's timer deals in Java longs; anything bigger cannot be a Kafka delay.
_MAX_MS = 2**63 - 1
_ADD_PATTERN = re.compile(r"\s*(-?\d+)\s*(?:@\s*(-?\d+)\s*)?")
_DEFAULT_ADDS = ("450", "8@2", "19@2", "350")
_CANCEL_PATTERN = re.compile(r"\s*[Tt]?(\d+)\s*@\s*(-?\d+)\s*")


def _print_version(value: bool) -> None:
    if value:
        from kafkasim import KAFKA_VERSION, __version__
        from kafkasim.compiled import describe

        typer.echo(f"kafkasim {__version__}, modelling Apache Kafka {KAFKA_VERSION} ({describe()})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print kafkasim's version and exit.", callback=_print_version,
                     is_eager=True),
    ] = False,
) -> None:
    """kafkasim: Kafka's timing wheel, purgatory and replication in simulated time."""


def parse_add(text: str) -> ScheduledAdd:
    """Parse `DELAY` or `DELAY@AT` (whole milliseconds >= 0) into a ScheduledAdd; BadParameter otherwise."""
    match = _ADD_PATTERN.fullmatch(text)
    if match is None:
        raise typer.BadParameter(
            f"{text!r} is not DELAY or DELAY@AT in whole milliseconds (e.g. 450 or 8@2)", param_hint="'--add'"
        )
    delay = int(match.group(1))
    at = int(match.group(2)) if match.group(2) is not None else 0
    for what, value in (("delay", delay), ("add time", at)):
        if not 0 <= value <= _MAX_MS:
            raise typer.BadParameter(
                f"{text!r}: {what} {value} ms is out of range; allowed 0 to {_MAX_MS} ms", param_hint="'--add'"
            )
    return ScheduledAdd(delay_ms=delay, at_ms=at)


def parse_cancel(text: str, *, completed: bool = False) -> ScheduledCancel:
    """Parse `ID@AT` (task T<ID> or <ID>, at AT whole ms >= 0) into a ScheduledCancel; BadParameter otherwise."""
    option = "'--complete'" if completed else "'--cancel'"
    match = _CANCEL_PATTERN.fullmatch(text)
    if match is None:
        raise typer.BadParameter(
            f"{text!r} is not TASK@AT: a task of the --add list (T1 is the first) and a time in whole "
            "milliseconds (e.g. T2@5)",
            param_hint=option,
        )
    at = int(match.group(2))
    if not 0 <= at <= _MAX_MS:
        raise typer.BadParameter(f"{text!r}: time {at} ms is out of range; allowed 0 to {_MAX_MS} ms", param_hint=option)
    return ScheduledCancel(task=int(match.group(1)), at_ms=at, completed=completed)


@app.command(short_help="Walk through Kafka's timing wheel: where each task goes and how it cascades.")
def wheel(
    add: Annotated[
        list[str] | None,
        typer.Option(
            "--add",
            metavar="DELAY[@AT]",
            help="Add a task with DELAY ms at time AT ms (default 0). Repeat for more tasks. "
            f"Default: {' '.join('--add ' + a for a in _DEFAULT_ADDS)}.",
        ),
    ] = None,
    tick_ms: Annotated[int, typer.Option("--tick-ms", help="Level-1 tick in ms (Kafka: 1).")] = 1,
    wheel_size: Annotated[int, typer.Option("--wheel-size", help="Buckets per level (Kafka: 20).")] = 20,
    cancel: Annotated[
        list[str] | None,
        typer.Option(
            "--cancel",
            metavar="TASK@AT",
            help="Cancel task TASK (T1 is the first --add) at AT ms: it leaves its bucket at once. Repeatable.",
            show_default=False,
        ),
    ] = None,
    complete: Annotated[
        list[str] | None,
        typer.Option(
            "--complete",
            metavar="TASK@AT",
            help="Complete TASK's operation at AT ms, before its timeout (DelayedOperation.forceComplete "
            "cancels its timer task). Repeatable.",
            show_default=False,
        ),
    ] = None,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="One line per step with the note in a last column, however wide that is."),
    ] = False,
) -> None:
    """Show, step by step in simulated time, where Kafka's timing wheel puts each task, how it cascades
    down the levels until it runs, and how a cancelled or completed task leaves at once."""
    if tick_ms < 1:
        raise typer.BadParameter(f"tick must be a whole number of ms >= 1, got {tick_ms}", param_hint="'--tick-ms'")
    if wheel_size < 2:
        raise typer.BadParameter(
            f"a wheel needs at least 2 buckets (with 1 every task would overflow forever), got {wheel_size}",
            param_hint="'--wheel-size'",
        )
    adds = [parse_add(text) for text in (add or _DEFAULT_ADDS)]
    cancels = [parse_cancel(text) for text in cancel or ()]
    cancels += [parse_cancel(text, completed=True) for text in complete or ()]

    # Imported here so that other verbs (and --help) do not pay for them, and vice versa.
    from kafkasim.console.wheel import print_walkthrough
    from kafkasim.timer.walkthrough import trace_schedule

    try:
        walkthrough = trace_schedule(adds, cancels, tick_ms=tick_ms, wheel_size=wheel_size)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--cancel' / '--complete'") from None
    print_walkthrough(walkthrough, wide=wide)


@app.command(short_help="Run a scenario; write its results and print latency percentiles per api.",
             epilog="Exit codes: 0 finished, 1 run failed (a Kafka invariant broke; or out of memory, with the "
             "results so far written, marked partial), 2 bad input (including an --out kafkasim will not write), "
             "130 stopped by Ctrl-C with the results so far written.")
def run(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="Scenario YAML file.", show_default=False)],
    seed: Annotated[
        int | None,
        typer.Option("--seed", min=0, max=_MAX_MS, help="Seed of every random stream (default: the scenario's)."),
    ] = None,
    out: Annotated[
        str | None,  # a str, not a Path: Path('') would silently become '.'
        typer.Option(
            "--out",
            metavar="DIR",
            help="Result directory (default: runs/<scenario name>-<seed> under the current directory). An "
            "earlier result kafkasim wrote there is replaced atomically if it holds only kafkasim's files; any "
            "other non-empty directory, the working directory and its parents are refused.",
            show_default=False,
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY.PATH=VALUE",
            # The example stays short enough for the help's narrow column at 80 columns; the docstring gives more.
            help="Override a scenario value, e.g. --set duration=10s. Repeatable: see the examples above.",
            show_default=False,
        ),
    ] = None,
    wallclock: Annotated[
        bool | None,
        typer.Option(
            "--wallclock/--virtual",
            help="Pace simulated time to the wall clock, or run as fast as possible. Default: the scenario's "
            "clock; --speed and --live imply --wallclock unless --virtual is given.",
            show_default=False,
        ),
    ] = None,
    speed: Annotated[
        float | None,
        typer.Option("--speed", metavar="X", help="Wall-clock pace: simulated ms per wall ms (1 = real time).",
                     show_default=False),
    ] = None,
    live: Annotated[
        bool,
        typer.Option("--live", help="Live view of HW, LEOs, ISR, purgatories, queues and recent latencies."),
    ] = False,
    progress: Annotated[
        bool | None,
        typer.Option("--progress/--no-progress",
                     help="Progress bar on stderr for runs over a second (default: when stderr is a terminal).",
                     show_default=False),
    ] = None,
    figures: Annotated[bool, typer.Option(
        "--figures/--no-figures",
        help="Also draw figures/*.png and report.html now (matplotlib: more CPU than the quickstart's "
        "simulation). Default: not drawn; "
        "`kafkasim report RUN_DIR` draws both later from the saved tables, byte for byte the same.")] = False,
    on_kafka: Annotated[bool, typer.Option(
        "--on-kafka", help="Run the scenario on a real Apache Kafka cluster (KRaft, on 127.0.0.1) instead of "
        "simulating it: the same load, seed and faults, the result in the same format (by default in "
        "runs/, named after the scenario and seed, ending -kafka). Needs Java 17+ and Maven (the jars are fetched once into the user cache) "
        "or --kafka-home.")] = False,
    kafka_home: Annotated[str | None, typer.Option(
        "--kafka-home", metavar="DIR", help="With --on-kafka: use this Apache Kafka distribution's libs/ instead "
        "of fetching Kafka's jars (default: $KAFKA_HOME if set).", show_default=False)] = None,
    preset: Annotated[str | None, typer.Option(
        "--preset", metavar="FILE", help="A fitted preset (kafkasim calibrate): its costs, link latency and "
        "stalls wherever the scenario sets none.", show_default=False)] = None,
    draws: Annotated[int | None, typer.Option(
        "--draws", metavar="N", min=0, max=100, help="With --preset: N more runs with the fitted values drawn from "
        "the fit's uncertainty; the result gets a band on each latency (run-info.json, kafkasim compare). "
        "Default 4.", show_default=False)] = None,
) -> None:
    """Run a scenario, write its results (Parquet tables, summary.json, the resolved scenario.yaml) and
    print a summary per api: counts, errors and percentiles of TotalTimeMs and its parts, produce and
    end-to-end latency, ISR shrinks/expands and purgatory expirations. The figures and report.html are
    drawn by `kafkasim report RUN_DIR` afterwards (the last line printed says how), or now with --figures.

    Overrides, one --set each: --set producers[0].linger.ms=0 --set duration=10s
    --set 'faults[0].at=5s'."""
    from kafkasim.console.run_command import RunOptions, run_command

    options = RunOptions(scenario=scenario, seed=seed, out=out, overrides=list(overrides or []),
                         wallclock=wallclock, speed=speed, live=live, progress=progress, figures=figures,
                         preset=preset, draws=4 if draws is None else draws)
    if draws is not None and preset is None:
        raise typer.BadParameter("applies only with --preset", param_hint="'--draws'")
    if on_kafka:
        if preset is not None:
            raise typer.BadParameter("a preset sets simulator-only costs; a real cluster has its own",
                                     param_hint="'--preset'")
        from kafkasim.console.real_run import real_run_command

        raise typer.Exit(real_run_command(options, kafka_home))
    if kafka_home is not None:
        raise typer.BadParameter("applies only with --on-kafka", param_hint="'--kafka-home'")
    raise typer.Exit(run_command(options))


@app.command(short_help="Check scenario and sweep files without running them.")
def validate(
    scenarios: Annotated[list[str], typer.Argument(metavar="FILE...", help="Scenario or sweep YAML files.",
                                                   show_default=False)],
) -> None:
    """Check scenario and sweep files without running them: exit 0 if every one is valid, 2 otherwise (each
    problem as file:line: key.path: message). A sweep file (one with `base:`) is checked as `kafkasim sweep`
    checks it before starting Spark: the file, then every variant against its base scenario."""
    from kafkasim.console.commands import validate_command

    raise typer.Exit(validate_command(scenarios))


@app.command(short_help="Print the JSON Schema of scenario files (kafkasim.schema.json).")
def schema(
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Write to FILE instead of stdout.", show_default=False),
    ] = None,
) -> None:
    """Print the JSON Schema of scenario files (the same bytes as kafkasim.schema.json), for editors."""
    from kafkasim.console.commands import schema_command

    raise typer.Exit(schema_command(out))


@app.command(short_help="Regenerate the figures of a saved run.")
def plot(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A result directory of kafkasim run.",
                                            show_default=False)],
    per_partition: Annotated[bool, typer.Option(
        "--per-partition", help="Draw the replication figures (log offsets, ISR size) partition by partition "
        "(the first 24) even when the run has more than 8 partitions, which are otherwise aggregated.")] = False,
) -> None:
    """Regenerate RUN_DIR/figures from a saved run (the old figures are replaced once the new are written)."""
    from kafkasim.console.commands import plot_command

    raise typer.Exit(plot_command(run_dir, per_partition=per_partition))



FROM_HELP = ("Only the part of the run from T on (a time from its start, e.g. 20s): requests sent, batches meant to "
             "be sent, gauges sampled in the window.")
TO_HELP = "Only the part of the run before T (e.g. 30s)."
FROM_OPTION = typer.Option("--from", metavar="T", help=FROM_HELP, show_default=False)
TO_OPTION = typer.Option("--to", metavar="T", help=TO_HELP, show_default=False)


@app.command(short_help="Compare saved runs: percentiles side by side, differences, an overlaid figure.")
def compare(
    runs: Annotated[list[str], typer.Argument(metavar="RUN_A RUN_B [RUN...]",
                                              help="Result directories of kafkasim run (two or more).",
                                              show_default=False)],
    out: Annotated[str | None, typer.Option(
        "--out", metavar="DIR", help="Where to write compare.png and compare.json (default: "
        "runs/compare-<A>-vs-<B>). A new or empty directory, or an earlier comparison holding only those files.",
        show_default=False)] = None,
    from_: Annotated[str | None, FROM_OPTION] = None,
    to: Annotated[str | None, TO_OPTION] = None,
) -> None:
    """Compare two or more saved runs: p50, p95, p99, p99.9, max and count per API (broker TotalTimeMs), per
    client, per producer and per consumer, with each later run's difference and ratio to the first; and a
    latency-by-percentile figure with one line per run (exit 2 on a directory that is not a result)."""
    from kafkasim.console.compare import compare_command

    raise typer.Exit(compare_command(runs, out, from_text=from_, to_text=to))


@app.command(short_help="Export a saved run: HdrHistogram interval logs (.hlog) and CSV summary tables.")
def export(
    run_dir: Annotated[str, typer.Argument(metavar="RUN_DIR", help="A result directory of kafkasim run.",
                                           show_default=False)],
    hlog: Annotated[str | None, typer.Option(
        "--hlog", metavar="DIR", help="Write one HdrHistogram interval log per API (TotalTimeMs) and per client "
        "(send -> receive) into DIR.", show_default=False)] = None,
    csv: Annotated[str | None, typer.Option(
        "--csv", metavar="DIR", help="Write latency.csv and counters.csv (the summary's tables, plus per client, "
        "producer and consumer) into DIR.", show_default=False)] = None,
    from_: Annotated[str | None, FROM_OPTION] = None,
    to: Annotated[str | None, TO_OPTION] = None,
) -> None:
    """Export a saved run for other tools: HdrHistogram interval logs readable by HdrHistogram's own tools
    (microseconds, 1 s intervals of simulated time, warm-up left out) and CSV tables. Each DIR must be new,
    empty, or an earlier export holding only kafkasim's files; exit 2 otherwise."""
    from kafkasim.console.export import export_command

    raise typer.Exit(export_command(run_dir, hlog=hlog, csv_dir=csv, from_text=from_, to_text=to))


@app.command(short_help="Trace one request of a saved run: its RequestMetrics stages, why it waited, a swimlane.")
def trace(
    run_dir: Annotated[str, typer.Argument(metavar="RUN_DIR", help="A result directory of kafkasim run.",
                                           show_default=False)],
    request: Annotated[int | None, typer.Option("--request", metavar="ID", help="The request_id to trace.",
                                                show_default=False)] = None,
    slowest: Annotated[str | None, typer.Option(
        "--slowest", metavar="API", help="Trace the slowest request (TotalTimeMs, after warm-up) of API: produce, "
        "fetch-consumer or fetch-follower.", show_default=False)] = None,
    client: Annotated[str | None, typer.Option("--client", metavar="NAME", help="With --at: this client's request.",
                                               show_default=False)] = None,
    at: Annotated[float | None, typer.Option("--at", metavar="MS", min=0.0, help="With --client: the request in flight at "
                                             "MS (simulated ms), else the first sent after it.",
                                             show_default=False)] = None,
    out: Annotated[str | None, typer.Option(
        "--out", metavar="DIR", help="Where to write trace.png and trace.json (default: runs/trace-<run>-<id>); a "
        "new or empty directory, or an earlier trace.", show_default=False)] = None,
    from_: Annotated[str | None, FROM_OPTION] = None,
    to: Annotated[str | None, TO_OPTION] = None,
    batch: Annotated[int | None, typer.Option(
        "--batch", metavar="ID", help="Trace a batch (records.parquet's batch_id): why it waited before its first "
        "request was sent (send() blocked on buffer.memory, in-flight slots held by requests parked in a "
        "purgatory or unread behind one), then that request's story.", show_default=False)] = None,
) -> None:
    """Tell the story of one request: each of Kafka's RequestMetrics stages with its time and duration and
    what happens there; for a request that waited in a purgatory, why it waited and what completed it (for a
    DelayedFetch: max wait expired, min bytes reached, a segment roll, an error); and its swimlane figure.
    With --batch, first where a batch's time went before any request carried it."""
    from kafkasim.console.trace import trace_command

    raise typer.Exit(trace_command(run_dir, request_id=request, slowest=slowest, client=client, at_ms=at, out=out,
                                   from_text=from_, to_text=to, batch_id=batch))


@app.command(short_help="Draw the figures and the HTML report (report.html) of a saved run.")
def report(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A result directory of kafkasim run.",
                                            show_default=False)],
    from_: Annotated[str | None, FROM_OPTION] = None,
    to: Annotated[str | None, TO_OPTION] = None,
    out: Annotated[str | None, typer.Option(
        "--out", metavar="DIR", help="With --from/--to: where to write the window's report.html and figures "
        "(default: runs/report-<run>-<from>-<to>); a new or empty directory, or an earlier window report.",
        show_default=False)] = None,
) -> None:
    """(Re)write RUN_DIR/report.html: one self-contained page (figures embedded, no network needed) with the
    scenario and what it teaches, the summary tables, every figure, faults and ISR changes on a timeline,
    and the slowest requests as swimlanes. A run saved without figures (kafkasim run's default) gets them
    drawn into RUN_DIR/figures first. With --from and/or --to, a report of that window of the run (its rows cut,
    its summary computed again, its own figures) goes to a directory of its own: the run's report is left as
    it is."""
    from kafkasim.console.commands import report_command, window_report_command

    if from_ is None and to is None:
        if out is not None:
            typer.echo("kafkasim report: --out is for a window's report: give --from and/or --to too", err=True)
            raise typer.Exit(2)
        raise typer.Exit(report_command(run_dir))
    raise typer.Exit(window_report_command(run_dir, from_text=from_, to_text=to, out=out))


@app.command("import-request-log",
             short_help="Read a real broker's request log (kafka.request.logger) into a result directory.")
def import_request_log(
    logs: Annotated[list[str], typer.Argument(metavar="LOG...", help="Request log files, one per broker.",
                                              show_default=False)],
    out: Annotated[str, typer.Option("--out", metavar="DIR", help="Result directory to write (new, empty, or an "
                                     "earlier kafkasim result).", show_default=False)],
    broker_ids: Annotated[str | None, typer.Option(
        "--broker-ids", metavar="ID,ID,...", help="The broker id of each LOG, in order (default: 0, 1, ...).",
        show_default=False)] = None,
) -> None:
    """Turn real brokers' request logs into a result directory with requests.parquet and summary.json, so that
    `kafkasim report` explains their latency phase by phase (RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs: the
    purgatory wait, ...). A request log is what Kafka writes with `kafka.request.logger` at DEBUG: one line per
    completed request, `<epoch ms> Completed request:{json}` (log4j2 pattern `%d{UNIX_MILLIS} %m%n`). PRODUCE
    and FETCH requests are kept (a follower's FETCH as FetchFollower); lines that are not completed requests are
    counted and named, and skipped (exit 2 when no request could be read)."""
    from kafkasim.console.import_command import import_request_log_command

    raise typer.Exit(import_request_log_command(logs, out, broker_ids))


@app.command(short_help="Fit kafkasim's costs to a measured run; write a preset `run --preset` uses.")
def calibrate(
    result: Annotated[list[str], typer.Argument(metavar="RESULT...", help="Result directories: a real cluster's "
                                                "run (kafkasim run --on-kafka) or an imported request log; several "
                                                "runs of one scenario are fitted by their medians.",
                                                show_default=False)],
    out: Annotated[str, typer.Option("--out", metavar="FILE", help="The preset file to write (a new file, or a "
                                     "preset kafkasim wrote).", show_default=False)],
    scenario: Annotated[str | None, typer.Option("--scenario", metavar="FILE", help="The workload that produced "
                                                 "RESULT (default: RESULT's scenario.yaml).",
                                                 show_default=False)] = None,
    sim_duration: Annotated[str | None, typer.Option("--sim-duration", metavar="DURATION", help="Simulated time "
                                                     "of each run of the fit (default: the scenario's duration).",
                                                     show_default=False)] = None,
    max_evaluations: Annotated[int | None, typer.Option("--max-evaluations", metavar="N",
                                                        help="Most simulated runs the fit makes (at least 72 "
                                                        "times --sim-runs: the start's Jacobian and one step's; "
                                                        "default: 200 times --sim-runs).",
                                                        show_default=False)] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", metavar="N", min=1, help="Processes that simulate at once "
                                             "(default: the machine's cores); the fit is the same for any N.",
                                             show_default=False)] = None,
    sim_runs: Annotated[int, typer.Option("--sim-runs", metavar="N", min=1, help="Simulated runs per evaluation, "
                                          "each statistic their median, at seeds derived from the scenario's: "
                                          "RESULT's statistics measured as several real runs' are (their medians) "
                                          "are simulated alike.")] = 1,
) -> None:
    """Fit kafkasim's costs (request handler, network thread, thread wake-up, link latency, stalls, client
    costs) to a measured run (or the medians of several runs of one scenario) with
    scipy.optimize.least_squares, so that the simulated run of its scenario
    reproduces its RequestChannel breakdown (RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs,
    ResponseQueueTimeMs, ResponseSendTimeMs; p50 and p99 of Produce and Fetch) and its produce and end-to-end
    latency. Writes a preset: each value with its uncertainty and what it was fitted from, and the fit beside
    the measurements (exit 0 written, 2 bad input). docs/calibration.md tells the whole story."""
    from kafkasim.console.calibrate import calibrate_command

    raise typer.Exit(calibrate_command(result, out, scenario_file=scenario, sim_duration=sim_duration,
                                       max_evaluations=200 * sim_runs if max_evaluations is None else max_evaluations,
                                       jobs=jobs, sim_runs=sim_runs))


@app.command(short_help="Run scenario variants x seeds on Spark and compare their percentiles.")
def sweep(
    sweep_file: Annotated[str, typer.Argument(metavar="SWEEP", help="Sweep YAML file.", show_default=False)],
    master: Annotated[str | None, typer.Option("--master", metavar="URL",
                                               help="Spark master (default: local[*]).", show_default=False)] = None,
    out: Annotated[str | None, typer.Option("--out", metavar="DIR", help="Output directory (new, empty, or an "
                                            "earlier sweep result holding only kafkasim's files).",
                                            show_default=False)] = None,
    parallelism: Annotated[int | None, typer.Option("--parallelism", metavar="N", help="Spark tasks.",
                                                    show_default=False)] = None,
) -> None:
    """Run a grid of scenario variants x seeds on Spark and aggregate their percentiles (exit 0 all ran,
    1 some run failed, 2 bad sweep file, no Java, or unusable output directory)."""
    try:
        from kafkasim.console.sweep import sweep_command
    except ImportError as exc:
        raise typer.BadParameter(f"kafkasim sweep needs PySpark ({exc}); install kafkasim[spark]") from None
    raise typer.Exit(sweep_command(sweep_file, master=master, out=out, parallelism=parallelism))


def _warn_if_stale() -> None:
    """A checkout edited and then run without uv would run its compiled modules' old code: say so. And a build
    that could not compile (a type error mypyc refused) left the pure package, which uv does not say: say it."""
    from kafkasim.compiled import build_fallback, stale_sources

    why = build_fallback()
    if why is not None:
        print(f"kafkasim: warning: the last build could not compile kafkasim's core with mypyc ({why}): this is "
              "the pure-Python package, which behaves identically but runs slower; `uv run --extra dev mypy` "
              "shows any type error, and `uv sync --reinstall-package kafkasim` builds again", file=sys.stderr)
        return
    stale = stale_sources()
    if stale:
        shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
        print(f"kafkasim: warning: {shown} changed since the compiled modules were built, which still run "
              "the old code; `uv sync` (or any `uv run`) recompiles them", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: usage errors become one line `kafkasim: error: <message>` on stderr and exit code 2."""
    prefer_system_allocator()  # before pyarrow is used: see kafkasim/record/arrow_allocator.py
    single_blas_thread()  # before numpy is imported: see kafkasim/console/blas.py
    _warn_if_stale()
    try:
        code = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except typer.TyperException as e:
        # typer vendors click privately (typer._click); its exceptions derive from the public
        # TyperException, and the usage errors (click's UsageError and subclasses) carry exit code 2.
        if e.exit_code != _USAGE_ERROR_EXIT_CODE:
            raise
        if type(e).__name__ == "NoArgsIsHelpError":  # told apart by name, as typer's rich_utils does
            # `kafkasim` alone: show the help, as click would (its text is the "message").
            typer.echo(e.format_message(), err=True)
            sys.exit(2)
        message = " ".join(e.format_message().split())
        print(f"kafkasim: error: {message}", file=sys.stderr)
        sys.exit(2)
    except typer.Abort:
        print("kafkasim: aborted", file=sys.stderr)
        sys.exit(130)
    except MemoryError:
        # The last resort (`kafkasim run` handles a run's own): one line, never a cascade of tracebacks.
        # Not a run's (`kafkasim run` names what a run held): nothing to say what filled the memory.
        print("kafkasim: out of memory (give kafkasim more memory)", file=sys.stderr)
        sys.exit(1)
    if isinstance(code, int) and code != 0:
        sys.exit(code)


def program() -> None:
    """The `kafkasim` program (its console script, and `python -m kafkasim`): `main` on the command line, then
    the objects alive at its end frozen (`gc.freeze`) before the interpreter shuts down.

    Python's shutdown runs full garbage collections over every object still tracked: the modules of pandas,
    pyarrow, pydantic and kafkasim, ~100 000 objects after a run. Frozen objects are left out of those
    collections (only the permanent generation holds them), which saves ~0.1-0.15 CPU s per command, a tenth of
    a quickstart run (benchmarks/README.md, "Quickstart"). What else changes at exit: garbage held only by
    reference cycles is left to the operating system instead of being collected. kafkasim has closed and
    synced every file it writes before this point, and atexit handlers (weakref finalizers among them, which
    remove temporary directories), the standard streams' flush and the freeing of everything else by
    reference counts run as before. Not done by `main` itself, which tests and notebooks call in a process
    that goes on.
    """
    try:
        main()
    finally:
        gc.freeze()
