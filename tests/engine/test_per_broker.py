"""Results per broker: the requests table's `broker` column, the gauges of every broker and partition, the
summary's `per_broker` view."""

from __future__ import annotations

import numpy as np

from kafkasim.run.engine import run_scenario

from .support import consumer, producer, scenario


def test_every_request_row_names_its_broker_including_those_that_never_arrived() -> None:
    result = run_scenario(
        scenario(
            duration="3s",
            producers=[producer("p1", acks="all"), producer("p0", acks=0)],
            consumers=[consumer("c1", **{"request.timeout.ms": 1000})],
            faults=[{"type": "link_drop", "target": "c1", "at": "1s", "duration": "300ms", "direction": "to_broker"}],
        )
    )
    rows = result.requests
    assert rows["broker"].dtype == np.int32
    assert set(rows["api"]) == {"Produce", "FetchConsumer", "FetchFollower"}
    # Without a cluster section broker 0 leads every partition and handles every request.
    assert (rows["broker"] == 0).all()
    lost = rows[rows["client_timeout"]]
    assert len(lost) == 1 and np.isnan(lost["start_ms"].iloc[0]) and lost["broker"].iloc[0] == 0
