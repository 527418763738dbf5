"""The `kafkasim` command line (typer + rich). Every verb mirrors a library function."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="kafkasim",
    help="Simulate one Kafka broker's request handling and measure its latency.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """kafkasim: Kafka's timing wheel, purgatory and replication in simulated time."""


def main() -> None:
    app()
