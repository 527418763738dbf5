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
the next fetch, a full one, goes at once. A fetch without a response after ``request.timeout.ms``
disconnects from that broker and fetches from it again after the backoff, a full request that closes
the session and asks for a new one.
Not modelled: group membership and rebalances (a consumer owns all partitions of its topic), commits,
the application's poll loop and processing time; leadership is fixed for the run (no metadata refresh);
every connection of a consumer shares its one network path (its host's link).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import CONSUMER_REPLICA_ID, PartitionData
from kafkasim.broker.fetch_session import FetchResponse
from kafkasim.broker.records import TopicPartition
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.network.fetch_session_handler import FetchSessionHandler, FetchSessionRequestData
from kafkasim.network.messages import API_FETCH_CONSUMER, RequestEnvelope
from kafkasim.network.network_client import NetworkClient, fail_timed_out, fetch_request
from kafkasim.network.observer import Observer
from kafkasim.network.request_timer import RequestTimer
from kafkasim.sim.calls import Call

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.ids import IdSource

RETRY_BACKOFF_MS = 100.0  # consumer retry.backoff.ms default


class NodeFetch:
    """The consumer's fetch toward one broker: the partitions it leads, the connection, the fetch session
    (``AbstractFetch.sessionHandlers``: one ``FetchSessionHandler`` per node), the request in flight (at
    most one) and its request timeout; ``changed`` the partitions whose position moved since the last
    request (all the session needs to build an incremental one: ``FetchSessionHandler.build_incremental``)."""

    __slots__ = ("node_id", "partitions", "rank", "changed", "connection", "session", "in_flight", "request_timer")

    def __init__(self, node_id: int, partitions: list[TopicPartition], connection: Any) -> None:
        self.node_id = node_id
        self.partitions = partitions
        self.rank: dict[TopicPartition, int] = {}
        for i, tp in enumerate(partitions):
            self.rank.setdefault(tp, i)  # a dict keeps a repeated key's first place (Builder.add)
        self.changed: dict[TopicPartition, None] = {}
        self.connection = connection
        self.session = FetchSessionHandler(node_id)
        self.in_flight: RequestEnvelope | None = None
        self.request_timer: RequestTimer | None = None


class Consumer(NetworkClient):
    """One consumer client fetching all partitions of its topic from offset 0, each from its leader:
    ``connect(broker_id)`` opens a connection, ``leaders`` maps each partition to its leader (default:
    broker 0 leads them all)."""

    def __init__(
        self,
        env: Environment,
        config: ConsumerClientConfig,
        partitions: Sequence[TopicPartition],
        connect: Callable[[int], Any],
        ids: IdSource,
        observer: Observer,
        *,
        leaders: Mapping[TopicPartition, int] | None = None,
        stop_ms: float = math.inf,
    ) -> None:
        super().__init__(env, config.name, None, ids, observer, stop_ms=stop_ms)
        self.config = config
        self.partitions = list(partitions)
        self.positions: dict[TopicPartition, int] = {tp: 0 for tp in self.partitions}
        self.batches_consumed = 0
        self._connect_to = connect
        self._request_timeout_ms = float(config.request_timeout_ms)
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in self.partitions:
            by_node.setdefault(leaders[tp] if leaders is not None else 0, []).append(tp)
        self._nodes: list[NodeFetch] = []
        for node_id, tps in by_node.items():
            node = NodeFetch(node_id, tps, connect(node_id))
            node.request_timer = RequestTimer(
                env, self._request_timeout_ms, self, partial(_in_flight_of, node),
                partial(self._on_request_timeout, node),
            )
            self._nodes.append(node)

    @property
    def connections(self) -> dict[int, Any]:
        """The open connection to each broker, by broker id."""
        return {node.node_id: node.connection for node in self._nodes}

    def start(self) -> None:
        Call(self.env, 0.0, lambda _e: self._fetch())

    def _fetch(self) -> None:
        """``sendFetches``: a fetch to every broker with no request pending."""
        for node in self._nodes:
            self._fetch_from(node)

    def _fetch_from(self, node: NodeFetch) -> None:
        if self.paused:
            self._deferred.append(lambda: self._fetch_from(node))
            return
        now = self.env.now
        if now >= self._stop_ms or node.in_flight is not None:
            return
        cfg = self.config
        envelope = fetch_request(
            self._ids, API_FETCH_CONSUMER, self.name, CONSUMER_REPLICA_ID, cfg.fetch_max_wait_ms,
            cfg.fetch_min_bytes, cfg.fetch_max_bytes, self.build_fetch(node), now, partial(self._on_response, node),
        )
        node.in_flight = envelope
        node.connection.send(envelope)
        assert node.request_timer is not None
        node.request_timer.arm()

    def build_fetch(self, node: NodeFetch) -> FetchSessionRequestData:
        """AbstractFetch.prepareFetchRequests: every partition goes to the node's session builder, which
        sends only the new and moved ones once the session exists. A full request walks them all (Kafka's
        way); an incremental one hands the session only the partitions whose position moved since the last
        request (``FetchSessionHandler.build_incremental``: the same request, for the cost of those)."""
        max_bytes = self.config.max_partition_fetch_bytes
        positions = self.positions
        session = node.session
        changed = node.changed
        if session.next_metadata.is_full:
            builder = session.new_builder()
            for tp in node.partitions:
                builder.add(tp, PartitionData(positions[tp], -1, max_bytes))
            changed.clear()
            return builder.build()
        rank = node.rank
        changes: list[tuple[int, TopicPartition, PartitionData | None]] = [
            (rank[tp], tp, PartitionData(positions[tp], -1, max_bytes)) for tp in changed
        ]
        changed.clear()
        return session.build_incremental(changes)

    def _on_response(self, node: NodeFetch, envelope: RequestEnvelope) -> None:
        if self.paused:
            self._deferred.append(lambda: self._on_response(node, envelope))
            return
        if envelope is not node.in_flight:
            return  # timed out earlier; ignored
        node.in_flight = None
        response: FetchResponse = envelope.response
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
        # An incremental response carries only the partitions with news; the others keep their position.
        for tp, result in response.responses:
            error = result.error
            if error == Errors.NONE:
                records = result.info.records
                if records:
                    # Only batches at or after the position are new (a read starts at the batch holding it).
                    position = positions[tp]
                    for batch in records:
                        if batch.last_offset >= position:
                            self._observer.batch_consumed(self.name, batch, now)
                            self.batches_consumed += 1
                    positions[tp] = records[-1].next_offset
                    changed[tp] = None
            elif error == Errors.OFFSET_OUT_OF_RANGE:
                positions[tp] = max(0, result.log_start_offset)
                changed[tp] = None
            else:
                retry = True
        self._observer.request_finished(envelope)
        if retry:
            Call(self.env, RETRY_BACKOFF_MS, lambda _e: self._fetch_from(node))
        else:
            self._fetch_from(node)

    def _on_request_timeout(self, node: NodeFetch, envelope: RequestEnvelope) -> None:
        """``NetworkClient.handleTimedOutRequests``: the request fails with REQUEST_TIMED_OUT, the consumer
        disconnects from that broker, opens a new connection and fetches again after the backoff."""
        node.in_flight = None
        fail_timed_out(envelope, self._observer)
        node.session.handle_error()  # AbstractFetch.handleFetchFailure
        node.connection.close()
        node.connection = self._connect_to(node.node_id)
        Call(self.env, RETRY_BACKOFF_MS, lambda _e: self._fetch_from(node))

    def on_resume(self) -> None:
        # After the responses that arrived during the pause (NetworkClient.poll's order).
        for node in self._nodes:
            assert node.request_timer is not None
            node.request_timer.check()

    def unfinished(self) -> list[RequestEnvelope]:
        return [node.in_flight for node in self._nodes if node.in_flight is not None]


def _in_flight_of(node: NodeFetch) -> RequestEnvelope | None:
    return node.in_flight
