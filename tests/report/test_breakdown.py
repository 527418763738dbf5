"""The RequestMetrics breakdown (Kafka's RequestMetrics): stacked phases per API, mean and p99."""

from __future__ import annotations

import numpy as np
import pytest

from kafkasim.report import request_breakdown_figure
from kafkasim.report.breakdown import phase_statistics
from kafkasim.report.palette import PHASE_COLOURS, PHASES

from .conftest import Tables


def _stacks(ax) -> dict[int, list[float]]:  # type: ignore[no-untyped-def]
    """Bar heights per x position, bottom to top."""
    stacks: dict[int, list[float]] = {}
    for patch in ax.patches:
        stacks.setdefault(round(patch.get_x() + patch.get_width() / 2), []).append(patch.get_height())
    return stacks


def test_one_panel_per_api_with_mean_and_p99_bars(tables: Tables) -> None:
    figure = request_breakdown_figure(tables.requests, tables.summary)
    assert figure is not None
    assert [ax.get_title() for ax in figure.axes] == ["Produce", "FetchConsumer", "FetchFollower"]
    for ax in figure.axes:
        assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["mean", "p99"]
    assert figure.axes[0].get_ylabel() == "time (ms)"
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend[:5] == list(reversed(PHASES))


def test_mean_stack_adds_up_to_mean_total_time(tables: Tables) -> None:
    figure = request_breakdown_figure(tables.requests, tables.summary)
    assert figure is not None
    kept = tables.requests[tables.requests["client_send_ms"] >= 30]
    produce = kept[kept["api"] == "Produce"]
    mean_stack = _stacks(figure.axes[0])[0]
    assert mean_stack == pytest.approx([produce[p].mean() for p in PHASES])
    assert sum(mean_stack) == pytest.approx(produce["TotalTimeMs"].mean())
    colours = [patch.get_facecolor() for patch in figure.axes[0].patches[:5]]
    from matplotlib.colors import to_rgba
    assert colours == [to_rgba(PHASE_COLOURS[p]) for p in PHASES]


def test_p99_bars_are_each_phases_own_p99(tables: Tables) -> None:
    kept = tables.requests[(tables.requests["client_send_ms"] >= 30) & (tables.requests["api"] == "FetchFollower")]
    phases, total = phase_statistics(kept, "p99")
    for phase in PHASES:
        assert phases[phase] == np.quantile(kept[phase], 0.99, method="inverted_cdf")
    assert total == np.quantile(kept["TotalTimeMs"], 0.99, method="inverted_cdf")
    assert phases["RemoteTimeMs"] == pytest.approx(500, abs=1)  # the parked long polls that expired


def test_requests_that_never_completed_are_left_out(tables: Tables) -> None:
    requests = tables.requests.copy()
    requests.loc[requests["api"] == "FetchConsumer", "TotalTimeMs"] = np.nan
    figure = request_breakdown_figure(requests, tables.summary)
    assert figure is not None
    assert [ax.get_title() for ax in figure.axes] == ["Produce", "FetchFollower"]


@pytest.mark.parametrize("requests", [None, "empty", "no_phases"])
def test_missing_data_skips_the_figure(tables: Tables, requests: str | None) -> None:
    frame = {None: None, "empty": tables.requests.iloc[0:0],
             "no_phases": tables.requests.drop(columns=["RemoteTimeMs"])}[requests]
    assert request_breakdown_figure(frame, tables.summary) is None
