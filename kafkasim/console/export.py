"""`kafkasim export`: check every destination first, then write the .hlog and CSV directories."""

from __future__ import annotations

import sys
from pathlib import Path


def export_command(run_dir: str, *, hlog: str | None, csv_dir: str | None, from_text: str | None = None,
                   to_text: str | None = None) -> int:
    from kafkasim.record.result import ResultDirectoryError, RunResult
    from kafkasim.record.window import WindowError, window_of, windowed
    from kafkasim.report.export import ExportError, check_export_dir, export_csv, export_hlog

    def fail(message: str) -> int:
        print(f"kafkasim export: {message}", file=sys.stderr)
        return 2

    if hlog is None and csv_dir is None:
        return fail("nothing to export: give --hlog DIR, --csv DIR or both")
    if hlog is not None and csv_dir is not None and Path(hlog).resolve() == Path(csv_dir).resolve():
        return fail(f"--hlog and --csv name the same directory ({hlog}); give two directories")
    try:
        for option, out in (("--hlog", hlog), ("--csv", csv_dir)):
            if out is not None:
                check_export_dir(out, label=f"{option} {out}")
        result = RunResult.load(run_dir)
        window = window_of(result, from_text, to_text)
        if window is not None:
            result = windowed(result, window)
            print(f"kafkasim export: the window {window.describe()} only (counters.csv: its request counts; the "
                  "run's counters are whole-run totals, left out)", file=sys.stderr)
    except (ExportError, ResultDirectoryError, WindowError) as exc:
        return fail(str(exc))
    from kafkasim.report.compare import cannot_show

    note = cannot_show(result.run_info)
    if note is not None:
        print(f"kafkasim export: note: this run {note}; those columns are exported empty", file=sys.stderr)
    try:
        if hlog is not None:
            written = export_hlog(result, Path(run_dir), hlog, label=f"--hlog {hlog}")
            print(f"HdrHistogram interval logs: {written}")
        if csv_dir is not None:
            written = export_csv(result, Path(run_dir), csv_dir, label=f"--csv {csv_dir}")
            print(f"CSV tables: {written}")
    except ExportError as exc:
        return fail(str(exc))
    return 0
