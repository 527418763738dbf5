"""`kafkasim run SCENARIO --on-kafka`: the scenario on a real Apache Kafka cluster (kafkasim.real.runner).

Exit codes as a simulated run's: 0 finished, 1 the real run failed (a JVM would not start, the driver
failed; the message says which), 2 bad input (the scenario, an option, a fault or config a real cluster here
cannot take, no Java or Maven), 130 stopped by Ctrl-C with the results so far written.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from rich.console import Console

from kafkasim.console.format import seconds
from kafkasim.console.run_command import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    RESULTS_ROOT,
    RunOptions,
    UsageProblem,
    check_out_dir,
    error,
    load_with_overrides,
    report_hint,
    scenario_error_message,
)
from kafkasim.record.output_dir import describe


def _say(message: str) -> None:
    print(f"kafkasim: {message}", file=sys.stderr, flush=True)


def real_run_command(options: RunOptions, kafka_home: str | None, *, console: Console | None = None) -> int:
    from kafkasim.real.config_map import RefusedOnKafka
    from kafkasim.real.kafka_libs import RealKafkaUnavailable
    from kafkasim.real.runner import run_on_kafka
    from kafkasim.record.result import ResultDirectoryError
    from kafkasim.scenario import ScenarioError

    console = console or Console()
    try:
        if options.live or options.wallclock is not None or options.speed is not None:
            raise UsageProblem("--on-kafka runs in real time on a real cluster: --wallclock, --virtual, --speed and "
                               "--live do not apply")
        scenario = load_with_overrides(options.scenario, options.overrides)
        seed = scenario.seed if options.seed is None else options.seed
        default = Path(RESULTS_ROOT) / f"{scenario.name}-{seed}-kafka"
        label = f"--out {describe(str(options.out))}" if options.out is not None else f"results directory {default}"
        out = check_out_dir(options.out if options.out is not None else default, label)
    except ScenarioError as exc:
        error(scenario_error_message(exc))
        return EXIT_USAGE
    except UsageProblem as exc:
        error(str(exc))
        return EXIT_USAGE
    stop = threading.Event()
    previous = None
    interrupts = 0

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            raise KeyboardInterrupt
        _say("stopping the load (Ctrl-C); the results so far will be written (Ctrl-C again to abort)")
        stop.set()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        # A SIGTERM (a test harness, a service manager) aborts at once: every JVM is stopped on the way out.
        raise KeyboardInterrupt

    previous_term = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, on_sigint)
        previous_term = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        result = run_on_kafka(scenario, seed=seed, kafka_home=kafka_home, say=_say, stop=stop)
    except RefusedOnKafka as exc:
        for line in str(exc).splitlines():
            error(f"{options.scenario}: {line}")
        return EXIT_USAGE
    except RealKafkaUnavailable as exc:
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("aborted; every Kafka process was stopped, no results written")
        return EXIT_INTERRUPTED
    except RuntimeError as exc:
        print(f"kafkasim: real run failed: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    interrupted = "interrupted_at_ms" in result.summary
    if interrupted:
        result.run_info["partial"] = (f"interrupted (Ctrl-C) at {seconds(result.summary['interrupted_at_ms'])} of "
                                      f"{seconds(scenario.duration)}")
    try:
        saved = result.save(out)
    except ResultDirectoryError as exc:
        error(str(exc))
        return EXIT_USAGE
    from kafkasim.console.summary import print_summary

    print_summary(console, result.summary, f"{scenario.name} on Kafka {result.run_info.get('kafka_version')}",
                  float(scenario.duration), result.run_info.get("wall_seconds"))
    shares = result.run_info.get("machine_cpu")
    if shares:
        from kafkasim.real.machine_cpu import describe as describe_cpu

        console.print(describe_cpu(shares, result.run_info.get("cpus")), highlight=False, soft_wrap=True)
    if used := result.run_info.get("process_cpu"):
        from kafkasim.real.process_cpu import describe as describe_processes

        console.print(describe_processes(used), highlight=False, soft_wrap=True)
    from kafkasim.real.gc_log import describe as describe_gc

    if (collections := describe_gc(result.run_info.get("gc_pauses"))) is not None:
        console.print(collections, highlight=False, soft_wrap=True)
    console.print(f"results: {saved}", highlight=False, soft_wrap=True)
    console.print(f"figures and report.html: {report_hint(saved)}", highlight=False, soft_wrap=True)
    return EXIT_INTERRUPTED if interrupted else EXIT_OK
