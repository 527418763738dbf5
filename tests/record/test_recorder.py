import gc
import math

import numpy as np
import pandas as pd
import pytest

from kafkasim.broker.errors import Errors
from kafkasim.record.recorder import BatchTrace, Recorder
from kafkasim.record.table_file import TableFile

from .rows import Row


def _frame(table: pd.DataFrame | TableFile) -> pd.DataFrame:
    return table.frame() if isinstance(table, TableFile) else table


def _finish_produce(rec: Recorder, request_id: int, t0: float, *, acks=-1, error=0):
    tr = Row(request_id, "Produce", "producer-1", 2, 1500, acks=acks, intended_ms=t0 - 1, client_send_ms=t0)
    tr.start_ms, tr.dequeue_ms, tr.local_complete_ms = t0 + 1, t0 + 3, t0 + 4
    tr.response_complete_ms, tr.response_dequeue_ms, tr.end_ms = t0 + 10, t0 + 10.5, t0 + 11
    tr.client_receive_ms = t0 + 12
    tr.response_bytes = 120
    tr.error = error
    rec.finish_request(tr)
    return tr


def test_request_row_has_schema_and_spec_breakdown():
    rec = Recorder()
    _finish_produce(rec, 0, 100.0, error=Errors.NOT_ENOUGH_REPLICAS)
    fetch = Row(1, "FetchFollower", "follower-1", 1, 80, client_send_ms=101.0)
    fetch.start_ms, fetch.dequeue_ms, fetch.local_complete_ms = 102.0, 102.0, 101.5  # local < dequeue: clamp
    rec.finish_request(fetch)
    df = rec.tables().requests
    assert list(df["request_id"]) == [0, 1]
    assert df["request_id"].dtype == np.int64 and df["error"].dtype == np.int16
    assert str(df["acks"].dtype) == "Int8" and df["acks"].isna().tolist() == [False, True]
    assert df["client_timeout"].dtype == bool
    p = df.iloc[0]
    assert p["error"] == 19 and p["error_name"] == "NOT_ENOUGH_REPLICAS"
    assert p["RequestQueueTimeMs"] == 2 and p["LocalTimeMs"] == 1 and p["RemoteTimeMs"] == 6
    assert p["ResponseQueueTimeMs"] == 0.5 and p["ResponseSendTimeMs"] == 0.5 and p["TotalTimeMs"] == 10
    assert p["client_latency_ms"] == 12
    f = df.iloc[1]
    assert f["LocalTimeMs"] == 0.0  # negative clamped to 0 (RequestChannel.Request.updateRequestMetrics)
    assert math.isnan(f["RemoteTimeMs"]) and math.isnan(f["TotalTimeMs"])  # not reached stays NaN
    assert f["error_name"] == "NONE"


def test_open_requests_appear_once_with_reached_times():
    # A request still open at the end of a run is finished last by the engine (RunRecorder.flush), after
    # requests with higher ids, with only the times it reached.
    rec = Recorder()
    _finish_produce(rec, 0, 0.0)
    open_one = Row(1, "FetchConsumer", "consumer-1", 1, 90, client_send_ms=5.0)
    open_one.start_ms = 6.0
    _finish_produce(rec, 2, 7.0)
    rec.finish_request(open_one)
    df = rec.tables().requests
    assert list(df["request_id"]) == [0, 1, 2]
    assert df.loc[1, "start_ms"] == 6.0 and math.isnan(df.loc[1, "end_ms"])


def test_requests_sorted_by_id_even_when_finished_out_of_order():
    rec = Recorder()
    a = Row(0, "Produce", "p", 1, 10, acks=1, client_send_ms=0.0)
    b = Row(1, "Produce", "p", 1, 10, acks=1, client_send_ms=1.0)
    rec.finish_request(b)
    rec.finish_request(a)
    assert list(rec.tables().requests["request_id"]) == [0, 1]


def _batch(i, *, offset=None, ack=None, topic="orders"):
    return BatchTrace(i, "producer-1", topic, i % 2, record_count=3, size_bytes=300, acks=-1,
                      first_intended_ms=10.0 * i, created_ms=10.0 * i + 1, send_ms=10.0 * i + 2,
                      ack_ms=10.0 * i + 7 if ack is None else ack, offset=i * 3 if offset is None else offset,
                      request_id=i)


def test_records_latencies_and_consumer_columns():
    rec = Recorder(["consumer-a", "consumer-b"])
    rec.batch_consumed(0, "consumer-b", 4.0)  # a consumer can see the batch before the producer's ack
    rec.finish_batch(_batch(0))
    rec.finish_batch(_batch(1))
    rec.batch_consumed(1, "consumer-a", 16.0)
    rec.batch_consumed(1, "consumer-a", 99.0)  # a re-read: only the first receive counts
    rec.finish_batch(_batch(2, offset=-1, ack=float("nan")))
    df = rec.tables().records
    assert list(df["batch_id"]) == [0, 1, 2]
    assert df.loc[0, "produce_latency_ms"] == 7.0
    assert df.loc[0, "consumed_ms:consumer-b"] == 4.0 and math.isnan(df.loc[0, "consumed_ms:consumer-a"])
    assert df.loc[0, "first_consumed_ms"] == 4.0 and df.loc[0, "e2e_latency_ms"] == 4.0
    assert df.loc[1, "consumed_ms:consumer-a"] == 16.0 and df.loc[1, "e2e_latency_ms"] == 6.0
    assert math.isnan(df.loc[2, "produce_latency_ms"]) and math.isnan(df.loc[2, "e2e_latency_ms"])
    assert str(df["acks"].dtype) == "Int8" and df["offset"].tolist() == [0, 3, -1]


def test_long_runs_stream_to_parquet_row_groups_and_keep_every_row(tmp_path):
    rec = Recorder(["c"], max_rows_in_memory=100, spool_dir=tmp_path)
    for i in range(1050):
        _finish_produce(rec, i, float(i))
        rec.sample(float(i), "HighWatermark", "orders-0", float(i))
        rec.finish_batch(_batch(i))
        rec.batch_consumed(i, "c", 10.0 * i + 9)
    spool = rec.spool_dir
    assert rec.spooled_rows == {"requests": 1000, "timeseries": 1000, "records": 1000}
    assert rec.spooled_row_groups == {"requests": 10, "timeseries": 10, "records": 10}
    tables = rec.tables()
    assert not spool.exists()  # spool deleted once read back
    # The spooled requests stay a file, sorted by request id (kafkasim.record.table_file).
    assert isinstance(tables.requests, TableFile) and len(tables.requests) == 1050
    requests = tables.requests.frame()
    assert list(requests["request_id"]) == list(range(1050))
    assert len(tables.records) == 1050 and tables.records["e2e_latency_ms"].eq(9.0).all()
    assert tables.timeseries["value"].tolist() == [float(i) for i in range(1050)]
    assert str(requests["acks"].dtype) == "Int8"


def test_batches_waiting_for_a_subscribed_consumer_stay_until_the_end():
    rec = Recorder({"c-orders": ["orders"], "c-logs": ["logs"]}, max_rows_in_memory=1)
    rec.finish_batch(_batch(0, topic="orders"))
    assert rec.spooled_rows == {}  # c-orders has not read it yet
    rec.batch_consumed(0, "c-orders", 5.0)
    assert rec.spooled_rows == {"records": 1}  # c-logs never reads "orders": done
    rec.finish_batch(_batch(1, topic="logs"))
    df = rec.tables().records
    assert df["batch_id"].tolist() == [0, 1] and math.isnan(df.loc[1, "consumed_ms:c-logs"])


def test_timeseries_is_tidy():
    rec = Recorder()
    rec.sample(0.0, "IsrSize", "orders-0", 3)
    rec.sample(0.0, "PurgatorySize", "Produce", 0)
    df = rec.tables().timeseries
    assert list(df.columns) == ["time_ms", "metric", "entity", "value"]
    assert df["value"].dtype == np.float64 and df["metric"].tolist() == ["IsrSize", "PurgatorySize"]


def test_tables_only_once():
    rec = Recorder()
    rec.tables()
    with pytest.raises(RuntimeError, match="already called"):
        rec.tables()


def test_empty_run_has_typed_empty_tables():
    t = Recorder(["c"]).tables()
    assert len(t.requests) == 0 and "TotalTimeMs" in t.requests and "consumed_ms:c" in t.records
    assert isinstance(t.timeseries, pd.DataFrame)


def test_before_spool_is_asked_before_each_spool_write_and_can_stop_it():
    asked = []

    def before_spool():
        asked.append(len(asked))
        if len(asked) == 2:
            raise MemoryError("no room for a spool write")

    rec = Recorder(max_rows_in_memory=2, before_spool=before_spool)
    _finish_produce(rec, 0, 10.0)
    assert asked == []
    _finish_produce(rec, 1, 20.0)  # the first chunk is spooled
    assert asked == [0] and rec.spooled_rows == {"requests": 2}
    _finish_produce(rec, 2, 30.0)
    with pytest.raises(MemoryError):
        _finish_produce(rec, 3, 40.0)  # refused: nothing written, the rows are kept
    assert rec.spooled_rows == {"requests": 2}
    assert list(_frame(rec.tables().requests)["request_id"]) == [0, 1, 2, 3]


def test_a_batch_read_at_a_second_offset_is_recorded_as_duplicated():
    # A non-idempotent retry after a lost response writes the batch twice: the consumer reads the first
    # copy (offset 30) before the producer's ack names the second (offset 33), or after it.
    rec = Recorder(["c"])
    rec.batch_consumed(0, "c", 5.0, base_offset=30)  # before the ack
    rec.finish_batch(_batch(0, offset=33))
    rec.batch_consumed(0, "c", 6.0, base_offset=33)
    rec.finish_batch(_batch(1, offset=40))
    rec.batch_consumed(1, "c", 16.0, base_offset=36)  # after the ack
    rec.batch_consumed(1, "c", 17.0, base_offset=40)
    failed = _batch(2, offset=-1, ack=float("nan"))
    failed.error = 7
    failed.attempts = 4
    rec.finish_batch(failed)
    rec.finish_batch(_batch(3))
    rec.batch_consumed(3, "c", 40.0, base_offset=9)
    df = rec.tables().records
    assert df["outcome"].astype(str).tolist() == ["duplicated", "duplicated", "failed", "acknowledged"]
    assert df["attempts"].tolist() == [1, 1, 4, 1]
    assert not df["lost_after_ack"].any()


def test_a_batch_neither_acknowledged_nor_failed_when_the_run_ends_is_pending():
    """A batch still in the accumulator or in flight at the end of the run was recorded as acknowledged
    (its error was 0); it is `pending`. An acks=0 batch never written to a socket is pending too."""
    rec = Recorder([])
    rec.finish_batch(_batch(0))
    rec.finish_batch(_batch(1, offset=-1, ack=float("nan")))  # in flight at the end
    unsent = _batch(2, offset=-1, ack=float("nan"))
    unsent.send_ms = float("nan")
    unsent.attempts = 0
    rec.finish_batch(unsent)
    fire_and_forget = _batch(3, offset=-1, ack=float("nan"))
    fire_and_forget.acks = 0
    rec.finish_batch(fire_and_forget)
    never_sent = _batch(4, offset=-1, ack=float("nan"))
    never_sent.acks = 0
    never_sent.send_ms = float("nan")
    rec.finish_batch(never_sent)
    df = rec.tables().records
    assert df["outcome"].astype(str).tolist() == ["acknowledged", "pending", "pending", "sent", "pending"]


def _fill(rec: Recorder, n: int) -> None:
    """n requests finished out of id order, n gauge samples and n batches, half of them read by consumer c."""
    order = list(range(n))
    order = order[1::2] + order[0::2]
    for k, i in enumerate(order):
        row = Row(i, "Produce" if i % 3 else "FetchConsumer", f"client-{i % 4}", 1, 100,
                  acks=-1 if i % 3 else None, intended_ms=float(k), client_send_ms=float(k) + 1)
        row.end_ms, row.error = float(k) + 3, 0 if i % 7 else 6
        rec.finish_request(row)
        rec.sample(float(k), "HighWatermark", f"orders-{i % 5}", float(i))
        rec.finish_batch(_batch(i))
        if i % 2:
            rec.batch_consumed(i, "c", float(k) + 5)


def test_spooled_tables_are_the_tables_built_in_memory():
    # The spool is read back a column at a time (each sorted in Arrow, then converted letting Arrow's buffers
    # go: the end of a long run holds about one copy of each table, not three); the tables must not change.
    in_memory = Recorder(["c"], max_rows_in_memory=None)
    _fill(in_memory, 2000)
    expected = in_memory.tables()
    spooled = Recorder(["c"], max_rows_in_memory=300)
    _fill(spooled, 2000)
    assert spooled.spooled_rows == {"requests": 1800, "timeseries": 1800, "records": 900}  # half wait for c
    got = spooled.tables()
    for name in ("requests", "records", "timeseries"):
        pd.testing.assert_frame_equal(_frame(getattr(got, name)), getattr(expected, name), check_exact=True)


class _RowOutOfMemoryOnce(Row):
    """A request row whose `error` cannot be read the first time: building the tables runs out of memory."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failed = False

    @property
    def error(self):
        if not self.failed:
            self.failed = True
            raise MemoryError("no memory left for the tables")
        return 0

    @error.setter
    def error(self, value):
        pass


@pytest.mark.parametrize("max_rows", [None, 300])
def test_tables_can_be_built_again_after_running_out_of_memory(tmp_path, max_rows):
    # Issue 26, item 5: a run that runs out of memory building its tables lets the simulation go and builds them
    # again; until then the recorder must have lost nothing and written nothing twice (the spool was
    # deleted, and a second call refused).
    rec = Recorder(["c"], max_rows_in_memory=max_rows, spool_dir=tmp_path)
    _fill(rec, 1000)
    rec.finish_request(_RowOutOfMemoryOnce(1000, "Produce", "client-0", 1, 100, acks=-1, client_send_ms=5.0))
    with pytest.raises(MemoryError):
        rec.tables()
    tables = rec.tables()
    assert _frame(tables.requests)["request_id"].tolist() == list(range(1001))
    assert len(tables.records) == 1000 and len(tables.timeseries) == 1000
    # The spool goes once the tables are built; a spooled requests table's own file goes with it.
    assert [p.name for p in tmp_path.iterdir()] == ([] if max_rows is None else [tables.requests.path.parent.name])
    del tables
    gc.collect()
    assert list(tmp_path.iterdir()) == []
