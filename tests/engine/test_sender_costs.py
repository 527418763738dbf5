"""The producer Sender's build cost at run time: each ProduceRequest goes once built, requests built back to
back queue on the Sender's one thread, zero costs change nothing, draws come from streams of their own."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from kafkasim.record.result import RunResult
from kafkasim.run.engine import Engine

from .support import consumer, producer, scenario
from .test_determinism import table_hash


def _run(costs: dict[str, Any] | None, seed: int = 1, **producer_config: Any) -> RunResult:
    s = scenario(
        seed=seed, duration="2s",
        producers=[producer("p1", **{"rate": "200/s", **producer_config,
                                      **({"costs": costs} if costs is not None else {})})],
        consumers=[consumer("c1")],
    )
    return Engine(s, check_invariants=True).run()


def _produce(result: RunResult) -> pd.DataFrame:
    rows = result.requests
    return rows[rows["api"] == "Produce"].sort_values("client_send_ms").reset_index(drop=True)


def test_zero_costs_change_nothing() -> None:
    free = _run(None)
    zero = _run({"per_request": "0ms", "per_batch": "0ms"})
    for table in ("requests", "records", "timeseries"):
        assert table_hash(getattr(free, table)) == table_hash(getattr(zero, table)), table


def test_a_build_cost_delays_each_request_send() -> None:
    # 200 records/s, constant arrivals, linger.ms 0: one batch per request, 5 ms apart, never queued.
    free, costly = _produce(_run(None)), _produce(_run({"per_request": "0.3ms", "per_batch": "0.2ms"}))
    assert len(free) == len(costly) > 100
    delay = costly["client_send_ms"] - free["client_send_ms"]
    assert ((delay - 0.5).abs() < 1e-6).all(), delay.describe()


def test_requests_built_back_to_back_queue() -> None:
    # 3 ms per request at 1000 records/s: the Sender is always building; its sends are 3 ms apart at least and
    # it catches up by putting more batches (records) in each request.
    costly = _produce(_run({"per_request": "3ms"}, rate="1000/s"))
    gaps = costly["client_send_ms"].diff().dropna()
    assert (gaps >= 3.0 - 1e-6).all()
    free = _produce(_run(None, rate="1000/s"))
    assert len(costly) < len(free)


def test_costs_are_deterministic_and_drawn_from_streams_of_their_own() -> None:
    costs = {"per_request": {"type": "exponential", "mean": "0.2ms"}, "per_batch": "10us"}
    first, again = _run(costs, seed=7, arrival="poisson"), _run(costs, seed=7, arrival="poisson")
    for table in ("requests", "records", "timeseries"):
        assert table_hash(getattr(first, table)) == table_hash(getattr(again, table)), table
    # The arrivals do not move: as many records, the first at the same time (batching may differ).
    free = _run(None, seed=7, arrival="poisson")
    assert free.records["record_count"].sum() == first.records["record_count"].sum()
    assert free.records["first_intended_ms"].min() == first.records["first_intended_ms"].min()
    assert not _produce(free)["client_send_ms"].equals(_produce(first)["client_send_ms"])


def test_a_request_being_built_at_the_end_of_the_run_keeps_its_records() -> None:
    # Records every 5 ms; the one at 2000 ms is still being built (4.9 ms) when the run ends at 2002 ms.
    def run(costs: dict[str, Any] | None) -> RunResult:
        s = scenario(duration="2002ms", producers=[producer("p1", rate="200/s",
                                                            **({"costs": costs} if costs is not None else {}))])
        return Engine(s, check_invariants=True).run()

    free, costly = run(None), run({"per_request": "4.9ms"})
    assert free.records["record_count"].sum() == costly.records["record_count"].sum()
    assert costly.records["first_intended_ms"].max() == 2000.0


def test_a_stall_holds_the_build() -> None:
    # A producer stall at 1 s for 200 ms: a request being built then is sent when the stall ends.
    result = _run({"per_request": "2ms"}, stalls={"interval": "1s", "pause": "200ms"})
    sends = _produce(result)["client_send_ms"]
    assert not ((sends > 1000.0) & (sends < 1200.0)).any()


def test_a_run_on_a_real_cluster_lists_the_costs_among_what_it_does_not_apply() -> None:
    from kafkasim.real.config_map import not_applied

    s = scenario(producers=[producer("p1", costs={"per_request": "10us"})],
                 consumers=[consumer("c1", costs={"per_record": "1us"})])
    notes = [note for note in not_applied(s) if note.startswith(("producers[", "consumers["))]
    assert len(notes) == 1 and notes[0].startswith("producers[p1].costs, consumers[c1].costs (")


@pytest.mark.pure_only  # patches Producer._complete_batch, which the compiled Producer calls natively
def test_a_connection_lost_during_a_build_fails_the_batches_as_a_disconnect_and_retries_them(
        monkeypatch: Any) -> None:
    from kafkasim.broker.errors import Errors
    from kafkasim.clients.producer import Producer

    never_sent: list[int] = []
    complete_batch = Producer._complete_batch

    def spy(self: Producer, b: Any, error: Errors, *args: Any) -> None:
        if error == Errors.NETWORK_EXCEPTION and b.sends == 0:
            never_sent.append(b.batch_id)
        complete_batch(self, b, error, *args)

    monkeypatch.setattr(Producer, "_complete_batch", spy)
    # Two partitions led by brokers 1 and 2; broker 1 crashes and the requests to it time out after 1 s, while
    # the Sender is almost always building a request (4.9 ms each, a record every 5 ms) for broker 2: the
    # disconnect from broker 1 can fall in the build of a request for it.
    s = scenario(duration="4s", cluster={"brokers": 3}, topic={"partitions": 2},
                 producers=[producer("p1", rate="400/s", partitioner="round_robin", costs={"per_request": "2.4ms"},
                                     **{"request.timeout.ms": 1000, "max.in.flight.requests.per.connection": 1,
                                        "enable.idempotence": False})],
                 faults=[{"type": "crash", "target": "broker-1", "at": "1002ms"}])
    result = Engine(s, check_invariants=True).run()
    assert never_sent, "the crash did not fall in a build"
    records = result.records
    retried = records[records["batch_id"].isin(never_sent)]
    # Not failed: waiting for a retry (broker 1's partition has no new leader before broker.session.timeout.ms).
    assert len(retried) == len(never_sent) and (retried["error"] == 0).all()
    assert set(retried["outcome"]) <= {"pending", "acknowledged"}


def test_a_sender_woken_late_drains_what_send_appended_meanwhile() -> None:
    """``costs.wakeup``: KafkaProducer.doSend wakes the Sender for a record that starts a new batch, and the Sender
    runs that long later; the records sent meanwhile join the batch. On a real producer here (linger.ms=0, 300
    records/s, two cores shared by five JVMs) a batch held 1.16-1.18 records; a Sender that runs at once, 1.05."""
    zero = _run({"wakeup": "0ms"}, rate="300/s", arrival="poisson", **{"linger.ms": 0})
    free = _run(None, rate="300/s", arrival="poisson", **{"linger.ms": 0})
    for table in ("requests", "records"):
        assert table_hash(getattr(free, table)) == table_hash(getattr(zero, table)), table
    late = _run({"wakeup": "1ms"}, rate="300/s", arrival="poisson", **{"linger.ms": 0})
    records = late.records
    waited = records["send_ms"] - records["created_ms"]
    # A batch goes 1 ms after its first record woke the Sender, unless a response woke it before (a Sender that
    # handles a response drains what is ready).
    assert (waited - 1.0).abs().median() < 1e-6 and (waited >= 1.0 - 1e-6).mean() > 0.6
    # P(another record within 1 ms) at 0.3 per ms is 26%: about 1.3 records a batch, against about 1 at once.
    assert records["record_count"].mean() > 1.2 > free.records["record_count"].mean()
    drawn = {"wakeup": {"type": "lognormal", "median": "0.3ms", "p99": "3ms"}}
    first, again = (_run(drawn, seed=3, arrival="poisson") for _ in range(2))
    assert table_hash(first.records) == table_hash(again.records)
