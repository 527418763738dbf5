"""A real run's tables in the simulated run's format: the records table from the load driver's per-record rows,
grouped into the batches the brokers appended, and audited against the final logs as the simulated audit does.

Batches: Kafka's producer tells its application each record's offset, not its batch. The brokers' request
logs do: every PRODUCE partition the broker answered without error gives the batch's base offset. A record
acknowledged at offset o at time t belongs to the batch of its producer and partition answered last before t
(within ``ANSWER_SLACK_MS``) whose base offset is <= o: after an unclean election a new leader hands out the
offsets of the records the old one acknowledged again, so an offset alone does not name a batch. Records without one (acks=0, failed, never acknowledged before the run ended) are grouped the way their
callbacks came: consecutive records of one partition whose callbacks ran within ``SAME_CALLBACK_MS`` of each
other (the producer completes a batch's records in one loop), or consecutive pending records of one
partition.

Attempts: the producer logs each retry (``Sender``: "Got error produce response with correlation id C on
topic-partition T-P, retrying"); the load driver keeps those lines. Each retry is attributed to a batch of
that producer and partition whose final request (correlation id) came after it, the one with the fewest
retries so far (ties: the earliest): with requests in flight, the batches that failed together are sent
again in the same order. ``first_request_id`` is the final request's when the batch had no retry, else -1.

The audit (``kafkasim.record.log_audit.audit_records``) is the simulated run's: each partition's final log,
read from offset 0 after the run by the driver, by record identity (producer, sequence number); a batch is
in the log when its records are, twice when they are there twice.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kafkasim.broker.errors import Errors
from kafkasim.clients.accumulator import RECORD_BATCH_OVERHEAD_BYTES
from kafkasim.real.request_log import ProducedBatch
from kafkasim.record.log_audit import FinalLog, audit_records
from kafkasim.record.recorder import BatchTrace, records_frame

SAME_CALLBACK_MS = 0.05
# The broker's request log stamps a response when it was sent, on the clock the driver's acknowledgements use
# (to the microsecond with kafkasim's log pattern, in whole ms with Kafka's usual one, whose rounding lets an
# acknowledgement read up to a millisecond before its answer).
ANSWER_SLACK_MS = 2.0
NAN = math.nan

_EXCEPTION_ERRORS = {
    "TimeoutException": Errors.REQUEST_TIMED_OUT,
    "NotEnoughReplicasException": Errors.NOT_ENOUGH_REPLICAS,
    "NotEnoughReplicasAfterAppendException": Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    "NotLeaderOrFollowerException": Errors.NOT_LEADER_OR_FOLLOWER,
    "RecordTooLargeException": Errors.RECORD_LIST_TOO_LARGE,
    "NetworkException": Errors.NETWORK_EXCEPTION,
}
_RETRY = re.compile(r"\[Producer clientId=(?P<client>[^\]]+)\] Got error produce response with correlation id "
                    r"(?P<cid>\d+) on topic-partition (?P<tp>\S+), retrying")


def error_code(exception: str) -> int:
    """The Kafka error code of an exception the producer's callback got (UNKNOWN_SERVER_ERROR if unmapped)."""
    if not exception:
        return 0
    code = _EXCEPTION_ERRORS.get(exception)
    return int(code) if code is not None else int(Errors.UNKNOWN_SERVER_ERROR)


@dataclass
class ProducerRows:
    """One producer's records as the driver wrote them (arrays indexed by sequence number)."""

    index: int
    name: str
    topic: str
    acks: int
    intended: np.ndarray
    send: np.ndarray
    ack: np.ndarray
    partition: np.ndarray
    offset: np.ndarray
    error: list[str]
    size: np.ndarray


def read_producer(path: Path, index: int, name: str, topic: str, acks: int, sizes: np.ndarray) -> ProducerRows:
    frame = pd.read_csv(path, sep="\t", header=None, keep_default_na=False,
                        names=["seq", "intended", "send", "ack", "partition", "offset", "error"],
                        dtype={"error": str}) if path.stat().st_size else pd.DataFrame(
        columns=["seq", "intended", "send", "ack", "partition", "offset", "error"])

    def floats(column: str) -> np.ndarray:
        return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)

    return ProducerRows(index, name, topic, acks, floats("intended"), floats("send"), floats("ack"),
                        frame["partition"].to_numpy(dtype=np.int64), frame["offset"].to_numpy(dtype=np.int64),
                        [str(e) for e in frame["error"]], sizes[: len(frame)])


def read_consumer(path: Path) -> pd.DataFrame:
    names = ["producer", "seq", "partition", "offset", "seen"]
    if not path.is_file() or path.stat().st_size == 0:
        return pd.DataFrame({n: pd.Series(dtype=float if n == "seen" else np.int64) for n in names})
    return pd.read_csv(path, sep="\t", header=None, names=names)


@dataclass
class AuditLog:
    """Every partition's final log as the driver read it: (producer, seq) -> offsets, its log start offset,
    and the partitions it could not read to the end."""

    offsets: dict[tuple[str, int], dict[tuple[int, int], list[int]]] = field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    incomplete: set[tuple[str, int]] = field(default_factory=set)


def read_audit(path: Path) -> AuditLog:
    audit = AuditLog()
    if not path.is_file():
        return audit
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if parts[0] == "#end":
            tp = (parts[1], int(parts[2]))
            audit.log_start[tp] = int(parts[3])
            audit.offsets.setdefault(tp, {})
        elif parts[0] == "#incomplete":
            audit.incomplete.add((parts[1], int(parts[2])))
        else:
            tp = (parts[0], int(parts[1]))
            audit.offsets.setdefault(tp, {}).setdefault((int(parts[3]), int(parts[4])), []).append(int(parts[2]))
    return audit


def read_retries(path: Path) -> dict[tuple[str, str, int], list[int]]:
    """(client, topic, partition) -> the correlation ids of its produce requests that were retried."""
    out: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    if not path.is_file():
        return out
    for line in path.read_text(errors="replace").splitlines():
        match = _RETRY.search(line)
        if match:
            topic, _, partition = match.group("tp").rpartition("-")
            out[(match.group("client"), topic, int(partition))].append(int(match.group("cid")))
    return out


@dataclass
class _Batch:
    producer: ProducerRows
    seqs: list[int]
    partition: int
    offset: int
    log_batch: ProducedBatch | None
    attempts: int = 1


def _answered_batch(candidates: Sequence[ProducedBatch], answered: np.ndarray, offset: int,
                    ack_ms: float) -> ProducedBatch | None:
    """The batch (``candidates`` sorted by when the broker answered, ``answered`` those times) that holds the
    record acknowledged at ``offset`` at ``ack_ms``: the last answered before the acknowledgement whose base
    offset is <= ``offset``. One leader answers a partition's batches in offset order, so an older batch with a
    smaller base offset was answered earlier; a batch answered after the acknowledgement is not its batch."""
    i = int(np.searchsorted(answered, ack_ms + ANSWER_SLACK_MS, side="right")) - 1
    while i >= 0:
        if candidates[i].base_offset <= offset:
            return candidates[i]
        i -= 1
    return None


def _group(rows: ProducerRows, duration_ms: float, log_batches: Mapping[tuple[str, int], list[ProducedBatch]]) -> list[_Batch]:
    acked_in_time = np.isfinite(rows.ack) & (rows.ack <= duration_ms)
    batches: list[_Batch] = []
    by_log_batch: dict[tuple[int, int], _Batch] = {}  # (partition, request id) or (partition, -1 - offset)
    by_answer = {tp: sorted(found, key=lambda b: (b.end_ms, b.base_offset)) for tp, found in log_batches.items()}
    answered = {tp: np.array([b.end_ms for b in found], dtype=float) for tp, found in by_answer.items()}
    loose: list[int] = []
    for seq in range(len(rows.intended)):
        ok = acked_in_time[seq] and not rows.error[seq] and rows.offset[seq] >= 0
        if not ok:
            loose.append(seq)
            continue
        partition, offset = int(rows.partition[seq]), int(rows.offset[seq])
        tp = (rows.topic, partition)
        log_batch = (_answered_batch(by_answer[tp], answered[tp], offset, float(rows.ack[seq]))
                     if tp in by_answer else None)
        key = (partition, log_batch.request_id) if log_batch is not None else (partition, -1 - offset)
        batch = by_log_batch.get(key)
        if batch is None:
            base = log_batch.base_offset if log_batch is not None else offset
            batch = by_log_batch[key] = _Batch(rows, [], partition, base, log_batch)
            batches.append(batch)
        batch.seqs.append(seq)
    current: _Batch | None = None
    for seq in loose:
        pending = not (np.isfinite(rows.ack[seq]) and rows.ack[seq] <= duration_ms)
        partition = int(rows.partition[seq])
        same = (current is not None and current.partition == partition and current.seqs[-1] == seq - 1
                and (_pending(rows, current.seqs[0], duration_ms) == pending)
                and (pending or (rows.error[seq] == rows.error[current.seqs[0]]
                                 and abs(rows.ack[seq] - rows.ack[current.seqs[0]]) <= SAME_CALLBACK_MS)))
        if not same:
            current = _Batch(rows, [], partition, -1, None)
            batches.append(current)
        assert current is not None
        current.seqs.append(seq)
    return batches


def _pending(rows: ProducerRows, seq: int, duration_ms: float) -> bool:
    return not (np.isfinite(rows.ack[seq]) and rows.ack[seq] <= duration_ms)


def _attribute_retries(batches: list[_Batch], retries: Mapping[tuple[str, str, int], list[int]]) -> None:
    by_key: dict[tuple[str, str, int], list[_Batch]] = defaultdict(list)
    for b in batches:
        if b.log_batch is not None:
            by_key[(b.producer.name, b.producer.topic, b.partition)].append(b)
    for key, cids in retries.items():
        candidates = sorted(by_key.get(key, []), key=lambda b: b.offset)
        for cid in sorted(cids):
            later = [b for b in candidates if b.log_batch is not None and b.log_batch.correlation_id > cid]
            if later:
                min(later, key=lambda b: b.attempts).attempts += 1


def records_table(
    producers: Sequence[ProducerRows],
    consumers: Mapping[str, pd.DataFrame],
    log_batches: Sequence[ProducedBatch],
    retries: Mapping[tuple[str, str, int], list[int]],
    duration_ms: float,
) -> tuple[pd.DataFrame, dict[tuple[int, int], int]]:
    """The records table (one row per batch, ``kafkasim.record.recorder.records_frame``) and the batch id of
    every (producer index, seq)."""
    by_client: dict[tuple[str, str, int], list[ProducedBatch]] = defaultdict(list)
    for logged in log_batches:
        if logged.error == 0 and logged.base_offset >= 0:
            by_client[(logged.client, logged.topic, logged.partition)].append(logged)
    traces: list[BatchTrace] = []
    batch_of: dict[tuple[int, int], int] = {}
    grouped: list[_Batch] = []
    for rows in producers:
        mine = {(topic, partition): sorted(found, key=lambda b: b.base_offset)
                for (client, topic, partition), found in by_client.items() if client == rows.name}
        grouped.extend(_group(rows, duration_ms, mine))
    _attribute_retries(grouped, retries)
    grouped.sort(key=lambda b: (b.producer.index, b.seqs[0]))
    seen: dict[str, dict[tuple[int, int], float]] = {}
    read_offsets: dict[tuple[int, int], set[int]] = defaultdict(set)
    for name, frame in consumers.items():
        first: dict[tuple[int, int], float] = {}
        for producer, seq, offset, t in zip(frame["producer"].to_numpy(), frame["seq"].to_numpy(),
                                            frame["offset"].to_numpy(), frame["seen"].to_numpy(), strict=True):
            key = (int(producer), int(seq))
            if key not in first:
                first[key] = float(t)
            read_offsets[key].add(int(offset))
        seen[name] = first
    for batch_id, b in enumerate(grouped):
        rows = b.producer
        seqs = b.seqs
        pending = _pending(rows, seqs[0], duration_ms)
        ack = NAN if pending else float(max(rows.ack[s] for s in seqs))
        error = 0 if pending else error_code(rows.error[seqs[0]])
        send = b.log_batch.start_ms if b.log_batch is not None else float(max(rows.send[s] for s in seqs))
        partition = b.partition if b.partition >= 0 else -1
        offset = b.offset
        if offset < 0 and not pending and not error:  # acks=0: where a consumer or the audit read it
            found = [min(read_offsets[(rows.index, s)]) for s in seqs if read_offsets.get((rows.index, s))]
            offset = min(found) if found else -1
        request_id = b.log_batch.request_id if b.log_batch is not None else -1
        # Sizes as the simulated run counts them: the records' bytes plus the batch header (kafkasim's
        # RECORD_BATCH_OVERHEAD_BYTES, Kafka's 61-byte record batch header).
        size = int(sum(rows.size[s] for s in seqs)) + RECORD_BATCH_OVERHEAD_BYTES
        trace = BatchTrace(batch_id, rows.name, rows.topic, partition, len(seqs), size,
                           rows.acks, float(min(rows.intended[s] for s in seqs)),
                           float(min(rows.send[s] for s in seqs)), send, ack, offset, error, request_id,
                           b.attempts, request_id if b.attempts == 1 else -1)
        for consumer, first in seen.items():
            times = [first[(rows.index, s)] for s in seqs if (rows.index, s) in first]
            if times:
                trace.consumed[consumer] = min(times)
        offsets = {o for s in seqs for o in read_offsets.get((rows.index, s), ())}
        if len(offsets) > len(seqs):
            trace.duplicated = True
        for s in seqs:
            batch_of[(rows.index, s)] = batch_id
        traces.append(trace)
    return records_frame(traces, list(consumers)), batch_of


def final_logs(
    audit: AuditLog,
    batch_of: Mapping[tuple[int, int], int],
    leaders: Mapping[tuple[str, int], int],
    effective_min_isr: Mapping[str, int],
    unclean_ms: Mapping[tuple[str, int], Sequence[float]],
    elr_ms: Mapping[tuple[str, int], Sequence[float]] | None = None,
) -> dict[tuple[str, int], FinalLog]:
    """Every fully read partition's final log, by batch identity, for ``log_audit.audit_records``."""
    out: dict[tuple[str, int], FinalLog] = {}
    for tp, records in audit.offsets.items():
        if tp in audit.incomplete:
            continue
        copies: Counter[int] = Counter()
        for key, offsets in records.items():
            batch = batch_of.get(key)
            if batch is not None:
                copies[batch] = max(copies[batch], len(offsets))
        out[tp] = FinalLog(leaders.get(tp, -1), audit.log_start.get(tp, 0), dict(copies),
                           effective_min_isr.get(tp[0], 1), tuple(unclean_ms.get(tp, ())),
                           tuple((elr_ms or {}).get(tp, ())))
    return out


def audited(records: pd.DataFrame, logs: Mapping[tuple[str, int], FinalLog]) -> pd.DataFrame:
    return audit_records(records, logs)
