"""One produce batch across a leader failover, worked out from the run's tables before anything is drawn.

Kafka's producer (``Sender.completeBatch``, ``RecordAccumulator.reenqueue``, ``Metadata``): attempt 1 goes
to the partition's leader and fails (NETWORK_EXCEPTION when the leader's connection is reset or closed,
REQUEST_TIMED_OUT when no answer comes within request.timeout.ms, NOT_LEADER_OR_FOLLOWER when the broker
no longer leads); the error asks for a metadata update, and the batch waits in the accumulator while the
partition's leader is unknown or unchanged -- the refreshes are paced by retry.backoff.ms, doubling up to
retry.backoff.max.ms. Once the controller has elected a new leader and a refresh names it, the batch goes
to it at once (KIP-951: a leader change skips the retry backoff) and is acknowledged there.

Every fact comes from a table: the batch and its first and last sends from the records table
(``first_request_id``, ``request_id``), each send's broker, error and times from the requests table, the
leader from the partition's ``LeaderId`` gauge (its first sample showing the new leader: the change
happened at most one sample_interval earlier) and the producer's metadata refreshes from its
``MetadataAgeMs`` gauge (sample time minus age).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kafkasim.report.frames import metric
from kafkasim.report.skip import SkipFigure

RECORD_COLUMNS = ("batch_id", "producer", "topic", "partition", "offset", "record_count", "first_intended_ms",
                  "ack_ms", "attempts", "request_id", "first_request_id")
REQUEST_COLUMNS = ("request_id", "client", "broker", "error_name", "client_timeout", "client_send_ms", "start_ms",
                   "dequeue_ms", "local_complete_ms", "response_complete_ms", "response_dequeue_ms", "end_ms",
                   "client_receive_ms")
# Two refresh times closer than this are one refresh (sample time minus age, in floating point).
SAME_MS = 1e-3


@dataclass(frozen=True)
class Attempt:
    """One send of the batch: its request's row."""

    number: int
    request_id: int
    broker: int
    error_name: str
    client_timeout: bool
    send_ms: float
    start_ms: float  # NaN: it never reached the broker
    dequeue_ms: float
    local_complete_ms: float
    response_complete_ms: float
    response_dequeue_ms: float
    end_ms: float
    receive_ms: float  # NaN: no response reached the producer

    @property
    def reached_broker(self) -> bool:
        return bool(np.isfinite(self.start_ms))

    @property
    def outcome(self) -> str:
        if self.error_name == "NONE":
            return "acknowledged"
        return f"{self.error_name}{' (request.timeout.ms)' if self.client_timeout else ''}"


@dataclass(frozen=True)
class FailoverStory:
    batch_id: int
    producer: str
    partition: str
    offset: int
    record_count: int
    attempts: int
    intended_ms: float
    ack_ms: float
    first: Attempt
    last: Attempt
    old_leader: int
    new_leader: int
    leader_moved_ms: float  # the first LeaderId sample naming the new leader
    refreshes_ms: tuple[float, ...]  # the producer's metadata refreshes from attempt 1 to the last attempt
    found_leader_ms: float  # the last of them: the metadata the last attempt was routed by

    def sentences(self) -> list[str]:
        """The story in words, one step a sentence, with the times (seconds) and brokers of the tables."""
        first, last = self.first, self.last
        step1 = (f"Attempt 1 at {_s(first.send_ms)} to broker {first.broker} (request #{first.request_id}): "
                 f"{first.outcome}"
                 + ("" if first.reached_broker else ", it never reached the broker") + ".")
        step2 = (f"The leader of {self.partition} had moved from broker {self.old_leader} to broker "
                 f"{self.new_leader} by {_s(self.leader_moved_ms)} (the first LeaderId sample naming it).")
        between = len(self.refreshes_ms)
        if between:
            step3 = (f"The producer refreshed its metadata {between} time{'s' if between != 1 else ''} after "
                     f"attempt 1; the refresh at {_s(self.found_leader_ms)} named broker {self.new_leader}.")
        else:
            step3 = "The producer's metadata refreshes are not in the tables (no MetadataAgeMs gauge)."
        middle = (f" (attempts 2 to {self.attempts - 1} are not in the records table)" if self.attempts > 2 else "")
        step4 = (f"Attempt {self.attempts} at {_s(last.send_ms)} to broker {last.broker} "
                 f"(request #{last.request_id}){middle}; acknowledged at {_s(self.ack_ms)}, offset {self.offset}, "
                 f"{_s(self.ack_ms - self.intended_ms, unit=' s')} after the batch's first record was due.")
        return [step1, step2, step3, step4]

    @property
    def caption(self) -> str:
        return " ".join(self.sentences())


def _s(ms: float, unit: str = " s") -> str:
    return "unknown" if not np.isfinite(ms) else f"{ms / 1000:.3f}{unit}"


def _attempt(number: int, row: pd.Series) -> Attempt:
    def t(column: str) -> float:
        value = row[column]
        return float(value) if pd.notna(value) else float("nan")

    return Attempt(number, int(row["request_id"]), int(row["broker"]), str(row["error_name"]),
                   bool(row["client_timeout"]), t("client_send_ms"), t("start_ms"), t("dequeue_ms"),
                   t("local_complete_ms"), t("response_complete_ms"), t("response_dequeue_ms"), t("end_ms"),
                   t("client_receive_ms"))


def _leader_samples(timeseries: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    if timeseries is None or timeseries.empty or not {"time_ms", "metric", "entity", "value"} <= set(timeseries):
        return {}
    rows = metric(timeseries, "LeaderId")
    return {str(k): g for k, g in rows.groupby("entity", sort=False)}


def _leader_move(samples: pd.DataFrame | None, old: int, new: int, from_ms: float, to_ms: float) -> float | None:
    """When the LeaderId gauge first named `new` after `from_ms` (and no later than `to_ms`), having named
    `old` at or before `from_ms`; None when the gauge does not show that move."""
    if samples is None or samples.empty:
        return None
    times, values = samples["time_ms"].to_numpy(float), samples["value"].to_numpy(float)
    if not (values[times <= from_ms] == old).any():
        return None
    moved = times[(times > from_ms) & (times <= to_ms + SAME_MS) & (values == new)]
    return float(moved.min()) if moved.size else None


def _refreshes(timeseries: pd.DataFrame | None, producer: str, from_ms: float, to_ms: float) -> tuple[float, ...]:
    """The producer's metadata refreshes in (from_ms, to_ms], from its MetadataAgeMs gauge."""
    if timeseries is None or timeseries.empty:
        return ()
    rows = metric(timeseries, "MetadataAgeMs")
    rows = rows[rows["entity"] == producer]
    if rows.empty:
        return ()
    when = np.sort(np.unique(np.round(rows["time_ms"].to_numpy(float) - rows["value"].to_numpy(float), 6)))
    return tuple(float(t) for t in when if from_ms < t <= to_ms + SAME_MS)


def failover_candidates(records: pd.DataFrame | None) -> pd.DataFrame:
    """Acknowledged batches sent more than once (first and last send are different requests)."""
    if records is None or records.empty or not set(RECORD_COLUMNS) <= set(records.columns):
        return pd.DataFrame(columns=list(RECORD_COLUMNS))
    acked = records["ack_ms"].to_numpy(dtype=float, na_value=np.nan)
    keep = ((records["attempts"].to_numpy() >= 2) & np.isfinite(acked) & (records["first_request_id"].to_numpy() >= 0)
            & (records["first_request_id"].to_numpy() != records["request_id"].to_numpy()))
    return records[keep]


def build_failover_story(requests: pd.DataFrame | None, records: pd.DataFrame | None,
                         timeseries: pd.DataFrame | None) -> FailoverStory:
    """The story of the first acknowledged batch (fewest attempts first, then the earliest) whose first send
    went to one broker and last send to another, with the partition's leader moving between them.

    Raises SkipFigure when the run has none (no batch was retried across a leader change), or when its
    tables cannot tell (no `first_request_id`, written by an older kafkasim; no LeaderId gauge)."""
    if records is not None and not records.empty and "first_request_id" not in records.columns:
        raise SkipFigure("the records table has no first_request_id (written by an older kafkasim)")
    candidates = failover_candidates(records)
    if candidates.empty:
        raise SkipFigure("no batch needed more than one attempt")
    if requests is None or requests.empty or not set(REQUEST_COLUMNS) <= set(requests.columns):
        raise SkipFigure("no requests with the client and broker timestamps")
    rows = requests.set_index("request_id", drop=False)
    # Vectorised first (a run may have thousands of retried batches): first and last send to different
    # brokers, the last one answered without error.
    broker = rows["broker"]
    error = rows["error_name"].astype(str)
    first_broker = candidates["first_request_id"].map(broker)
    last_broker = candidates["request_id"].map(broker)
    elsewhere = (first_broker.notna() & last_broker.notna() & (first_broker != last_broker)
                 & (candidates["request_id"].map(error) == "NONE"))
    candidates = candidates[elsewhere.to_numpy(dtype=bool)]
    leaders = _leader_samples(timeseries)
    candidates = candidates.sort_values(["attempts", "first_intended_ms", "batch_id"], kind="stable")
    for _, batch in candidates.iterrows():
        first_id, last_id = int(batch["first_request_id"]), int(batch["request_id"])
        if first_id not in rows.index or last_id not in rows.index:
            continue
        first = _attempt(1, rows.loc[[first_id]].iloc[0])
        last = _attempt(int(batch["attempts"]), rows.loc[[last_id]].iloc[0])
        if first.broker == last.broker or last.error_name != "NONE":
            continue
        partition = f"{batch['topic']}-{int(batch['partition'])}"
        moved = _leader_move(leaders.get(partition), first.broker, last.broker, first.send_ms, last.send_ms)
        if moved is None:
            continue
        refreshes = _refreshes(timeseries, str(batch["producer"]), first.send_ms, last.send_ms)
        return FailoverStory(
            int(batch["batch_id"]), str(batch["producer"]), partition, int(batch["offset"]),
            int(batch["record_count"]), int(batch["attempts"]), float(batch["first_intended_ms"]),
            float(batch["ack_ms"]), first, last, first.broker, last.broker, moved, refreshes,
            refreshes[-1] if refreshes else float("nan"))
    raise SkipFigure("no batch was retried across a leader change")
