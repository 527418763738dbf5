"""Kafka's ``KafkaApis``: a request's dispatch to the ``ReplicaManager`` and the building of its response.

* ``handle_produce`` is ``KafkaApis.handleProduceRequest``: ``ReplicaManager.appendRecords`` with a
  callback that builds the response (the first partition error, the response size) and sends it through
  ``RequestChannel.sendResponse`` -- at once (acks 0/1) or when the ``DelayedProduce`` completes or expires.
* ``handle_fetch`` is ``KafkaApis.handleFetchRequest``: the request fields become ``FetchParams``
  (``max_bytes`` capped by the broker's ``fetch.max.bytes``), its session fields a ``FetchContext``
  (``FetchManager.newContext``, KIP-227), then ``ReplicaManager.fetchMessages`` over the context's
  partitions; the context decides which partitions the response carries.

When is a response sent? ``fetch_messages`` reads the log, and for a follower updates its fetch state,
which can advance the high watermark and complete parked produce requests on the spot
(``Partition.updateFollowerFetchState`` -> ``tryCompleteDelayedRequests``). In Kafka those responses, and
the fetch's own if it answers at once, are sent by the handler thread after it has read the log; here the
read's service time is drawn after the call. So ``handle_fetch`` does not send what completes during its
``fetch_messages`` call: it *returns* those responses, and the request handler sends them once the
service time has elapsed. ``try_complete_actions_held`` (``ReplicaManager.tryCompleteActions``, the end
of every request) returns what it completes too: the handler answers each parked fetch in turn. Every other
completion -- a produce answered after its append, an expiration, an AlterPartition answer -- goes to the
``RequestChannel`` at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkasim.broker.config import KafkaConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, LogReadResult, fetch_params_from_request
from kafkasim.broker.fetch_session import FetchManager, FetchResponse, IncrementalFetchContext
from kafkasim.broker.produce import PartitionResponse
from kafkasim.broker.records import TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.broker.session_reads import session_reader
from kafkasim.broker.session_reads.session_reader import SessionReader
from kafkasim.network.messages import (
    FetchRequestData,
    ProduceRequestData,
    RequestEnvelope,
    Response,
    fetch_response_data_bytes,
    produce_response_bytes,
)
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel


class KafkaApis:
    """Produce and fetch handling on top of a ``ReplicaManager``; responses go to ``request_channel``."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        config: KafkaConfig,
        request_channel: RequestChannel,
        *,
        fetch_manager: FetchManager,
        observer: Observer,
    ) -> None:
        self.replica_manager = replica_manager
        # Kafka reads every partition of an incremental session; the simulator's shortcut reads the changed
        # ones and gives the same answers (kafkasim.broker.session_reads). None: Kafka's walk.
        self.session_reader = SessionReader(replica_manager) if session_reader.LAZY_FETCH_SESSIONS else None
        self.fetch_manager = fetch_manager
        self.config = config
        self.request_channel = request_channel
        self._observer = observer
        self._checks = observer.checks
        # ReplicaManager.tryCompleteActions, run in the finally of KafkaApis.handle (the handler calls it
        # when the request's service time is over).
        self.try_complete_actions: Callable[[], int] = replica_manager.try_complete_actions
        # A client sends the same request-level fields every time: one frozen FetchParams serves them all.
        self._fetch_params: dict[tuple[int, int, int, int, int], FetchParams] = {}
        # The list handle_fetch returns, while its fetch_messages call runs (else None: send at once).
        self._fetched: list[RequestEnvelope] | None = None

    def handle_produce(self, envelope: RequestEnvelope) -> None:
        """``handleProduceRequest``; the response goes out when ``appendRecords`` calls back."""
        body = envelope.body
        assert isinstance(body, ProduceRequestData)
        self.replica_manager.append_records(
            body.timeout_ms, body.acks, body.entries, lambda statuses: self._produce_response(envelope, statuses)
        )

    def handle_produce_held(self, envelope: RequestEnvelope) -> list[RequestEnvelope]:
        """``handle_produce`` on a handler thread that a log flush may hold (``flush.messages``): the
        responses built during the call are returned, for the handler to send once its flushes are done
        (in Kafka the flush is inside ``UnifiedLog.append``, before ``appendRecords`` calls back)."""
        completed: list[RequestEnvelope] = []
        self._fetched = completed
        try:
            self.handle_produce(envelope)
        finally:
            self._fetched = None
        return completed

    def try_complete_actions_held(self) -> list[RequestEnvelope]:
        """``ReplicaManager.tryCompleteActions`` (the ``finally`` of ``KafkaApis.handle``); the responses it
        completes are returned, for the handler to send as it completes each (a parked fetch's read and
        response take its time)."""
        completed: list[RequestEnvelope] = []
        self._fetched = completed
        try:
            self.try_complete_actions()
        finally:
            self._fetched = None
        return completed

    def handle_fetch(self, envelope: RequestEnvelope) -> list[RequestEnvelope]:
        """``handleFetchRequest``; returns the responses completed during the call, in the order they completed,
        for the handler to send (kafkasim.server.kafka_request_handler): those the HW advance of a follower
        fetch completed (produce requests, consumers' parked fetches) when its read is done, its own, if
        answered at once, after its request cost.

        The request's session fields make its ``FetchContext`` (``FetchManager.newContext``, KIP-227): an
        incremental request reads every partition of its session, not only those it names
        (``IncrementalFetchContext.foreachPartition``), so the DelayedFetch of an idle follower that sent
        none watches them all; the response carries what the context keeps
        (``updateAndGenerateResponseData``). A session error reads nothing and is answered at once."""
        body = envelope.body
        assert isinstance(body, FetchRequestData)
        key = (body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, body.replica_epoch)
        params = self._fetch_params.get(key)
        if params is None:
            params = self._fetch_params[key] = fetch_params_from_request(
                self.config, body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes,
                replica_epoch=body.replica_epoch,
            )
        context = self.fetch_manager.new_context(
            body.metadata, body.replica_id >= 0, body.fetch_infos, body.to_forget
        )

        def respond(results: Sequence[tuple[TopicPartition, LogReadResult]]) -> None:
            self._fetch_response(envelope, context.update_and_generate_response_data(results))

        completed: list[RequestEnvelope] = []
        self._fetched = completed
        reader = self.session_reader
        if reader is not None and isinstance(context, IncrementalFetchContext):
            # Kafka reads every partition of the session; the simulator reads the changed ones and gives the
            # same answers (SessionReader.fetch_session_messages). The count is Kafka's.
            envelope.read_partitions = context.session.size
            try:
                reader.fetch_session_messages(params, context, respond)
            finally:
                self._fetched = None
            return completed
        fetch_infos = context.fetch_infos()
        envelope.read_partitions = len(fetch_infos)
        try:
            if not fetch_infos:
                # handleFetchRequest: `if (interesting.isEmpty) processResponseCallback(Seq.empty)`.
                respond(())
            else:
                self.replica_manager.fetch_messages(params, fetch_infos, respond)
        finally:
            self._fetched = None
        return completed

    # --- responses ---------------------------------------------------------------------------------

    def _produce_response(self, envelope: RequestEnvelope,
                          statuses: dict[TopicPartition, PartitionResponse]) -> None:
        error = Errors.NONE
        for status in statuses.values():
            if status.error != Errors.NONE and error == Errors.NONE:
                error = status.error
        if not envelope.client_done:  # a client that already gave up keeps its own outcome in the row
            envelope.error = error
        envelope.set_response(Response(statuses, produce_response_bytes(len(statuses)), len(statuses)))
        self._send(envelope)

    def _fetch_response(self, envelope: RequestEnvelope, response: FetchResponse) -> None:
        # A session error is the response's own; else the first partition error.
        error = response.error
        read = segments = 0
        for _tp, result in response.responses:
            size = result.info.size_in_bytes
            read += size
            segments += size > 0
            if result.error != Errors.NONE and error == Errors.NONE:
                error = result.error
        if not envelope.client_done:
            envelope.error = error
        envelope.read_bytes = read
        envelope.read_segments = segments
        envelope.set_response(Response(response, fetch_response_data_bytes(response), len(response.responses)))
        self._send(envelope)

    def _send(self, envelope: RequestEnvelope) -> None:
        """A built response: returned by ``handle_fetch`` if it completed during its ``fetch_messages`` call
        (the handler sends it when its turn on the thread comes), else to the ``RequestChannel`` at once."""
        if self._checks:
            self._observer.response_built(envelope)
        fetched = self._fetched
        if fetched is not None:
            fetched.append(envelope)
        else:
            self.request_channel.send_response(envelope)
