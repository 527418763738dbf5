"""What a run records: one row per request, one per produced batch, and sampled gauges.

Hot path: the network layer's `RequestEnvelope` is the request's row (plain attributes, `__slots__`; it has every
attribute `RequestRow` lists), filled in as the request moves through the broker (its `Response` a separate object
whose size and partition count it takes when built) and handed over once with `finish_request`; the recorder only appends the
object to a list. Columns are built per chunk of `max_rows_in_memory` rows, vectorised, and -- once a table
outgrows the chunk -- written as a Parquet row group to a spool file, so a long run holds at most one chunk of
Python objects per table. `tables()` returns the finished DataFrames (read back from the spool when one was
used) in the schema `RunResult` saves -- except a spooled requests table, which stays a file
(kafkasim.record.table_file). Why rows are objects rather than per-timestamp calls: benchmarks/README.md
("Measurements behind design choices").
"""
from __future__ import annotations

import math
import shutil
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from mypy_extensions import mypyc_attr

from kafkasim.broker.errors import Errors
from kafkasim.network.messages import REQUEST_TIMESTAMPS  # the requests table's timestamp columns, in order
from kafkasim.record.log_audit import LOSS_REASONS
from kafkasim.record.spool_dir import make_spool_dir
from kafkasim.record.table_file import TableFile, sorted_table_file

NAN: Final = math.nan

APIS: Final = ("Produce", "FetchConsumer", "FetchFollower")

# Kafka's RequestChannel.Request.updateRequestMetrics: (name, later timestamp, earlier timestamp);
# negative values are clamped to 0 like Kafka's.
BREAKDOWN: Final = (
    ("RequestQueueTimeMs", "dequeue_ms", "start_ms"),
    ("LocalTimeMs", "local_complete_ms", "dequeue_ms"),
    ("RemoteTimeMs", "response_complete_ms", "local_complete_ms"),
    ("ResponseQueueTimeMs", "response_dequeue_ms", "response_complete_ms"),
    ("ResponseSendTimeMs", "end_ms", "response_dequeue_ms"),
    ("TotalTimeMs", "end_ms", "start_ms"),
)

TIMESERIES_COLUMNS: Final = ("time_ms", "metric", "entity", "value")

# The segments table: one row per segment roll of any replica's log, and two for each roll of a leader's: when its
# high watermark first lies in the new segment (consumer fetches parked below the segment's base offset on older
# segments complete then) and when it first lies above the base offset (those parked at it complete then).
SEGMENT_COLUMNS: Final = ("time_ms", "broker", "topic", "partition", "base_offset", "event", "reason", "leader")
SEGMENT_ROLLED: Final = "rolled"
SEGMENT_HW_REACHED: Final = "high watermark reached"
SEGMENT_HW_PASSED: Final = "high watermark passed"

CONSUMED_PREFIX: Final = "consumed_ms:"

DEFAULT_MAX_ROWS_IN_MEMORY: Final = 200_000


class RequestRow(Protocol):
    """What the recorder reads of a finished request: ids, sizes, outcome and every timestamp (NaN = not
    reached). `RunRecorder` hands over the request's `kafkasim.network.messages.RequestEnvelope`, which has them all.

    `broker` is the id of the broker that handled the request (or that it was sent to, if it never
    arrived). `error` is a Kafka error code (an int or `Errors`, None read as 0); `acks` is None for fetches. Read-only
    here because the recorder never writes a row.
    """

    @property
    def request_id(self) -> int: ...
    @property
    def api(self) -> str: ...
    @property
    def client(self) -> str: ...
    @property
    def broker(self) -> int: ...
    @property
    def partitions(self) -> int: ...
    @property
    def response_partitions(self) -> int: ...
    @property
    def request_bytes(self) -> int: ...
    @property
    def response_bytes(self) -> int: ...
    @property
    def acks(self) -> int | None: ...
    @property
    def error(self) -> int | None: ...
    @property
    def client_timeout(self) -> bool: ...
    # REQUEST_TIMESTAMPS, in that order:
    @property
    def intended_ms(self) -> float: ...
    @property
    def client_send_ms(self) -> float: ...
    @property
    def start_ms(self) -> float: ...
    @property
    def dequeue_ms(self) -> float: ...
    @property
    def local_complete_ms(self) -> float: ...
    @property
    def response_complete_ms(self) -> float: ...
    @property
    def response_dequeue_ms(self) -> float: ...
    @property
    def end_ms(self) -> float: ...
    @property
    def client_receive_ms(self) -> float: ...


class BatchTrace:
    """One produced batch's row. `offset` is the base offset the leader assigned, -1 if never appended.
    `attempts` is how many times the producer sent it (1 + retries); `duplicated` is set when a consumer
    read the batch at another offset than the acknowledged one (written twice: a non-idempotent retry after
    a lost response); `sequence_reset`: an idempotent producer's epoch bump rewrote its sequence while it was
    in flight (Kafka's ``ProducerBatch.sequenceHasBeenReset``)."""

    __slots__ = (
        "batch_id",
        "producer",
        "topic",
        "partition",
        "offset",
        "record_count",
        "size_bytes",
        "acks",
        "first_intended_ms",
        "created_ms",
        "send_ms",
        "ack_ms",
        "error",
        "request_id",
        "first_request_id",
        "consumed",
        "attempts",
        "duplicated",
        "sequence_reset",
        "intended",
    )

    def __init__(
        self,
        batch_id: int,
        producer: str,
        topic: str,
        partition: int,
        record_count: int,
        size_bytes: int,
        acks: int,
        first_intended_ms: float,
        created_ms: float,
        send_ms: float = NAN,
        ack_ms: float = NAN,
        offset: int = -1,
        error: int = 0,
        request_id: int = -1,
        attempts: int = 1,
        first_request_id: int = -1,
        sequence_reset: bool = False,
        intended: list[float] | None = None,
    ) -> None:
        self.batch_id = batch_id
        self.producer = producer
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.record_count = record_count
        self.size_bytes = size_bytes
        self.acks = acks
        self.first_intended_ms = first_intended_ms
        self.created_ms = created_ms
        self.send_ms = send_ms
        self.ack_ms = ack_ms
        self.error = error
        self.request_id = request_id
        # The request of the first send (-1: never sent); with `request_id` (the last send's), a retried
        # batch's first and last attempts can be found in the requests table.
        self.first_request_id = first_request_id
        # consumer name -> first receive time; filled by Recorder.batch_consumed
        self.consumed: dict[str, float] = {}
        self.attempts = attempts
        self.sequence_reset = sequence_reset
        self.duplicated = False
        # Each record's intended send time (the producer batch's list, kept by reference), until the batch's
        # first consumption has been counted per record (Recorder.on_first_consumed); then None.
        self.intended = intended

    def __repr__(self) -> str:
        return f"BatchTrace(#{self.batch_id} {self.topic}-{self.partition}@{self.offset})"


_ERROR_NAMES: dict[int, str] = {int(e): e.name for e in Errors}


def error_name(code: int) -> str:
    """Kafka's name of an error code ("NONE" for 0)."""
    name = _ERROR_NAMES.get(code)
    return name if name is not None else f"UNKNOWN_ERROR_CODE_{code}"


def _float_column(values: Sequence[Any]) -> np.ndarray:
    return np.fromiter(values, dtype=np.float64, count=len(values))


def _column(rows: Sequence[Any], name: str, dtype: Any) -> np.ndarray:
    # fromiter over attrgetter is the fastest way found to turn objects into a column (~3x a list
    # comprehension with getattr).
    return np.fromiter(map(attrgetter(name), rows), dtype=dtype, count=len(rows))


def _strings(rows: Sequence[Any], name: str) -> list[Any]:
    return list(map(attrgetter(name), rows))


def _nullable_int8(values: Sequence[int | None]) -> pd.arrays.IntegerArray:
    return pd.array(values, dtype="Int8")


def _error_columns(rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    codes = np.fromiter((0 if e is None else int(e) for e in map(attrgetter("error"), rows)), dtype=np.int16,
                        count=len(rows))
    unique, inverse = np.unique(codes, return_inverse=True)
    names = np.array([error_name(int(c)) for c in unique], dtype=object)
    return codes, names[inverse]


def _clamped_difference(later: np.ndarray, earlier: np.ndarray) -> np.ndarray:
    # NaN (a timestamp not reached) stays NaN; np.maximum propagates NaN.
    return np.maximum(later - earlier, 0.0)


def requests_frame(traces: Sequence[RequestRow]) -> pd.DataFrame:
    """The `requests` table for finished request rows."""
    errors, error_names = _error_columns(traces)
    columns: dict[str, Any] = {
        "request_id": _column(traces, "request_id", np.int64),
        "api": _strings(traces, "api"),
        "client": _strings(traces, "client"),
        "broker": _column(traces, "broker", np.int32),
        "partitions": _column(traces, "partitions", np.int32),
        "response_partitions": _column(traces, "response_partitions", np.int32),
        "request_bytes": _column(traces, "request_bytes", np.int64),
        "response_bytes": _column(traces, "response_bytes", np.int64),
        "acks": _nullable_int8(_strings(traces, "acks")),
        "error": errors,
        "error_name": error_names,
        "client_timeout": _column(traces, "client_timeout", bool),
    }
    for name in REQUEST_TIMESTAMPS:
        columns[name] = _column(traces, name, np.float64)
    for name, later, earlier in BREAKDOWN:
        columns[name] = _clamped_difference(columns[later], columns[earlier])
    columns["client_latency_ms"] = columns["client_receive_ms"] - columns["client_send_ms"]
    return pd.DataFrame(columns)


OUTCOMES: Final = ("acknowledged", "sent", "failed", "duplicated", "pending", "lost")
"""A batch's outcome as the application saw it, plus what the log shows: `acknowledged` (the producer got
its offset), `sent` (acks=0: done once written to the socket), `failed` (its last error: a non-retriable one,
or REQUEST_TIMED_OUT when delivery.timeout.ms expired), `duplicated` (acknowledged, but a consumer also read
a second copy at another offset), `pending` (neither acknowledged nor failed when the run ended: still in
the accumulator, in flight or waiting for a retry), `lost` (acknowledged, but the partition's final leader
no longer has it: see `lost_after_ack` / `lost_reason`; set by ``kafkasim.record.log_audit``)."""


def _outcome(b: BatchTrace) -> str:
    if b.error:
        return "failed"
    if b.duplicated:
        return "duplicated"
    if b.acks == 0:
        return "sent" if b.send_ms == b.send_ms else "pending"  # send_ms is NaN until written to a socket
    return "acknowledged" if b.ack_ms == b.ack_ms else "pending"


def records_frame(batches: Sequence[BatchTrace], consumers: Sequence[str]) -> pd.DataFrame:
    """The `records` table: one row per batch, a `consumed_ms:<consumer>` column per consumer.

    `attempts` is how many times the batch was sent, `first_request_id` the request of its first send (the
    `request_id` column is the last send's); `sequence_reset` whether an epoch bump of its idempotent producer
    rewrote its sequence in flight (a batch already written may then be written again); `outcome` one of
    ``OUTCOMES``; `lost_after_ack` and
    `lost_reason` (one of ``kafkasim.record.log_audit.LOSS_REASONS``) are False / missing here: the engine
    fills them in from the final logs at the end of the run (``log_audit.audit_records``)."""
    errors, _ = _error_columns(batches)
    columns: dict[str, Any] = {
        "batch_id": _column(batches, "batch_id", np.int64),
        "producer": _strings(batches, "producer"),
        "topic": _strings(batches, "topic"),
        "partition": _column(batches, "partition", np.int32),
        "offset": _column(batches, "offset", np.int64),
        "record_count": _column(batches, "record_count", np.int64),
        "size_bytes": _column(batches, "size_bytes", np.int64),
        "acks": _nullable_int8(_strings(batches, "acks")),
        "first_intended_ms": _column(batches, "first_intended_ms", np.float64),
        "created_ms": _column(batches, "created_ms", np.float64),
        "send_ms": _column(batches, "send_ms", np.float64),
        "ack_ms": _column(batches, "ack_ms", np.float64),
        "error": errors,
        "request_id": _column(batches, "request_id", np.int64),
        "first_request_id": _column(batches, "first_request_id", np.int64),
        "attempts": _column(batches, "attempts", np.int32),
        "sequence_reset": _column(batches, "sequence_reset", np.bool_),
        "outcome": pd.Categorical([_outcome(b) for b in batches], categories=OUTCOMES),
        "lost_after_ack": np.zeros(len(batches), dtype=bool),
        "lost_reason": pd.Categorical([None] * len(batches), categories=LOSS_REASONS),
    }
    columns["produce_latency_ms"] = columns["ack_ms"] - columns["first_intended_ms"]
    first = np.full(len(batches), np.nan)
    for consumer in consumers:
        seen = _float_column([b.consumed.get(consumer, NAN) for b in batches])
        columns[CONSUMED_PREFIX + consumer] = seen
        first = np.fmin(first, seen)  # fmin ignores NaN: the first consumer that saw it
    columns["first_consumed_ms"] = first
    columns["e2e_latency_ms"] = first - columns["first_intended_ms"]
    return pd.DataFrame(columns)


def segments_frame(rows: Sequence[tuple[float, int, str, int, int, str, str, bool]]) -> pd.DataFrame:
    """The segments table from (time_ms, broker, topic, partition, base_offset, event, reason, leader) rows."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(SEGMENT_COLUMNS)
    return pd.DataFrame(
        {
            "time_ms": _float_column(columns[0]),
            "broker": np.asarray(columns[1], dtype=np.int64),
            "topic": list(columns[2]),
            "partition": np.asarray(columns[3], dtype=np.int64),
            "base_offset": np.asarray(columns[4], dtype=np.int64),
            "event": list(columns[5]),
            "reason": list(columns[6]),
            "leader": np.asarray(columns[7], dtype=bool),
        }
    )


def timeseries_table(times: Sequence[float], metrics: Sequence[str], entities: Sequence[str],
                     values: Sequence[float]) -> pa.Table:
    """The timeseries rows as an Arrow table, for the spool: built from the lists directly, a third of the CPU
    of a DataFrame converted to Arrow (the gauges of a run with many partitions spool a chunk every few
    simulated seconds)."""
    return pa.Table.from_arrays([pa.array(times, pa.float64()), pa.array(metrics, pa.string()),
                                 pa.array(entities, pa.string()), pa.array(values, pa.float64())],
                                names=list(TIMESERIES_COLUMNS))


def timeseries_frame(times: Sequence[float], metrics: Sequence[str], entities: Sequence[str],
                     values: Sequence[float]) -> pd.DataFrame:
    """The timeseries rows as the result's DataFrame: `timeseries_table`'s, so a spooled table read back and
    one kept in memory are the same frame."""
    return timeseries_table(times, metrics, entities, values).to_pandas()


class _Spool:
    """Row groups of one table in a Parquet file; the file is read back at the end (again, if building the
    tables ran out of memory the first time)."""

    def __init__(self, directory: Path, name: str) -> None:
        self.path = directory / f"{name}.parquet"
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.row_groups = 0

    def write(self, frame: pd.DataFrame) -> None:
        # One thread: a chunk is small, and each thread Arrow starts maps its stack and a malloc arena
        # (~72 MB of address space), which a run near an address-space limit may not have.
        self.write_table(pa.Table.from_pandas(frame, preserve_index=False, nthreads=1))

    def write_table(self, table: pa.Table) -> None:
        if self._writer is None:
            # Dictionary encoding only for the categorical columns (their categories are read back from the
            # dictionary): the spool is read once, at the end, and dictionary-encoding its string columns
            # (api, client, metric, entity, ...) was half the CPU of writing a chunk (a 50,000-row chunk of
            # requests: 44 ms with it, 22 ms without, and a smaller file with snappy all the same).
            categorical = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
            self._writer = pq.ParquetWriter(self.path, table.schema, use_dictionary=categorical)
        else:
            table = table.cast(self._writer.schema)
        self._writer.write_table(table)
        self.rows += table.num_rows
        self.row_groups += 1

    def finish(self, tail: pd.DataFrame) -> None:
        """Write the rows still in memory and close the file (once: the caller then lets `tail`'s rows go)."""
        if self._writer is None:
            return
        if len(tail):
            self.write(tail)
        self._writer.close()
        self._writer = None

    def read(self, key: str | None) -> pd.DataFrame:
        """The table, sorted by `key` (stable) if given. Built a column at a time so that it never holds much
        more than one copy of the table: each column sorted in Arrow in turn (the unsorted one let go), then
        converted to pandas letting Arrow's buffers go as it goes."""
        # pre_buffer=False: Arrow's read-ahead cache starts an I/O thread (see write()).
        table = pq.ParquetFile(self.path, pre_buffer=False).read(use_threads=False)
        if key is not None:
            order = np.argsort(table.column(key).to_numpy(), kind="stable")
            schema = table.schema
            columns = table.columns
            del table
            for i in range(len(columns)):
                columns[i] = columns[i].take(order)
            table = pa.Table.from_arrays(columns, schema=schema)
            del columns, order
        return table.to_pandas(use_threads=False, split_blocks=True, self_destruct=True)


class RecordedTables:
    """What `Recorder.tables()` returns."""

    __slots__ = ("requests", "records", "timeseries", "segments")

    def __init__(self, requests: pd.DataFrame | TableFile, records: pd.DataFrame, timeseries: pd.DataFrame,
                 segments: pd.DataFrame) -> None:
        self.requests = requests
        self.records = records
        self.timeseries = timeseries
        self.segments = segments


# A plain Python class even when compiled: weakref.finalize needs a weak reference, which a compiled (native)
# class such as Recorder does not support.
@mypyc_attr(native_class=False)
class _SpoolDirectory:
    """The spool's temporary directory: deleted when the recorder that alone holds this goes, or at exit."""

    def __init__(self, parent: Path | None) -> None:
        # Its owner is written in it: a run that starts clears the directories of runs that were killed
        # (kafkasim.record.spool_dir).
        self.path = make_spool_dir(parent)
        self.cleanup = weakref.finalize(self, shutil.rmtree, self.path, True)


class Recorder:
    """Collects the rows of one run.

    `consumers`: the consumer names (one `consumed_ms:<name>` column each), optionally with the topics each
    one reads: a batch leaves memory once every consumer that reads its topic has received it (or it was
    never appended); batches still waiting for a consumer are written at the end.

    `before_spool`, when given, is called before each chunk goes to the spool (a Parquet write through
    Arrow's C++). It raises MemoryError to stop a run that has no room left for the write: Arrow's C++ may
    end the process (std::bad_alloc) where Python would have raised MemoryError.
    """

    def __init__(
        self,
        consumers: Sequence[str] | Mapping[str, Collection[str]] = (),
        *,
        max_rows_in_memory: int | None = DEFAULT_MAX_ROWS_IN_MEMORY,
        spool_dir: str | Path | None = None,
        before_spool: Callable[[], None] | None = None,
    ) -> None:
        if max_rows_in_memory is not None and max_rows_in_memory < 1:
            raise ValueError(f"max_rows_in_memory must be >= 1 or None, got {max_rows_in_memory}")
        if isinstance(consumers, Mapping):
            self._consumers = list(consumers)
            self._subscriptions: dict[str, frozenset[str]] | None = {
                c: frozenset(topics) for c, topics in consumers.items()
            }
        else:
            self._consumers = list(consumers)
            self._subscriptions = None
        self._max_rows = max_rows_in_memory
        self._spool_parent = Path(spool_dir) if spool_dir is not None else None
        self._before_spool = before_spool
        self._spool_dir: Path | None = None
        self._spools: dict[str, _Spool] = {}
        self._directory: _SpoolDirectory | None = None
        self._cleanup: weakref.finalize | None = None
        self._closed = False

        self._finished_requests: list[RequestRow] = []

        self._pending_batches: dict[int, BatchTrace] = {}
        self._early_consumption: dict[int, dict[str, float]] = {}
        # Offsets at which batches were read before their producer finished them (a second one is a copy).
        self._early_offsets: dict[int, set[int]] = {}
        self._finished_batches: list[BatchTrace] = []

        self._ts_time: list[float] = []
        self._ts_metric: list[str] = []
        self._ts_entity: list[str] = []
        self._ts_value: list[float] = []

        self._segment_rows: list[tuple[float, int, str, int, int, str, str, bool]] = []
        # Told each batch's first consumption once its row is final (per-record end-to-end latency).
        self.on_first_consumed: Callable[[BatchTrace, float], None] | None = None

    # --- requests ----------------------------------------------------------------------------------

    def finish_request(self, row: RequestRow) -> None:
        """The request is done (response received, client timeout, or acks=0 sent; at the end of a run, the
        engine finishes those still open with the times they reached); do not modify it later."""
        rows = self._finished_requests
        rows.append(row)
        if self._max_rows is not None and len(rows) >= self._max_rows:
            self._spool("requests").write(requests_frame(rows))
            rows.clear()

    # --- batches -----------------------------------------------------------------------------------

    def finish_batch(self, batch: BatchTrace) -> None:
        """The producer is done with the batch (acknowledged, failed, or sent with acks=0)."""
        offsets = self._early_offsets.pop(batch.batch_id, None) if self._early_offsets else None
        if offsets is not None and batch.offset >= 0 and any(o != batch.offset for o in offsets):
            batch.duplicated = True
        early = self._early_consumption.pop(batch.batch_id, None)
        if early:
            for consumer, t in early.items():
                batch.consumed.setdefault(consumer, t)
        if self._consumed_by_all_readers(batch):
            self._add_finished_batch(batch)
        else:
            self._pending_batches[batch.batch_id] = batch

    def batch_consumed(self, batch_id: int, consumer: str, receive_ms: float, base_offset: int = -1) -> None:
        """`consumer` received the batch at `receive_ms` (at `base_offset`, -1 if unknown); only the first time
        counts. The same batch at two offsets was written twice: its row is marked duplicated."""
        batch = self._pending_batches.get(batch_id)
        if batch is not None and base_offset >= 0 and batch.offset >= 0 and base_offset != batch.offset:
            batch.duplicated = True
        if batch is None:
            if base_offset >= 0:
                self._early_offsets.setdefault(batch_id, set()).add(base_offset)
            # Not finished by its producer yet (a consumer can see data before the producer's ack
            # arrives), or already written because every reader had it: then this is a re-read.
            self._early_consumption.setdefault(batch_id, {}).setdefault(consumer, receive_ms)
            return
        batch.consumed.setdefault(consumer, receive_ms)
        if self._consumed_by_all_readers(batch):
            del self._pending_batches[batch_id]
            self._add_finished_batch(batch)

    def _consumed_by_all_readers(self, batch: BatchTrace) -> bool:
        if batch.offset < 0:
            return True  # never appended: no consumer can ever see it
        consumed = batch.consumed
        if self._subscriptions is None:
            return len(consumed) >= len(self._consumers)
        topic = batch.topic
        return all(c in consumed for c, topics in self._subscriptions.items() if topic in topics)

    def _count_first_consumption(self, batch: BatchTrace) -> None:
        hook = self.on_first_consumed
        if batch.intended is not None and batch.consumed and hook is not None:
            hook(batch, min(batch.consumed.values()))
        batch.intended = None

    def _add_finished_batch(self, batch: BatchTrace) -> None:
        self._count_first_consumption(batch)
        rows = self._finished_batches
        rows.append(batch)
        if self._max_rows is not None and len(rows) >= self._max_rows:
            self._spool("records").write(records_frame(rows, self._consumers))
            rows.clear()

    # --- gauges ------------------------------------------------------------------------------------

    def sample(self, time_ms: float, metric: str, entity: str, value: float) -> None:
        """One gauge reading (tidy long format: time_ms, metric, entity, value)."""
        self._ts_time.append(time_ms)
        self._ts_metric.append(metric)
        self._ts_entity.append(entity)
        self._ts_value.append(value)
        if self._max_rows is not None and len(self._ts_time) >= self._max_rows:
            self._flush_timeseries()

    def _flush_timeseries(self) -> None:
        self._spool("timeseries").write_table(timeseries_table(self._ts_time, self._ts_metric, self._ts_entity,
                                                               self._ts_value))
        self._ts_time.clear()
        self._ts_metric.clear()
        self._ts_entity.clear()
        self._ts_value.clear()

    # --- segments ----------------------------------------------------------------------------------

    def segment_event(self, time_ms: float, broker: int, topic: str, partition: int, base_offset: int,
                      event: str, reason: str, leader: bool) -> None:
        """A segment rolled (``SEGMENT_ROLLED``), or a leader's HW reached a rolled segment
        (``SEGMENT_HW_REACHED``)."""
        rows = self._segment_rows
        rows.append((time_ms, broker, topic, partition, base_offset, event, reason, leader))
        if self._max_rows is not None and len(rows) >= self._max_rows:
            self._spool("segments").write(segments_frame(rows))
            rows.clear()

    # --- spooling and the end of the run -----------------------------------------------------------

    def _spool(self, table: str) -> _Spool:
        """The spool to write `table`'s next chunk to (only writers call this)."""
        if self._before_spool is not None:
            self._before_spool()
        spool = self._spools.get(table)
        if spool is None:
            if self._spool_dir is None:
                self._directory = _SpoolDirectory(self._spool_parent)
                self._spool_dir = self._directory.path
                self._cleanup = self._directory.cleanup
            spool = self._spools[table] = _Spool(self._spool_dir, table)
        return spool

    @property
    def spooled_rows(self) -> dict[str, int]:
        """Rows already written to the spool, per table (for tests and progress reports)."""
        return {name: spool.rows for name, spool in self._spools.items()}

    @property
    def rows(self) -> dict[str, int]:
        """Rows recorded so far per table, spooled or not: what the tables will hold (requests and gauge
        samples handed over, batches finished by their producers), including those not yet spooled."""
        spooled = self.spooled_rows
        return {
            "requests": spooled.get("requests", 0) + len(self._finished_requests),
            "records": spooled.get("records", 0) + len(self._finished_batches) + len(self._pending_batches),
            "timeseries": spooled.get("timeseries", 0) + len(self._ts_time),
        }

    @property
    def spooled_row_groups(self) -> dict[str, int]:
        return {name: spool.row_groups for name, spool in self._spools.items()}

    @property
    def spool_dir(self) -> Path | None:
        return self._spool_dir

    def tables(self) -> RecordedTables:
        """The finished tables, sorted by request id / batch id (gauges in sampling order). Batches still
        waiting for a consumer are included. Closes the recorder -- unless building them raised (say
        MemoryError): then every row is still there and `tables()` may be called again."""
        if self._closed:
            raise RuntimeError("Recorder.tables() was already called; a recorder yields its tables once")
        requests = self._requests_table()
        records = self._table("records", "batch_id")
        timeseries = self._table("timeseries", None)
        segments = self._table("segments", None)
        self.close()
        return RecordedTables(requests, records, timeseries, segments)

    def _table(self, table: str, key: str | None) -> pd.DataFrame:
        """One finished table: read back from its spool (the rows still in memory written to it first, and
        let go), or built from memory when it has none."""
        spool = self._spools.get(table)
        if spool is None:
            frame = self._tail(table)
            return frame if key is None else frame.sort_values(key, kind="stable", ignore_index=True)
        spool.finish(self._tail(table))
        self._drop_tail(table)
        return spool.read(key)

    def _requests_table(self) -> pd.DataFrame | TableFile:
        """The requests table: in memory when it never reached the spool, else kept as a file of its own,
        sorted a row group at a time (kafkasim.record.table_file): a long run's largest table, which nothing
        at the end of a run needs whole."""
        spool = self._spools.get("requests")
        if spool is None:
            return self._table("requests", "request_id")
        spool.finish(self._tail("requests"))
        self._drop_tail("requests")
        return sorted_table_file(spool.path, "request_id", "requests", self._spool_parent)

    def _tail(self, table: str) -> pd.DataFrame:
        if table == "requests":
            return requests_frame(self._finished_requests)
        if table == "records":
            pending = [self._pending_batches[b] for b in sorted(self._pending_batches)]
            for batch in pending:  # read by some of their readers by the end
                self._count_first_consumption(batch)
            return records_frame(self._finished_batches + pending, self._consumers)
        if table == "segments":
            return segments_frame(self._segment_rows)
        return timeseries_frame(self._ts_time, self._ts_metric, self._ts_entity, self._ts_value)

    def _drop_tail(self, table: str) -> None:
        if table == "requests":
            self._finished_requests = []
        elif table == "records":
            self._finished_batches = []
            self._pending_batches = {}
        elif table == "segments":
            self._segment_rows = []
        else:
            self._ts_time, self._ts_metric, self._ts_entity, self._ts_value = [], [], [], []

    def close(self) -> None:
        """Drop buffers and delete the spool directory."""
        self._closed = True
        self._finished_requests = []
        self._finished_batches = []
        self._pending_batches = {}
        self._segment_rows = []
        if self._cleanup is not None:
            self._cleanup()
