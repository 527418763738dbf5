"""The consumer application's processing costs at run time: each batch is consumed after its records are
handled, later batches queue, zero costs change nothing, draws come from streams of their own."""

from __future__ import annotations

from typing import Any

from kafkasim.record.result import RunResult
from kafkasim.run.engine import Engine

from .support import consumer, producer, scenario
from .test_determinism import table_hash


def _run(costs: dict[str, Any] | None, seed: int = 1, **producer_config: Any) -> RunResult:
    s = scenario(
        seed=seed, duration="2s",
        producers=[producer("p1", **{"rate": "200/s", **producer_config})],
        consumers=[consumer("c1", **({"costs": costs} if costs is not None else {}))],
    )
    return Engine(s, check_invariants=True).run()


def _consumed(result: RunResult) -> Any:
    records = result.records
    return records[records["consumed_ms:c1"].notna()]


def test_zero_costs_change_nothing() -> None:
    free = _run(None)
    zero = _run({"per_poll": "0ms", "per_record": "0ms"})
    for table in ("requests", "records", "timeseries"):
        assert table_hash(getattr(free, table)) == table_hash(getattr(zero, table)), table


def test_a_per_record_cost_delays_each_batch_by_its_records() -> None:
    # One record per batch at 200/s (linger.ms 0): 0.5 ms per record, never queued (5 ms apart).
    free = _consumed(_run(None))
    costly = _consumed(_run({"per_record": "0.5ms"}))
    delay = costly["consumed_ms:c1"].to_numpy() - free["consumed_ms:c1"].to_numpy()
    assert len(free) == len(costly) > 100
    assert (abs(delay - 0.5 * costly["record_count"].to_numpy()) < 1e-6).all()


def test_batches_queue_behind_earlier_ones() -> None:
    # 2 ms per record at 1000 records/s: the application thread cannot keep up; consumption falls ever later.
    result = _run({"per_poll": "0.1ms", "per_record": "2ms"}, rate="1000/s", arrival="constant")
    consumed = _consumed(result)
    lag = consumed["consumed_ms:c1"] - consumed["ack_ms"]
    assert lag.iloc[0] < 10.0 and lag.iloc[-1] > lag.iloc[0] + 300.0
    # One thread: consumed times are at least one batch's handling apart.
    gaps = consumed["consumed_ms:c1"].sort_values().diff().dropna()
    assert (gaps >= 2.0 - 1e-6).all()


def test_costs_are_deterministic_and_drawn_from_streams_of_their_own() -> None:
    costs = {"per_poll": {"type": "exponential", "mean": "0.2ms"},
             "per_record": {"type": "uniform", "low": "0.1ms", "high": "0.3ms"}}
    first, again = _run(costs, seed=7), _run(costs, seed=7)
    for table in ("requests", "records", "timeseries"):
        assert table_hash(getattr(first, table)) == table_hash(getattr(again, table)), table
    # The producer's draws do not move: the same records are acknowledged at the same times.
    free = _run(None, seed=7)
    assert free.records["ack_ms"].equals(first.records["ack_ms"])
    assert not free.records["consumed_ms:c1"].equals(first.records["consumed_ms:c1"])


def test_a_run_on_a_real_cluster_lists_the_costs_among_what_it_does_not_apply() -> None:
    from kafkasim.real.config_map import not_applied

    assert not any(note.startswith("consumers[") for note in not_applied(scenario(consumers=[consumer("c1")])))
    s = scenario(consumers=[consumer("c1", costs={"per_record": "1us"}), consumer("c2")])
    notes = [note for note in not_applied(s) if note.startswith("consumers[")]
    assert len(notes) == 1 and notes[0].startswith("consumers[c1].costs (")
