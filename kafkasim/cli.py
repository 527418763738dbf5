"""The `kafkasim` command line (typer + rich). Every verb mirrors a library function."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Annotated

import typer

# typer >= 0.26 vendors click as `typer._click`; these are click's own exception classes.
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from kafkasim.timer.walkthrough import ScheduledAdd

app = typer.Typer(
    name="kafkasim",
    help="Simulate one Kafka broker's request handling and measure its latency.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Kafka's timer deals in Java longs; anything bigger cannot be a Kafka delay.
_MAX_MS = 2**63 - 1
_ADD_PATTERN = re.compile(r"\s*(-?\d+)\s*(?:@\s*(-?\d+)\s*)?")
_DEFAULT_ADDS = ("450", "8@2", "19@2", "350")


@app.callback()
def _root() -> None:
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


@app.command()
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
) -> None:
    """Show, step by step in simulated time, where Kafka's timing wheel puts each task and how it cascades
    down the levels until it runs."""
    if tick_ms < 1:
        raise typer.BadParameter(f"tick must be a whole number of ms >= 1, got {tick_ms}", param_hint="'--tick-ms'")
    if wheel_size < 2:
        raise typer.BadParameter(
            f"a wheel needs at least 2 buckets (with 1 every task would overflow forever), got {wheel_size}",
            param_hint="'--wheel-size'",
        )
    adds = [parse_add(text) for text in (add or _DEFAULT_ADDS)]

    # Imported here so that other verbs (and --help) do not pay for them, and vice versa.
    from kafkasim.timer.walkthrough import trace_schedule
    from kafkasim.wheel_trace import print_walkthrough

    print_walkthrough(trace_schedule(adds, tick_ms=tick_ms, wheel_size=wheel_size))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: usage errors become one line `kafkasim: error: <message>` on stderr and exit code 2."""
    try:
        code = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except NoArgsIsHelpError as e:
        # `kafkasim` alone: show the help, as click would (its text is the "message").
        typer.echo(e.format_message(), err=True)
        sys.exit(2)
    except UsageError as e:
        message = " ".join(e.format_message().split())
        print(f"kafkasim: error: {message}", file=sys.stderr)
        sys.exit(2)
    except typer.Abort:
        print("kafkasim: aborted", file=sys.stderr)
        sys.exit(130)
    if isinstance(code, int) and code != 0:
        sys.exit(code)
