"""A broker's replica fetcher thread (Kafka's ``ReplicaFetcherThread`` and ``AbstractFetcherThread``):
it copies the partitions its broker follows from one source broker (their leader).

Broker ``k`` hosts every replica in its ``ReplicaManager``: a partition it follows is a ``Partition``
made follower (``Partition.makeFollower``) whose log the fetcher appends to. Its broker's
``ReplicaFetcherManager`` hands each thread its partitions (``getFetcherId``). The fetcher loop:

* ``maybeFetch``: one Fetch request for every partition of the thread that is not delayed:
  ``replica_id = k``, ``max_wait = replica.fetch.wait.max.ms``, ``min_bytes = replica.fetch.min.bytes``,
  ``max_bytes = replica.fetch.response.max.bytes``; per partition ``fetch_offset`` = the local LEO, the
  local log start, ``max_bytes = replica.fetch.max.bytes``, the leader epoch and the last fetched epoch.
  The thread's fetch session (``FetchSessionHandler``, KIP-227) decides what is sent: the first request is
  full (every partition); the next ones are incremental and carry only the partitions whose data changed
  (a caught-up idle follower sends none), plus the delayed ones to forget. Building it costs the
  partitions that changed, not a walk of all: the thread marks a partition where its fetch data or its
  readiness can change and hands only those to ``FetchSessionHandler.build_incremental`` (a full
  request still walks every partition).
  The leader reads every partition of the session up to its LEO (LOG_END) and parks the request up to
  500 ms when there is nothing new (its DelayedFetch watches every partition of the session, min bytes
  summed over them), so the fetcher needs no sleep between fetches: pacing comes from the leader's long
  poll. The response carries only the partitions with news (records, a new HW or log start, an error);
  the others keep their state. A session error is answered with no partitions and the thread fetches
  again at once, with a full request (``RemoteLeaderEndPoint.fetch``).
* On a response, per partition (only if it is still at the offset it asked for and not backing off:
  it may have been removed and re-added, or truncated, meanwhile): NONE with a diverging epoch ->
  truncate to where the logs stop agreeing (KIP-595 ``truncateOnFetchResponse``; that response's data
  and HW are not applied, the next fetch brings them); NONE -> append the complete batches as follower
  (``Partition.appendRecordsToFollowerOrFutureReplica``; a trailing partial batch is dropped) after the
  append cost, ``HW := clamp(response HW, log start, LEO)`` -- the leader's HW from *before* this fetch,
  so the follower learns an HW advance one round later (Kafka's ``Partition.readRecords``);
  OFFSET_OUT_OF_RANGE -> truncate to the leader's log start/end as appropriate (``fetchOffsetAndTruncate``);
  FENCED_LEADER_EPOCH with our epoch still current -> the partition leaves the thread until new metadata
  (``onPartitionFenced``); other errors -> that partition is delayed by ``replica.fetch.backoff.ms``. A
  request that failed as a whole (no response within the broker's ``request.timeout.ms``, e.g. a dropped
  message) delays every partition, and the next request is a full one that closes the session and asks
  for a new one.
* Then the next fetch, at once.

The fetcher's connection is Kafka's ``BrokerBlockingSender``: a ``NetworkClient`` toward the source broker
with one request in flight, the broker's ``request.timeout.ms`` (30 s), its
``socket.connection.setup.timeout.ms`` / ``.max.ms``, and no reconnect backoff (0 and 0). Before a fetch goes
out, ``NetworkClientUtils.awaitReady`` connects (a TCP handshake); a send that fails -- the connection refused,
reset or not set up in time, the fetch timed out -- closes the client (``NetworkClient.close``: the next
connection starts afresh) and fails the fetch as a whole (``RemoteLeaderEndPoint.fetch``: the session's next
request is full; ``AbstractFetcherThread.processFetchRequest``: every partition backs off
``replica.fetch.backoff.ms``). Not modelled: ``awaitReady``'s own bound, ``replica.socket.timeout.ms`` (30 s),
reached only with a connection setup timeout above it.

Every fetch carries each partition's ``lastFetchedEpoch`` (the log's latest leader epoch), from which the
leader finds divergence (``Partition.fetchRecords``). Partitions join and leave a thread when metadata
moves leadership (``BrokerServer.apply_delta`` -> ``addFetcherForPartitions`` /
``removeFetcherForPartitions``): a partition re-added with the same leader epoch keeps its state; with a
new one it starts again from its LEO.

Faults (a fault on a fetcher thread stands for its broker's replication): ``pause`` freezes the thread
(responses wait, nothing is sent); ``slow_disk`` multiplies the append cost; ``crash`` drops the
connection and everything in flight, keeps the logs on disk, and on restart (a new thread with a new fetch
session) fetches again from each log's end with its latest epoch, as a Kafka 4.x broker does
(``ReplicaManager.initialFetchOffset``): a diverging epoch then truncates what the leader lacks; only a log
without any epoch truncates to its HW first (``truncateToHighWatermark``). Simplifications: the ISR
eligibility of a crashed broker follows the metadata the broker is given (KRaft fencing comes from the
controller); a follower's HW changes complete nothing (consumers fetch from leaders only); an
OFFSET_OUT_OF_RANGE with our LEO inside the leader's log backs off instead of fetching again at once.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from kafkasim.broker.disk import Disk
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import NO_EPOCH, EpochEndOffset, LogReadResult, PartitionData
from kafkasim.broker.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkasim.broker.log import Log
from kafkasim.broker.partition import Partition
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.network.cluster_connection_states import ConnectionConfig
from kafkasim.network.connection import ClientConnection
from kafkasim.network.fetch_request import fetch_request
from kafkasim.network.fetch_session_handler import FetchSessionHandler, FetchSessionRequestData
from kafkasim.network.messages import API_FETCH_FOLLOWER, RequestEnvelope
from kafkasim.network.network_client import NetworkClient
from kafkasim.network.observer import Observer
from kafkasim.sim.calls import Call, Pausable
from kafkasim.sim.cold_start import ColdStart
from kafkasim.sim.cpu_meter import CpuMeter
from kafkasim.sim.distributions import constant_value
from kafkasim.sim.host_cpu import HostCpu

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.broker.replica_manager import ReplicaManager
    from kafkasim.network.ids import IdSource
    from kafkasim.server.replica_fetcher_manager import InitialFetchState

# The follower's own client (ReplicaFetcherBlockingSend) times out after the broker's request timeout.
FOLLOWER_REQUEST_TIMEOUT_MS: Final = 30_000.0
KIB: Final = 1024.0
MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReplicaFetcherConfig:
    """What a replica fetcher reads: Kafka's ``replica.fetch.*`` broker configs (``ReplicationConfigs``),
    with Kafka's defaults. ``num.replica.fetchers`` is the broker's (``BrokerServerConfig``)."""

    wait_max_ms: int = 500  # replica.fetch.wait.max.ms: the fetch's max_wait (long poll in the leader)
    min_bytes: int = 1  # replica.fetch.min.bytes
    max_bytes: int = MIB  # replica.fetch.max.bytes: per partition
    response_max_bytes: int = 10 * MIB  # replica.fetch.response.max.bytes: the fetch's max_bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms: wait after an error / when no partition is ready
    socket_connection_setup_timeout_ms: int = 10_000  # socket.connection.setup.timeout.ms (ServerConfigs)
    socket_connection_setup_timeout_max_ms: int = 30_000  # socket.connection.setup.timeout.max.ms (ServerConfigs)

    def __post_init__(self) -> None:
        # ReplicationConfigs defines every one of them with atLeast(0): with max bytes 0 the leader still
        # returns one batch for the first partition (ReplicaManager.readFromLog's minOneMessage).
        for name in ("wait_max_ms", "min_bytes", "max_bytes", "response_max_bytes", "backoff_ms",
                     "socket_connection_setup_timeout_ms", "socket_connection_setup_timeout_max_ms"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"ReplicaFetcherConfig.{name} must be >= 0, got {value}")

    @property
    def connection(self) -> ConnectionConfig:
        """``BrokerBlockingSender``'s NetworkClient: reconnect backoff 0 and 0, the broker's setup timeouts."""
        return ConnectionConfig(0.0, 0.0, float(self.socket_connection_setup_timeout_ms),
                                float(self.socket_connection_setup_timeout_max_ms))


def offset_truncation_offset(log: Log, leader_epoch: int, leader_end_offset: int) -> int:
    """Where a follower truncates given the leader's end of ``leader_epoch`` (Kafka's
    ``AbstractFetcherThread.getOffsetTruncationState``):

    * the leader's end offset undefined -> the fetch offset (our LEO: nothing to truncate);
    * the leader knows no epochs -> ``min(leader end, LEO)``;
    * we know that epoch -> ``min(our end of it, leader end, LEO)`` (done);
    * our largest epoch below it is smaller -> ``min(our end of that epoch, LEO)``, and the next fetch,
      carrying that older epoch, may diverge again (one epoch walked back per round trip);
    * we know no epoch that low -> ``min(leader end, LEO)``.

    Worked example: our epochs 0@0, 2@50, LEO 80; the leader answers epoch 1 ends at 60 (it never had
    epoch 2). Our largest epoch <= 1 is 0, ending at 50: truncate to 50. The next fetch carries epoch 0 at
    50; if the leader's epoch 0 ended at 40 it answers (0, 40) and we truncate to 40."""
    leo = log.log_end_offset
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return leo
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, leo)
    found = log.end_offset_for_epoch(leader_epoch)
    if found is None:
        return min(leader_end_offset, leo)
    follower_epoch, follower_end = found
    if follower_epoch != leader_epoch:
        return min(follower_end, leo)
    return min(follower_end, leader_end_offset, leo)


class FollowerPartition:
    """A partition this thread replicates (Kafka's ``PartitionFetchState``): the broker's ``Partition``
    (a follower), its log, and the fetch state; ``rank`` is its place in the thread's partition order."""

    __slots__ = ("tp", "partition", "log", "delayed_until", "leader_epoch", "rank")

    def __init__(self, tp: TopicPartition, partition: Partition, leader_epoch: int, rank: int) -> None:
        self.tp = tp
        self.partition = partition
        self.log: Log = partition.log
        self.delayed_until = -math.inf
        self.leader_epoch = leader_epoch
        self.rank = rank


class ReplicaFetcherThread(Pausable):
    """A replica fetcher thread of broker ``broker_id`` toward ``source_broker`` (the leader of its
    partitions), named ``name`` (its client name in the request rows)."""

    def __init__(
        self,
        env: Environment,
        name: str,
        broker_id: int,
        source_broker: int,
        config: ReplicaFetcherConfig,
        replica_manager: ReplicaManager,
        connect: Callable[[int], ClientConnection],
        append_cost: Callable[[], float],
        append_cost_per_kib: Callable[[], float],
        ids: IdSource,
        observer: Observer,
        *,
        stop_ms: float = math.inf,
        connection_rng: random.Random | None = None,
    ) -> None:
        super().__init__()
        self.env = env
        self.name = name
        self._ids = ids
        self._observer = observer
        self._checks = observer.checks
        self._stop_ms = stop_ms  # nothing new is sent from then on
        # BrokerBlockingSender's NetworkClient: the source broker only, one request in flight.
        self.client: NetworkClient[None] = NetworkClient(
            env, self, connect, config.connection,
            connection_rng if connection_rng is not None else random.Random(0),
            request_timeout_ms=FOLLOWER_REQUEST_TIMEOUT_MS, max_in_flight=1,
            complete=self._handle_fetch_response, on_ready=self._on_node_ready,
            on_disconnect=self._on_node_disconnect,
        )
        self._in_flight: RequestEnvelope | None = None
        self.broker_id = broker_id
        self._source_broker = source_broker
        self.config = config
        self._replica_manager = replica_manager
        self.partitions: dict[TopicPartition, FollowerPartition] = {}
        self._next_rank = 0
        # What lets a fetch cost O(partitions that changed) (FetchSessionHandler.build_incremental): the
        # partitions whose fetch data (LEO, log start, latest epoch, leader epoch) or readiness may have
        # changed since the last request -- marked where that happens -- and a heap of the delays set
        # (delayed_until, tie-break, partition), so a partition ready again is found without a walk.
        self._changed: dict[TopicPartition, None] = {}
        self._delays: list[tuple[float, int, FollowerPartition]] = []
        self._delay_seq = 0
        # The fetch session toward the source broker (ReplicaFetcherThread's fetchSessionHandler, KIP-227).
        self.fetch_session = FetchSessionHandler(source_broker)
        self._append_cost = append_cost
        self._append_cost_per_kib = append_cost_per_kib
        # Constant costs (the default) are read here once: no sampler call per appended response.
        fixed_append, fixed_per_kib = constant_value(append_cost), constant_value(append_cost_per_kib)
        self._fixed_append: tuple[float, float] | None = (
            None if fixed_append is None or fixed_per_kib is None else (fixed_append, fixed_per_kib)
        )
        # The fetch awaiting its response (``_in_flight``, it can time out); then, once answered, the append
        # of its response keeps the fetcher thread busy (no new fetch), but the request is done.
        self._appending = False
        # Appending a response (its append cost: on a core, or waiting for the host's core when it models them),
        # not waiting for a fetch or the disk: one of the machine's running threads (kafkasim.sim.machine_load).
        self.running = False
        self._wakeup: Call | None = None
        self.crashed = False
        self.started = False
        self.disk_factor = 1.0
        self.meter = CpuMeter()  # the broker's (BrokerServer)
        # The broker's disk when the run models flushes: a follower append's flush (flush.messages) holds the
        # thread before its next fetch, as UnifiedLog.append's flush holds Kafka's fetcher thread.
        self.disk: Disk | None = None
        # The host's cores when the scenario sets `cores` (BrokerServer): the append's CPU waits for a core.
        self.cpu: HostCpu | None = None
        # An append started after the thread has been without one costs more (BrokerServer: machine_cold_start,
        # kafkasim.sim.cold_start); idle since its last append ended.
        self.cold: ColdStart | None = None
        self._idle_since = 0.0
        # Bumped by a crash: work scheduled before it (an append in progress) is abandoned.
        self._generation = 0
        # Truncations made on diverging epochs (truncateOnFetchResponse).
        self.truncations = 0
        # Told of every fetch response received (BrokerServer.count_fetches: the broker's counted stalls).
        self.on_response: Callable[[], None] | None = None

    # --- partitions (AbstractFetcherThread.addPartitions / removePartitions) -------------------------

    @property
    def source_broker(self) -> int:
        return self._source_broker

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    def add_partitions(self, partitions: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Fetch these partitions too: each is a follower ``Partition`` of this broker's ReplicaManager
        (Kafka's ``AbstractFetcherThread.addPartitions`` / ``partitionFetchState``).

        A partition already here with the same leader epoch keeps its state (its delay included); otherwise
        it starts afresh: a log with leader epochs fetches from its LEO with its latest epoch as the last
        fetched one (divergence is then found by the leader, KIP-595); a log without epochs first truncates
        to its HW (``truncateToHighWatermark``: the ``Truncating`` state of a partition without epochs).
        Either way it moves to the end of the partition order (``updateAndMoveToEnd``)."""
        rm = self._replica_manager
        own = self.partitions
        for tp, state in partitions.items():
            old = own.pop(tp, None)
            rank = self._next_rank
            self._next_rank += 1
            if old is not None and old.leader_epoch == state.current_leader_epoch:
                old.rank = rank
                own[tp] = old
            else:
                fp = own[tp] = FollowerPartition(tp, rm.get_partition_or_exception(tp), state.current_leader_epoch, rank)
                log = fp.log
                if log.latest_epoch < 0:
                    offset = state.init_offset if state.init_offset is not None else log.high_watermark
                    if log.truncate_to(offset):
                        self._report_log(fp)
            self._changed[tp] = None

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            if self.partitions.pop(tp, None) is not None:
                self._changed[tp] = None

    def wake(self) -> None:
        """Partitions were added: fetch now if the thread is idle (Kafka signals ``partitionMapCond``)."""
        if self.started and not self.crashed:
            self.run_or_defer(self._maybe_fetch)

    def _delay(self, fp: FollowerPartition, until: float) -> None:
        """Back ``fp`` off until ``until`` (AbstractFetcherThread's delayed PartitionFetchState)."""
        fp.delayed_until = until
        self._changed[fp.tp] = None
        self._delay_seq += 1
        heapq.heappush(self._delays, (until, self._delay_seq, fp))

    def start(self) -> None:
        self.started = True
        Call(self.env, 0.0, lambda _e: self._maybe_fetch())

    # --- fetch -------------------------------------------------------------------------------------

    def _maybe_fetch(self) -> None:
        if self.crashed or self._in_flight is not None or self._appending:
            return
        if self.paused:
            self._deferred.append(self._maybe_fetch)
            return
        now = self.env.now
        if now >= self._stop_ms:
            return
        client = self.client
        source = self._source_broker
        if not client.is_ready(source, now):
            # BrokerBlockingSender.sendRequest: NetworkClientUtils.awaitReady connects before the fetch goes
            # (on_ready fetches) -- when there is a fetch to send: some partition is ready.
            if not any(fp.delayed_until <= now for fp in self.partitions.values()):
                self._wait_for_ready_partition(now)
                return
            if not client.ready(source, now):
                return
        cfg = self.config
        fetch_data = self.build_fetch(now)
        if not fetch_data.session_partitions and not fetch_data.to_forget:
            self._wait_for_ready_partition(now)
            return
        envelope = fetch_request(
            self._ids, API_FETCH_FOLLOWER, self.name, self.broker_id, cfg.wait_max_ms, cfg.min_bytes,
            cfg.response_max_bytes, fetch_data, now,
        )
        self._in_flight = envelope
        client.send(source, envelope, None)

    def _wait_for_ready_partition(self, now: float) -> None:
        """No partition ready: wait for the first delayed one (Kafka waits on a condition, backoff)."""
        next_ready = self._next_ready(now)
        if next_ready < math.inf:
            self._schedule_fetch(next_ready - now)

    def build_fetch(self, now: float) -> FetchSessionRequestData:
        """ReplicaFetcherThread.buildFetch: every partition ready to fetch goes to the session's builder; a
        delayed one is left out, so the session forgets it until it is ready again.

        A full request walks every partition (Kafka's way). An incremental one hands the session only the
        partitions marked changed since the last request (``FetchSessionHandler.build_incremental``) --
        the same request, for the cost of those: every other partition is ready now and was then, with the
        same data, so Kafka's walk would find it unchanged in the session.
        """
        changed = self._changed
        delays = self._delays
        while delays and delays[0][0] <= now:
            changed[heapq.heappop(delays)[2].tp] = None  # ready again (or a stale entry: harmless)
        session = self.fetch_session
        if session.next_metadata.is_full:
            builder = session.new_builder(copy_session_partitions=False)
            for tp, fp in self.partitions.items():
                if fp.delayed_until <= now:
                    builder.add(tp, self._partition_data(fp))
            changed.clear()
            return builder.build()
        partitions = self.partitions
        changes: list[tuple[int, TopicPartition, PartitionData | None]] = []
        for tp in changed:
            wanted = partitions.get(tp)
            if wanted is None or wanted.delayed_until > now:
                changes.append((0, tp, None))  # removed or delayed: forgotten if in the session
            else:
                changes.append((wanted.rank, tp, self._partition_data(wanted)))
        changed.clear()
        return session.build_incremental(changes)

    def _partition_data(self, fp: FollowerPartition) -> PartitionData:
        log = fp.log
        last_epoch = log.latest_epoch
        return PartitionData(
            log.log_end_offset,
            log.log_start_offset,
            self.config.max_bytes,
            fp.leader_epoch,
            last_epoch if last_epoch >= 0 else NO_EPOCH,
        )

    def _next_ready(self, now: float) -> float:
        """When the first delayed partition is ready (inf if none is delayed): the top of the delay heap once
        the entries no longer current (re-delayed, reset by a restart, partition removed) are dropped."""
        delays = self._delays
        partitions = self.partitions
        while delays:
            until, _, fp = delays[0]
            if until > now and fp.delayed_until == until and partitions.get(fp.tp) is fp:
                return until
            heapq.heappop(delays)
        return math.inf

    def _schedule_fetch(self, delay: float) -> None:
        if self._wakeup is not None:
            self._wakeup.cancel()
        generation = self._generation

        def wake(_e: object) -> None:
            self._wakeup = None
            if generation == self._generation:
                self._maybe_fetch()

        self._wakeup = Call(self.env, max(0.0, delay), wake)

    # --- responses ---------------------------------------------------------------------------------

    def _handle_fetch_response(self, _node_id: int, envelope: RequestEnvelope, _payload: None,
                               disconnected: bool) -> None:
        """The outcome of the fetch from the NetworkClient (never while paused: it holds them back)."""
        if self.crashed or envelope is not self._in_flight:
            return
        if disconnected:
            # REQUEST_TIMED_OUT or NETWORK_EXCEPTION (set by the NetworkClient); on_disconnect backs off.
            self._in_flight = None
            self._observer.request_finished(envelope)
            return
        # Received: the request is complete -- its outcome is recorded now and no timeout can touch it
        # (NetworkClient completes a request when it reads the response). The append is the fetcher
        # thread's own work after that; the next fetch goes out when it is done.
        self._in_flight = None
        received = envelope.response
        assert received is not None
        fetch_response = received.fetch_response()
        self._observer.request_finished(envelope)  # may drop envelope.response: keep our reference
        if self.on_response is not None:  # read into the heap, whatever the session makes of it
            self.on_response()
        if not self.fetch_session.handle_response(fetch_response):
            # RemoteLeaderEndPoint.fetch: a session error (or partitions the session does not hold) yields no
            # partition data; the fetcher loop fetches again at once, a full request this time.
            self._maybe_fetch()
            return
        # An incremental response carries only the partitions with news; the others keep their state.
        response = fetch_response.responses
        self._appending = True
        cost = 0.0
        fixed = self._fixed_append
        for _tp, result in response:
            if result.error == Errors.NONE and result.info.records:
                records = result.info.records
                size = sum(b.size_in_bytes for b in records)
                if fixed is not None:
                    cost += fixed[0] * len(records) + fixed[1] * (size / KIB)
                else:
                    cost += self._append_cost() * len(records) + self._append_cost_per_kib() * (size / KIB)
        cost *= self.disk_factor
        if cost > 0:
            cold = self.cold
            if cold is not None:
                # An append started after the thread has been without one costs more (kafkasim.sim.cold_start).
                cost += cold.extra(self.env.now - self._idle_since)
            self.meter.fetchers_ms += cost
            generation = self._generation
            self.running = True
            cpu = self.cpu
            if cpu is None:
                Call(self.env, cost, partial(self._process, response, generation))
            else:
                cpu.run(cost, partial(self._process, response, generation))
        else:
            self._process(response, self._generation)

    def _process(
        self, response: Sequence[tuple[TopicPartition, LogReadResult]], generation: int, _event: object = None
    ) -> None:
        if generation != self._generation:
            return  # crashed meanwhile: the append never happened
        self.running = False
        self._idle_since = self.env.now
        if self.paused:
            self._deferred.append(lambda: self._process(response, generation))
            return
        self._appending = False
        disk = self.disk
        if disk is not None:
            disk.begin()
        now = self.env.now
        backoff = float(self.config.backoff_ms)
        # The request's partitions: the session as it was sent (nothing changes it until the next build).
        requested = self.fetch_session.session_partitions
        diverging: list[tuple[FollowerPartition, EpochEndOffset]] = []
        for tp, result in response:
            fp = self.partitions.get(tp)
            if fp is None:
                continue
            # AbstractFetcherThread.processFetchRequest: a partition removed and re-added, or truncated, while
            # the fetch was out is processed only if it is ready and still at the offset requested.
            data = requested.get(tp)
            if data is None or data.fetch_offset != fp.log.log_end_offset or fp.delayed_until > now:
                continue
            # Its log may move (append, log start, truncation) or it may back off: its fetch data may change.
            self._changed[tp] = None
            error = result.error
            if error == Errors.NONE:
                if result.diverging_epoch is not None:
                    # Truncate, but do not apply this response's data and HW: the next fetch brings them.
                    diverging.append((fp, result.diverging_epoch))
                else:
                    self._process_partition_data(
                        fp, result.info.records, result.high_watermark, result.log_start_offset
                    )
            elif error == Errors.OFFSET_OUT_OF_RANGE:
                self._handle_out_of_range(fp, result)
            elif error == Errors.FENCED_LEADER_EPOCH and data.current_leader_epoch == fp.leader_epoch:
                # onPartitionFenced: our epoch is older than the leader's and we know no newer one: the
                # partition leaves the thread (markPartitionFailed) until new metadata adds it again.
                self.remove_partitions((tp,))
            else:
                self._delay(fp, now + backoff)
        if diverging:
            self._truncate_on_fetch_response(diverging)
        if disk is not None:
            held = disk.take_delay()
            if held > 0.0:
                # The appends flushed (flush.messages): the thread waits for the disk, then fetches.
                self._appending = True
                Call(self.env, held, partial(self._flushed, generation))
                return
        self._maybe_fetch()

    def _flushed(self, generation: int, _event: object = None) -> None:
        if generation != self._generation:
            return  # crashed meanwhile
        if self.paused:
            self._deferred.append(lambda: self._flushed(generation))
            return
        self._appending = False
        self._maybe_fetch()

    def _truncate_on_fetch_response(self, diverging: Sequence[tuple[FollowerPartition, EpochEndOffset]]) -> None:
        """Kafka's ``AbstractFetcherThread.truncateOnFetchResponse`` (KIP-595): truncate each log to where it
        stops agreeing with the leader (``getOffsetTruncationState``); the partition keeps fetching, from
        its new LEO with the log's latest epoch after truncation as the last fetched one -- so a follower
        whose epoch the leader does not know walks back one epoch per round trip."""
        for fp, epoch_end in diverging:
            offset = offset_truncation_offset(fp.log, epoch_end.leader_epoch, epoch_end.end_offset)
            # ReplicaFetcherThread.truncate -> Partition.truncateTo (the HW is clamped to the new LEO).
            if fp.log.truncate_to(offset):
                self.truncations += 1
                self._report_log(fp)

    def _report_log(self, fp: FollowerPartition) -> None:
        if self._checks:
            log = fp.log
            self._observer.replica_log_end(fp.tp, self.broker_id, log.log_end_offset)
            # -1: not a value from the leader (a truncation, a restart): the HW may have dropped with the log.
            self._observer.replica_high_watermark(fp.tp, self.broker_id, log.high_watermark, log.log_end_offset, -1)

    def _process_partition_data(
        self, fp: FollowerPartition, records: Sequence[RecordBatch], leader_hw: int, leader_log_start: int
    ) -> None:
        log = fp.log
        if records:
            # processPartitionData: only batches at the fetch offset (= the local LEO) are appended.
            leo = log.log_end_offset
            fresh = [b for b in records if b.base_offset >= leo]
            if fresh:
                fp.partition.append_records_to_follower_or_future_replica(fresh)
                if self._checks:
                    self._observer.replica_log_end(fp.tp, self.broker_id, log.log_end_offset)
        if leader_hw >= 0:
            log.maybe_update_high_watermark(leader_hw)
        if leader_log_start > log.log_start_offset:
            log.maybe_increment_log_start_offset(leader_log_start)
        if self._checks:
            self._observer.replica_high_watermark(fp.tp, self.broker_id, log.high_watermark, log.log_end_offset,
                                                  fp.leader_epoch)

    def _handle_out_of_range(self, fp: FollowerPartition, result: LogReadResult) -> None:
        """Kafka's ``fetchOffsetAndTruncate`` (the leader's end and start offsets come with the error here):
        a leader ending below our LEO -> truncate to its end; a leader starting above our LEO -> empty the log
        and start at its start; otherwise fetch again from our LEO (``max(leaderStart, LEO)``)."""
        log = fp.log
        leader_end = result.log_end_offset
        if leader_end >= 0 and log.log_end_offset > leader_end:
            log.truncate_to(leader_end)
        elif result.log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(result.log_start_offset)
        else:
            self._delay(fp, self.env.now + float(self.config.backoff_ms))
            return
        self._changed[fp.tp] = None
        self._report_log(fp)

    def _on_node_ready(self, _node_id: int) -> None:
        """Connected to the source broker (``awaitReady`` returns): the fetch goes."""
        self._maybe_fetch()

    def _on_node_disconnect(self, node_id: int, _request_timed_out: bool) -> None:
        """The connection to the leader failed (refused, reset, not set up in time, or the fetch timed out):
        ``BrokerBlockingSender.sendRequest`` closes its NetworkClient (the node is forgotten), the session's
        next request is a full one (``RemoteLeaderEndPoint.fetch``), and every partition backs off
        ``replica.fetch.backoff.ms`` (``AbstractFetcherThread.handlePartitionsWithErrors``); the next fetch
        connects again."""
        self.client.close(node_id)
        self.fetch_session.handle_error()
        if self._appending:
            return  # the append in progress finishes first; its end fetches (and connects)
        backoff = float(self.config.backoff_ms)
        for fp in self.partitions.values():
            self._delay(fp, self.env.now + backoff)
        self._schedule_fetch(backoff)

    # --- faults ------------------------------------------------------------------------------------

    def crash(self) -> None:
        """Stop: the connection breaks, in-flight work is lost, the logs stay on disk."""
        if self.crashed:
            return
        self.crashed = True
        self._observer.broker_crashed(self.broker_id, list(self.partitions))
        self._stop_in_flight()

    def _stop_in_flight(self) -> None:
        self._generation += 1
        self._deferred.clear()
        self.paused = False
        # The fetch in flight fails with the connection; a response being appended is lost with the append.
        envelope = self._in_flight
        self._in_flight = None
        self._appending = False
        self.running = False
        if envelope is not None:
            envelope.error = Errors.NETWORK_EXCEPTION
            self._observer.request_finished(envelope)
        self.client.close(self._source_broker)

    def restart(self) -> None:
        """Come back: reconnect and fetch again, each partition from its LEO with its latest epoch (Kafka 4.x:
        ``ReplicaManager.initialFetchOffset`` is the LEO of a log with leader epochs, and a diverging epoch in
        the first responses truncates what the leader does not have). Only a log without epochs truncates to
        its HW first (``truncateToHighWatermark``)."""
        if not self.crashed:
            return
        self.crashed = False
        # A new fetcher thread, a new session handler: its first request is full and asks for a new session
        # (the old session stays in the leader's cache until evicted).
        self.fetch_session = FetchSessionHandler(self._source_broker)
        for fp in self.partitions.values():
            log = fp.log
            if log.latest_epoch < 0 and log.truncate_to(log.high_watermark):
                self._report_log(fp)
            fp.delayed_until = -math.inf
            self._changed[fp.tp] = None
        self._maybe_fetch()

    def shutdown(self) -> None:
        """Kafka's ``shutdownIdleFetcherThreads`` for this thread: it stops; a fetch in flight is dropped."""
        if self.crashed:
            return
        self.crashed = True
        self._stop_in_flight()

    def on_resume(self) -> None:
        # After the responses that arrived during the pause (NetworkClient.poll's order).
        self.client.check_timeouts()
        self._maybe_fetch()

    def unfinished(self) -> list[RequestEnvelope]:
        return [self._in_flight] if self._in_flight is not None else []

    def delete_old_segments(self) -> None:
        """The retention task's pass over this fetcher's logs (not when crashed)."""
        if not self.crashed:
            for fp in self.partitions.values():
                log = fp.log
                log_start = log.log_start_offset
                log.delete_old_segments()
                if log.log_start_offset != log_start:
                    self._changed[fp.tp] = None
