"""The leader's request pipeline (spec §9.1): processors, the request queue, request handlers, responses.

Kafka's ``SocketServer`` + ``RequestChannel`` + ``KafkaRequestHandlerPool``, as event-driven state machines
on the SimPy clock (one heap event per service completion, no generator processes on the hot path):

* Every connection (``KafkaChannel``) belongs to one of ``num.network.threads`` processors, round robin.
* A processor is a serial server. It reads one request at a time (cost ``network_read`` + per KiB), sets
  ``start_ms`` and puts the request into the shared request queue, bounded by ``queued.max.requests``:
  when full, the processor blocks until a handler takes a request (back-pressure). Reading a request
  *mutes* its connection: the next request of that connection waits in the socket until the response of
  this one has been sent (spec §9.1), so a producer with 5 requests in flight is served one at a time.
  Queued responses go before new reads (Kafka's processor loop handles new responses before polling).
* ``num.io.threads`` handlers take requests in FIFO order (``dequeue_ms``) and run ``KafkaApis.handle``:
  - Produce: service time ``request + append_per_kib * KiB`` first, then ``append_records`` (the data
    becomes visible when the write is done).
  - Fetch: ``fetch_messages`` at dequeue (the read sees the log as it is when the handler starts), then
    service time ``request + read_per_kib * KiB read``. Responses the call produced synchronously -- its
    own, and produce requests completed because this follower fetch advanced the HW -- are held until
    the service time has elapsed: in Kafka the read comes before the follower-state update that
    completes them.
  - Then ``try_complete_actions()`` (spec §3.5, the ``finally`` of handle): parked follower fetches are
    usually completed here, by the producer's handler. Then ``local_complete_ms`` if still unset.
* A response is put on its processor's response queue (``response_complete_ms``); the processor takes it
  (``response_dequeue_ms``), spends ``network_send`` + per KiB, hands it to the connection's link
  (``end_ms``) and unmutes the connection. acks=0 produces get a NoOp response: dequeued, no send cost,
  connection unmuted, nothing travels back (spec §3.6).

Simplification: processor and handler costs are the only CPU modelled; purgatory checks, the action queue
and timer work take no simulated time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkasim.broker.config import BrokerConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import FetchParams, fetch_params_from_request
from kafkasim.network.messages import (
    API_PRODUCE,
    FetchRequestData,
    ProduceRequestData,
    RequestEnvelope,
    fetch_response_bytes,
    produce_response_bytes,
)
from kafkasim.network.observer import Observer
from kafkasim.sim.calls import Call

if TYPE_CHECKING:
    from simpy import Environment

Sampler = Callable[[], float]
KIB = 1024.0


class PipelineCosts:
    """Service-time samplers (each a zero-argument callable returning ms), from the scenario's costs.

    A per-KiB cost is drawn once per request and multiplied by the size in KiB.
    """

    __slots__ = (
        "request",
        "append_per_kib",
        "read_per_kib",
        "network_read",
        "network_read_per_kib",
        "network_send",
        "network_send_per_kib",
    )

    def __init__(
        self,
        request: Sampler,
        append_per_kib: Sampler,
        read_per_kib: Sampler,
        network_read: Sampler,
        network_read_per_kib: Sampler,
        network_send: Sampler,
        network_send_per_kib: Sampler,
    ) -> None:
        self.request = request
        self.append_per_kib = append_per_kib
        self.read_per_kib = read_per_kib
        self.network_read = network_read
        self.network_read_per_kib = network_read_per_kib
        self.network_send = network_send
        self.network_send_per_kib = network_send_per_kib


class KafkaChannel:
    """The broker side of one client connection (Kafka's ``KafkaChannel``)."""

    __slots__ = ("name", "processor", "muted", "pending", "readable", "send_response", "closed")

    def __init__(self, name: str, processor: Processor, send_response: Callable[[RequestEnvelope], None]) -> None:
        self.name = name
        self.processor = processor
        self.muted = False
        # Requests that arrived but were not read yet (the socket receive buffer).
        self.pending: deque[RequestEnvelope] = deque()
        self.readable = False  # queued in the processor's readable list
        self.send_response = send_response
        # A closed channel (client crashed) drops its responses; see Pipeline.close_channel.
        self.closed = False


class Processor:
    """One network thread: its response queue, the connections with a request ready, its busy state."""

    __slots__ = ("index", "busy", "blocked", "responses", "readable", "busy_ms")

    def __init__(self, index: int) -> None:
        self.index = index
        self.busy = False
        # A request that could not be put into the full request queue (the processor waits in put()).
        self.blocked: RequestEnvelope | None = None
        self.responses: deque[RequestEnvelope] = deque()
        self.readable: deque[KafkaChannel] = deque()
        self.busy_ms = 0.0


class RequestPipeline:
    """Processors, request queue and handlers of the leader, around a ``ReplicaManager``."""

    def __init__(
        self,
        env: Environment,
        replica_manager: Any,
        costs: PipelineCosts,
        config: BrokerConfig,
        *,
        num_network_threads: int = 3,
        num_io_threads: int = 8,
        queued_max_requests: int = 500,
        observer: Observer,
        after_request: Callable[[], None] | None = None,
    ) -> None:
        self.env = env
        self.replica_manager = replica_manager
        self.costs = costs
        self.config = config
        self._observer = observer
        self.processors = [Processor(i) for i in range(num_network_threads)]
        self.num_io_threads = num_io_threads
        self.queued_max_requests = queued_max_requests
        self.request_queue: deque[RequestEnvelope] = deque()
        self.idle_handlers = num_io_threads
        self.handler_busy_ms = 0.0
        # Processors blocked in put(), in the order they blocked.
        self._blocked: deque[Processor] = deque()
        self._next_processor = 0
        self._holding: list[RequestEnvelope] | None = None
        self._after_request = after_request
        self.requests_handled = 0
        self._fetch_params: dict[tuple[int, int, int, int, int], FetchParams] = {}

    # --- connections -------------------------------------------------------------------------------

    def connect(self, name: str, send_response: Callable[[RequestEnvelope], None]) -> KafkaChannel:
        """Accept a connection; ``send_response(envelope)`` puts a sent response on the link back."""
        processor = self.processors[self._next_processor]
        self._next_processor = (self._next_processor + 1) % len(self.processors)
        return KafkaChannel(name, processor, send_response)

    def receive(self, channel: KafkaChannel, envelope: RequestEnvelope) -> None:
        """A request fully arrived on ``channel``'s socket."""
        if channel.closed:
            return
        channel.pending.append(envelope)
        if not channel.muted and not channel.readable:
            channel.readable = True
            processor = channel.processor
            processor.readable.append(channel)
            if not processor.busy and processor.blocked is None:
                self._run_processor(processor)

    def close_channel(self, channel: KafkaChannel) -> None:
        """The client went away (crash): unread requests are dropped, responses are not sent.

        Requests already in the request queue or purgatory are still handled, as in Kafka, whose handlers
        do not notice a closed connection; their responses are discarded at send time.
        """
        channel.closed = True
        channel.pending.clear()

    def reopen_channel(self, channel: KafkaChannel) -> None:
        channel.closed = False
        channel.muted = False

    # --- processors --------------------------------------------------------------------------------

    def _run_processor(self, p: Processor) -> None:
        """Start the processor's next piece of work if it is free: a response first, else a read."""
        costs = self.costs
        if p.responses:
            envelope = p.responses.popleft()
            envelope.response_dequeue_ms = self.env.now
            if not envelope.expects_response:
                # NoOpResponse (acks=0): nothing to write, just unmute.
                envelope.end_ms = self.env.now
                self._unmute(envelope)
                self._observer.response_done(envelope)
                self._run_processor(p)
                return
            cost = costs.network_send() + costs.network_send_per_kib() * (envelope.response_bytes / KIB)
            p.busy = True
            p.busy_ms += cost
            Call(self.env, cost, lambda _e: self._send_done(p, envelope))
            return
        while p.readable:
            channel = p.readable.popleft()
            channel.readable = False
            if channel.muted or not channel.pending or channel.closed:
                continue
            envelope = channel.pending.popleft()
            channel.muted = True
            envelope.connection = channel
            cost = costs.network_read() + costs.network_read_per_kib() * (envelope.request_bytes / KIB)
            p.busy = True
            p.busy_ms += cost
            Call(self.env, cost, partial(self._read_done_event, p, envelope))
            return

    def _read_done_event(self, p: Processor, envelope: RequestEnvelope, _event: Any) -> None:
        self._read_done(p, envelope)

    def _read_done(self, p: Processor, envelope: RequestEnvelope) -> None:
        p.busy = False
        envelope.start_ms = self.env.now
        if self.idle_handlers:
            self.idle_handlers -= 1
            self._handle(envelope)
        elif len(self.request_queue) < self.queued_max_requests:
            self.request_queue.append(envelope)
        else:
            # ArrayBlockingQueue.put blocks the processor thread: back-pressure on every connection it owns.
            p.blocked = envelope
            self._blocked.append(p)
            return
        self._run_processor(p)

    def _send_done(self, p: Processor, envelope: RequestEnvelope) -> None:
        p.busy = False
        envelope.end_ms = self.env.now
        channel = envelope.connection
        if not channel.closed:
            channel.send_response(envelope)
        self._unmute(envelope)
        self._observer.response_done(envelope)
        self._run_processor(p)

    def _unmute(self, envelope: RequestEnvelope) -> None:
        channel: KafkaChannel = envelope.connection
        channel.muted = False
        if channel.pending and not channel.readable and not channel.closed:
            channel.readable = True
            channel.processor.readable.append(channel)
        # The caller (the channel's processor) picks the next work up.

    # --- handlers ----------------------------------------------------------------------------------

    def _handle(self, envelope: RequestEnvelope) -> None:
        """A handler thread takes ``envelope`` (KafkaApis.handle)."""
        env = self.env
        envelope.dequeue_ms = env.now
        costs = self.costs
        body = envelope.body
        if envelope.api == API_PRODUCE:
            assert isinstance(body, ProduceRequestData)
            cost = costs.request() + costs.append_per_kib() * (envelope.request_bytes / KIB)
            self.handler_busy_ms += cost
            Call(env, cost, lambda _e: self._produce_done(envelope))
            return
        assert isinstance(body, FetchRequestData)
        # KafkaApis: request fields -> FetchParams (max_bytes capped by the broker's fetch.max.bytes).
        # A client sends the same request-level fields every time: one frozen FetchParams serves them all.
        key = (body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, body.replica_epoch)
        params = self._fetch_params.get(key)
        if params is None:
            params = self._fetch_params[key] = fetch_params_from_request(
                self.config, body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes,
                replica_epoch=body.replica_epoch,
            )
        held: list[RequestEnvelope] = []
        self._holding = held
        try:
            self.replica_manager.fetch_messages(
                params, body.fetch_infos, lambda results: self._fetch_response(envelope, results)
            )
        finally:
            self._holding = None
        cost = costs.request() + costs.read_per_kib() * (envelope.read_bytes / KIB)
        self.handler_busy_ms += cost
        Call(env, cost, lambda _e: self._fetch_done(envelope, held))

    def _produce_done(self, envelope: RequestEnvelope) -> None:
        body = envelope.body
        assert isinstance(body, ProduceRequestData)
        self.replica_manager.append_records(
            body.timeout_ms, body.acks, body.entries, lambda statuses: self._produce_response(envelope, statuses)
        )
        self._finish_handle(envelope)

    def _fetch_done(self, envelope: RequestEnvelope, held: list[RequestEnvelope]) -> None:
        for response in held:
            self._send_response(response)
        self._finish_handle(envelope)

    def _finish_handle(self, envelope: RequestEnvelope) -> None:
        # KafkaApis.handle's finally: drain the action queue, then mark local completion (spec §9.1).
        self.replica_manager.try_complete_actions()
        if envelope.local_complete_ms != envelope.local_complete_ms:  # NaN: not yet set
            envelope.local_complete_ms = self.env.now
        self.requests_handled += 1
        self._observer.request_handled(envelope)
        if self._after_request is not None:
            self._after_request()
        # Take the next request, which frees a slot for a processor blocked in put().
        if self.request_queue:
            nxt = self.request_queue.popleft()
            if self._blocked:
                p = self._blocked.popleft()
                blocked = p.blocked
                assert blocked is not None
                p.blocked = None
                self.request_queue.append(blocked)
                self._run_processor(p)
            self._handle(nxt)
        else:
            self.idle_handlers += 1

    # --- responses ---------------------------------------------------------------------------------

    def _produce_response(self, envelope: RequestEnvelope, statuses: Any) -> None:
        envelope.response = statuses
        error = Errors.NONE
        for status in statuses.values():
            if status.error != Errors.NONE and error == Errors.NONE:
                error = status.error
        if not envelope.client_done:  # a client that already gave up keeps its own outcome in the row
            envelope.error = error
        envelope.response_bytes = produce_response_bytes(len(statuses))
        self._observer.response_built(envelope)
        self._complete(envelope)

    def _fetch_response(self, envelope: RequestEnvelope, results: Any) -> None:
        envelope.response = results
        error = Errors.NONE
        read = 0
        for _tp, result in results:
            read += result.info.size_in_bytes
            if result.error != Errors.NONE and error == Errors.NONE:
                error = result.error
        if not envelope.client_done:
            envelope.error = error
        envelope.read_bytes = read
        envelope.response_bytes = fetch_response_bytes(len(results), read)
        self._observer.response_built(envelope)
        self._complete(envelope)

    def _complete(self, envelope: RequestEnvelope) -> None:
        held = self._holding
        if held is not None:
            held.append(envelope)
            return
        self._send_response(envelope)

    def _send_response(self, envelope: RequestEnvelope) -> None:
        """RequestChannel.sendResponse: onto the owning processor's response queue."""
        now = self.env.now
        envelope.response_complete_ms = now
        if envelope.local_complete_ms != envelope.local_complete_ms:
            # A response sent before handle() finished marks local completion (spec §9.2).
            envelope.local_complete_ms = now
        p: Processor = envelope.connection.processor
        p.responses.append(envelope)
        if not p.busy and p.blocked is None:
            self._run_processor(p)

    # --- gauges ------------------------------------------------------------------------------------

    @property
    def request_queue_size(self) -> int:
        return len(self.request_queue) + sum(1 for p in self.processors if p.blocked is not None)

    def response_queue_sizes(self) -> list[int]:
        return [len(p.responses) for p in self.processors]
