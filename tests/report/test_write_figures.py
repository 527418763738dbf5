"""write_figures: every figure the data supports becomes a PNG; degenerate runs never crash."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from kafkasim.report import figures, write_figures

from .conftest import Tables

ALL = ["latency_cdf", "latency_histogram", "request_breakdown", "log_offsets", "isr_size", "purgatory",
       "fetch_waits", "produce_swimlane"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def no_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which figures get written is decided before rendering; skip the slow PNG encoding in those tests."""

    def record_only(figure: Figure, path: Path, dpi: int = 0) -> Path:
        assert isinstance(figure, Figure)
        path.write_bytes(b"figure")
        return path

    monkeypatch.setattr(figures, "save_png", record_only)


def test_writes_every_figure_as_a_non_empty_png_without_pyplot(tables: Tables, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    paths = write_figures(tables.requests, tables.records, tables.timeseries, tables.summary, tmp_path, dpi=60)
    assert plt.get_fignums() == before  # no figure leaked into pyplot's global registry
    assert [p.stem for p in paths] == ALL
    for path in paths:
        assert path.parent == tmp_path / "figures"
        assert path.read_bytes()[:8] == PNG_MAGIC
        assert path.stat().st_size > 5_000
    # Written under a temporary name and renamed: nothing else is left in the folder.
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == sorted(f"{n}.png" for n in ALL)


def test_an_empty_run_writes_nothing_and_says_why(tmp_path: Path, no_rendering: None,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="kafkasim.report"):
        assert write_figures(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}, tmp_path) == []
        assert write_figures(None, None, None, None, tmp_path) == []
    for name in ALL:
        assert f"skipping figure {name}" in caplog.text


def test_acks_0_only_without_consumers_skips_just_the_swimlane(tables: Tables, tmp_path: Path,
                                                              no_rendering: None) -> None:
    r = tables.requests
    produce = r[r["api"] == "Produce"].assign(acks=pd.array([0] * (r["api"] == "Produce").sum(), dtype="Int8"),
                                              RemoteTimeMs=0.0)
    requests = pd.concat([produce, r[r["api"] == "FetchFollower"]])
    records = tables.records.assign(acks=pd.array([0] * len(tables.records), dtype="Int8")).drop(
        columns=["consumed_ms:consumer-1", "first_consumed_ms", "e2e_latency_ms"])
    paths = write_figures(requests, records, tables.timeseries, tables.summary, tmp_path)
    assert [p.stem for p in paths] == [n for n in ALL if n != "produce_swimlane"]


def test_requests_only_still_gives_the_latency_figures(tables: Tables, tmp_path: Path, no_rendering: None) -> None:
    paths = write_figures(tables.requests, None, None, None, tmp_path)
    assert [p.stem for p in paths] == ["latency_cdf", "latency_histogram", "request_breakdown", "fetch_waits",
                                       "produce_swimlane"]


def test_a_single_request_is_enough(tables: Tables, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[str] = []

    def draw_only(figure: Figure, path: Path, dpi: int = 0) -> Path:
        figure.draw_without_rendering()  # layout and ticks: where one-sample axes would break
        drawn.append(path.stem)
        return path

    monkeypatch.setattr(figures, "save_png", draw_only)
    one = tables.requests[tables.requests["api"] == "Produce"].iloc[[5]]
    write_figures(one, tables.records.iloc[[5]], None, None, tmp_path)
    assert drawn == ["latency_cdf", "latency_histogram", "request_breakdown", "produce_swimlane"]
