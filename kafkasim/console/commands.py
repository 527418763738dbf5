"""`kafkasim validate`, `schema`, `plot` and `report`: small verbs, each returning its exit code (0 ok, 2 bad input)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kafkasim.console.format import seconds
from kafkasim.console.run_command import (
    EXIT_OK,
    EXIT_USAGE,
    UsageProblem,
    error,
    load_with_overrides,
    scenario_error_message,
)

if TYPE_CHECKING:
    from kafkasim.record.result import RunResult


def validate_command(paths: list[str]) -> int:
    """Check each scenario or sweep file; one `ok` line per valid file on stdout, its problems on stderr
    otherwise."""
    from kafkasim.scenario import ScenarioError
    from kafkasim.sweep.model import is_sweep_file

    failed = 0
    for path in paths:
        try:
            if is_sweep_file(Path(path)):
                print(f"ok {path}: {_validate_sweep(Path(path))}")
                continue
            s = load_with_overrides(path, [])
        except (ScenarioError, UsageProblem) as exc:
            failed += 1
            message = scenario_error_message(exc) if isinstance(exc, ScenarioError) else str(exc)
            error(message)
            continue
        print(
            f"ok {path}: {s.name}, {seconds(s.duration)}, {len(s.topics)} topic(s), "
            f"{len(s.producers)} producer(s), {len(s.consumers)} consumer(s), {len(s.faults)} fault(s)"
        )
    if failed:
        print(f"kafkasim: {failed} of {len(paths)} scenario file(s) invalid", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _validate_sweep(path: Path) -> str:
    """What `kafkasim sweep` checks before Spark starts (the file, then every variant against its base
    scenario), without Spark; ScenarioError on any problem. Returns the summary of a valid sweep."""
    from kafkasim.sweep.model import load_sweep
    from kafkasim.sweep.plan import plan_sweep

    loaded = load_sweep(path)
    plan = plan_sweep(loaded)
    base = loaded.sweep.base
    on = base if isinstance(base, str) else "an inline base scenario"
    return (f"sweep of {len(plan.variants)} variant(s) x {len(plan.seeds)} seed(s) = {len(plan.runs)} runs "
            f"on {on}")


def schema_command(out: Path | None) -> int:
    """The scenario JSON Schema, byte for byte what kafkasim.schema.json holds, to stdout or to `out`."""
    from kafkasim.scenario import scenario_json_schema_text

    data = scenario_json_schema_text().encode("utf-8")
    if out is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return EXIT_OK
    if out.is_dir():
        error(f"--out {out}: is a directory; give a file name, e.g. {out / 'kafkasim.schema.json'}")
        return EXIT_USAGE
    if not out.parent.is_dir():
        error(f"--out {out}: the directory {out.parent} does not exist")
        return EXIT_USAGE
    write_file_atomically(out, data)
    print(f"wrote {out}", file=sys.stderr)
    return EXIT_OK


def write_file_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def plot_command(run_dir: Path, *, per_partition: bool = False) -> int:
    """Regenerate RUN_DIR/figures from a saved run; the old figures are replaced only once all new ones
    are written, and only if figures/ holds nothing but kafkasim's figures (a user's file is never deleted).
    `per_partition`: the replication figures partition by partition even for a run with many."""
    from kafkasim.record.result import FIGURES_DIR, ResultDirectoryError, RunResult

    try:
        result = RunResult.load(run_dir)
        written = _write_figures_dir(result, run_dir, per_partition=per_partition)
    except (ResultDirectoryError, UsageProblem) as exc:
        error(str(exc))
        return EXIT_USAGE
    for path in written:
        print(path)
    print(f"kafkasim: wrote {len(written)} figure(s) to {run_dir / FIGURES_DIR}", file=sys.stderr)
    return EXIT_OK


def _write_figures_dir(result: RunResult, run_dir: Path, *, per_partition: bool = False) -> list[Path]:
    """Draw `result`'s figures into RUN_DIR/figures (staged, then swapped in whole); the paths written.
    UsageProblem when figures/ holds a file kafkasim did not write or RUN_DIR cannot be written."""
    from kafkasim.record.output_dir import OutputDirError, refusal, replace_dir
    from kafkasim.record.result import FIGURES_DIR, FIGURES_LAYOUT
    from kafkasim.report import write_figures
    from kafkasim.report.run_events import scenario_from_yaml

    figures = run_dir / FIGURES_DIR
    if os.path.lexists(figures) and (reason := refusal(figures, FIGURES_LAYOUT)) is not None:
        raise UsageProblem(f"{figures}: {reason}")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".figures.tmp-", dir=run_dir))
    except OSError as exc:
        raise UsageProblem(f"{run_dir}: cannot create a directory in {run_dir} ({exc.strerror}); the figures go "
                           f"to {figures}, so the result directory must be writable") from None
    try:
        written = write_figures(result.requests, result.records, result.timeseries, result.summary, staging,
                                scenario=scenario_from_yaml(result.scenario_yaml),
                                per_partition=True if per_partition else None, segments=result.segments)
        replace_dir(staging / FIGURES_DIR, figures, FIGURES_LAYOUT)
    except OutputDirError as exc:
        raise UsageProblem(str(exc)) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [figures / path.name for path in written]


def has_figures(run_dir: Path) -> bool:
    """True when RUN_DIR/figures holds at least one of kafkasim's figures (a run with --figures, or plot)."""
    from kafkasim.record.result import FIGURE_NAMES, FIGURES_DIR

    return any((run_dir / FIGURES_DIR / f"{name}.png").is_file() for name in FIGURE_NAMES)


def window_report_command(run_dir: Path, *, from_text: str | None, to_text: str | None, out: str | None) -> int:
    """Write the report of a window of a saved run (`kafkasim report RUN_DIR --from T --to T`) into a
    directory of its own: the rows cut and the summary computed again (kafkasim.record.window), the figures
    drawn from them and embedded; the run's own report and figures are left as they are."""
    from kafkasim.record.output_dir import Layout, OutputDirError, check_output_dir, write_dir
    from kafkasim.record.result import REPORT_FILE, ResultDirectoryError, RunResult
    from kafkasim.record.window import WindowError, window_of, windowed
    from kafkasim.report.html import write_report

    def foreign(directory: Path) -> list[str]:
        return [p.name for p in directory.iterdir() if p.name != REPORT_FILE or p.is_symlink() or not p.is_file()]

    layout = Layout("a kafkasim window report", REPORT_FILE, lambda d: (d / REPORT_FILE).is_file(), foreign)
    try:
        result = RunResult.load(run_dir)
        window = window_of(result, from_text, to_text)
        assert window is not None  # the caller gave --from or --to
        target_text = out if out is not None else str(
            Path("runs") / f"report-{Path(run_dir).resolve().name}-{window.label}")
        target = check_output_dir(target_text, layout, label=f"--out {out}" if out is not None else target_text)
        cut = windowed(result, window)

        def write(tmp: Path) -> None:
            write_report(cut, tmp)

        write_dir(target, layout, write, label=target_text)
    except (ResultDirectoryError, WindowError, OutputDirError) as exc:
        error(str(exc))
        return EXIT_USAGE
    print(target / REPORT_FILE)
    return EXIT_OK


def report_command(run_dir: Path) -> int:
    """(Re)write RUN_DIR/report.html from a saved run, embedding RUN_DIR/figures; a run saved without figures
    (`kafkasim run` draws none unless given --figures) gets them drawn into RUN_DIR/figures first, as
    `kafkasim plot` draws them. The page replaces the old one only once it is whole."""
    from kafkasim.record.result import FIGURES_DIR, ResultDirectoryError, RunResult
    from kafkasim.report.html import write_report

    try:
        result = RunResult.load(run_dir)
        drawn = [] if has_figures(run_dir) else _write_figures_dir(result, run_dir)
    except (ResultDirectoryError, UsageProblem) as exc:
        error(str(exc))
        return EXIT_USAGE
    try:
        written = write_report(result, run_dir)
    except OSError as exc:
        error(f"{run_dir}: cannot write the report there ({exc.strerror or exc}); the result directory must be "
              "writable")
        return EXIT_USAGE
    if drawn:
        print(f"kafkasim: wrote {len(drawn)} figure(s) to {run_dir / FIGURES_DIR}", file=sys.stderr)
    print(written)
    return EXIT_OK
