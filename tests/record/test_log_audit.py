"""The end-of-run audit of acknowledged batches against each partition's final log
(kafkasim.record.log_audit): which were lost, why Kafka allows it, and which were written twice."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from kafkasim.record.log_audit import LOSS_REASONS, UNEXPLAINED, FinalLog, audit_records, reason_for
from kafkasim.record.recorder import BatchTrace, Recorder


def _batch(i: int, *, partition: int = 0, acks: int = -1, offset: int | None = None, ack: float | None = None,
           producer: str = "p", created: float | None = None) -> BatchTrace:
    return BatchTrace(i, producer, "t", partition, record_count=2 + i, size_bytes=100, acks=acks,
                      first_intended_ms=10.0 * i, created_ms=10.0 * i + 1 if created is None else created,
                      send_ms=10.0 * i + 2, ack_ms=10.0 * i + 5 if ack is None else ack,
                      offset=i if offset is None else offset, request_id=i)


def _records(*batches: BatchTrace) -> pd.DataFrame:
    rec = Recorder([])
    for b in batches:
        rec.finish_batch(b)
    return rec.tables().records


def _log(*batch_ids: int, leader: int = 1, start: int = 0, min_isr: int = 2,
         unclean: tuple[float, ...] = ()) -> FinalLog:
    return FinalLog(leader, start, Counter(batch_ids), min_isr, unclean)


def _lost(df: pd.DataFrame) -> dict[int, str]:
    rows = df[df["lost_after_ack"]]
    return dict(zip(rows["batch_id"].tolist(), rows["lost_reason"].astype(str).tolist(), strict=True))


def test_the_records_table_has_a_categorical_lost_reason_empty_before_the_audit() -> None:
    df = _records(_batch(0))
    assert list(df["lost_reason"].cat.categories) == list(LOSS_REASONS)
    assert df["lost_reason"].isna().all() and not df["lost_after_ack"].any()


def test_acknowledged_batches_missing_from_the_final_log_are_lost_with_kafkas_reason() -> None:
    df = _records(_batch(0, acks=1), _batch(1, acks=1), _batch(2, acks=-1), _batch(3, acks=-1))
    # The final leader has batch 0 and 2 only.
    out = audit_records(df, {("t", 0): _log(0, 2, min_isr=2)})
    assert _lost(out) == {1: "acks=1", 3: UNEXPLAINED}
    # The application was told they were written: their outcome says they are lost.
    assert out["outcome"].astype(str).tolist() == ["acknowledged", "lost", "acknowledged", "lost"]
    # Same log with min.insync.replicas 1: acks=all's loss is allowed.
    out = audit_records(df, {("t", 0): _log(0, 2, min_isr=1)})
    assert _lost(out) == {1: "acks=1", 3: "min.insync.replicas=1"}
    assert df["lost_after_ack"].sum() == 0  # the input table is left alone


def test_an_unclean_election_after_the_batch_was_created_explains_any_loss() -> None:
    df = _records(_batch(0, acks=-1), _batch(1, acks=-1), _batch(2, acks=1))
    # Batches 0 (created at 1 ms) and 1 (11 ms) precede the unclean election at 15 ms; 2 (21 ms) follows it.
    out = audit_records(df, {("t", 0): _log(unclean=(15.0,), min_isr=2)})
    assert _lost(out) == {0: "unclean election", 1: "unclean election", 2: "acks=1"}


def test_batches_not_acknowledged_or_not_written_or_below_the_log_start_are_not_lost() -> None:
    failed = _batch(1, offset=-1, ack=math.nan)
    failed.error = 7
    fire_and_forget = _batch(2, acks=0)
    pending = _batch(3, offset=-1, ack=math.nan)
    deleted = _batch(4, offset=4)  # retention removed offsets below 5
    other_partition = _batch(5, partition=1)  # a partition without a final log is left as it is
    df = _records(_batch(0), failed, fire_and_forget, pending, deleted, other_partition)
    out = audit_records(df, {("t", 0): _log(0, start=5)})
    assert not out["lost_after_ack"].any()
    assert out["lost_reason"].isna().all()
    assert out["outcome"].astype(str).tolist() == ["acknowledged", "failed", "sent", "pending", "acknowledged",
                                                    "acknowledged"]


def test_partitions_are_audited_against_their_own_final_log() -> None:
    df = _records(_batch(0, partition=0, acks=1), _batch(1, partition=1, acks=1))
    # Batch 0 is in partition 1's log, not its own: lost; batch 1 is in its own.
    out = audit_records(df, {("t", 0): _log(1), ("t", 1): _log(1)})
    assert _lost(out) == {0: "acks=1"}


def test_a_batch_twice_in_the_final_log_is_duplicated() -> None:
    df = _records(_batch(0, acks=1), _batch(1, acks=1))
    out = audit_records(df, {("t", 0): _log(0, 1, 1)})
    assert out["outcome"].astype(str).tolist() == ["acknowledged", "duplicated"]
    assert not out["lost_after_ack"].any()


def test_reason_for_names_kafkas_settings() -> None:
    assert reason_for(1, 2, unclean_after=True) == "unclean election"
    assert reason_for(-1, 2, unclean_after=True) == "unclean election"
    assert reason_for(1, 2, unclean_after=False) == "acks=1"
    assert reason_for(-1, 1, unclean_after=False) == "min.insync.replicas=1"
    assert reason_for(-1, 2, unclean_after=False) == UNEXPLAINED


def test_the_audit_leaves_its_input_alone_and_shares_the_columns_it_does_not_change() -> None:
    """The engine holds the records table while it audits it: the audited table must not be a second copy of
    every column (a long run's peak memory), nor write into the table it was given."""
    df = _records(_batch(0, acks=1), _batch(1, acks=1), _batch(2, acks=-1), _batch(3, acks=-1))
    before = df.copy(deep=True)
    # Batch 1 lost, batch 2 written twice.
    out = audit_records(df, {("t", 0): FinalLog(1, 0, Counter({0: 1, 2: 2, 3: 1}), 2)})
    assert _lost(out) == {1: "acks=1"}
    assert out["outcome"].astype(str).tolist() == ["acknowledged", "lost", "duplicated", "acknowledged"]
    pd.testing.assert_frame_equal(df, before, check_exact=True)
    changed = {"lost_after_ack", "lost_reason", "outcome"}
    for column in df.columns:
        if column not in changed and df[column].dtype.kind in "biuf":
            assert np.shares_memory(out[column].to_numpy(), df[column].to_numpy()), column
