"""`kafkasim run`: load, override, run (with progress bar or live view), save, summarise.

Exit codes (also in `kafkasim run --help`):
  0    the run finished; results written.
  1    the run failed: a Kafka invariant was broken (the message names time, partition and request);
       nothing is written. Or it ran out of memory: one line says when and what to change, and the
       results up to then are written where that is possible, marked partial (summary.json
       `interrupted_at_ms` and `interrupted_by`, run-info.json `partial`), without figures.
  2    bad input: the scenario file, a --set override, an option, or an output directory that is not
       a kafkasim result and not empty.
  130  interrupted by Ctrl-C (SIGINT): the run stopped at the next step and the results so far were
       written, complete and loadable; summary.json has `interrupted_at_ms`. A second Ctrl-C aborts at
       once without writing (also 130). 130 = 128 + SIGINT, what shells report for an interrupted job.
"""

from __future__ import annotations

import math
import os
import shlex
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rich.console import Console

from kafkasim.console.format import seconds
from kafkasim.record.output_dir import describe
from kafkasim.scenario.overrides import with_overrides

if TYPE_CHECKING:
    from kafkasim.calibrate.preset import Preset
    from kafkasim.record.result import RunResult
    from kafkasim.run.engine import Engine, SimulationOutOfMemory
    from kafkasim.scenario import Scenario

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

RESULTS_ROOT = "runs"


class UsageProblem(Exception):
    """Bad input found by the command (not by click): printed as `kafkasim: error: ...`, exit 2."""


def error(message: str) -> None:
    """Print an error as main() prints usage errors: `kafkasim: error: ` then the message."""
    print(f"kafkasim: error: {message}", file=sys.stderr)


def scenario_error_message(exc: Exception) -> str:
    """One line for one problem (`file:line: key.path: message`); a count then one problem a line."""
    lines = str(exc).splitlines()
    if len(lines) == 1:
        return lines[0]
    problems = getattr(exc, "problems", lines)
    return f"{len(problems)} problems in the scenario:\n" + "\n".join(f"  {line}" for line in lines)


def load_with_overrides(path: str, overrides: list[str]) -> Scenario:
    """Load and validate a scenario file, then apply `--set` overrides; ScenarioError on any problem."""
    from kafkasim.scenario import load_scenario

    if not Path(path).exists():
        raise UsageProblem(f"{path}: no such scenario file")
    # On the command line it is always a file: a Path is never read as YAML text, and anything but a
    # regular file of at most 4 MiB (a directory, a FIFO, /dev/zero) is refused by name before it is read.
    scenario = load_scenario(Path(path))
    if overrides:
        scenario = with_overrides(scenario, list(overrides))
    return scenario


def with_preset(scenario: Scenario, path: str) -> tuple[Scenario, Preset]:
    """`scenario` with a fitted preset's values (kafkasim.calibrate.preset) where it leaves them out; says on
    stderr what it applied and which of the scenario's own values it kept. UsageProblem for a bad preset."""
    from kafkasim.calibrate.preset import PresetError, applied, load_preset

    try:
        preset = load_preset(path)
    except PresetError as exc:
        raise UsageProblem(f"--preset {exc}") from None
    result, kept = applied(scenario, preset.values, preset.collector)
    fitted = preset.fitted
    origin = f"fitted {fitted.get('when', '?')} on {fitted.get('measured_on', '?')}"
    gc = preset.collector
    fetches = "" if gc is None or gc.follower is None else f" or {gc.follower.every_fetches} fetch responses"
    collector = (f"; its brokers' collector (a pause every {gc.every_requests} requests{fetches}, measured)"
                 if gc is not None else "")
    print(f"kafkasim: preset {path} ({origin}): its costs, link latency and stalls where the scenario sets none"
          + collector
          + (f"; the scenario's own {', '.join(kept)} kept" if kept else ""), file=sys.stderr, flush=True)
    return result, preset


def _band(scenario: Scenario, preset: Preset, draws: int, seed: int, summary: dict[str, Any],
          stopper: StopOnInterrupt) -> dict[str, Any]:
    """The band of a predicted run (kafkasim.calibrate.predict): `draws` further runs, drawing the fitted
    values from the preset's covariance; run-info.json keeps it. Ctrl-C stops drawing after the run under way
    (the band is then over fewer draws, and says so); the run's own result is written either way."""
    from kafkasim.calibrate.predict import as_run_info, predict

    print(f"kafkasim: {draws} more runs with draws of the fit's uncertainty, for the prediction's band "
          "(Ctrl-C: stop drawing)", file=sys.stderr, flush=True)
    prediction = predict(scenario, preset, draws=draws, seed=seed, fitted_summary=summary,
                         should_stop=lambda: stopper.interrupted)
    return as_run_info(prediction, preset)


def default_out_dir(scenario: Scenario, seed: int) -> Path:
    return Path(RESULTS_ROOT) / f"{scenario.name}-{seed}"


def check_out_dir(out: str | Path, label: str) -> Path:
    """The absolute result directory, refusing before the run what RunResult.save would refuse after it
    (see kafkasim.record.output_dir: '', the working directory or an ancestor, a file, a symbolic link, a name
    too long, an unwritable parent, a non-empty directory kafkasim did not write or that holds a user's
    files)."""
    from kafkasim.record.result import ResultDirectoryError, check_result_dir

    try:
        return check_result_dir(out, label=label)
    except ResultDirectoryError as exc:
        raise UsageProblem(str(exc)) from None


def resolve_clock(scenario: Scenario, wallclock: bool | None, speed: float | None, live: bool) -> tuple[bool, float]:
    """(paced?, speed). --wallclock / --virtual win; otherwise --speed or --live mean wall-clock, and
    without any of them the scenario's own `clock` decides."""
    from kafkasim.scenario.scenario import MAX_SPEED, MIN_SPEED

    if speed is not None and not (math.isfinite(speed) and MIN_SPEED <= speed <= MAX_SPEED):
        raise UsageProblem(
            f"--speed must be {MIN_SPEED:g} to {MAX_SPEED:.0f} (1 = real time, 0.5 = half speed), got {speed:g}"
        )
    if wallclock is False and speed is not None:
        raise UsageProblem("--speed paces a wall-clock run; it cannot be combined with --virtual")
    scenario_paced = scenario.clock.mode == "wallclock"
    scenario_speed = float(getattr(scenario.clock, "speed", 1.0))
    paced = wallclock if wallclock is not None else (scenario_paced or speed is not None or live)
    return paced, speed if speed is not None else scenario_speed


class StopOnInterrupt:
    """While active, the first SIGINT asks the engine to stop at its next step (the run then ends cleanly
    and its results are saved); a second one raises KeyboardInterrupt as usual."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.interrupted = False
        self._previous: Any = None
        self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self.interrupted = True
        self._engine.request_stop()

    def __enter__(self) -> StopOnInterrupt:
        # Signal handlers can only be set from the main thread (a notebook calling this from a worker
        # thread just runs without Ctrl-C handling). An ignored SIGINT (a background job of a script,
        # nohup) stays ignored, as Python itself leaves it.
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        ):
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False


@dataclass
class RunOptions:
    scenario: str
    seed: int | None = None
    out: str | Path | None = None
    overrides: list[str] = field(default_factory=list)
    wallclock: bool | None = None  # None: the scenario's clock; True: --wallclock; False: --virtual
    speed: float | None = None
    live: bool = False
    progress: bool | None = None  # None: shown when stderr is a terminal
    figures: bool = False  # --figures: draw figures/*.png and report.html now (else `kafkasim report` later)
    preset: str | None = None  # --preset: a fitted preset's values where the scenario leaves them out
    draws: int = 4  # with --preset: further runs with draws of the fit's uncertainty, for a band


def _display_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run_command(options: RunOptions, *, console: Console | None = None, err_console: Console | None = None) -> int:
    """Everything `kafkasim run` does; returns the exit code (see the module docstring)."""
    from kafkasim.scenario import ScenarioError

    console = console or Console()
    err_console = err_console or Console(stderr=True)
    try:
        scenario = load_with_overrides(options.scenario, options.overrides)
        unpreset = scenario
        preset = None
        if options.preset is not None:
            scenario, preset = with_preset(scenario, options.preset)
        seed = scenario.seed if options.seed is None else options.seed
        if options.out is not None:
            out = check_out_dir(options.out, f"--out {describe(str(options.out))}")
        else:
            default = default_out_dir(scenario, seed)
            out = check_out_dir(default, f"results directory {default}")
        paced, speed = resolve_clock(scenario, options.wallclock, options.speed, options.live)
    except ScenarioError as exc:
        error(scenario_error_message(exc))
        return EXIT_USAGE
    except UsageProblem as exc:
        error(str(exc))
        return EXIT_USAGE

    from kafkasim.record.result import ResultDirectoryError
    from kafkasim.run.engine import Engine, SimulationOutOfMemory
    from kafkasim.run.invariants import InvariantViolation
    from kafkasim.run.snapshot import RecentLatencies, take_snapshot
    from kafkasim.sim.clock import SimClock

    show_bar = (err_console.is_terminal if options.progress is None else options.progress) and not options.live
    from kafkasim.console.progress import RunProgress

    bar = RunProgress(err_console, scenario.name) if show_bar else None
    recent = RecentLatencies() if options.live else None
    live = None
    if options.live:
        from kafkasim.console.live import LiveView

        live = LiveView(console, scenario.name)
    engine: Engine | None = None

    def on_progress(sim_now_ms: float, duration_ms: float) -> None:
        # Also installed without bar or view: the engine checks its stop flag between progress slices.
        if bar is not None:
            bar(sim_now_ms, duration_ms)
        if live is not None and engine is not None and live.due():
            live.update(take_snapshot(engine, recent))

    _load_writers()
    engine = Engine(scenario, seed=seed, clock=SimClock(wallclock=paced, speed=speed), progress=on_progress,
                    on_request=recent)
    result: RunResult | None = None
    try:
        with StopOnInterrupt(engine) as stopper:
            # Printed once Ctrl-C is handled: from here on an interrupt still writes the results.
            clock_text = f"wall-clock x{speed:g}" if paced else "virtual time"
            print(
                f"kafkasim: running {scenario.name} (seed {seed}, {seconds(scenario.duration)} simulated, "
                f"{clock_text}) -> {_display_path(out)}",
                file=sys.stderr,
                flush=True,
            )
            if live is not None:
                live.start()
            try:
                result = engine.run()
            finally:
                if live is not None:
                    live.update(take_snapshot(engine, recent), force=True)
                    live.stop()
                    console.line()  # a non-terminal console leaves the last frame without a line end
                if bar is not None:
                    bar.close()
            interrupted = "interrupted_at_ms" in result.summary
            if stopper.interrupted and interrupted:
                print(
                    f"kafkasim: interrupted at simulated time {seconds(result.summary['interrupted_at_ms'])}; "
                    "writing the results so far (Ctrl-C again to abort)",
                    file=sys.stderr,
                    flush=True,
                )
                result.run_info["partial"] = (
                    f"interrupted (Ctrl-C) at simulated time {seconds(result.summary['interrupted_at_ms'])} "
                    f"of {seconds(scenario.duration)}"
                )
            if preset is not None and options.draws > 0 and not interrupted:
                result.run_info["prediction"] = _band(unpreset, preset, options.draws, seed, result.summary,
                                                      stopper)
            saved = _save(result, out, options.figures)
    except SimulationOutOfMemory as exc:
        return _out_of_memory(exc, out)
    except MemoryError:
        # Writing the results of a run whose tables were built (building them is the engine's, which
        # raises SimulationOutOfMemory when it runs out of memory).
        return _out_of_memory_saving(engine, result, out, options.figures)
    except InvariantViolation as exc:
        print(f"kafkasim: run failed: {exc}", file=sys.stderr)
        print("kafkasim: no results written (a run that broke an invariant is not a result)", file=sys.stderr)
        return EXIT_RUN_FAILED
    except ResultDirectoryError as exc:
        error(str(exc))
        return EXIT_USAGE

    from kafkasim.console.summary import print_summary

    print_summary(console, result.summary, scenario.name, float(scenario.duration),
                  result.run_info.get("wall_seconds"))
    if "prediction" in result.run_info:
        from kafkasim.console.compare import band_table

        console.print(band_table(result.run_info["prediction"]))
    console.print(f"results: {_display_path(saved)}", highlight=False, soft_wrap=True)
    if options.figures:
        console.print(f"report: {_display_path(saved / 'report.html')}", highlight=False, soft_wrap=True)
    else:
        console.print(f"figures and report.html: {report_hint(saved)}", highlight=False, soft_wrap=True)
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def report_hint(saved: Path) -> str:
    """The command that draws a saved run's figures and report.html, as the user can type it: prefixed with
    `uv run` when kafkasim was started by `uv run` (uv sets UV in its children's environment)."""
    prefix = "uv run " if os.environ.get("UV") else ""
    return f"{prefix}kafkasim report {shlex.quote(_display_path(saved))}"


def _load_writers() -> None:
    """Import the Parquet writer before the run: it is needed at the end anyway, and a run that runs out of
    memory must still be able to write its partial results (loading it then maps large libraries)."""
    import pandas.io.parquet  # noqa: F401
    import pyarrow.parquet  # noqa: F401


def _out_of_memory(exc: SimulationOutOfMemory, out: Path) -> int:
    """One line for a run that ran out of memory: when, what it held (what most likely filled the memory,
    and what to change), and whether the results up to then were saved (no figures) -- they are if they
    could be tabulated and there is memory to write them; otherwise it says why not."""
    at = f"simulated time {seconds(exc.at_ms)} of {seconds(exc.duration_ms)}"
    when = (f"out of memory building the tables at the end of the run ({at})" if exc.tabulating
            else f"out of memory at {at}")
    written = f"no results written ({exc.why_no_result})" if exc.why_no_result else "no results written"
    if exc.result is not None:
        exc.result.run_info["partial"] = when
        import pyarrow

        # Arrow's own allocator asks the system for fresh memory; malloc reuses what the simulation gave
        # back when the engine dropped its state.
        pyarrow.set_memory_pool(pyarrow.system_memory_pool())
        try:
            written = f"partial results written to {_display_path(_save(exc.result, out, figures=False))}"
        except MemoryError:
            written = (f"no results written (writing the tables of {_rows(exc.result)} rows needed more memory "
                       "than was left)")
        except (OSError, ValueError) as problem:  # ResultDirectoryError is a ValueError
            written = f"no results written ({problem})"
    exc.result = None  # let the tables go before printing
    held = f", {exc.held.describe()}" if exc.held is not None else ""
    print(f"kafkasim: {when}{held}; {written}", file=sys.stderr)
    return EXIT_RUN_FAILED


def _out_of_memory_saving(engine: Engine, result: RunResult | None, out: Path, figures: bool) -> int:
    """One line for a run whose results did not fit in memory while being written. Drawing the figures is
    what needs most memory beside the tables: without them, the results are written again."""
    from kafkasim.run.memory_use import memory_use

    held = f", {memory_use(engine.recorder, None).describe()}" if result is None else ""
    written = "no results written"
    if result is not None:
        written = f"no results written (writing the tables of {_rows(result)} rows needed more memory than was left)"
        if figures:
            try:
                saved = _save(result, out, figures=False)
                written = (f"results written to {_display_path(saved)} without figures (no memory left to draw "
                           f"them; {report_hint(saved)} draws them later)")
            except MemoryError:
                pass
            except (OSError, ValueError) as problem:  # ResultDirectoryError is a ValueError
                written = f"no results written ({problem})"
    print(f"kafkasim: out of memory writing the results{held}; {written}", file=sys.stderr)
    return EXIT_RUN_FAILED


def _rows(result: RunResult) -> str:
    return f"{result.request_count:,} request, {len(result.records):,} batch and {len(result.timeseries):,} gauge"


def _save(result: RunResult, out: Path, figures: bool) -> Path:
    writer = None
    if figures:
        from kafkasim.report import write_figures
        from kafkasim.report.run_events import scenario_from_yaml

        def writer(directory: Path) -> None:
            write_figures(result.requests, result.records, result.timeseries, result.summary, directory,
                          scenario=scenario_from_yaml(result.scenario_yaml), segments=result.segments)
            from kafkasim.report.html import write_report

            write_report(result, directory)  # embeds the figures just written

    return result.save(out, extra_writer=writer)
