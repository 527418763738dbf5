"""The HdrHistogram percentile axis: x = 1 / (1 - q), one decade per nine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkasim.report.canvas import new_figure
from kafkasim.report.percentile_axis import (
    format_percentile_axis,
    percentile_curve,
    percentile_label,
    percentile_to_x,
    x_to_percentile,
)


@pytest.mark.parametrize(("percentile", "x"), [(0, 1), (50, 2), (90, 10), (99, 100), (99.9, 1000), (99.99, 10000)])
def test_each_nine_is_one_decade(percentile: float, x: float) -> None:
    assert percentile_to_x(percentile) == pytest.approx(x)
    assert x_to_percentile(x) == pytest.approx(percentile)


@settings(max_examples=50, deadline=None)
@given(st.floats(min_value=0.0, max_value=99.9999))
def test_transform_round_trips(percentile: float) -> None:
    assert x_to_percentile(percentile_to_x(percentile)) == pytest.approx(percentile, abs=1e-6)


@pytest.mark.parametrize("bad", [-1.0, 100.0, 150.0])
def test_percentiles_outside_0_to_100_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="percentile must be in"):
        percentile_to_x(bad)


def test_tick_labels_read_as_percentiles() -> None:
    ax = new_figure(4, 3).subplots()
    format_percentile_axis(ax)
    assert ax.get_xscale() == "log"
    assert list(ax.get_xticks()) == pytest.approx([2, 10, 100, 1000, 10000])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["50%", "90%", "99%", "99.9%", "99.99%"]
    assert percentile_label(99.99) == "99.99%"


def test_curve_value_at_99_is_the_99th_percentile_and_stops_where_samples_run_out() -> None:
    values = np.arange(1, 1001, dtype=float)  # 1000 samples resolve up to the 99.9th percentile
    xs, ys = percentile_curve(values)
    assert xs[0] == pytest.approx(2.0)
    assert xs[-1] == pytest.approx(1000.0)
    at_99 = ys[np.argmin(np.abs(xs - 100))]
    assert at_99 == pytest.approx(990, abs=15)
    assert ys[-2] == pytest.approx(999, abs=1)
    assert ys[-1] == 1000  # the last step reaches the maximum
    assert np.all(np.diff(ys) >= 0)


def test_curve_of_nothing_is_empty() -> None:
    xs, ys = percentile_curve(np.array([np.nan]))
    assert xs.size == 0 and ys.size == 0
