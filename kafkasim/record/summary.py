"""The run summary: counts and latency percentiles, computed from the recorded tables (never by hand in
model code).

Percentiles come from an HdrHistogram recording microseconds with 3 significant digits, as Kafka's and
most latency tools report them; `max` and `mean` are exact. Requests and batches sent before the warm-up
ends are left out (by `client_send_ms` / `send_ms`).

`per_broker` (one entry per broker, `broker-<id>`, sorted by id): the requests each broker handled (the
requests table's `broker`), their errors by Kafka's name, and per API count, errors, client timeouts and
TotalTimeMs -- and, from the
gauges sampled after the warm-up, its request queue (mean, max) and the idle ratios of its request
handlers and network threads (mean, min) -- and, given them, the cores its threads used after the warm-up
(``cores``: a simulated broker's modelled CPU, kafkasim.run.cores; a real one's JVM threads,
kafkasim.real.process_cpu).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram
from numpy.typing import DTypeLike

from kafkasim.record.phases import Phase
from kafkasim.record.recorder import APIS, BREAKDOWN, CONSUMED_PREFIX
from kafkasim.record.table_file import TableFile

PERCENTILES = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p99.9", 99.9))
# One hour in microseconds; longer values are clamped to it (a run's latencies are far below).
_HIGHEST_US = 3_600_000_000
_SIGNIFICANT_DIGITS = 3
# With 3 significant digits a histogram bucket holds 2^11 distinct sub-buckets: values below 2048 us are
# exact, above that a value shares its bucket with others that differ only in the low bits.
_SUB_BUCKET_BITS = 11

ACKS_LABELS = {-1: "all", 0: "0", 1: "1"}


# Values taken at a time where a computation over a whole column makes temporaries of each value's size.
_CHUNK = 65_536


def bucket_shift(values: np.ndarray) -> np.ndarray:
    """How many low bits HdrHistogram's bucket of each value (µs, 3 significant digits) leaves out: 0 below
    2048 µs, then one more for each doubling."""
    _, bit_length = np.frexp(values.astype(np.float64))  # exact for integers below 2^53
    return np.maximum(bit_length.astype(np.int64) - _SUB_BUCKET_BITS, 0)


def lowest_equivalent_us(values: np.ndarray) -> np.ndarray:
    """HdrHistogram's lowest equivalent value, vectorised: recording one value per bucket with a count is
    the same histogram as recording every value, and turns a million calls into a few thousand. ``_CHUNK``
    values at a time: over a million at once its temporaries were 28 bytes a value."""
    flat = values.ravel()
    out = np.empty_like(flat)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start:start + _CHUNK]
        bits = bucket_shift(part)
        out[start:start + _CHUNK] = (part >> bits) << bits
    return out.reshape(values.shape)


def _bucket_counts(micros: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(lowest_equivalent_us(micros), return_counts=True)``, sorting its own array in place rather
    than a copy of it."""
    lowest = lowest_equivalent_us(micros)
    lowest.sort()
    starts = np.flatnonzero(np.concatenate(([lowest.size > 0], lowest[1:] != lowest[:-1])))
    return lowest[starts], np.diff(np.append(starts, lowest.size))


def percentiles(values_ms: Any) -> dict[str, float | int | None]:
    """count, mean, p50, p95, p99, p99.9 and max of the finite values (ms); None when there are none."""
    array = np.asarray(values_ms, dtype=np.float64)
    finite = np.isfinite(array)
    if not finite.all():
        array = array[finite]
    result: dict[str, float | int | None] = {"count": int(array.size)}
    if array.size == 0:
        result.update({"mean": None, **{name: None for name, _ in PERCENTILES}, "max": None})
        return result
    scaled = array * 1000.0  # rounded and clipped in place: one float temporary, not three
    np.rint(scaled, out=scaled)
    np.clip(scaled, 0, _HIGHEST_US, out=scaled)
    micros = scaled.astype(np.int64)
    del scaled
    buckets, counts = _bucket_counts(micros)
    result["mean"] = float(array.mean())
    largest = float(array.max())
    for (name, _), value_us in zip(PERCENTILES, values_at_percentiles(buckets, counts), strict=True):
        # HdrHistogram answers with the highest value equivalent to the bucket (<= 0.1% above the true
        # value); never report a percentile above the exact maximum.
        result[name] = min(value_us / 1000.0, largest)
    result["max"] = largest
    return result


_EQUIVALENCE = HdrHistogram(1, _HIGHEST_US, _SIGNIFICANT_DIGITS)  # only its bucket layout is used


def highest_equivalent_us(value_us: int) -> int:
    """HdrHistogram's highest value equivalent to ``value_us`` (the top of its bucket)."""
    return int(_EQUIVALENCE.get_highest_equivalent_value(value_us))


def values_at_percentiles(buckets: np.ndarray, counts: np.ndarray) -> list[int]:
    """HdrHistogram's ``get_value_at_percentile`` for each of PERCENTILES, of the histogram holding
    ``counts[i]`` values equivalent to ``buckets[i]`` (ascending lowest equivalent values, microseconds):
    one cumulative sum instead of a walk over every bucket per percentile (the walk was most of a short
    run's summary)."""
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    values = []
    for _, q in PERCENTILES:
        # HdrHistogram.get_target_count_at_percentile, then the first bucket whose running total reaches it.
        target = max(int(((min(q, 100.0) * total / 100)) + 0.5), 1)
        index = int(np.searchsorted(cumulative, target, side="left"))
        values.append(highest_equivalent_us(int(buckets[index])))
    return values


def acks_label(acks: int) -> str:
    return f"acks={ACKS_LABELS.get(acks, str(acks))}"


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


class _Columns:
    """The requests table a column at a time, from its DataFrame or from its file (a long run's, which is not
    read whole: kafkasim.record.table_file). A file's columns that the summary reads again and again (the
    ones it picks rows by, and TotalTimeMs) are kept once read: ~40 bytes a row; the others are read for each
    use and let go."""

    __slots__ = ("table", "columns", "_kept", "_kept_text")

    KEPT = frozenset(("api", "client", "broker", "error", "client_timeout", "client_send_ms", "TotalTimeMs"))

    def __init__(self, table: pd.DataFrame | TableFile) -> None:
        self.table = table
        self.columns = list(table.columns)
        self._kept: dict[tuple[str, str], np.ndarray] = {}
        self._kept_text: dict[str, pd.Categorical] = {}

    def __len__(self) -> int:
        return len(self.table)

    def _read(self, name: str, kind: str) -> np.ndarray:
        key = (name, kind)
        values = self._kept.get(key)
        if values is not None:
            return values
        table = self.table
        if isinstance(table, pd.DataFrame):
            if kind == "floats":
                return _floats(table, name)
            return table[name].to_numpy(dtype=None if kind == "any" else kind)
        if kind == "floats":
            values = table.floats(name)
        else:
            values = table.column(name, None if kind == "any" else kind)
        if name in self.KEPT:
            self._kept[key] = values
        return values

    def column(self, name: str, dtype: DTypeLike | None = None) -> np.ndarray:
        return self._read(name, "any" if dtype is None else np.dtype(dtype).str)

    def floats(self, name: str) -> np.ndarray:
        return self._read(name, "floats")

    def strings(self, name: str) -> pd.Categorical:
        """The column as text (``frame[name].astype(str)``), a Categorical: compared with a word it gives a mask,
        as an object array does, at a byte a row rather than 8 (a million requests' api and client columns, kept
        while the summary runs, were 16 MB as object arrays and more to build)."""
        kept = self._kept_text.get(name)
        if kept is not None:
            return kept
        table = self.table
        values = (pd.Categorical(table[name].astype(str)) if isinstance(table, pd.DataFrame)
                  else table.text(name))
        if name in self.KEPT:
            self._kept_text[name] = values
        return values


def _is(text: pd.Categorical, word: str) -> np.ndarray:
    """Which rows of ``text`` (``_Columns.strings``) are ``word``: a mask."""
    return np.asarray(text == word, dtype=bool)


def _words(text: pd.Categorical, mask: np.ndarray) -> set[str]:
    """The words ``text`` holds where ``mask`` does."""
    return {str(word) for word in text[mask].unique()}


class _Rows:
    """Some rows of the requests table, picked by a mask over the whole table and read a column at a time (the
    picked values of one column): picking rows never copies the table, which for a long run is most of what
    it holds in memory when the summary is made."""

    __slots__ = ("frame", "mask", "count")

    def __init__(self, frame: _Columns, mask: np.ndarray | None = None) -> None:
        self.frame = frame
        self.mask = mask
        self.count = len(frame) if mask is None else int(np.count_nonzero(mask))

    def __len__(self) -> int:
        return self.count

    def where(self, mask: np.ndarray) -> _Rows:
        """These rows where `mask` (over the whole table) holds."""
        return _Rows(self.frame, mask if self.mask is None else self.mask & mask)

    def column(self, name: str, dtype: Any = None) -> np.ndarray:
        values = self.frame.column(name, dtype)
        return values if self.mask is None else values[self.mask]

    def floats(self, name: str) -> np.ndarray:
        values = self.frame.floats(name)
        return values if self.mask is None else values[self.mask]

    def strings(self, name: str) -> pd.Categorical:
        values = self.frame.strings(name)
        return values if self.mask is None else values[self.mask]


def _breakdown(rows: _Rows) -> dict[str, Any]:
    """Kafka's RequestMetrics breakdown of these requests, and the client's send -> receive."""
    out = {name: percentiles(rows.floats(name)) for name, _, _ in BREAKDOWN}
    out["client_latency_ms"] = percentiles(rows.floats("client_latency_ms"))
    return out


def _api_summary(rows: _Rows) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "count": int(len(rows)),
        "errors": int((rows.column("error") != 0).sum()),
        "client_timeouts": int(rows.column("client_timeout", dtype=bool).sum()),
    }
    summary.update(_breakdown(rows))
    return summary


def _acknowledged(batches: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Which batches were acknowledged without error (a mask), and every batch's ack time."""
    ack = _floats(batches, "ack_ms")
    return (batches["error"].to_numpy() == 0) & np.isfinite(ack), ack


def _produce_latency(records: pd.DataFrame) -> dict[str, Any]:
    # Columns picked by masks, not the table: a long run's records table is tens of MB a copy.
    ok, ack = _acknowledged(records)
    out: dict[str, Any] = {}
    acks = records["acks"].to_numpy(dtype=np.float64, na_value=np.nan)[ok]
    ack = ack[ok]
    intended = _floats(records, "first_intended_ms")[ok]
    sent = _floats(records, "send_ms")[ok]
    for value in sorted({int(a) for a in acks[np.isfinite(acks)]}):
        mine = acks == value
        out[acks_label(value)] = {
            "batches": int(np.count_nonzero(mine)),
            # Open-loop load: from the time the first record was meant to be sent, so queueing in the
            # producer counts (no coordinated omission).
            "from_intended": percentiles(ack[mine] - intended[mine]),
            "from_send": percentiles(ack[mine] - sent[mine]),
        }
    return out


def _error_counts(rows: _Rows) -> dict[str, int]:
    """The requests' errors by Kafka's error name, most frequent first (ties by name); {} when none."""
    failed = pd.Series(np.asarray(rows.strings("error_name")[rows.column("error") != 0], dtype=object), dtype=object)
    counts = failed.value_counts()
    return {str(name): int(n) for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))}


def _client_requests(rows: _Rows) -> dict[str, Any]:
    return {
        "requests": int(len(rows)),
        "errors": _error_counts(rows),
        "client_timeouts": int(rows.column("client_timeout", dtype=bool).sum()),
    }


def _producer_summary(requests: _Rows, batches: pd.DataFrame) -> dict[str, Any]:
    """One producer: its batches' latency from the intended send and from the send (acknowledged batches),
    end to end (until the first consumer received the batch), its requests' errors and their breakdown."""
    acks = batches["acks"].to_numpy(dtype=np.float64, na_value=np.nan)
    settings = sorted({int(a) for a in acks[np.isfinite(acks)]})
    ok, ack = _acknowledged(batches)
    return {
        "acks": acks_label(settings[0]) if len(settings) == 1 else None,
        **_client_requests(requests),
        "batches": int(len(batches)),
        "records": int(batches["record_count"].sum()),
        "from_intended": percentiles(ack[ok] - _floats(batches, "first_intended_ms")[ok]),
        "from_send": percentiles(ack[ok] - _floats(batches, "send_ms")[ok]),
        "e2e": percentiles(_floats(batches, "e2e_latency_ms")),
        **_delivery(batches),
        "broker": _breakdown(requests),
    }


# The records table's columns _producer_summary reads (with _delivery).
PRODUCER_COLUMNS = ("acks", "error", "ack_ms", "record_count", "first_intended_ms", "send_ms", "e2e_latency_ms",
                    "outcome", "attempts")


def _delivery(batches: pd.DataFrame) -> dict[str, Any]:
    """The batches per outcome (acknowledged, sent, failed, duplicated, pending, lost: the records table's `outcome`) and
    per number of attempts (1 = no retry)."""
    if "outcome" not in batches.columns:
        return {}
    outcomes = batches["outcome"].astype(str).value_counts()
    attempts = batches["attempts"].value_counts()
    return {
        "outcomes": {str(k): int(outcomes[k]) for k in sorted(outcomes.index)},
        "attempts": {str(int(k)): int(attempts[k]) for k in sorted(attempts.index)},
    }


def _phase_summary(phase: Phase, batches: pd.DataFrame, intended: np.ndarray, produce_requests: _Rows,
                   sent: np.ndarray) -> dict[str, Any]:
    """One phase of a run with faults (kafkasim.record.phases): its batches (by ``intended``, the intended
    send of their first record) with their produce and end-to-end latency and outcomes, the produce requests
    sent in it (``sent``: every request's send time, a mask over the whole table as _Rows.where takes) with
    their errors, and the records acknowledged per second of it."""
    mine = batches[(intended >= phase.from_ms) & (intended < phase.to_ms)]
    produce = produce_requests.where((sent >= phase.from_ms) & (sent < phase.to_ms))
    ok = (mine["error"].to_numpy() == 0) & np.isfinite(_floats(mine, "ack_ms"))
    seconds = (phase.to_ms - phase.from_ms) / 1000.0
    return {
        "name": phase.name,
        "from_ms": phase.from_ms,
        "to_ms": phase.to_ms,
        "batches": int(len(mine)),
        "produce_latency": _produce_latency(mine),
        "e2e_latency": percentiles(_floats(mine, "e2e_latency_ms")),
        **_delivery(mine),
        "produce_requests": int(len(produce)),
        "produce_errors": _error_counts(produce),
        "acknowledged_records_per_s": float(mine["record_count"].to_numpy()[ok].sum()) / seconds,
    }


OUTCOMES = ("acknowledged", "sent", "lost", "duplicated", "failed", "pending")
OUTCOME_WORDS = {"sent": "sent (acks=0: never acknowledged)", "lost": "acknowledged then lost",
                 "duplicated": "written twice", "failed": "failed", "pending": "pending at the end"}


def outcome_counts(summary: Mapping[str, Any]) -> dict[str, int]:
    """Every producer's batches per outcome (a summary's per_client), summed: the answer to "was anything
    acknowledged lost, written twice, failed?", zeros included (acknowledged, lost, duplicated, failed and
    pending always; sent only under acks=0)."""
    totals = dict.fromkeys(OUTCOMES, 0)
    for data in ((summary.get("per_client") or {}).get("producers") or {}).values():
        for outcome, n in (data.get("outcomes") or {}).items():
            totals[outcome] = totals.get(outcome, 0) + int(n)
    if not totals["sent"]:
        del totals["sent"]
    return totals


def _lost_after_ack(records: pd.DataFrame) -> dict[str, Any] | None:
    """Acknowledged batches the final leaders no longer have (the records table's `lost_after_ack`, over the
    whole run, warm-up included: a record lost is lost): their batches, records and reasons, in all and per
    producer. None when nothing was lost (the summary then has no `lost_after_ack` key: the quiet case
    stays quiet)."""
    if "lost_after_ack" not in records.columns:
        return None
    lost = records[records["lost_after_ack"].to_numpy(dtype=bool)]
    if not len(lost):
        return None

    def counts(rows: pd.DataFrame) -> dict[str, Any]:
        reasons = rows["lost_reason"].astype(str).value_counts()
        return {
            "batches": int(len(rows)),
            "records": int(rows["record_count"].sum()),
            "by_reason": {str(k): int(reasons[k]) for k in sorted(reasons.index)},
        }

    producer = lost["producer"].astype(str).to_numpy()
    return {
        **counts(lost),
        "by_producer": {name: counts(lost[producer == name]) for name in sorted(set(producer.tolist()))},
    }


def _consumer_summary(requests: _Rows, batches: pd.DataFrame, consumer: str) -> dict[str, Any]:
    """One consumer: the batches it received, from their intended send (end to end) and from their send
    until it received them, and its fetches' errors and breakdown (RemoteTimeMs: parked in the purgatory)."""
    column = CONSUMED_PREFIX + consumer
    received = _floats(batches, column) if column in batches.columns else np.full(len(batches), np.nan)
    return {
        **_client_requests(requests),
        "batches": int(np.isfinite(received).sum()),
        "e2e": percentiles(received - _floats(batches, "first_intended_ms")),
        "from_send": percentiles(received - _floats(batches, "send_ms")),
        "broker": _breakdown(requests),
    }


def _per_client(
    requests: _Columns,
    kept: _Rows,
    records: pd.DataFrame,
    batches: pd.DataFrame,
    producers: Sequence[str] | None,
    consumers: Sequence[str] | None,
) -> dict[str, Any]:
    """Every producer's and consumer's own rows, in the given order; by default every client the tables
    name (producers sorted, consumers in the records table's order). `requests`/`records` are the whole
    tables (a client idle after the warm-up still gets its row), `kept`/`batches` the rows after it."""
    api = requests.strings("api")
    client = requests.strings("client")
    if producers is None:
        producers = sorted(set(records["producer"].astype(str)) | _words(client, _is(api, "Produce")))
    if consumers is None:
        columns = [c[len(CONSUMED_PREFIX):] for c in records.columns if c.startswith(CONSUMED_PREFIX)]
        consumers = columns + sorted(_words(client, _is(api, "FetchConsumer")) - set(columns))
    producer_column = batches["producer"].astype(str).to_numpy()
    producer_columns = [c for c in PRODUCER_COLUMNS if c in batches.columns]

    def batches_of(name: str) -> pd.DataFrame:
        # The table itself when they are all of its rows (one producer: a million requests' batches copied
        # twice were 30 MB), else only the columns a producer's summary reads, copied with its rows.
        mine = producer_column == name
        return batches if mine.all() else batches.loc[mine, producer_columns]

    return {
        "producers": {
            name: _producer_summary(kept.where(_is(api, "Produce") & _is(client, name)),
                                    batches_of(name))
            for name in producers
        },
        "consumers": {
            name: _consumer_summary(kept.where(_is(api, "FetchConsumer") & _is(client, name)), batches, name)
            for name in consumers
        },
    }


BROKER_GAUGES = (("RequestQueueSize", "max"), ("RequestHandlerAvgIdlePercent", "min"),
                 ("NetworkProcessorAvgIdlePercent", "min"))
BROKER_PREFIX = "broker-"
CORES_DATA_PLANE = "data plane"
"""A broker's request handlers and network threads together, in ``per_broker`` ``cores``: Kafka names both
``data-plane-kafka-*``, and a real JVM's 15-character thread names do not tell them apart."""
CORES_REPLICA_FETCHERS = "replica fetchers"
CORES_REQUEST_HANDLERS = "request handlers"
CORES_NETWORK_THREADS = "network threads"
CORE_KINDS = (CORES_REQUEST_HANDLERS, CORES_NETWORK_THREADS, CORES_REPLICA_FETCHERS)
"""The kinds of a broker's threads whose cores ``per_broker`` ``cores`` holds apart (with ``data plane``, the
first two together)."""


def _broker_id(entity: str) -> int | None:
    rest = entity[len(BROKER_PREFIX):] if entity.startswith(BROKER_PREFIX) else ""
    return int(rest) if rest.isdigit() else None


def _per_broker(kept: _Rows, timeseries: pd.DataFrame | None, warmup_ms: float,
                cores: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """Per broker: the requests it handled per API (count, errors, client timeouts, TotalTimeMs), and its
    queue and idle gauges after the warm-up, and its ``cores``. Brokers named by a request row, by a broker
    gauge or by ``cores``."""
    requests = kept.frame
    broker_column = requests.column("broker") if "broker" in requests.columns else np.full(len(requests), -1)
    brokers = {int(b) for b in np.unique(broker_column if kept.mask is None else broker_column[kept.mask]) if b >= 0}
    gauges: dict[str, pd.DataFrame] = {}
    if timeseries is not None and len(timeseries) and {"time_ms", "metric", "entity", "value"} <= set(timeseries):
        # Rows picked by one mask per gauge, not from a copy of the table after the warm-up.
        after = _floats(timeseries, "time_ms") >= warmup_ms
        metric_column = timeseries["metric"].astype(str).to_numpy()
        for name, _ in BROKER_GAUGES:
            rows = timeseries[after & (metric_column == name)]
            gauges[name] = rows
            brokers |= {b for e in set(rows["entity"].astype(str)) if (b := _broker_id(e)) is not None}
    brokers |= {b for e in (cores or {}) if (b := _broker_id(e)) is not None}
    api_column = requests.strings("api")
    out: dict[str, Any] = {}
    for broker in sorted(brokers):
        mine = broker_column == broker
        entry: dict[str, Any] = {
            **_client_requests(kept.where(mine)),  # requests, errors by Kafka's name, client timeouts
            "apis": {},
        }
        for api in APIS:
            api_rows = kept.where(mine & _is(api_column, api))
            if len(api_rows):
                entry["apis"][api] = {
                    "count": int(len(api_rows)),
                    "errors": int((api_rows.column("error") != 0).sum()),
                    "client_timeouts": int(api_rows.column("client_timeout", dtype=bool).sum()),
                    "TotalTimeMs": percentiles(api_rows.floats("TotalTimeMs")),
                }
        entity = f"{BROKER_PREFIX}{broker}"
        for name, extreme in BROKER_GAUGES:
            sampled = gauges.get(name)
            values = (sampled.loc[sampled["entity"].astype(str) == entity, "value"].to_numpy(dtype=np.float64)
                      if sampled is not None else np.empty(0))
            if values.size:
                entry[name] = {"mean": float(values.mean()),
                               extreme: float(values.max() if extreme == "max" else values.min())}
        if cores and entity in cores:
            entry["cores"] = dict(cores[entity])
        out[entity] = entry
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def summarize(
    requests: pd.DataFrame | TableFile,
    records: pd.DataFrame,
    *,
    seed: int | None,
    simulated_duration_ms: float,
    warmup_ms: float = 0.0,
    counters: Mapping[str, Any] | None = None,
    producers: Sequence[str] | None = None,
    consumers: Sequence[str] | None = None,
    timeseries: pd.DataFrame | None = None,
    phases: Sequence[Phase] = (),
    cores: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    """A JSON-able summary of a run: a function of the run's rows alone, so a replay writes the same bytes
    (wall-clock facts go to the result's run-info, never here). `counters` (ISR shrinks/expands, expirations per purgatory, dropped
    messages, ...) are copied as given. `producers` and `consumers` name the clients of `per_client`, in
    the order it lists them (the scenario's); by default, every client the tables name. `timeseries` (the
    sampled gauges) adds each broker's queue and idle figures to `per_broker`. `phases` (a run with faults,
    kafkasim.record.phases) adds each phase's latency, outcomes and errors under `phases`. `cores` (per
    ``broker-<id>``: cores its threads used after the warm-up, by kind) goes to each broker's `per_broker`."""
    columns = _Columns(requests)
    kept = _Rows(columns, columns.floats("client_send_ms") >= warmup_ms if warmup_ms > 0 else None)
    batches = records[_floats(records, "send_ms") >= warmup_ms] if warmup_ms > 0 else records
    summary: dict[str, Any] = {
        "seed": seed,
        "simulated_duration_ms": simulated_duration_ms,
        "warmup_ms": warmup_ms,
        "simulated_requests": int(len(requests)),
        "requests_after_warmup": len(kept),
        "apis": {},
        "produce_latency": _produce_latency(batches),
        "e2e_latency": percentiles(_floats(batches, "e2e_latency_ms")),
        "per_client": _per_client(columns, kept, records, batches, producers, consumers),
        "per_broker": _per_broker(kept, timeseries, warmup_ms, cores),
        "counters": dict(counters or {}),
    }
    api_column = columns.strings("api")
    if phases:
        # Every batch meant for a phase, sent or not (one still in the accumulator at the end is pending there).
        intended = _floats(records, "first_intended_ms")
        produce_requests = kept.where(_is(api_column, "Produce"))
        sent = columns.floats("client_send_ms")
        summary["phases"] = [_phase_summary(phase, records, intended, produce_requests, sent) for phase in phases]
    lost = _lost_after_ack(records)
    if lost is not None:
        summary["lost_after_ack"] = lost
    for api in APIS:
        rows = kept.where(_is(api_column, api))
        if len(rows):
            summary["apis"][api] = _api_summary(rows)
    return _json_value(summary)
