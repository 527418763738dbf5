"""TCP retransmissions in what a reader sees: the run's retransmissions table, saved and windowed, and the
report's timeline (a row of ticks, one line per loss in the events list)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasim.network.tcp import TCP_LOST_AGAIN, TCP_THROUGH
from kafkasim.record.result import RunResult
from kafkasim.record.retransmissions import RETRANSMISSIONS_FILE
from kafkasim.record.window import Window, windowed
from kafkasim.report.html import render_report, timeline_svg
from kafkasim.report.run_events import RunEvents, loss_episodes
from kafkasim.run.engine import Engine
from tests.engine.support import consumer, producer, scenario


@pytest.fixture(scope="module")
def lossy() -> RunResult:
    # p1's link down 100 ms at 2 s: one retransmission 200 ms (+ the RTT) after the lost request, through.
    # c1's link down 1.5 s at 4 s: its responses retransmitted 200, 400, 800 ms apart, all lost, then the
    # fourth 1.6 s later gets through -- 1.5 s after the link came back, as TCP's backoff says.
    return Engine(scenario(
        duration="8s", producers=[producer("p1", rate="100/s")], consumers=[consumer("c1")],
        faults=[{"type": "link_drop", "target": "p1", "at": "2s", "duration": "100ms"},
                {"type": "link_drop", "target": "c1", "at": "4s", "duration": "1500ms"}],
    )).run()


def test_each_retransmission_timer_expiry_is_a_row(lossy: RunResult) -> None:
    table = lossy.retransmissions
    assert table is not None
    p1 = table[table["client"] == "p1"]
    assert list(p1["outcome"]) == [TCP_THROUGH] and list(p1["direction"]) == ["to_broker"]
    assert float(p1["lost_since_ms"].iloc[0]) == 2000.0 and 2200.0 < float(p1["time_ms"].iloc[0]) < 2210.0
    c1 = table[table["client"] == "c1"]
    assert list(c1["outcome"]) == [TCP_LOST_AGAIN] * 3 + [TCP_THROUGH]
    gaps = list(c1["time_ms"].diff().dropna())
    assert 400.0 < gaps[0] < 410.0 and gaps[1] == pytest.approx(2 * gaps[0]) and gaps[2] == pytest.approx(4 * gaps[0])
    assert (c1["direction"] == "from_broker").all() and (c1["broker"] == 0).all()
    assert lossy.summary["counters"]["messages_retransmitted"] == len(table)


def test_the_table_is_saved_windowed_and_absent_without_a_loss(lossy: RunResult, tmp_path: Path) -> None:
    saved = lossy.save(tmp_path / "lossy")
    assert (saved / RETRANSMISSIONS_FILE).is_file()
    loaded = RunResult.load(saved)
    assert loaded.retransmissions is not None and loaded.retransmissions.equals(lossy.retransmissions)
    cut = windowed(loaded, Window(3000.0, 8000.0))
    assert cut.retransmissions is not None and set(cut.retransmissions["client"]) == {"c1"}
    quiet = Engine(scenario(duration="1s", producers=[producer("p1")])).run()
    assert quiet.retransmissions is None
    assert not (quiet.save(tmp_path / "quiet") / RETRANSMISSIONS_FILE).exists()


def test_the_timeline_has_a_tick_per_retransmission_and_a_line_per_loss(lossy: RunResult) -> None:
    episodes = loss_episodes(lossy.retransmissions)
    assert [(e.connection, len(e.times_ms), e.outcome) for e in episodes] == [
        ("p1 \u2192 broker-0 (requests)", 1, TCP_THROUGH), ("c1 \u2192 broker-0 (responses)", 4, TCP_THROUGH)]
    svg = timeline_svg(RunEvents(retransmissions=episodes), 8000.0, 0.0)
    assert svg.count('class="retransmission"') == 5 and ">TCP retransmissions</text>" in svg
    assert "retransmitted at 4.605 s: lost again" in svg
    page = render_report(lossy, {})
    assert "TCP: c1 \u2192 broker-0 (responses) lost a segment; retransmitted 4\u00d7" in page
    assert "TCP retransmissions" not in timeline_svg(RunEvents(), 8000.0, 0.0)
