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
