"""The engine ends a run as out of memory, with the rows recorded so far, when its address-space guard says
a spool write would not fit -- instead of entering Arrow's C++, which can end the process (std::bad_alloc)."""

from __future__ import annotations

import pytest

import kafkasim.run.engine as engine_module
from kafkasim.run.engine import Engine, SimulationOutOfMemory
from tests.engine.support import producer, scenario

REFUSED_SPOOL = 8


class _NoRoomLater:
    """A guard with room for the run itself and for some spool writes, not for the eighth."""

    def __init__(self) -> None:
        self.spools = 0

    def exhausted(self) -> bool:
        return False

    def before_spool(self) -> None:
        self.spools += 1
        if self.spools == REFUSED_SPOOL:
            raise MemoryError("address space nearly exhausted (no room for a spool write)")


def test_a_spool_write_without_room_ends_the_run_with_partial_results(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = _NoRoomLater()
    monkeypatch.setattr(engine_module.AddressSpaceGuard, "from_process_limit", classmethod(lambda cls: guard))
    monkeypatch.setattr(engine_module, "MAX_ROWS_IN_MEMORY", 10)
    run = Engine(scenario(duration="5s", producers=[producer("p1", rate="400/s")]))
    with pytest.raises(SimulationOutOfMemory) as caught:
        run.run()
    assert guard.spools == REFUSED_SPOOL
    stopped = caught.value.at_ms
    assert 0 < stopped < 5_000
    result = caught.value.result
    assert result is not None
    assert result.summary["interrupted_by"] == "out of memory"
    assert result.summary["interrupted_at_ms"] == stopped
    # Every row recorded up to then is there: the spooled chunk and the rows the refused write kept.
    assert len(result.requests) >= 10 and len(result.records) >= 10 and len(result.timeseries) >= 10
    assert result.requests["request_id"].is_unique


def test_a_run_without_producers_names_its_request_rows_as_what_filled_the_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 26, item 5: the message blamed the producers' rate in a scenario without producers. Here the
    # followers fetch without a wait from an idle leader: what piles up is request rows.
    guard = _NoRoomLater()
    monkeypatch.setattr(engine_module.AddressSpaceGuard, "from_process_limit", classmethod(lambda cls: guard))
    monkeypatch.setattr(engine_module, "MAX_ROWS_IN_MEMORY", 10)
    run = Engine(scenario(duration="5s", producers=[], broker={"replica.fetch.wait.max.ms": 0}))
    with pytest.raises(SimulationOutOfMemory) as caught:
        run.run()
    held = caught.value.held
    assert held is not None and held.largest == "request rows"
    assert held.counts["records in the producers"] == 0 and held.counts["batch rows"] == 0
    assert held.counts["request rows"] >= 10 and held.counts["gauge samples"] > 0
    text = held.describe()
    assert text.startswith(f"holding {held.counts['request rows']:,} request rows and ")
    assert "most of it the request rows (a shorter duration, longer fetch waits" in text
    assert "producer" not in text


def test_building_the_tables_out_of_memory_lets_the_simulation_go_and_keeps_the_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 26, item 5: a run that fitted in memory until its end, then ran out building its tables (the rows
    # spooled to disk all come back), lost everything: the MemoryError went past the engine. Now the engine
    # lets the simulation go and builds them again, as after running out of memory in the loop.
    s = scenario(duration="2s", producers=[producer("p1", rate="400/s")])
    complete = Engine(s).run()
    real_summarize = engine_module.summarize
    calls = []

    def summarize_out_of_memory_once(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("no memory left for the summary")
        return real_summarize(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine_module, "summarize", summarize_out_of_memory_once)
    run = Engine(s)
    with pytest.raises(SimulationOutOfMemory) as caught:
        run.run()
    exc = caught.value
    assert exc.tabulating and exc.at_ms == 2_000.0 and exc.why_no_result is None
    assert exc.held is not None and exc.held.counts["request rows"] == len(complete.requests)
    assert "building the tables" in str(exc)
    result = exc.result
    assert result is not None and len(calls) == 2
    assert result.summary["interrupted_by"] == "out of memory" and result.summary["interrupted_at_ms"] == 2_000.0
    # Every row of the run, open requests and unacknowledged batches included.
    assert result.requests["request_id"].tolist() == complete.requests["request_id"].tolist()
    assert result.records["batch_id"].tolist() == complete.records["batch_id"].tolist()
    assert len(result.timeseries) == len(complete.timeseries)
