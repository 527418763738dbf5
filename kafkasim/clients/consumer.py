"""A Kafka consumer's fetch loop: long-poll the leaders of every partition of a topic, up to the HW.

One fetch in flight per broker at a time (Kafka's ``AbstractFetch.prepareFetchRequests``: one request per
node that leads a fetchable partition and has no request pending; the next one to a node goes as soon as
the previous response from it arrived), each on its own connection to that broker and independent of the
others. Each fetch asks for every assigned partition the broker leads, at its position, with
``fetch.min.bytes``, ``fetch.max.wait.ms`` (the DelayedFetch delay, ``ReplicaManager.fetchMessages``),
``fetch.max.bytes`` and ``max.partition.fetch.bytes``, through the node's fetch session (KIP-227): the
first request lists every partition, the next ones only those whose position moved, and a response
carries only the partitions with news (a partition left out keeps its position). The broker reads up to the HW (isolation
HIGH_WATERMARK). On a response the complete batches are consumed -- the first time a consumer sees a batch is
recorded -- a trailing partial batch is discarded, and the position moves to the end of the last complete
batch.

Errors: OFFSET_OUT_OF_RANGE resets the partition to the log start (``auto.offset.reset=earliest``, which
is where the consumer starts too); other errors retry that broker's fetch after ``retry.backoff.ms``
(100). A session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) answers no partition;
the next fetch, a full one, goes at once.

Connections (``kafkasim.network.network_client``, Kafka's ``NetworkClient`` under ``ConsumerNetworkClient``):
a fetch to a broker goes out once the connection to it is READY (the first one, and each after a
disconnect, is a TCP handshake bounded by ``socket.connection.setup.timeout.ms``). A fetch without a
response after ``request.timeout.ms`` disconnects from that broker (REQUEST_TIMED_OUT); a reset or refused
connection fails it with NETWORK_EXCEPTION. Either way the fetch session's next request is a full one
(``AbstractFetch.handleFetchFailure``) and the broker is fetched from again once its reconnect backoff has
passed (``ConsumerNetworkClient.isUnavailable``), after a request timeout no sooner than ``retry.backoff.ms``.

Leader changes (``AbstractFetch``, ``FetchCollector.handleInitializeErrors``, KIP-320): NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH and the other invalid-metadata errors, a disconnect or a request timeout request a
metadata update (``Metadata``, paced by the KIP-580 backoff). When the metadata names a new leader or leader
epoch for a partition, the partition leaves its old node's fetch session (forgotten on the next incremental
request) and, if the consumer has consumed from it, waits for validation (``SubscriptionState``
AWAIT_VALIDATION): one OffsetsForLeaderEpoch round trip to the new leader with the epoch of the last batch it
consumed (``OffsetsForLeaderEpochUtils``). An end offset below the position means the log was truncated under
the consumer (unclean election, acks=1 loss): it seeks back to that end offset (``seekValidated``, a reset
policy is set); then it fetches from the new leader.

The application's poll loop (simulator-only ``costs``, ``ConsumerCosts``; absent = free, every batch consumed at its
response): records are handled by the consumer's one application thread. A response's new batches join the
fetch buffer (``FetchBuffer``: Kafka's completedFetches); when the thread is idle, ``poll()`` takes everything
buffered (``FetchCollector.collectFetch``; ``max.poll.records`` is not modelled: one poll takes it all), sends
the next fetch to the nodes whose data it took -- Kafka's pre-fetch: ``ClassicKafkaConsumer.poll`` calls
``sendFetches`` "before returning the fetched records ... to enable pipelining while the user is handling the
fetched records", and ``AbstractFetch.fetchablePartitions`` excludes the partitions with buffered data, so a
node whose response is still buffered gets no fetch -- then handles the records: ``per_poll`` once per poll,
then ``per_record`` per record of each batch in turn. A batch counts as consumed (the records table's
``consumed_ms``) when its last record is handled, so later batches queue behind earlier ones. Kafka's metrics
for these times: the consumer's ``time-between-poll-avg/max`` and ``poll-idle-ratio-avg`` (processing shows as a
longer time between polls) and ``fetch-latency-avg`` (the fetch round trip, unchanged). A stall that pauses the
consumer mid-batch delays that batch to the stall's end (the work left is not added on top: a simplification).

Not modelled: group membership and rebalances (a consumer owns all partitions of its topic), commits;
``currentLeaderEpoch`` is not sent in fetches (a deposed
leader that does not know it yet serves up to its HW); every connection of a consumer shares its one
network path (its host's link).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import CONSUMER_REPLICA_ID, PartitionData
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.clients.metadata import INVALID_METADATA_ERRORS, NO_LEADER, Metadata
from kafkasim.network.connection import ClientConnection
from kafkasim.network.fetch_request import fetch_request
from kafkasim.network.fetch_session_handler import FetchSessionHandler, FetchSessionRequestData
from kafkasim.network.messages import API_FETCH_CONSUMER, RequestEnvelope
from kafkasim.network.network_client import NetworkClient
from kafkasim.network.observer import Observer
from kafkasim.sim.backoff import ExponentialBackoff
from kafkasim.sim.calls import Call, Pausable

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.ids import IdSource

RETRY_BACKOFF_MS: Final = 100.0  # consumer retry.backoff.ms default
# CommonClientConfigs: the backoff's multiplier and jitter (KIP-580), for metadata refreshes.
RETRY_BACKOFF_EXP_BASE: Final = 2
RETRY_BACKOFF_JITTER: Final = 0.2
# ConsumerUtils.CONSUMER_MAX_INFLIGHT_REQUESTS_PER_CONNECTION: the consumer's NetworkClient's limit (its
# fetcher keeps one fetch per node in flight anyway: nodesWithPendingFetchRequests).
CONSUMER_MAX_INFLIGHT_REQUESTS_PER_CONNECTION: Final = 100


class NodeFetch:
    """The consumer's fetch toward one broker: the fetch session (``AbstractFetch.sessionHandlers``: one
    ``FetchSessionHandler`` per node), the request in flight (at most one: ``nodesWithPendingFetchRequests``);
    ``changed`` the partitions whose position moved, or which joined or left this node, since the last request
    (all the session needs to build an incremental one: ``FetchSessionHandler.build_incremental``)."""

    __slots__ = ("node_id", "changed", "session", "in_flight", "wanted", "buffered")

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.changed: dict[TopicPartition, None] = {}
        self.session = FetchSessionHandler(node_id)
        self.in_flight: RequestEnvelope | None = None
        self.wanted = 0  # partitions this node leads that the consumer fetches now
        # Its last response's records wait in the fetch buffer for poll() (only with costs): no fetch till then.
        self.buffered = False


class ConsumerCosts:
    """The application thread's processing time (simulator-only): ``per_poll`` drawn once per ``poll()`` that
    returns records, ``per_record`` drawn once per batch and multiplied by its record count (ms)."""

    __slots__ = ("per_poll", "per_record")

    def __init__(self, per_poll: Callable[[], float], per_record: Callable[[], float]) -> None:
        self.per_poll = per_poll
        self.per_record = per_record


class Consumer(Pausable):
    """One consumer client fetching all partitions of its topic from offset 0, each from its leader:
    ``connect(broker_id)`` makes a connection (for its NetworkClient), ``leaders`` maps each partition to its leader (default:
    broker 0 leads them all). ``fetch_metadata()`` answers a Metadata request (``{tp: (leader, epoch)}``)
    one ``metadata_round_trip_ms`` after it is sent; ``validate(broker, tp, epoch)`` answers an
    OffsetsForLeaderEpoch request at the broker (the end offset of ``epoch`` there, or None if that broker
    cannot answer: not the leader, down), one round trip after it is sent."""

    def __init__(
        self,
        env: Environment,
        config: ConsumerClientConfig,
        partitions: Sequence[TopicPartition],
        connect: Callable[[int], ClientConnection],
        ids: IdSource,
        observer: Observer,
        *,
        leaders: Mapping[TopicPartition, int] | None = None,
        stop_ms: float = math.inf,
        fetch_metadata: Callable[[], Mapping[TopicPartition, tuple[int, int]]] | None = None,
        validate: Callable[[int, TopicPartition, int], int | None] | None = None,
        metadata_round_trip_ms: float = 0.0,
        retry_rng: random.Random | None = None,
        connection_rng: random.Random | None = None,
        costs: ConsumerCosts | None = None,
    ) -> None:
        super().__init__()
        self.env = env
        self.name = config.name
        # The application thread (only with costs): the fetch buffer (completedFetches: each response's new
        # batches, with the node they came from), the batches of the poll being handled, whether it is busy.
        self._costs = costs
        self._fetch_buffer: list[tuple[NodeFetch, list[RecordBatch]]] = []
        self._polled: deque[RecordBatch] = deque()
        self._handling = False
        self._ids = ids
        self._observer = observer
        self._stop_ms = stop_ms  # nothing new is sent from then on
        self.config = config
        self.partitions = list(partitions)
        self._rank = {tp: i for i, tp in enumerate(self.partitions)}
        self.positions: dict[TopicPartition, int] = {tp: 0 for tp in self.partitions}
        # The leader epoch of the last batch consumed from each partition (FetchPosition.offsetEpoch).
        self.position_epochs: dict[TopicPartition, int] = {}
        self.batches_consumed = 0
        self.client: NetworkClient[None] = NetworkClient(
            env, self, connect, config.connection,
            connection_rng if connection_rng is not None else random.Random(0),
            request_timeout_ms=float(config.request_timeout_ms),
            max_in_flight=CONSUMER_MAX_INFLIGHT_REQUESTS_PER_CONNECTION,
            complete=self._handle_fetch_response, on_ready=self._on_node_ready,
            on_disconnect=self._on_node_disconnect,
        )
        layout = {tp: (leaders[tp] if leaders is not None else 0, 0) for tp in self.partitions}
        rng = retry_rng if retry_rng is not None else random.Random(0)
        self.metadata = Metadata(layout, ExponentialBackoff(
            config.retry_backoff_ms, RETRY_BACKOFF_EXP_BASE, config.retry_backoff_max_ms, RETRY_BACKOFF_JITTER, rng))
        self._fetch_metadata = fetch_metadata
        self._validate = validate
        self._round_trip_ms = metadata_round_trip_ms
        self._metadata_fetch: Call | None = None
        self._metadata_wait: Call | None = None
        # Where each partition is fetched from (its leader as the consumer knows it), and the partitions
        # waiting for their position to be validated against a new leader.
        self._leader: dict[TopicPartition, int] = {tp: leader for tp, (leader, _) in layout.items()}
        self._awaiting: set[TopicPartition] = set()
        self._nodes: dict[int, NodeFetch] = {}
        for tp in self.partitions:
            self._node(self._leader[tp]).wanted += 1

    def _node(self, node_id: int) -> NodeFetch:
        node = self._nodes.get(node_id)
        if node is None:
            node = self._nodes[node_id] = NodeFetch(node_id)
        return node

    def _wanted(self, node: NodeFetch, tp: TopicPartition) -> bool:
        return self._leader[tp] == node.node_id and tp not in self._awaiting

    @property
    def connections(self) -> dict[int, ClientConnection]:
        """The current connection to each broker, by broker id."""
        return self.client.connections

    def start(self) -> None:
        Call(self.env, 0.0, lambda _e: self._fetch())

    def _fetch(self) -> None:
        """``sendFetches``: a fetch to every broker with no request pending."""
        for node in list(self._nodes.values()):
            self._fetch_from(node)

    def _fetch_from(self, node: NodeFetch) -> None:
        if self.paused:
            self._deferred.append(lambda: self._fetch_from(node))
            return
        now = self.env.now
        if now >= self._stop_ms or node.in_flight is not None or node.wanted == 0 or node.buffered:
            return
        if not self.client.ready(node.node_id, now):
            # ConsumerNetworkClient.trySend: the fetch goes once the node is READY. A connection under way
            # fetches when it is (on_ready); a node in its reconnect backoff (isUnavailable) when that ends
            # (on_disconnect scheduled it).
            return
        cfg = self.config
        envelope = fetch_request(
            self._ids, API_FETCH_CONSUMER, self.name, CONSUMER_REPLICA_ID, cfg.fetch_max_wait_ms,
            cfg.fetch_min_bytes, cfg.fetch_max_bytes, self.build_fetch(node), now,
        )
        node.in_flight = envelope
        self.client.send(node.node_id, envelope, None)

    def build_fetch(self, node: NodeFetch) -> FetchSessionRequestData:
        """AbstractFetch.prepareFetchRequests: every partition fetched from the node goes to the node's
        session builder, which sends only the new and moved ones once the session exists. A full request
        walks them all (Kafka's way); an incremental one hands the session only the partitions whose
        position moved, or which joined or left the node, since the last request
        (``FetchSessionHandler.build_incremental``: the same request, for the cost of those)."""
        max_bytes = self.config.max_partition_fetch_bytes
        positions = self.positions
        session = node.session
        changed = node.changed
        if session.next_metadata.is_full:
            builder = session.new_builder()
            for tp in self.partitions:
                if self._wanted(node, tp):
                    builder.add(tp, PartitionData(positions[tp], -1, max_bytes))
            changed.clear()
            return builder.build()
        rank = self._rank
        changes: list[tuple[int, TopicPartition, PartitionData | None]] = [
            (rank[tp], tp, PartitionData(positions[tp], -1, max_bytes) if self._wanted(node, tp) else None)
            for tp in changed
        ]
        changed.clear()
        return session.build_incremental(changes)

    def _handle_fetch_response(self, node_id: int, envelope: RequestEnvelope, _payload: None,
                               disconnected: bool) -> None:
        """The outcome of a fetch from the NetworkClient (never while paused: it holds them back)."""
        node = self._nodes[node_id]
        if envelope is not node.in_flight:
            return
        node.in_flight = None
        if disconnected:
            # AbstractFetch.handleFetchFailure: the session's next request is a full one (FetchSessionHandler.
            # handleError); on_disconnect schedules it.
            node.session.handle_error()
            self._observer.request_finished(envelope)
            return
        received = envelope.response
        assert received is not None
        response = received.fetch_response()
        if not node.session.handle_response(response):
            # AbstractFetch.handleFetchSuccess: a session error -- the partitions are ignored and the next
            # fetch to the node (a full one) goes out at once.
            self._observer.request_finished(envelope)
            self._fetch_from(node)
            return
        now = self.env.now
        positions = self.positions
        changed = node.changed
        retry = False
        costs = self._costs
        fresh: list[RecordBatch] = []
        # An incremental response carries only the partitions with news; the others keep their position.
        for tp, result in response.responses:
            if not self._wanted(node, tp):
                continue  # moved to another leader meanwhile (FetchCollector: no longer fetchable here)
            error = result.error
            if error == Errors.NONE:
                records = result.info.records
                if records:
                    # Only batches at or after the position are new (a read starts at the batch holding it).
                    position = positions[tp]
                    for batch in records:
                        if batch.last_offset >= position:
                            if costs is not None:
                                fresh.append(batch)
                                continue
                            self._observer.batch_consumed(self.name, batch, now)
                            self.batches_consumed += 1
                    positions[tp] = records[-1].next_offset
                    self.position_epochs[tp] = records[-1].partition_leader_epoch
                    changed[tp] = None
            elif error == Errors.OFFSET_OUT_OF_RANGE:
                positions[tp] = max(0, result.log_start_offset)
                changed[tp] = None
            else:
                if error in INVALID_METADATA_ERRORS:
                    self._request_metadata_update()
                retry = True
        self._observer.request_finished(envelope)
        if fresh:
            # The records wait in the fetch buffer; the node's next fetch goes when poll() takes them (after
            # a retriable error in the same response, after the retry backoff as before).
            node.buffered = not retry
            self._fetch_buffer.append((node, fresh))
            if not self._handling:
                self._poll()
            if node.buffered:
                return
        if retry:
            Call(self.env, RETRY_BACKOFF_MS, lambda _e: self._fetch_from(node))
        else:
            self._fetch_from(node)

    # --- the application thread (only with costs) ---------------------------------------------------

    def _poll(self) -> None:
        """``KafkaConsumer.poll`` on the idle application thread: take every buffered batch, send the next
        fetch to the nodes they came from (the pre-fetch), and start handling them."""
        if self.paused:
            self._handling = True  # this poll runs when the stall ends; responses meanwhile only buffer
            self.defer(self._poll)
            return
        buffered, self._fetch_buffer = self._fetch_buffer, []
        if not buffered:
            self._handling = False
            return
        costs = self._costs
        assert costs is not None
        self._handling = True
        polled = self._polled
        for _node, batches in buffered:
            polled.extend(batches)
        for node, _batches in buffered:
            if node.buffered:
                node.buffered = False
                self._fetch_from(node)
        self._handle_next(max(0.0, costs.per_poll()))

    def _handle_next(self, extra_ms: float) -> None:
        """Handle the poll's next batch: ``per_record`` per record (plus ``extra_ms``), then it is consumed."""
        costs = self._costs
        assert costs is not None
        batch = self._polled[0]
        delay = extra_ms + max(0.0, costs.per_record()) * batch.record_count
        Call(self.env, delay, self._on_handled)

    def _on_handled(self, _event: object) -> None:
        if self.paused:  # stopped mid-batch: handled when the stall ends
            self.defer(lambda: self._on_handled(None))
            return
        batch = self._polled.popleft()
        self._observer.batch_consumed(self.name, batch, self.env.now)
        self.batches_consumed += 1
        if self._polled:
            self._handle_next(0.0)
        else:
            self._poll()

    def _on_node_ready(self, node_id: int) -> None:
        """The connection is READY (``NetworkClient.handleConnections``): the fetch waiting for it goes."""
        self._fetch_from(self._nodes[node_id])

    def _on_node_disconnect(self, node_id: int, request_timed_out: bool) -> None:
        """The connection to the node was closed (reset, refused, a setup or request timeout) and its fetch
        failed: a metadata update is requested (``handleServerDisconnect``), and the node is fetched from again
        once its reconnect backoff has passed (``ConsumerNetworkClient.isUnavailable``) -- after a request
        timeout, no sooner than retry.backoff.ms (the poll loop's wait when nothing is in flight)."""
        node = self._nodes[node_id]
        self._request_metadata_update()
        delay = self.client.connection_delay(node_id, self.env.now)
        if request_timed_out and delay < RETRY_BACKOFF_MS:
            delay = RETRY_BACKOFF_MS
        Call(self.env, delay, lambda _e: self._fetch_from(node))

    # --- metadata and leader changes -----------------------------------------------------------------

    def _request_metadata_update(self) -> None:
        if self._fetch_metadata is None:
            return
        self.metadata.request_update()
        self._maybe_update_metadata()

    def _maybe_update_metadata(self) -> None:
        """``ConsumerNetworkClient.poll`` -> ``DefaultMetadataUpdater.maybeUpdate``: one refresh at a time,
        when requested and the backoff allows."""
        if self._metadata_fetch is not None or self._metadata_wait is not None:
            return
        now = self.env.now
        wait = self.metadata.time_to_next_update(now)
        if wait == math.inf:
            return
        if wait > 0:
            self._metadata_wait = Call(self.env, wait, self._on_metadata_wait)
            return
        self.metadata.refresh_started()
        self._metadata_fetch = Call(self.env, self._round_trip_ms, self._on_metadata)

    def _on_metadata_wait(self, _event: object) -> None:
        self._metadata_wait = None
        self._maybe_update_metadata()

    def _on_metadata(self, _event: object) -> None:
        if self.paused:
            self._deferred.append(lambda: self._on_metadata(None))
            return
        self._metadata_fetch = None
        assert self._fetch_metadata is not None
        changed = self.metadata.update(self._fetch_metadata(), self.env.now)
        touched: dict[int, NodeFetch] = {}
        for tp in sorted(changed, key=self._rank.__getitem__):
            leader = self.metadata.leader(tp)
            previous = self._leader[tp]
            if previous != NO_LEADER:  # a partition without a leader is on no node
                old = self._nodes[previous]
                if self._wanted(old, tp):
                    old.wanted -= 1
                old.changed[tp] = None
            self._leader[tp] = leader
            self._awaiting.discard(tp)
            if leader == NO_LEADER:
                continue  # no leader: not fetched until one appears (Metadata keeps asking)
            node = self._node(leader)
            node.changed[tp] = None
            touched[leader] = node
            if tp in self.position_epochs and self._validate is not None:
                # SubscriptionState.maybeValidatePositionForCurrentLeader: AWAIT_VALIDATION.
                self._awaiting.add(tp)
                self._send_validation(tp, leader)
            else:
                node.wanted += 1
        for node in touched.values():
            self._fetch_from(node)
        self._maybe_update_metadata()

    def _send_validation(self, tp: TopicPartition, leader: int) -> None:
        """OffsetsForLeaderEpoch(leaderEpoch = the epoch of the last batch consumed) to the new leader."""
        epoch = self.position_epochs[tp]
        Call(self.env, self._round_trip_ms, lambda _e: self._on_validation(tp, leader, epoch))

    def _on_validation(self, tp: TopicPartition, leader: int, epoch: int) -> None:
        if self.paused:
            self._deferred.append(lambda: self._on_validation(tp, leader, epoch))
            return
        if tp not in self._awaiting or self._leader[tp] != leader:
            return  # the leader moved again: a newer validation is under way
        assert self._validate is not None
        end = self._validate(leader, tp, epoch)
        if end is None:
            # The broker could not answer (not the leader any more, down): ask again after the backoff.
            self._request_metadata_update()
            Call(self.env, RETRY_BACKOFF_MS, lambda _e: self._retry_validation(tp, leader))
            return
        # SubscriptionState.maybeCompleteValidation: an end offset below the position means the log was
        # truncated under the consumer: seek back to it (seekValidated; the reset policy is set).
        if end < self.positions[tp]:
            self.positions[tp] = end
        self._awaiting.discard(tp)
        node = self._node(leader)
        node.wanted += 1
        node.changed[tp] = None
        self._fetch_from(node)

    def _retry_validation(self, tp: TopicPartition, leader: int) -> None:
        if tp in self._awaiting and self._leader[tp] == leader:
            self._send_validation(tp, leader)

    def on_resume(self) -> None:
        # After the responses that arrived during the pause (NetworkClient.poll's order).
        self.client.check_timeouts()

    def unfinished(self) -> list[RequestEnvelope]:
        return [node.in_flight for node in self._nodes.values() if node.in_flight is not None]

