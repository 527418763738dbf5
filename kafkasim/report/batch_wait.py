"""Why one batch waited before its request was sent (`kafkasim trace --batch ID`), from a saved run's tables.

A batch's latency counts from the moment its first record was meant to be sent. In a failover most of it is
often spent before any request carries it, on partitions the fault never touched: a surviving leader's
connection holds a produce for a partition whose ISR still has the dead broker in the produce purgatory
(acks=all waits until the controller fences it); Kafka's network ``Processor`` reads one request per
connection at a time (``Selector.mute`` until the response is sent), so every later request of that
connection waits unread behind it; once ``max.in.flight.requests.per.connection`` requests are out, the
producer's ``Sender`` sends nothing more to that broker; the batches pile up in the accumulator until
``buffer.memory`` is full, and ``KafkaProducer.send`` blocks (``BufferPool.allocate``, up to
``max.block.ms``) -- for every partition alike.

The story is read off the records and requests tables, so it is told in three parts:

* intended -> created: the first record waited for ``send()``: the producer was paused by a fault, or its
  ``buffer.memory`` was full (the bytes its unfinished batches held, each ``max(batch.size, its size)`` as
  ``BufferPool`` allocates them, computed from the records table);
* created -> sent: ``linger.ms``, then the request waited for a free in-flight slot to the leader; each
  request in flight then is named with what held it (the leader's produce purgatory, or unread in the socket
  behind the one in process);
* sent -> acknowledged: the request's own RequestMetrics story (``kafkasim trace --request``).

Which of a parked request's partitions held it is not in the tables; the story names the leader's
partitions with a replica on a broker that a fault stopped (the scenario's layout), whose ISR keeps that
broker until the controller fences it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from kafkasim.record.phases import broker_of_target
from kafkasim.record.result import RunResult
from kafkasim.report.latency_scale import short_ms

if TYPE_CHECKING:
    from kafkasim.scenario import Scenario
    from kafkasim.scenario.clients import ProducerConfig
    from kafkasim.scenario.faults import Fault

# A wait shorter than this is the model's own costs, not worth a sentence.
NOTICEABLE_MS = 1.0
# A request that spent this long in the purgatory or unread in its socket held its connection.
HELD_MS = 50.0


class BatchError(ValueError):
    """No such batch in the run."""


@dataclass(frozen=True)
class _Exposure:
    """The scenario's crash and pause faults; the brokers they stop; and per leader (as placed) how many of
    its partitions have a replica on one of them, of how many it leads. Built once per story: the placement is
    a run of the scenario's StripedReplicaPlacer."""

    faults: tuple[Fault, ...] = ()
    stopped: dict[int, Fault] = field(default_factory=dict)
    exposed: dict[int, tuple[int, int]] = field(default_factory=dict)


def _exposure(scenario: Scenario | None) -> _Exposure:
    if scenario is None:
        return _Exposure()
    faults = tuple(f for f in scenario.faults if f.type in ("crash", "pause"))
    stopped: dict[int, Fault] = {}
    for fault in faults:
        broker = broker_of_target(str(fault.target))
        if broker is not None:
            stopped.setdefault(broker, fault)
    if not stopped:
        return _Exposure(faults)
    from kafkasim.run.cluster_layout import cluster_layout

    counts: dict[int, list[int]] = {}
    for replicas in cluster_layout(scenario, scenario.seed).replicas.values():
        if replicas:
            count = counts.setdefault(replicas[0], [0, 0])
            count[0] += any(b in stopped for b in replicas[1:])
            count[1] += 1
    return _Exposure(faults, stopped, {b: (t, n) for b, (t, n) in counts.items() if t})


def pick_batch(result: RunResult, batch_id: int) -> pd.Series:
    records = result.records
    rows = records[records["batch_id"] == batch_id]
    if rows.empty:
        ids = records["batch_id"]
        span = f"{int(ids.min())}..{int(ids.max())}" if len(ids) else "none"
        raise BatchError(f"--batch {batch_id}: no such batch in this run (ids {span})")
    return rows.iloc[0]


def _f(value: object) -> float:
    return float(value) if isinstance(value, int | float | np.number) else float("nan")


def _producer(scenario: Scenario | None, name: str) -> ProducerConfig | None:
    if scenario is None:
        return None
    return next((p for p in scenario.producers if p.name == name), None)


def explain_batch(result: RunResult, batch: pd.Series, scenario: Scenario | None) -> tuple[str, ...]:
    """Sentences: where the batch's time went before its first request was sent (see the module)."""
    producer = str(batch["producer"])
    config = _producer(scenario, producer)
    tp = f"{batch['topic']}-{int(batch['partition'])}"
    intended, created = _f(batch["first_intended_ms"]), _f(batch["created_ms"])
    requests = result.requests
    first = requests[requests["request_id"] == batch["first_request_id"]]
    sent = _f(first["client_send_ms"].iloc[0]) if len(first) else _f(batch["send_ms"])
    acked = _f(batch["ack_ms"])
    exposure = _exposure(scenario)
    lines = [f"batch #{int(batch['batch_id'])} of {producer}: {int(batch['record_count'])} record(s) for {tp}; "
             f"first meant for {short_ms(intended)} ms, "
             + (f"acknowledged at {short_ms(acked)} ms ({short_ms(acked - intended)} ms later)"
                if np.isfinite(acked) else f"outcome {batch['outcome']}") + "."]
    if np.isfinite(created) and created - intended > NOTICEABLE_MS:
        lines.append(f"{short_ms(created - intended)} ms before the batch existed: send() had not taken its first "
                     f"record. " + _why_not_created(result, batch, config, scenario, exposure, created))
    if np.isfinite(sent) and np.isfinite(created):
        linger = float(config.linger_ms) if config is not None else 0.0
        if sent - created > linger + NOTICEABLE_MS:
            lines.append(f"{short_ms(sent - created)} ms from its creation to its first request (linger.ms "
                         f"{short_ms(linger)}). " + _why_not_sent(result, batch, config, exposure, created, sent,
                                                                 first))
        elif len(first):
            lines.append(f"sent {short_ms(sent - created)} ms after its creation (linger.ms {short_ms(linger)}).")
    if len(first):
        lines.append(f"its first request is #{int(first['request_id'].iloc[0])} (its RequestMetrics story below).")
    return tuple(lines)


def _why_not_created(result: RunResult, batch: pd.Series, config: ProducerConfig | None, scenario: Scenario | None,
                     exposure: _Exposure, created: float) -> str:
    producer = str(batch["producer"])
    for fault in scenario.faults if scenario is not None else []:
        end = fault.end if fault.end is not None else float("inf")
        if fault.type == "pause" and fault.target == producer and fault.at <= created <= end + NOTICEABLE_MS:
            return f"The producer was paused by the scenario's fault ({short_ms(float(fault.at))} ms on)."
    if config is None:
        return "The scenario is not at hand to say why."
    limit = float(config.buffer_memory)
    held, since = _buffer_held(result.records, producer, float(config.batch_size), created)
    if held + max(float(config.batch_size), float(batch["size_bytes"])) > limit:
        start = f" since {short_ms(since)} ms" if np.isfinite(since) else ""
        text = (f"buffer.memory ({_mib(limit)}) was full{start}: {_mib(held)} held by {producer}'s batches "
                f"not yet sent or acknowledged, so KafkaProducer.send blocked in BufferPool.allocate (up to "
                f"max.block.ms) for every partition alike; it went on when a response freed memory.")
        if np.isfinite(since):
            text += " " + _connections_at(result, producer, since, config, exposure)
        return text
    return "Its buffer.memory was not full by the records table; the application was held up otherwise."


def _buffer_held(records: pd.DataFrame, producer: str, batch_size: float, at_ms: float) -> tuple[float, float]:
    """(bytes of buffer.memory ``producer``'s batches held just before ``at_ms``, since when they held at least
    that much without a break). A batch takes max(batch.size, its size) from its creation until it is done
    (acknowledged; a batch never acknowledged holds it to the end of the table)."""
    mine = records[records["producer"].astype(str) == producer]
    start = mine["created_ms"].to_numpy(dtype=float)
    done = mine["ack_ms"].to_numpy(dtype=float, na_value=np.nan)
    done = np.where(np.isfinite(done), done, np.inf)
    size = np.maximum(mine["size_bytes"].to_numpy(dtype=float), batch_size)
    moment = at_ms - 1e-6
    live = (start <= moment) & (done > moment)
    held = float(size[live].sum())
    # Walk back through the allocations and releases before the moment: the block began after the last time
    # the held bytes were at most half of what they are now.
    times = np.concatenate([start, done])
    deltas = np.concatenate([size, -size])
    keep = times <= moment
    order = np.argsort(times[keep], kind="stable")
    t, level = times[keep][order], np.cumsum(deltas[keep][order])
    low = np.flatnonzero(level <= held / 2)
    since = float(t[low[-1] + 1]) if low.size and low[-1] + 1 < len(t) else float("nan")
    return held, since


def _connections_at(result: RunResult, producer: str, at_ms: float, config: ProducerConfig,
                    exposure: _Exposure) -> str:
    """What held ``producer``'s connections at ``at_ms``: its requests in flight per broker, grouped by what
    held the oldest of each."""
    requests = result.requests
    mine = requests[(requests["client"].astype(str) == producer) & (requests["api"].astype(str) == "Produce")]
    send = mine["client_send_ms"].to_numpy(dtype=float)
    receive = mine["client_receive_ms"].to_numpy(dtype=float, na_value=np.inf)
    out = mine[(send <= at_ms) & (receive > at_ms)].sort_values("client_send_ms", kind="stable")
    if out.empty:
        return ""
    slots = int(config.max_in_flight_requests_per_connection)
    parked: list[tuple[int, int, float]] = []
    others: list[str] = []
    muted = True  # every request behind a parked one waited unread in its socket (or was never read)
    for key, group in out.groupby("broker", sort=True):
        broker = int(str(key))
        oldest = group.iloc[0]
        remote = _f(oldest["RemoteTimeMs"])
        if np.isfinite(remote) and remote >= HELD_MS:
            parked.append((broker, len(group), remote))
            later = group.iloc[1:]
            unread = (later["start_ms"].to_numpy(dtype=float, na_value=np.inf)
                      - later["client_send_ms"].to_numpy(dtype=float))
            muted &= bool((unread >= HELD_MS).all())
        else:
            others.append(f"to broker-{broker} {len(group)}, the oldest " + _what_held(oldest, "", named=False))
    parts = [f"Then {len(out)} of its requests were in flight."]
    if parked:
        brokers = ", ".join(f"broker-{b} ({n}{'' if n < slots else ', all its slots'})" for b, n, _ in parked)
        low, high = min(w for *_, w in parked), max(w for *_, w in parked)
        span = short_ms(low) if high - low < 1 else f"{short_ms(low)}-{short_ms(high)}"
        why = (" Each of these leaders has partitions with a replica on a broker a fault stopped, which stays in "
               "their ISR until the controller fences it" + _fence_note(result, exposure)
               ) if any(b in exposure.exposed for b, _, _ in parked) else ""
        behind = ", the ones behind it unread in the muted socket" if muted else ""
        parts.append(f"To {brokers}: the oldest waited {span} ms in the leader's produce purgatory (acks=all: "
                     f"DelayedProduce until every ISR member has the batch){behind}.{why}")
    parts += [o[0].upper() + o[1:] for o in others]
    return " ".join(parts)


def _fence_note(result: RunResult, exposure: _Exposure) -> str:
    fenced = [f for f in result.summary.get("failovers", []) if f.get("fenced_ms")]
    stopped = ", ".join(f"{f.type} of {f.target} at {short_ms(float(f.at))} ms" for f in exposure.faults)
    when = f", fenced at {short_ms(float(fenced[0]['fenced_ms']))} ms" if fenced else ""
    return f" ({stopped}{when})."


def _mib(n: float) -> str:
    return f"{n / 1_048_576:.1f} MiB"


def _why_not_sent(result: RunResult, batch: pd.Series, config: ProducerConfig | None, exposure: _Exposure,
                  created: float, sent: float, first: pd.DataFrame) -> str:
    if not len(first):
        return "No request of the run carried it."
    broker = int(first["broker"].iloc[0])
    producer = str(batch["producer"])
    requests = result.requests
    mine = requests[(requests["client"].astype(str) == producer) & (requests["broker"] == broker)
                    & (requests["api"].astype(str) == "Produce")]
    send = mine["client_send_ms"].to_numpy(dtype=float)
    receive = mine["client_receive_ms"].to_numpy(dtype=float, na_value=np.inf)
    # In flight when the batch was ready to go (created + linger), still out then.
    ready = created + (float(config.linger_ms) if config is not None else 0.0)
    out = mine[(send <= ready) & (receive > ready)].sort_values("client_send_ms", kind="stable")
    slots = int(config.max_in_flight_requests_per_connection) if config is not None else None
    if slots is None or len(out) < slots:
        return (f"{len(out)} request(s) to broker-{broker} were in flight then: it waited for the partition's "
                f"leader to be known and ready (metadata, a connection), or for its turn in the accumulator.")
    freed = _f(out["client_receive_ms"].iloc[0])
    parts = [f"All {slots} in-flight slots to broker-{broker} (max.in.flight.requests.per.connection) were "
             f"taken, so the Sender sent nothing more to it; the first slot came free at {short_ms(freed)} ms."]
    held_by = _held_partitions(result, exposure, broker)
    for _, r in out.iterrows():
        parts.append(_what_held(r, held_by))
    return " ".join(parts)


def _what_held(r: pd.Series, held_by: str, *, named: bool = True) -> str:
    rid = f"#{int(r['request_id'])} " if named else f"(#{int(r['request_id'])}) "
    remote = _f(r["RemoteTimeMs"])
    unread = _f(r["start_ms"]) - _f(r["client_send_ms"])
    if np.isfinite(remote) and remote >= HELD_MS:
        return (f"{rid}(sent {short_ms(_f(r['client_send_ms']))} ms) waited {short_ms(remote)} ms in the "
                f"leader's produce purgatory (acks=all: DelayedProduce until every ISR member has it){held_by}.")
    if np.isfinite(unread) and unread >= HELD_MS:
        return (f"{rid}waited {short_ms(unread)} ms unread in the broker's socket: the connection was muted "
                f"while the request before it was in process (SocketServer's Processor reads one request per "
                f"connection at a time).")
    if not np.isfinite(_f(r["end_ms"])):
        return f"{rid}was never answered (the broker stopped; the client's request.timeout.ms ended it)."
    return f"{rid}took {short_ms(_f(r['client_receive_ms']) - _f(r['client_send_ms']))} ms."


def _held_partitions(result: RunResult, exposure: _Exposure, broker: int) -> str:
    """': N of the M partitions broker-K leads have a replica on broker-J (...), ...' or ''."""
    if broker not in exposure.exposed:
        return ""
    touched, led = exposure.exposed[broker]
    stopped = exposure.stopped
    names = sorted(stopped)
    fenced = [f for f in result.summary.get("failovers", []) if f.get("old_leader") in names and f.get("fenced_ms")]
    when = f"; fenced at {short_ms(float(fenced[0]['fenced_ms']))} ms" if fenced else ""
    who = ", ".join(f"broker-{b} ({stopped[b].type} at {short_ms(float(stopped[b].at))} ms)" for b in names)
    return (f": {touched} of the {led} partitions broker-{broker} leads (as placed) have a replica on "
            f"{who}, which stays in their ISR until the controller fences it{when}")
