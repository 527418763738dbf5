"""What the final logs say about the produced batches: acknowledged batches that were lost, and batches
written twice.

At the end of a run every partition has a final leader (the broker the controller elected last, or the
last ISR member of an offline partition, which leads again once it is back). A batch acknowledged to its
producer (acks=1 or all, offset known) that is not in that leader's log -- by batch identity -- was lost
after its acknowledgement: its row gets ``lost_after_ack`` and a ``lost_reason``, the way Kafka allows it
(Kafka's documentation of ``acks`` and ``unclean.leader.election.enable``):

* ``unclean election`` -- an unclean election of the partition came after the batch was created: the new
  leader, chosen from outside the ISR, lacked it and the replicas that had it truncated their logs to the
  new leader's (KIP-101/595);
* ``acks=1, leader from the ELR`` -- the leader acknowledged the batch alone while the ISR was below
  min.insync.replicas (the high watermark frozen below it), and the controller then elected an eligible
  leader replica (KIP-966), which holds everything up to the high watermark but not the batch;
* ``acks=1`` -- the leader acknowledged the batch alone and a clean election chose a follower that had
  not copied it yet;
* ``min.insync.replicas=1`` -- acks=all, but an ISR of the leader alone was enough to acknowledge it;
* ``unexplained`` -- acks=all with min.insync.replicas >= 2 and only clean elections since: Kafka promises
  the batch survives, so this is a simulator defect (a run with invariant checks stops on it).

A batch below the final leader's log start offset is not counted: retention may have deleted it. A batch
found at two offsets of the final log was written twice (a retry of a non-idempotent producer whose first
attempt was appended but whose response was lost): its row's outcome is ``duplicated`` even when no consumer
read both copies.

Example: an acks=1 producer wrote offsets 0-99 on broker 0; followers copied 0-59 before the ISR shrank to
broker 0, which then stopped; broker 1 was elected uncleanly with offsets 0-59. Batches at 60-99 are not in
broker 1's log: 40 rows lost, reason ``unclean election``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

ELR_ACKS_1 = "acks=1, leader from the ELR"
LOSS_REASONS = ("acks=1", "min.insync.replicas=1", "unclean election", "unexplained", ELR_ACKS_1)
"""Why an acknowledged batch was lost (the records table's ``lost_reason``); see the module docstring."""
UNEXPLAINED = "unexplained"


@dataclass(frozen=True)
class FinalLog:
    """One partition at the end of a run: its final leader's log, by batch identity."""

    leader: int
    """The broker whose log this is."""
    log_start_offset: int
    copies: Mapping[int, int]
    """batch id -> how many times the batch is in the log (2 or more: written twice)."""
    effective_min_isr: int = 1
    """``min(min.insync.replicas, replication factor)`` (Kafka's ``Partition.effectiveMinIsr``)."""
    unclean_elections_ms: tuple[float, ...] = field(default=())
    """When the controller elected an unclean leader for the partition."""
    elr_elections_ms: tuple[float, ...] = field(default=())
    """When the controller elected a leader from the partition's eligible leader replicas."""


def reason_for(acks: int, effective_min_isr: int, unclean_after: bool, elr_after: bool = False) -> str:
    """Why Kafka allows an acknowledged batch of this kind to be lost (``unexplained``: it does not)."""
    if unclean_after:
        return "unclean election"
    if acks == 1:
        return ELR_ACKS_1 if elr_after else "acks=1"
    if effective_min_isr < 2:
        return "min.insync.replicas=1"
    return UNEXPLAINED


def audit_records(records: pd.DataFrame, logs: Mapping[tuple[str, int], FinalLog]) -> pd.DataFrame:
    """The records table with ``lost_after_ack``, ``lost_reason`` and the ``duplicated`` outcomes the final
    logs show (``logs``: per (topic, partition); a partition without one is left as it is)."""
    n = len(records)
    if n == 0 or not logs:
        return records
    lost = records["lost_after_ack"].to_numpy(dtype=bool).copy()
    reasons = np.array([None if r != r else r for r in records["lost_reason"].astype(object)], dtype=object)
    # Compared and grouped as they are (a categorical, str objects): astype(str) made a string a row, most of
    # what auditing a million requests' batches took in memory.
    duplicated = np.asarray(records["outcome"] == "duplicated", dtype=bool)
    error = records["error"].to_numpy()
    acks = records["acks"].to_numpy(dtype=np.float64, na_value=np.nan)
    ack_ms = records["ack_ms"].to_numpy(dtype=np.float64)
    offset = records["offset"].to_numpy()
    batch_id = records["batch_id"].to_numpy()
    created = records["created_ms"].to_numpy(dtype=np.float64)
    written = (error == 0) & (offset >= 0)
    acked = written & np.isfinite(ack_ms) & (acks != 0)
    groups = pd.DataFrame({"topic": records["topic"].to_numpy(dtype=object),
                           "partition": records["partition"].to_numpy()})[written].groupby(
                               ["topic", "partition"], sort=True).indices
    positions = np.flatnonzero(written)
    for (topic, partition), where in groups.items():
        final = logs.get((str(topic), int(partition)))
        if final is None:
            continue
        rows = positions[where]
        ids = batch_id[rows]
        known = np.fromiter(final.copies.keys(), dtype=np.int64, count=len(final.copies))
        twice = np.fromiter((k for k, c in final.copies.items() if c > 1), dtype=np.int64)
        duplicated[rows[np.isin(ids, twice)]] = True
        gone = rows[acked[rows] & ~np.isin(ids, known) & (offset[rows] >= final.log_start_offset)]
        if gone.size == 0:
            continue
        last_unclean = max(final.unclean_elections_ms, default=-np.inf)
        last_elr = max(final.elr_elections_ms, default=-np.inf)
        lost[gone] = True
        for row in gone.tolist():
            reasons[row] = reason_for(int(acks[row]), final.effective_min_isr, bool(created[row] <= last_unclean),
                                      bool(created[row] <= last_elr))
    # A shallow copy: the three columns below are new arrays, every other column is shared with `records`
    # (which the engine still holds while it builds the result: a deep copy was a second records table).
    out = records.copy(deep=False)
    out["lost_after_ack"] = lost
    out["lost_reason"] = pd.Categorical(reasons, categories=LOSS_REASONS)
    outcome = records["outcome"].to_numpy(dtype=object)
    outcome[duplicated & (error == 0)] = "duplicated"
    outcome[lost] = "lost"  # acknowledged, then gone from the final log: what the application believed is false
    out["outcome"] = pd.Categorical(outcome, categories=records["outcome"].cat.categories)
    return out
