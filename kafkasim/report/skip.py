"""Skipping a figure the run's data cannot support, and saying why.

A run without consumers has no end-to-end latency, an acks=0 run has no DelayedProduce to draw. That is
not an error: the figure function logs the reason on the report's logger (kafkasim.report.skip, a child of
kafkasim.report) and returns None.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from matplotlib.figure import Figure

logger = logging.getLogger(__name__)  # a child of the report's logger, whose settings it follows

P = ParamSpec("P")
F = TypeVar("F", bound=Figure)


class SkipFigure(Exception):
    """Raised inside a figure builder when the data cannot support the figure; the message says why."""


def skippable(name: str) -> Callable[[Callable[P, F]], Callable[P, F | None]]:
    """Turn a builder that raises SkipFigure into one that logs the reason and returns None."""

    def wrap(build: Callable[P, F]) -> Callable[P, F | None]:
        @functools.wraps(build)
        def run(*args: P.args, **kwargs: P.kwargs) -> F | None:
            try:
                return build(*args, **kwargs)
            except SkipFigure as why:
                logger.info("skipping figure %s: %s", name, why)
                return None

        return run

    return wrap
