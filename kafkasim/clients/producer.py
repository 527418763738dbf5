"""An open-loop Kafka producer: arrivals, partitioner, RecordAccumulator, Sender, in-flight requests.

* Arrivals are open loop (poisson / constant / on_off at ``rate``): a record's *intended* send time comes
  from the arrival process alone, so a slow broker delays acknowledgements but never the load
  (no coordinated omission). Latency is measured per record from its intended time and from the send
  of the request that carried it.
* ``send()`` appends to the accumulator (see ``accumulator.py``); the Sender wakes when a batch fills or is
  created, when a response frees an in-flight slot, and when the earliest linger expires. It routes by
  leadership (``Sender.sendProducerData``): one connection per broker that leads a partition of the
  topic; for each ready broker whose connection has fewer than ``max.in.flight.requests.per.connection``
  requests in flight, one ProduceRequest with the batches drained for that broker
  (``RecordAccumulator.drain``), round after round while any broker still has a sendable batch and room.
* acks=0: the request completes when it is sent (no response: ``KafkaApis.handleProduceRequest``).
* Connections (``kafkasim.network.network_client``, Kafka's ``NetworkClient`` the ``Sender`` owns): the Sender
  connects to a broker when it first has a sendable batch for it (``NetworkClient.ready``: a TCP handshake,
  ``socket.connection.setup.timeout.ms``), and its batches wait until the connection is READY. When the
  oldest in-flight request on a connection is ``request.timeout.ms`` old, the NetworkClient disconnects from
  that node ("Disconnecting from node due to request timeout"): every request in flight on it fails with
  REQUEST_TIMED_OUT (``cancelInFlightRequests`` with timedOut), a reset or refused connection fails them with
  NETWORK_EXCEPTION; either way a metadata update is requested and the node is backed off
  (``reconnect.backoff.ms``) before the Sender connects again. Late responses on the old connection are never
  delivered (the broker still handles the requests; their broker-side timing stays in the request table).
* Delivery semantics (``Sender.completeBatch``): a batch that fails with a retriable error (or, when
  idempotent, one ``TransactionManager.canRetry`` accepts) is re-enqueued (``RecordAccumulator.reenqueue``)
  while ``retries`` allow and ``delivery.timeout.ms`` has not passed since it was created, after an
  exponential backoff with jitter (``ExponentialBackoff``, from the producer's ``<name>/retry_backoff``
  stream); DUPLICATE_SEQUENCE_NUMBER counts as success. Batches past ``delivery.timeout.ms`` fail with
  REQUEST_TIMED_OUT (Kafka's TimeoutException), queued or in flight (``Sender.getExpiredInflightBatches``;
  the later response is then ignored). The application sees one outcome per batch: its final offset, or
  its last error.
* Idempotence (``enable.idempotence``): sequences per partition, assigned at the first drain, kept by
  retries; epoch bumps are local (see ``transaction_manager.py``). InitProducerId is not simulated: the
  builder gives each producer a distinct id.
* Metadata (``metadata.py``): an invalid-metadata error or a disconnect requests an update, fetched with
  ``fetch_metadata`` (when given) one ``metadata_round_trip_ms`` later, rate-limited by the backoff; a
  partition without a leader holds its batches.
* ``buffer.memory`` (``BufferPool``): a new batch takes max(batch.size, its first record) bytes until it is
  done. When a record needs a new batch and the memory is not there, ``send()`` blocks: the application
  waits (records intended meanwhile wait behind it, their latency counts from their intended time), every
  queued batch becomes sendable (``RecordAccumulator.ready``: exhausted), and after ``max.block.ms`` the
  record fails (``BufferExhaustedException``, a TimeoutException: REQUEST_TIMED_OUT, never sent).
* The Sender's CPU (simulator-only ``costs``, ``SenderCosts``; absent = free): building a ProduceRequest from
  the drained batches (``Sender.sendProduceRequest``) takes ``per_request`` plus ``per_batch`` per batch of the
  Sender's one thread; the request goes to the NetworkClient when it is built, and the Sender does nothing
  else meanwhile, so requests built back to back queue (their ``client_send_ms`` moves). Kafka has no metric
  for this time alone: it falls between ``record-queue-time-avg`` (which ends at the drain) and
  ``request-latency-avg`` (which starts at the send). Responses are handled at no cost, and the application's
  ``send()`` (serialisation, the accumulator's append) costs nothing: the lazy catch-up appends records at
  their intended times, which a per-record cost on the application thread would break.
* No compression. Every connection of a producer shares its one network path (its host's link).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import NO_SEQUENCE, RecordBatch, TopicPartition
from kafkasim.clients.accumulator import (
    RECORD_BATCH_OVERHEAD_BYTES,
    Partitioner,
    ProducerBatch,
    RecordAccumulator,
    VirtualTails,
)
from kafkasim.clients.config import ArrivalConfig, ProducerClientConfig
from kafkasim.clients.metadata import INVALID_METADATA_ERRORS, Metadata
from kafkasim.clients.transaction_manager import RETRIABLE_ERRORS, TransactionManager
from kafkasim.network.connection import ClientConnection
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import (
    API_PRODUCE,
    ProduceRequestData,
    RequestEnvelope,
    produce_request_bytes,
)
from kafkasim.network.network_client import NetworkClient
from kafkasim.network.observer import Observer
from kafkasim.sim.backoff import ExponentialBackoff
from kafkasim.sim.calls import DEADLINE_TOLERANCE_MS as _DEADLINE_TOLERANCE_MS
from kafkasim.sim.calls import Call, Pausable
from kafkasim.sim.distributions import constant_value

if TYPE_CHECKING:
    from simpy import Environment

NAN: Final = float("nan")
# CommonClientConfigs: the retry backoff's multiplier and jitter (KIP-580).
RETRY_BACKOFF_EXP_BASE: Final = 2
RETRY_BACKOFF_JITTER: Final = 0.2
# How far RecordAccumulator.first_waking_record looks ahead before the producer acts anyway.
MAX_LOOKAHEAD_RECORDS = 10_000


class ArrivalProcess:
    """Gaps between intended send times: poisson, constant or on/off bursts at ``rate`` records/s."""

    __slots__ = ("_mean_gap_ms", "_kind", "_on_ms", "_off_ms", "_pattern", "_rng", "_period_start")

    def __init__(self, rate_per_s: float, arrival: ArrivalConfig, rng: random.Random) -> None:
        self._mean_gap_ms = 1000.0 / rate_per_s
        self._kind: str = arrival.kind
        self._rng = rng
        self._on_ms = float(arrival.on_ms)
        self._off_ms = float(arrival.off_ms)
        self._pattern: str = arrival.pattern
        self._period_start = 0.0

    def first(self) -> float:
        """The first intended time (one gap after 0, so producers do not all fire at t=0)."""
        return self.next_after(0.0)

    def next_after(self, t: float) -> float:
        kind = self._kind
        if kind == "poisson":  # the common case, inlined
            return t - math.log(1.0 - self._rng.random()) * self._mean_gap_ms
        if kind == "constant":
            return t + self._mean_gap_ms
        # On/off: arrivals only inside [start, start + on) of each period of on + off.
        nxt = t + self._gap(self._pattern)
        period = self._on_ms + self._off_ms
        on_end = self._period_start + self._on_ms
        while nxt >= on_end:
            # Skip the off time; memoryless gaps restart at the next on period.
            self._period_start += period
            on_end = self._period_start + self._on_ms
            nxt = self._period_start + (self._gap(self._pattern) if self._pattern == "poisson" else 0.0)
        return nxt

    def _gap(self, kind: str) -> float:
        if kind == "constant":
            return self._mean_gap_ms
        return -math.log(1.0 - self._rng.random()) * self._mean_gap_ms


class SenderCosts:
    """The Sender thread's time to build a ProduceRequest (ms): ``per_request`` once, ``per_batch`` per batch."""

    __slots__ = ("per_request", "per_batch")

    def __init__(self, per_request: Callable[[], float], per_batch: Callable[[], float]) -> None:
        self.per_request = per_request
        self.per_batch = per_batch


class Producer(Pausable):
    """One producer client (``KafkaProducer`` + ``Sender``), whose ``NetworkClient`` keeps a connection per
    broker it writes to: ``connect(broker_id)`` makes one, ``leaders`` maps each partition to its leader
    (default: broker 0 leads them all)."""

    def __init__(
        self,
        env: Environment,
        config: ProducerClientConfig,
        partitions: Sequence[TopicPartition],
        connect: Callable[[int], ClientConnection],
        record_size: Callable[[], float],
        arrival_rng: random.Random,
        partitioner_rng: random.Random,
        ids: IdSource,
        observer: Observer,
        *,
        leaders: Mapping[TopicPartition, int] | None = None,
        stop_ms: float = math.inf,
        retry_rng: random.Random | None = None,
        connection_rng: random.Random | None = None,
        fetch_metadata: Callable[[], Mapping[TopicPartition, tuple[int, int]]] | None = None,
        metadata_round_trip_ms: float = 0.0,
        costs: SenderCosts | None = None,
        sender_wakeup: Callable[[], float] | None = None,
    ) -> None:
        super().__init__()
        self.env = env
        self.name = config.name
        # The Sender's build cost (None: free) and the batches of the request it is building (it then waits).
        self._costs = costs
        self._building: list[ProducerBatch] | None = None
        # How long the Sender, waiting in Selector.poll, takes to run once send() wakes it (None: at once), and
        # whether it is on its way.
        self._sender_wakeup = sender_wakeup
        self._waking = False
        self._ids = ids
        self._observer = observer
        self._stop_ms = stop_ms  # nothing new is sent from then on
        self.acks = config.acks
        self.timeout_ms = config.request_timeout_ms
        self.max_in_flight = config.max_in_flight_requests_per_connection
        self.retries = config.retries
        self.delivery_timeout_ms = float(config.delivery_timeout_ms)
        rng = retry_rng if retry_rng is not None else random.Random(0)
        self._retry_backoff = ExponentialBackoff(
            config.retry_backoff_ms, RETRY_BACKOFF_EXP_BASE, config.retry_backoff_max_ms, RETRY_BACKOFF_JITTER, rng
        )
        layout = {tp: (leaders[tp] if leaders is not None else 0, 0) for tp in partitions}
        self.metadata = Metadata(layout, ExponentialBackoff(
            config.retry_backoff_ms, RETRY_BACKOFF_EXP_BASE, config.retry_backoff_max_ms, RETRY_BACKOFF_JITTER, rng
        ))
        self._fetch_metadata = fetch_metadata
        self._metadata_round_trip_ms = metadata_round_trip_ms
        self._metadata_fetch: Call | None = None
        # When its metadata was last refreshed (Kafka's Metadata.lastSuccessfulRefreshMs; the start counts as
        # one): the MetadataAgeMs gauge is the time since.
        self.metadata_refreshed_ms = float(env.now)
        self.txn = TransactionManager(config.producer_id) if config.enable_idempotence else None
        self.accumulator = RecordAccumulator(
            partitions, config.batch_size, float(config.linger_ms), leaders=self.metadata.leaders(), txn=self.txn
        )
        self.accumulator.set_leaders(self.metadata.leaders(), {tp: epoch for tp, (_, epoch) in layout.items()})
        # The Sender's NetworkClient: a connection per broker, made when the Sender first has a batch for it.
        self.client: NetworkClient[list[ProducerBatch]] = NetworkClient(
            env, self, connect, config.connection,
            connection_rng if connection_rng is not None else random.Random(0),
            request_timeout_ms=float(config.request_timeout_ms),
            max_in_flight=config.max_in_flight_requests_per_connection,
            complete=self._handle_produce_response, on_ready=self._on_node_ready,
            on_disconnect=self._on_node_disconnect,
        )
        # The brokers the Sender visits, in the order the partitions first named them.
        self._node_ids: list[int] = []
        for node_id in self.accumulator.nodes:
            self._add_node(node_id)
        # BufferPool: free bytes of buffer.memory; while send() waits for memory, since when (else inf).
        self.batch_size = config.batch_size
        self._buffer_free = config.buffer_memory
        self.max_block_ms = float(config.max_block_ms)
        self._blocked_at = math.inf
        self._block_timer: Call | None = None
        self.buffer_exhausted = 0  # records that failed waiting for memory
        # The delivery-timeout check: armed at or before the earliest deadline of a live batch.
        self._expiry: Call | None = None
        self._expiry_at = math.inf
        self.partitioner = Partitioner(config.partitioner, partitions, config.batch_size, partitioner_rng)
        self._arrivals = ArrivalProcess(config.rate_per_s, config.arrival, arrival_rng)
        self._record_size = record_size
        # A constant record size (the usual case) skips the draw; 0 = draw each time.
        constant = constant_value(record_size)
        self._constant_size = max(1, int(constant + 0.5)) if constant is not None else 0
        self._wakeup: Call | None = None
        self._wakeup_at = math.inf
        self.records_sent = 0
        # Records drawn but not yet appended, in arrival order: (intended ms, size). The partition is chosen
        # at the append: the sticky partitioner decides on the deques as they are then.
        self._upcoming: deque[tuple[float, int]] = deque()
        self._next_intended = math.inf
        self._arrival_event: Call | None = None
        self._arrival_at = math.inf
        self._append_floor = -math.inf
        self._plan_key: tuple[int, bool] | None = None

    def _add_node(self, node_id: int) -> None:
        if node_id not in self._node_ids:
            self._node_ids.append(node_id)

    def start(self) -> None:
        self._next_intended = self._arrivals.first()
        self._plan()

    # --- application thread ------------------------------------------------------------------------
    #
    # Records are drawn ahead (arrival time and size, each from its own stream, in arrival order) but
    # appended to the accumulator only when the producer next acts, with their intended time as the
    # append time -- exactly what appending each one at its arrival would have done, because only the
    # Sender changes the accumulator otherwise and it acts only at events. Only a record that would make
    # the Sender act (a batch becomes sendable, or the first batch needs its linger timer) gets an event
    # of its own; the accumulator finds it (``RecordAccumulator.first_waking_record``) by replaying the
    # appends, partitioner included, on copies. At 5000 records/s in 16 KiB batches that is one
    # event per batch instead of one per record.

    def _draw(self) -> tuple[float, int] | None:
        """Draw the next record ahead (into ``_upcoming``); None if the producer stops before it is intended."""
        intended = self._next_intended
        if intended >= self._stop_ms:
            return None
        self._next_intended = self._arrivals.next_after(intended)
        size = self._constant_size or max(1, int(self._record_size() + 0.5))
        record = (intended, size)
        self._upcoming.append(record)
        return record

    def _catch_up(self, now: float) -> None:
        """``KafkaProducer.send`` of every record intended at or before ``now``."""
        upcoming = self._upcoming
        acc = self.accumulator
        partitioner = self.partitioner
        ids = self._ids
        floor = self._append_floor
        stop = self._stop_ms
        batch_size = self.batch_size
        only = partitioner.only
        while True:
            if upcoming:
                intended = upcoming[0][0]
            else:
                intended = self._next_intended
                if intended > now or intended >= stop:
                    return
                self._draw()
            if intended > now or intended >= stop:
                return
            size = upcoming[0][1]
            allocation = size + RECORD_BATCH_OVERHEAD_BYTES  # max(batch.size, the record's batch)
            if allocation < batch_size:
                allocation = batch_size
            if self._buffer_free < allocation and self._needs_new_batch(size):
                # BufferPool.allocate: send() blocks until memory is freed or max.block.ms passes.
                if self._blocked_at == math.inf:
                    self._block(intended if intended > floor else floor)
                return
            if self._blocked_at < math.inf:  # memory came back: the application carries on from now
                self._unblock()
                floor = self._append_floor
            upcoming.popleft()
            self.records_sent += 1
            batch_id = ids.next_batch_id
            # A record meant for a time the application was paused (or blocked) is sent when it resumes.
            append_ms = intended if intended > floor else floor
            if only is not None:  # one partition: nothing for the partitioner to decide or learn
                tp = only
                _, new_batch = acc.append(only, size, intended, append_ms, batch_id)
            else:
                tp, _, new_batch = acc.append_record(partitioner, size, intended, append_ms, batch_id)
            if new_batch:
                ids.next_batch_id = batch_id + 1
                acc.last_batch(tp).buffer_bytes = allocation
                self._buffer_free -= allocation
                if self._expiry_at == math.inf:  # no live batch before this one: nothing armed
                    self._arm_expiry(intended if intended > floor else floor)

    def _needs_new_batch(self, size: int) -> bool:
        """Would the next record start a new batch? (the partitioner's choice peeked on copies)"""
        tails = VirtualTails(self.accumulator)
        tp = self.partitioner.partition(self.partitioner.state.copy(), tails, size)
        return not tails.fits(tp, size)

    def _block(self, since: float) -> None:
        self._blocked_at = since
        self.accumulator.exhausted = True
        self.accumulator.drains += 1  # every queued batch is sendable now
        self._block_timer = Call(self.env, max(0.0, since + self.max_block_ms - self.env.now), self._on_block_timeout)

    def _unblock(self) -> None:
        self._blocked_at = math.inf
        self.accumulator.exhausted = False
        self._append_floor = self.env.now
        if self._block_timer is not None:
            self._block_timer.cancel()
            self._block_timer = None

    def _on_block_timeout(self, _event: object) -> None:
        """``BufferPool.allocate`` gave up after max.block.ms: the record fails with BufferExhaustedException
        (recorded as REQUEST_TIMED_OUT, never sent) and the application goes on with the next one."""
        self._block_timer = None
        if self.paused:
            self._deferred.append(lambda: self._on_block_timeout(None))
            return
        intended, size = self._upcoming.popleft()
        self.records_sent += 1
        tp = self.partitioner.partition(self.partitioner.state.copy(), VirtualTails(self.accumulator), size)
        batch_id = self._ids.next_batch_id
        self._ids.next_batch_id = batch_id + 1
        failed = ProducerBatch(tp, batch_id, self._blocked_at)
        failed.record_count = 1
        failed.size_in_bytes += size
        failed.intended_ms.append(intended)
        self.buffer_exhausted += 1
        self._unblock()
        self._finish(failed, Errors.REQUEST_TIMED_OUT, -1, self.env.now)
        self._run_sender()

    def _plan(self) -> None:
        """Schedule an event at the first upcoming record that would wake the Sender, if any."""
        if self.paused or self._blocked_at < math.inf:
            return  # resume() plans again; a blocked send() waits for memory, not for a time
        # Appends since the last plan were the plan's own virtual appends; only a drain or a change of
        # in-flight room can change which record wakes the Sender.
        max_in_flight = self.max_in_flight
        client = self.client
        can_send = False  # any node with room for another request (a loop: no generator per plan)
        for node_id in self._node_ids:
            if client.in_flight_count(node_id) < max_in_flight:
                can_send = True
                break
        key = (self.accumulator.drains, can_send)
        if key == self._plan_key and self._arrival_at >= self.env.now:
            return
        self._plan_key = key
        target = (
            self.accumulator.first_waking_record(
                # Look no further than the records whose new batches surely fit in the free memory: the
                # one that would block must get its own event.
                self.partitioner, self._upcoming, self._draw,
                max(1, min(MAX_LOOKAHEAD_RECORDS, self._buffer_free // max(1, self.batch_size) - 1)),
            )
            if can_send
            else math.inf
        )
        if target == self._arrival_at:
            return
        if self._arrival_event is not None:
            self._arrival_event.cancel()
            self._arrival_event = None
        self._arrival_at = target
        if target < math.inf:
            self._arrival_event = Call(self.env, max(0.0, target - self.env.now), self._on_arrival)

    def _on_arrival(self, _event: object) -> None:
        self._arrival_event = None
        self._arrival_at = math.inf
        self._plan_key = None  # the planned record has arrived: plan the next one
        wakeup = self._sender_wakeup
        if wakeup is None or self._building is not None:
            self._run_sender()
        elif not self._waking:
            # KafkaProducer.doSend: a record that starts a new batch calls sender.wakeup(); the Sender thread,
            # waiting in Selector.poll, runs when it gets a core. Records sent meanwhile join the batch (the
            # drain appends every record intended by then).
            self._waking = True
            Call(self.env, max(0.0, wakeup()), self._sender_woken)

    def _sender_woken(self, _event: object) -> None:
        self._waking = False
        self._run_sender()

    def pause(self) -> None:
        self._catch_up(self.env.now)
        super().pause()

    # --- sender thread -----------------------------------------------------------------------------

    def _run_sender(self) -> None:
        """``Sender.runOnce``, repeated while it sends: for every broker with a sendable batch
        (``RecordAccumulator.ready``) whose connection takes another request (``NetworkClient.ready``), one
        request with the batches drained for it; otherwise wake at the earliest linger expiry."""
        if self.paused or self._building is not None:
            return  # a request being built: the Sender runs again once it is sent
        now = self.env.now
        self._catch_up(now)
        acc = self.accumulator
        txn = self.txn
        if txn is not None and txn.bump_epoch_if_needed():
            acc.drains += 1  # sequences were rewritten: what may be drained changed
        if now + _DEADLINE_TOLERANCE_MS >= self._expiry_at:
            self._expire_batches(now)
        self._maybe_update_metadata(now)
        max_in_flight = self.max_in_flight
        client = self.client
        sending = True
        while sending:
            sending = False
            for node_id in self._node_ids:
                if client.in_flight_count(node_id) >= max_in_flight:
                    continue  # at max in flight the next response on this connection wakes us
                delay = acc.ready_delay_ms(now, node_id)
                if delay is None:
                    continue
                if delay > 0:
                    self._wake_at(now + delay)
                    continue
                if not client.ready(node_id, now):
                    # Not READY: its batches wait. A connection being made wakes the Sender when it is
                    # (on_ready); a node backed off after a disconnect, when it may connect again (pollDelayMs).
                    if client.connection_failed(node_id):
                        self._wake_at(now + client.connection_delay(node_id, now))
                    continue
                batches = acc.drain(node_id, now)
                if batches:  # empty when the first partition visited holds its batch back (idempotence)
                    costs = self._costs
                    if costs is not None:
                        self._build(node_id, batches, costs)
                        self._plan()
                        return
                    self._send_request(node_id, batches, now)
                    sending = True
        self._plan()

    def _build(self, node_id: int, batches: list[ProducerBatch], costs: SenderCosts) -> None:
        """The Sender builds the request (``Sender.sendProduceRequest``): busy until it goes."""
        self._building = batches
        build_ms = max(0.0, costs.per_request()) + max(0.0, costs.per_batch()) * len(batches)
        Call(self.env, build_ms, lambda _e: self._built(node_id, batches))

    def _built(self, node_id: int, batches: list[ProducerBatch]) -> None:
        if self.paused:  # stalled mid-build: it goes when the stall ends
            self.defer(lambda: self._built(node_id, batches))
            return
        self._building = None
        now = self.env.now
        if self.client.ready(node_id, now):
            self._send_request(node_id, batches, now)
        else:
            # The connection went during the build (in Kafka the Sender would send it on the dead socket and
            # see the disconnect at its next poll): the batches fail as a disconnect's do, and are retried.
            for b in batches:
                self._complete_batch(b, Errors.NETWORK_EXCEPTION, -1, -1, now)
        self._run_sender()

    def _wake_at(self, t: float) -> None:
        if t >= self._wakeup_at:
            return
        if self._wakeup is not None:
            self._wakeup.cancel()
        self._wakeup_at = t
        self._wakeup = Call(self.env, t - self.env.now, self._on_wakeup)

    def _on_wakeup(self, _event: object) -> None:
        self._wakeup = None
        self._wakeup_at = math.inf
        self._run_sender()

    def _send_request(self, node_id: int, batches: list[ProducerBatch], now: float) -> None:
        name = self.name
        entries: dict[TopicPartition, list[RecordBatch]] = {b.tp: [b.to_record_batch(name)] for b in batches}
        request_id = self._ids.request_id()
        intended = min(b.intended_ms[0] for b in batches)
        envelope = RequestEnvelope(
            request_id,
            API_PRODUCE,
            name,
            ProduceRequestData(self.acks, self.timeout_ms, entries),
            produce_request_bytes(entries),
            intended,
            now,
            expects_response=self.acks != 0,
        )
        for b in batches:
            b.send_ms = now
            b.request_id = request_id
            if not b.sends:
                b.first_request_id = request_id
            b.sends += 1
        self.client.send(node_id, envelope, batches)
        if self.acks == 0:
            # Completed once written to the socket; the offsets are unknown to an acks=0 producer.
            self._complete(envelope, batches, Errors.NONE, now)

    # --- responses and timeouts --------------------------------------------------------------------

    def _handle_produce_response(self, node_id: int, envelope: RequestEnvelope, batches: list[ProducerBatch],
                                 disconnected: bool) -> None:
        """``Sender.handleProduceResponse``: the outcome of a request from the NetworkClient (never while paused:
        it holds them back)."""
        now = self.env.now
        # The records intended before now were sent before this response frees any buffer memory.
        self._catch_up(now)
        if disconnected:
            # wasTimedOut: REQUEST_TIMED_OUT; wasDisconnected: NETWORK_EXCEPTION (the NetworkClient set it). The
            # NetworkClient's on_disconnect runs the Sender once every request of the node is failed.
            error = envelope.error
            self._complete(envelope, batches, error if error is not None else Errors.NETWORK_EXCEPTION, now)
            return
        response = envelope.response
        assert response is not None  # received
        statuses = response.produce_statuses()
        for b in batches:
            status = statuses.get(b.tp)
            error = status.error if status is not None else Errors.UNKNOWN_SERVER_ERROR
            ok = error == Errors.NONE or error == Errors.DUPLICATE_SEQUENCE_NUMBER
            base = status.base_offset if status is not None and ok else -1
            log_start = status.log_start_offset if status is not None else -1
            self._complete_batch(b, error, base, log_start, now)
        self._observer.request_finished(envelope)
        self._run_sender()

    def _complete(self, envelope: RequestEnvelope, batches: list[ProducerBatch], error: Errors, now: float) -> None:
        """Every batch of a request that got no response (acks=0 sent, or its connection failed)."""
        for b in batches:
            self._complete_batch(b, error, -1, -1, now)
        self._observer.request_finished(envelope)

    def _complete_batch(self, b: ProducerBatch, error: Errors, base_offset: int, log_start_offset: int,
                        now: float) -> None:
        """``Sender.completeBatch``: success (DUPLICATE_SEQUENCE_NUMBER included), retry or failure."""
        txn = self.txn
        if error == Errors.NONE or error == Errors.DUPLICATE_SEQUENCE_NUMBER:
            if txn is not None and b.base_sequence != NO_SEQUENCE:
                txn.handle_completed(b, base_offset + b.record_count - 1 if base_offset >= 0 else -1)
            if not b.done:
                self._finish(b, Errors.NONE, base_offset, now)
            return
        if error in INVALID_METADATA_ERRORS:
            self.metadata.request_update()
        if self._can_retry(b, error, log_start_offset, now):
            # Kafka's reenqueueBatch: the next attempt waits backoff(attempts - 1) after this one.
            self.accumulator.reenqueue(b, now, self._retry_backoff.backoff(b.attempts))
            return
        # failBatch(batch, response, adjustSequenceNumbers = attempts < retries): a batch the broker refused
        # gives its sequences back to the batches after it -- only if completeExceptionally changed its state:
        # the answer for a batch that already expired (FAILED -> FAILED) is ignored, TransactionManager included.
        if b.done:
            return
        if txn is not None:
            txn.handle_failed(b, error, b.attempts < self.retries)
        self._finish(b, error, -1, now)

    def _can_retry(self, b: ProducerBatch, error: Errors, log_start_offset: int, now: float) -> bool:
        """``Sender.canRetry``: not past the delivery timeout, attempts left, not done, and a retriable error
        (idempotent: ``TransactionManager.canRetry``)."""
        if self.delivery_timeout_ms <= now - b.created_ms or b.attempts >= self.retries or b.done:
            return False
        if self.acks == 0:
            return False  # no response: an acks=0 batch is done once sent
        txn = self.txn
        return txn.can_retry(b, error, log_start_offset) if txn is not None else error in RETRIABLE_ERRORS

    def _finish(self, b: ProducerBatch, error: Errors, base_offset: int, now: float) -> None:
        b.done = True
        if b.buffer_bytes:  # BufferPool.deallocate
            self._buffer_free += b.buffer_bytes
            b.buffer_bytes = 0
        self._observer.batch_finished(self.name, self.acks, b, now, error, base_offset)

    # --- delivery timeout --------------------------------------------------------------------------

    def _arm_expiry(self, created_ms: float) -> None:
        at = created_ms + self.delivery_timeout_ms
        if self._expiry is not None:
            if at >= self._expiry_at:
                return
            self._expiry.cancel()
        self._expiry_at = at
        self._expiry = Call(self.env, max(0.0, at - self.env.now), self._on_expiry)

    def _on_expiry(self, _event: object) -> None:
        self._expiry = None  # _expiry_at stays: _run_sender sees the deadline reached
        if self.paused:
            self._deferred.append(lambda: self._on_expiry(None))
            return
        self._run_sender()

    def _expire_batches(self, now: float) -> None:
        """``Sender.sendProducerData``: fail the batches past ``delivery.timeout.ms``, in flight
        (``getExpiredInflightBatches``) and queued (``RecordAccumulator.expiredBatches``), with Kafka's
        TimeoutException (REQUEST_TIMED_OUT); an expired batch that had been retried leaves its partition's
        sequence unresolved (``markSequenceUnresolved``). Then re-arm at the next deadline."""
        timeout = self.delivery_timeout_ms
        txn = self.txn
        in_flight = self.client.in_flight_requests()
        expired = [
            b for request in in_flight for b in request.payload
            if not b.done and timeout <= now - b.created_ms + _DEADLINE_TOLERANCE_MS
        ]
        expired.extend(self.accumulator.expired_batches(now + _DEADLINE_TOLERANCE_MS, timeout))
        for b in expired:
            if txn is not None:
                txn.handle_failed(b, Errors.REQUEST_TIMED_OUT, False)
                if b.attempts > 0:
                    txn.mark_sequence_unresolved(b)
            self._finish(b, Errors.REQUEST_TIMED_OUT, -1, now)
        oldest = self.accumulator.front_created_ms()
        for request in in_flight:
            for b in request.payload:
                if not b.done and b.created_ms < oldest:
                    oldest = b.created_ms
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._expiry_at = math.inf
        if oldest < math.inf:
            self._arm_expiry(oldest)

    # --- metadata ----------------------------------------------------------------------------------

    def _maybe_update_metadata(self, now: float) -> None:
        """``NetworkClient.DefaultMetadataUpdater.maybeUpdate``: one refresh at a time, when requested and
        the backoff allows (``Metadata.timeToAllowUpdate``)."""
        if self._fetch_metadata is None or self._metadata_fetch is not None:
            return
        wait = self.metadata.time_to_next_update(now)
        if wait == math.inf:
            return
        if wait > 0:
            self._wake_at(now + wait)
            return
        self.metadata.refresh_started()
        self._metadata_fetch = Call(self.env, self._metadata_round_trip_ms, self._on_metadata)

    def _on_metadata(self, _event: object) -> None:
        if self.paused:
            self._deferred.append(lambda: self._on_metadata(None))
            return
        self._metadata_fetch = None
        assert self._fetch_metadata is not None
        changed = self.metadata.update(self._fetch_metadata(), self.env.now)
        self.metadata_refreshed_ms = self.env.now
        if changed:
            metadata = self.metadata
            self.accumulator.set_leaders(metadata.leaders(), {tp: metadata.leader_epoch(tp) for tp in changed})
            for node_id in self.accumulator.nodes:
                self._add_node(node_id)
        self._run_sender()

    def _on_node_ready(self, node_id: int) -> None:
        """The connection to the node is READY (``NetworkClient.handleConnections``): its batches can go."""
        self._run_sender()

    def _on_node_disconnect(self, node_id: int, request_timed_out: bool) -> None:
        """The node was disconnected and what was in flight on it failed (``handleServerDisconnect``): a
        metadata update is requested; the Sender connects again once the node's reconnect backoff allows."""
        self.metadata.request_update()
        self._run_sender()

    def on_resume(self) -> None:
        self._append_floor = self.env.now
        self._plan_key = None
        self._run_sender()
        self.client.check_timeouts()

    # --- state for gauges and the end of a run -----------------------------------------------------

    @property
    def in_flight(self) -> int:
        return self.client.in_flight

    @property
    def connections(self) -> dict[int, ClientConnection]:
        """The current connection to each broker, by broker id."""
        return self.client.connections

    def catch_up(self) -> None:
        """Append the records intended before now (the end of a run reads the accumulator). One intended at now
        itself is not: its arrival is an event at the run's end, which ``Environment.run(until)`` stops ahead of
        (the stop is URGENT), so the run never reached it."""
        if not self.paused:
            self._catch_up(math.nextafter(self.env.now, -math.inf))

    def building(self) -> list[ProducerBatch]:
        """The batches of the request the Sender is building (drained, not yet sent)."""
        return self._building if self._building is not None else []

    def unfinished(self) -> list[tuple[RequestEnvelope, list[ProducerBatch]]]:
        return [(request.envelope, request.payload) for request in self.client.in_flight_requests()]
