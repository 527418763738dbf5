"""Every leadership change of a run, phase by phase: why the controller moved the partition and how long its
producers waited (summary.json ``failovers``).

Read off the controller's metadata log (every ``PartitionChangeRecord`` that sets a leader, in the batch of the
controller event that made it) and the records table:

* ``cause``: what made the controller move the leader. The old leader fenced in the same event
  (``ReplicationControlManager.handleBrokerFenced``: its session expired, or it was cut from the controller),
  named after the scenario's fault on it when there is one (``crash broker-0: fenced``); its controlled
  shutdown (``handleBrokerInControlledShutdown``); an unclean election (the new leader outside the ISR,
  ``leader_recovery_state`` RECOVERING); an election from the eligible leader replicas (``from the ELR``,
  KIP-966: the ISR was empty and the new leader was in the ELR); a broker unfenced while the partition had no
  leader; the preferred
  replica taking the leadership back (``maybeBalancePartitionLeaders``); else "election".
* ``fault_ms``: when the scenario's fault on the old leader began (None without one); ``fenced_ms``: the
  controller's fence (or the shutdown request it acted on) of the old leader; ``elected_ms``: when the
  change was committed to the metadata log (one event with the fence); ``first_ack_ms``: the first
  acknowledgement, after the election, of a batch of the partition (None if no producer wrote to it).
* ``unavailable_ms``: from the fault (or, without a fault, from the election) to that first acknowledgement.
* ``bounded_by``: the settings that decide each phase: ``broker.session.timeout.ms`` (and the heartbeat
  interval) until a crashed or paused broker is fenced; the producers' ``retry.backoff.ms`` /
  ``retry.backoff.max.ms`` and ``metadata.max.age.ms`` until they learn the new leader; ``request.timeout.ms``
  for a request the old leader never answered.

* ``last_heartbeat_ms``: for an old leader fenced for its session, the last heartbeat the controller had
  received from it (the fence comes broker.session.timeout.ms later, at the next check).
* ``applied_ms``: when the new leader applied the change (its ``ReplicaManager.applyDelta`` ran
  ``Partition.makeLeader``); the first acknowledgement counted is one after it (the old leader may acknowledge
  until it applied the change itself).

* ``learned_ms``: per client, when its metadata first named the new leader (a producer's or consumer's
  metadata refresh, Kafka's ``Metadata.update``); a client that never asked about the partition is not
  listed. A real run's rows have no ``learned_ms``: its clients' metadata is not logged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from kafkasim.broker.metadata import NO_LEADER
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.metadata_log import MetadataBatch, election_kind, partition_changes
from kafkasim.controller.records import (
    FENCE,
    NO_LEADER_CHANGE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
)
from kafkasim.record.phases import broker_of_target

BOUNDED_BY = {
    "fenced": ["broker.session.timeout.ms", "broker.heartbeat.interval.ms", "retry.backoff.max.ms",
               "metadata.max.age.ms", "request.timeout.ms"],
    "shutdown": ["controlled.shutdown (the controller moves leaders first)", "retry.backoff.max.ms"],
    "unclean": ["unclean.leader.election.enable", "broker.session.timeout.ms", "retry.backoff.max.ms"],
    "from the ELR": ["broker.session.timeout.ms", "min.insync.replicas", "eligible.leader.replicas.version",
                     "retry.backoff.max.ms"],
    "unfenced": ["broker.session.timeout.ms", "retry.backoff.max.ms"],
    "preferred": ["leader.imbalance.check.interval.seconds", "retry.backoff.max.ms"],
    "election": ["retry.backoff.max.ms"],
}


def fences(batches: Iterable[MetadataBatch]) -> list[tuple[float, int]]:
    """When the controller fenced which broker: the metadata log's BrokerRegistrationChangeRecords
    (ReplicationControlManager.handleBrokerFenced commits the new leaders in the same batch)."""
    return [(float(batch.append_ms), record.broker_id) for batch in batches for record in batch.records
            if isinstance(record, BrokerRegistrationChangeRecord) and record.fenced == FENCE]


def unfences(batches: Iterable[MetadataBatch]) -> list[tuple[float, int]]:
    """When the controller unfenced which broker (a registered broker that caught up:
    ``BrokerHeartbeatManager``, ``ReplicationControlManager.handleBrokerUnfenced``)."""
    return [(float(batch.append_ms), record.broker_id) for batch in batches for record in batch.records
            if isinstance(record, BrokerRegistrationChangeRecord) and record.fenced == UNFENCE]


def failovers(batches: Sequence[MetadataBatch], faults: Iterable[Any], records: pd.DataFrame,
              applied: Mapping[tuple[TopicPartition, int], Sequence[float]] | None = None,
              heartbeats: Mapping[int, Sequence[float]] | None = None,
              learned: Mapping[str, Sequence[tuple[float, TopicPartition, int]]] | None = None) -> list[dict[str, Any]]:
    """The run's leadership changes (see the module's docstring), in the order the controller made them.
    ``applied``: per (partition, broker), when that broker applied a delta naming it the leader (the
    controller link's ``leaderships_applied``): the row's ``applied_ms`` is the new leader's first after the
    election. ``heartbeats``: per broker, when the controller received its heartbeats: a fenced old leader's
    row has ``last_heartbeat_ms``, the last before its fence. ``learned``: per client, (when, partition, new
    leader) each time its metadata named another leader: the row's ``learned_ms`` says when each client that
    learned this change did."""
    faults = list(faults)
    fenced: dict[int, float] = {}
    shutdown: dict[int, float] = {}
    out: list[dict[str, Any]] = []
    acks = acks_by_partition(records)
    for batch, changes in partition_changes(batches):
        event_fenced = {r.broker_id for r in batch.records
                        if isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == FENCE}
        event_unfenced = {r.broker_id for r in batch.records
                          if isinstance(r, BrokerRegistrationChangeRecord) and r.fenced == UNFENCE}
        for r in batch.records:
            if isinstance(r, BrokerRegistrationChangeRecord):
                if r.fenced == FENCE:
                    fenced[r.broker_id] = batch.append_ms
                if r.in_controlled_shutdown:
                    shutdown[r.broker_id] = batch.append_ms
        for r, before in changes:
            tp, old = r.topic_partition, before.leader
            if r.leader == NO_LEADER_CHANGE or r.leader == old:
                continue
            replicas = before.replicas if r.replicas is None else r.replicas
            kind = _kind(r, old, event_fenced, event_unfenced, shutdown, replicas, election_kind(r, before))
            fenced_ms = fenced.get(old) if kind in ("fenced", "unclean", "from the ELR") and old != NO_LEADER else (
                shutdown.get(old) if kind == "shutdown" else None)
            taken = (applied or {}).get((tp, r.leader), ())
            applied_ms = next((t for t in taken if t >= batch.append_ms), None)
            row = failover_row(tp.topic, tp.partition, old, r.leader, kind, faults, fenced_ms,
                               float(batch.append_ms), acks, applied_ms=applied_ms,
                               heartbeats=(heartbeats or {}).get(old))
            if learned:
                knew = {client: min((t for t, p, leader in changes if p == tp and leader == r.leader
                                     and t >= batch.append_ms), default=None) for client, changes in learned.items()}
                row["learned_ms"] = {client: t for client, t in sorted(knew.items()) if t is not None}
            out.append(row)
    return out


def failover_row(topic: str, partition: int, old: int, new: int, kind: str, faults: Sequence[Any],
                 fenced_ms: float | None, elected_ms: float, acks: dict[tuple[str, int], np.ndarray],
                 applied_ms: float | None = None, heartbeats: Sequence[float] | None = None) -> dict[str, Any]:
    """One leadership change of ``topic``-``partition`` from ``old`` to ``new`` (NO_LEADER for none), made by
    the controller at ``elected_ms`` for the reason ``kind`` (a key of BOUNDED_BY); ``acks`` as
    ``acks_by_partition`` gives them; ``applied_ms``, when known, when the new leader took the leadership:
    the first acknowledgement counted is then one after it (the old leader may acknowledge until it applied
    the change itself); ``heartbeats``, when the controller received the old leader's heartbeats: a row whose
    old leader was fenced gets ``last_heartbeat_ms``, the last one before the fence (the session timeout counts
    from it: BrokerHeartbeatManager)."""
    fault = _fault_on(faults, old, elected_ms)
    fault_ms = None if fault is None else float(fault.at)
    since = elected_ms if applied_ms is None else max(elected_ms, applied_ms)
    first_ack = _first_after(acks.get((topic, partition)), since) if new != NO_LEADER else None
    start = fault_ms if fault_ms is not None else elected_ms
    row: dict[str, Any] = {
        "partition": f"{topic}-{partition}",
        "old_leader": None if old == NO_LEADER else old,
        "new_leader": None if new == NO_LEADER else new,
        "cause": kind if fault is None else f"{fault.type} {fault.target}: {kind}",
        "fault_ms": fault_ms,
        "fenced_ms": fenced_ms,
        "elected_ms": elected_ms,
        "first_ack_ms": first_ack,
        "unavailable_ms": None if first_ack is None else first_ack - start,
        "bounded_by": BOUNDED_BY[kind],
    }
    if applied_ms is not None:
        row["applied_ms"] = applied_ms
    if heartbeats and fenced_ms is not None and kind in ("fenced", "unclean", "from the ELR"):
        before = [t for t in heartbeats if t <= fenced_ms]
        if before:
            row["last_heartbeat_ms"] = max(before)
    return row


def _kind(record: PartitionChangeRecord, old: int, event_fenced: set[int], event_unfenced: set[int],
          shutdown: dict[int, float], replicas: tuple[int, ...], elected: str) -> str:
    if elected == "unclean":
        return "unclean"
    if elected == "ELR":
        return "from the ELR"
    if old in event_fenced:
        return "fenced"
    if old in shutdown:
        return "shutdown"
    if old == NO_LEADER and record.leader in event_unfenced:
        return "unfenced"
    if replicas and record.leader == replicas[0]:
        return "preferred"
    return "election"


def _fault_on(faults: Sequence[Any], broker: int, at_ms: float) -> Any | None:
    """The latest fault on ``broker`` (crash, shutdown, pause, a cut) that began before ``at_ms``."""
    found = None
    for fault in faults:
        if fault.at > at_ms:
            continue
        targets = [broker_of_target(fault.target)] if fault.type != "network_partition" else [
            broker_of_target(host) for side in fault.sides for host in side]
        if broker in targets and (found is None or fault.at >= found.at):
            found = fault
    return found


def acks_by_partition(records: pd.DataFrame) -> dict[tuple[str, int], np.ndarray]:
    ack = records["ack_ms"].to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(ack) & (records["error"].to_numpy() == 0)
    topics = records["topic"].astype(str).to_numpy()[ok]
    partitions = records["partition"].to_numpy(dtype=np.int64)[ok]
    acked = ack[ok]
    # One sort for all partitions (a run may have thousands): by partition, then by time; split where it changes.
    order = np.lexsort((acked, partitions, topics))
    topics, partitions, acked = topics[order], partitions[order], acked[order]
    if not len(acked):
        return {}
    starts = np.flatnonzero(np.r_[True, (topics[1:] != topics[:-1]) | (partitions[1:] != partitions[:-1])])
    ends = np.r_[starts[1:], len(acked)]
    return {(str(topics[s]), int(partitions[s])): acked[s:e] for s, e in zip(starts, ends, strict=True)}


def _first_after(acks: np.ndarray | None, t_ms: float) -> float | None:
    if acks is None:
        return None
    i = int(np.searchsorted(acks, t_ms, side="right"))
    return float(acks[i]) if i < len(acks) else None
