"""Latency percentile plot and histograms: what they show, and that warm-up is left out."""

from __future__ import annotations

import numpy as np
import pytest

from kafkasim.report import latency_cdf_figure, latency_histogram_figure
from kafkasim.report.palette import API_COLOURS, END_TO_END_COLOUR

from .conftest import Tables
from .timeline import COLD_QUEUE_MS


def _legend(ax) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_cdf_has_one_line_per_api_and_per_acks_plus_end_to_end(tables: Tables) -> None:
    figure = latency_cdf_figure(tables.requests, tables.records, tables.summary)
    assert figure is not None
    broker, client = figure.axes
    assert "Latency by percentile" in figure.get_suptitle() and "30 ms warm-up" in figure.get_suptitle()
    assert [label.split(" ")[0] for label in _legend(broker)] == ["Produce", "FetchConsumer", "FetchFollower"]
    assert [label.split(" (")[0] for label in _legend(client)] == [
        "produce, acks=all", "produce, acks=1", "end-to-end, produce \u2192 first consume"]
    assert broker.get_ylabel() == "latency (ms)"
    assert broker.get_xlabel() == "percentile"
    legend_colours = [h.get_color() for h in broker.get_legend().legend_handles]  # type: ignore[union-attr]
    assert legend_colours == [API_COLOURS[a] for a in ("Produce", "FetchConsumer", "FetchFollower")]
    assert client.get_legend().legend_handles[-1].get_color() == END_TO_END_COLOUR  # type: ignore[union-attr]


def test_cdf_excludes_warmup_requests(tables: Tables) -> None:
    figure = latency_cdf_figure(tables.requests, tables.records, tables.summary)
    assert figure is not None
    produce_line = figure.axes[0].get_lines()[0]
    kept = tables.requests[(tables.requests["api"] == "Produce") & (tables.requests["client_send_ms"] >= 30)]
    # The cold-start produce (5 ms in the request queue) was sent during warm-up.
    assert max(produce_line.get_ydata()) == pytest.approx(kept["TotalTimeMs"].max())
    assert max(produce_line.get_ydata()) < COLD_QUEUE_MS
    assert f"n={len(kept)}" in _legend(figure.axes[0])[0]


def test_cdf_without_warmup_includes_the_cold_start(tables: Tables) -> None:
    figure = latency_cdf_figure(tables.requests, tables.records, {})
    assert figure is not None
    assert max(figure.axes[0].get_lines()[0].get_ydata()) > COLD_QUEUE_MS


def test_cdf_goes_logarithmic_when_long_polls_share_the_axis_with_produces(tables: Tables) -> None:
    figure = latency_cdf_figure(tables.requests, tables.records, tables.summary)
    assert figure is not None
    assert figure.axes[0].get_yscale() == "log"
    produce_only = tables.requests[tables.requests["api"] == "Produce"]
    acks_all = tables.records[tables.records["acks"] == -1]
    narrow = latency_cdf_figure(produce_only[produce_only["acks"] == -1], acks_all[["send_ms", "acks",
                                "produce_latency_ms"]], tables.summary)
    assert narrow is not None
    assert narrow.axes[0].get_yscale() == "linear"


def test_cdf_without_records_has_only_the_broker_panel(tables: Tables) -> None:
    figure = latency_cdf_figure(tables.requests, None, tables.summary)
    assert figure is not None
    assert len(figure.axes) == 1


def test_cdf_of_nothing_is_skipped_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="kafkasim.report"):
        assert latency_cdf_figure(None, None, None) is None
    assert "latency_cdf" in caplog.text and "no request or batch latencies" in caplog.text


def test_histogram_has_a_row_per_api_and_counts_every_request_after_warmup(tables: Tables) -> None:
    figure = latency_histogram_figure(tables.requests, tables.summary)
    assert figure is not None
    assert len(figure.axes) == 3
    kept = tables.requests[tables.requests["client_send_ms"] >= 30]
    for ax, api in zip(figure.axes, ("Produce", "FetchConsumer", "FetchFollower"), strict=True):
        assert ax.get_title(loc="left").startswith(api)
        heights = sum(patch.get_height() for patch in ax.patches)
        assert heights == (kept["api"] == api).sum()
        assert any(label.startswith("p99 = ") for label in _legend(ax))
    assert figure.axes[-1].get_xscale() == "log"
    assert "TotalTimeMs (ms" in figure.axes[-1].get_xlabel()
    edges = [patch.get_x() for patch in figure.axes[0].patches]
    ratios = np.diff(edges[:5]) / np.array(edges[:4])
    assert np.allclose(ratios, ratios[0])  # log-spaced: constant ratio between bin edges


def test_histogram_reports_zero_latencies_it_cannot_place_on_a_log_axis(tables: Tables) -> None:
    requests = tables.requests.copy()
    requests.loc[requests.index[-1], "TotalTimeMs"] = 0.0
    api = requests.loc[requests.index[-1], "api"]
    figure = latency_histogram_figure(requests, tables.summary)
    assert figure is not None
    titles = {ax.get_title(loc="left").split(":")[0]: ax.get_title(loc="left") for ax in figure.axes}
    assert "1 at 0 ms not shown" in titles[api]


def test_histogram_of_only_zeros_is_skipped(tables: Tables) -> None:
    requests = tables.requests.assign(TotalTimeMs=0.0)
    assert latency_histogram_figure(requests, tables.summary) is None
