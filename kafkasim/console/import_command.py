"""`kafkasim import-request-log`: a real broker's request log as a result directory `kafkasim report` reads."""

from __future__ import annotations

import sys
from pathlib import Path

from kafkasim.console.run_command import EXIT_OK, EXIT_USAGE, UsageProblem, check_out_dir, error
from kafkasim.record.output_dir import describe


def _broker_ids(text: str | None, count: int) -> list[int] | None:
    if text is None:
        return None
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise UsageProblem(f"--broker-ids {text!r}: not a comma-separated list of broker ids (e.g. 1,2,3)") from None
    if len(ids) != count or len(set(ids)) != count or min(ids) < 0:
        raise UsageProblem(f"--broker-ids {text!r}: give one distinct id >= 0 per LOG ({count} LOG file(s))")
    return ids


def import_request_log_command(logs: list[str], out: str, broker_ids: str | None = None) -> int:
    """Read LOG... into a result at OUT; 0 if at least one request was read, 2 otherwise (or on bad input)."""
    from kafkasim.real.import_log import import_request_logs
    from kafkasim.record.result import ResultDirectoryError

    try:
        missing = [path for path in logs if not Path(path).is_file()]
        if missing:
            raise UsageProblem(f"{missing[0]}: no such request log file")
        ids = _broker_ids(broker_ids, len(logs))
        target = check_out_dir(out, f"--out {describe(out)}")
    except UsageProblem as exc:
        error(str(exc))
        return EXIT_USAGE
    result, log = import_request_logs([Path(p) for p in logs], ids)
    bad = log.bad_summary()
    if bad is not None:
        print(f"kafkasim: {bad}", file=sys.stderr)
    if not len(result.requests):
        others = sum(log.other_apis.values())
        error(f"no PRODUCE or FETCH request in {len(logs)} log(s) ({log.lines} line(s), {others} of other APIs); "
              "a request log is what kafka.request.logger writes at DEBUG: '<epoch ms> Completed request:{json}'")
        return EXIT_USAGE
    try:
        saved = result.save(target)
    except ResultDirectoryError as exc:
        error(str(exc))
        return EXIT_USAGE
    apis = result.requests["api"].astype(str).value_counts()
    counts = ", ".join(f"{int(apis[a])} {a}" for a in ("Produce", "FetchConsumer", "FetchFollower") if a in apis)
    not_kept = ", ".join(f"{n} {api}" for api, n in sorted(log.other_apis.items()))
    print(f"kafkasim: read {counts} request(s)" + (f"; not kept (kafkasim's tables have no such API): {not_kept}"
                                                    if not_kept else ""), file=sys.stderr)
    print(f"results: {saved}")
    print(f"figures and report.html: kafkasim report {saved}")
    return EXIT_OK
