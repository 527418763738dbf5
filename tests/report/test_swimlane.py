"""The swimlane of one acks=all produce (DelayedProduce): which request, which lanes, which labels,
readable."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from kafkasim.report import produce_swimlane_figure
from kafkasim.report.swimlane_story import build_story, choose_produce

from .conftest import Tables

LANES = ["producer-1\n(producer)", "network\n(processor)", "request handler\n(io thread)",
         "Produce purgatory\n(DelayedProduce)", "follower-1\n(FetchFollower)", "follower-2\n(FetchFollower)",
         "consumer-1\n(FetchConsumer)"]


def _median_acks_all(tables: Tables) -> pd.Series:
    r = tables.requests
    pool = r[(r["api"] == "Produce") & (r["acks"] == -1) & (r["client_send_ms"] >= 30)]
    median = pool["TotalTimeMs"].median()
    return pool.loc[(pool["TotalTimeMs"] - median).abs().idxmin()]


def _texts(figure) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for t in figure.axes[0].texts]


def test_follows_the_acks_all_produce_closest_to_the_median_after_warmup(tables: Tables) -> None:
    chosen = choose_produce(tables.requests, tables.summary)
    assert chosen["request_id"] == _median_acks_all(tables)["request_id"]
    assert chosen["acks"] == -1 and chosen["client_send_ms"] >= 30


def test_lanes_run_from_producer_through_purgatory_and_followers_to_consumer(tables: Tables) -> None:
    figure = produce_swimlane_figure(tables.requests, tables.records, tables.timeseries, tables.summary)
    assert figure is not None
    ax = figure.axes[0]
    top_to_bottom = sorted(zip(ax.get_yticks(), ax.get_yticklabels(), strict=True), key=lambda p: -p[0])
    assert [label.get_text() for _, label in top_to_bottom] == LANES
    assert ax.get_xlabel() == "time since the producer sent the request (ms)"
    assert "acks=all" in figure.get_suptitle()


def test_every_produce_phase_is_labelled_with_its_duration(tables: Tables) -> None:
    produce = _median_acks_all(tables)
    figure = produce_swimlane_figure(tables.requests, tables.records, tables.timeseries, tables.summary)
    assert figure is not None
    texts = " | ".join(_texts(figure))
    remote = produce["response_complete_ms"] - produce["local_complete_ms"]
    assert f"Remote: waits until the HW reaches the batch end {remote:.3g} ms" in texts
    assert f"RequestQueue {produce['RequestQueueTimeMs']:.3g} ms" in texts
    assert f"Local: append to leader log {produce['LocalTimeMs']:.3g} ms" in texts
    assert "ResponseQueue" in texts and "ResponseSend" in texts
    send_to_receive = produce["client_receive_ms"] - produce["client_send_ms"]
    assert f"waits for the ack: client send \u2192 receive {send_to_receive:.3g} ms" in texts


def test_each_producer_label_measures_the_span_it_sits_on(tables: Tables) -> None:
    # The batch was due 4 ms before it was sent (linger.ms): the wait-for-the-ack bar is send -> receive,
    # the produce latency from the intended send spans both bars.
    produce = _median_acks_all(tables)
    requests = tables.requests.copy()
    row = requests.index[requests["request_id"] == produce["request_id"]]
    requests.loc[row, "intended_ms"] = produce["client_send_ms"] - 4.0
    figure = produce_swimlane_figure(requests, tables.records, tables.timeseries, tables.summary,
                                     request_id=produce["request_id"])
    assert figure is not None
    ax = figure.axes[0]
    send_to_receive = produce["client_receive_ms"] - produce["client_send_ms"]
    texts = {t.get_text(): t for t in ax.texts if t.get_text()}
    assert "waits to send 4 ms" in texts
    ack = f"waits for the ack: client send \u2192 receive {send_to_receive:.3g} ms"
    assert ack in texts
    bracket = f"produce latency from the intended send {send_to_receive + 4.0:.3g} ms"
    assert bracket in texts
    # The bracket's ends are the intended send (x = 0) and the response's arrival.
    arrows = [t for t in ax.texts if not t.get_text() and getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == 1
    ends = sorted([arrows[0].xy[0], arrows[0].xyann[0]])  # type: ignore[attr-defined]
    assert ends == pytest.approx([0.0, send_to_receive + 4.0])
    assert not any("client latency" in text for text in texts)


def test_follower_roles_are_read_off_the_timestamps(tables: Tables) -> None:
    produce = _median_acks_all(tables)
    story = build_story(tables.requests, tables.records, tables.timeseries, tables.summary)
    batch = tables.records[tables.records["request_id"] == produce["request_id"]].iloc[0]
    first, last = batch["offset"], batch["offset"] + batch["record_count"] - 1
    roles = {lane.name.split("\n")[0]: [s.label for s in lane.spans if s.label] for lane in story.lanes}
    for follower in ("follower-1", "follower-2"):
        assert f"parked, woken by the append: returns offsets {first}\u2013{last}" in roles[follower]
        assert any(r.startswith("reports its new LEO") for r in roles[follower])
    # Partition.maybeIncrementLeaderHW: only the later of the two followers moves the HW, completing the
    # produce on its thread.
    movers = [f for f in ("follower-1", "follower-2") if any("HW advances" in r for r in roles[f])]
    assert movers == ["follower-2"]
    assert any("returns it" in r for r in roles["consumer-1"])
    appends = [s for lane in story.lanes for s in lane.spans if s.kind == "follower_append"]
    assert len(appends) == 2


def test_hw_marker_comes_from_the_time_series_when_it_resolves_the_moment(tables: Tables) -> None:
    produce = _median_acks_all(tables)
    story = build_story(tables.requests, tables.records, tables.timeseries, tables.summary)
    batch = tables.records[tables.records["request_id"] == produce["request_id"]].iloc[0]
    assert story.hw_text == f"orders-0 HW \u2192 {batch['offset'] + batch['record_count']}"
    assert story.hw_time_ms == pytest.approx(produce["response_complete_ms"])


def test_coarse_time_series_marks_the_completion_as_implied(tables: Tables) -> None:
    produce = _median_acks_all(tables)
    coarse = tables.timeseries[tables.timeseries["time_ms"] % 100 < 1]  # samples every 100 ms only
    story = build_story(tables.requests, tables.records, coarse, tables.summary)
    assert "implied: DelayedProduce completed" in story.hw_text and "\u2265" in story.hw_text
    assert story.hw_time_ms == produce["response_complete_ms"]
    no_series = build_story(tables.requests, tables.records, None, tables.summary)
    assert "implied" in no_series.hw_text


def test_labels_never_overlap(tables: Tables) -> None:
    for request_id in tables.requests.loc[(tables.requests["acks"] == -1).fillna(False), "request_id"][1:3]:
        figure = produce_swimlane_figure(tables.requests, tables.records, tables.timeseries, tables.summary,
                                         request_id=request_id)
        assert figure is not None
        figure.canvas.draw()
        ax = figure.axes[0]
        boxes = [t.get_window_extent() for t in ax.texts if t.get_text()]
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), f"labels overlap in the swimlane of request {request_id}"
        inside = ax.get_window_extent()
        for box in boxes:
            assert inside.x0 - 1 <= box.x0 and box.x1 <= inside.x1 + 1


def test_a_request_id_picks_the_produce_and_mistakes_are_clear(tables: Tables) -> None:
    first = tables.requests[tables.requests["api"] == "Produce"].iloc[0]
    story = build_story(tables.requests, tables.records, tables.timeseries, tables.summary, first["request_id"])
    assert story.request_id == first["request_id"]
    assert "as requested" in story.title
    with pytest.raises(ValueError, match="is not in the run's requests"):
        produce_swimlane_figure(tables.requests, tables.records, tables.timeseries, tables.summary, request_id=10**6)
    fetch_id = tables.requests.loc[tables.requests["api"] == "FetchFollower", "request_id"].iloc[0]
    with pytest.raises(ValueError, match="FetchFollower request.*acks=all"):
        produce_swimlane_figure(tables.requests, tables.records, tables.timeseries, tables.summary,
                                request_id=fetch_id)
    acks_one = tables.requests.loc[tables.requests["acks"] == 1, "request_id"].iloc[0]
    with pytest.raises(ValueError, match="acks=1"):
        produce_swimlane_figure(tables.requests, request_id=acks_one)


def test_no_acks_all_produce_skips_the_figure(tables: Tables, caplog: pytest.LogCaptureFixture) -> None:
    no_acks_all = tables.requests[~(tables.requests["acks"] == -1).fillna(False)]
    with caplog.at_level("INFO", logger="kafkasim.report"):
        assert produce_swimlane_figure(no_acks_all, tables.records, tables.timeseries, tables.summary) is None
    assert "no acks=all Produce requests" in caplog.text
    timed_out = tables.requests.assign(error=np.where(tables.requests["api"] == "Produce", 7, 0))
    assert produce_swimlane_figure(timed_out, tables.records, tables.timeseries, tables.summary) is None
    assert produce_swimlane_figure(None) is None


def test_without_consumers_or_records_the_swimlane_still_draws(tables: Tables) -> None:
    no_consumer = tables.requests[tables.requests["api"] != "FetchConsumer"]
    records = tables.records.drop(columns=["consumed_ms:consumer-1", "first_consumed_ms", "e2e_latency_ms"])
    figure = produce_swimlane_figure(no_consumer, records, tables.timeseries, tables.summary)
    assert figure is not None
    assert len(figure.axes[0].get_yticklabels()) == len(LANES) - 1
    bare = produce_swimlane_figure(tables.requests, None, None, tables.summary)
    assert bare is not None
    assert "HW \u2265 required offset" in " ".join(_texts(bare) + [t.get_text() for t in bare.axes[0].texts])


def test_batches_never_appended_do_not_set_the_required_offset(tables: Tables) -> None:
    produce = _median_acks_all(tables)
    records = tables.records.copy()
    mine = records.index[records["request_id"] == produce["request_id"]]
    records.loc[mine, "offset"] = -1  # the recorder's "never appended"
    story = build_story(tables.requests, records, tables.timeseries, tables.summary)
    assert story.hw_text.startswith("HW \u2265 required offset")
    assert "offset -1" not in story.title


def test_a_timed_out_produce_says_so_instead_of_claiming_the_hw_moved(tables: Tables) -> None:
    produce = _median_acks_all(tables)
    requests = tables.requests.copy()
    row = requests.index[requests["request_id"] == produce["request_id"]]
    requests.loc[row, ["error", "error_name"]] = [7, "REQUEST_TIMED_OUT"]  # DelayedProduce expired
    story = build_story(requests, tables.records, tables.timeseries, tables.summary, produce["request_id"])
    assert story.hw_text == "DelayedProduce completed with REQUEST_TIMED_OUT"
    figure = produce_swimlane_figure(requests, tables.records, tables.timeseries, tables.summary,
                                     request_id=produce["request_id"])
    assert figure is not None
    assert "produce completes with an error" in [t.get_text() for t in figure.legends[0].get_texts()]
